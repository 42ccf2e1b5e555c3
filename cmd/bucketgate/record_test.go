package main

import (
	"bytes"
	"hash/crc32"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// awsRecorder is one loopback endpoint for every AWS service the CLI calls: it records
// each request as the IAM action it needs ("dynamodb:PutItem") and passes it on to the
// server of its service (dynalite, the Lambda Invoke server, moto).
type awsRecorder struct {
	URL string

	backends map[string]*httputil.ReverseProxy // by SigV4 service name
	mu       sync.Mutex
	actions  []string
	// refuse, when set, is asked about each request, by its action and body: true
	// answers it with an error that the SDK does not retry, and passes nothing on.
	refuse func(action string, body []byte) bool
	// lose, when set, is asked about each request that refuse passes: true passes it on
	// and closes the connection without its answer, as a network that drops a response
	// does: the server did the work, and the SDK tries again.
	lose func(action string, body []byte) bool
}

// newRecorder serves until t ends, passing the requests of each service (by its SigV4
// name: dynamodb, lambda, cloudformation) to the endpoint URL backends gives it.
func newRecorder(t *testing.T, backends map[string]string) *awsRecorder {
	t.Helper()
	r := &awsRecorder{backends: map[string]*httputil.ReverseProxy{}}
	for service, endpoint := range backends {
		u, err := url.Parse(endpoint)
		if err != nil {
			t.Fatal(err)
		}
		r.backends[service] = httputil.NewSingleHostReverseProxy(u) // the Host header stays the one signed
	}
	srv := httptest.NewServer(http.HandlerFunc(r.serve))
	t.Cleanup(srv.Close)
	r.URL = srv.URL
	return r
}

// credentialScope finds the service in a SigV4 Authorization header:
// Credential=AKID/20261125/us-east-1/<service>/aws4_request.
var credentialScope = regexp.MustCompile(`Credential=[^/]+/\d{8}/[^/]+/([^/]+)/aws4_request`)

// invokePath is the path of Lambda's Invoke, a REST operation.
var invokePath = regexp.MustCompile(`^/2015-03-31/functions/[^/]+/invocations$`)

// iamActions are the IAM actions of the operations whose names differ from them.
var iamActions = map[string]string{"lambda:Invoke": "lambda:InvokeFunction"}

func (r *awsRecorder) serve(w http.ResponseWriter, req *http.Request) {
	body, err := io.ReadAll(req.Body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	req.Body = io.NopCloser(bytes.NewReader(body))
	m := credentialScope.FindStringSubmatch(req.Header.Get("Authorization"))
	if m == nil {
		http.Error(w, "awsRecorder: an unsigned request", http.StatusForbidden)
		return
	}
	service := m[1]
	backend, ok := r.backends[service]
	if !ok {
		http.Error(w, "awsRecorder: no server for service "+service, http.StatusNotImplemented)
		return
	}
	op := operation(req, body)
	action := service + ":" + op
	if a, ok := iamActions[action]; ok {
		action = a
	}
	r.mu.Lock()
	r.actions = append(r.actions, action)
	refuse := r.refuse != nil && r.refuse(action, body)
	lose := !refuse && r.lose != nil && r.lose(action, body)
	r.mu.Unlock()
	if refuse {
		refusal := `{"__type":"com.amazon.coral.validate#ValidationException","message":"awsRecorder: refused by the test"}`
		w.Header().Set("Content-Type", "application/x-amz-json-1.0")
		w.Header().Set("X-Amz-Crc32", strconv.FormatUint(uint64(crc32.ChecksumIEEE([]byte(refusal))), 10)) // as DynamoDB's, which the SDK checks
		w.WriteHeader(http.StatusBadRequest)
		io.WriteString(w, refusal)
		return
	}
	if lose {
		backend.ServeHTTP(httptest.NewRecorder(), req)
		if conn, _, err := http.NewResponseController(w).Hijack(); err == nil {
			conn.Close()
		}
		return
	}
	backend.ServeHTTP(w, req)
}

// refuseWhen makes r refuse the requests that refuse reports (see awsRecorder.refuse);
// nil refuses none.
func (r *awsRecorder) refuseWhen(refuse func(action string, body []byte) bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.refuse = refuse
}

// loseWhen makes r lose the answers of the requests that lose reports (see
// awsRecorder.lose); nil loses none.
func (r *awsRecorder) loseWhen(lose func(action string, body []byte) bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.lose = lose
}

// operation names the API operation of req with body, by its protocol: the JSON
// protocols' X-Amz-Target, the query protocol's Action, or a REST operation's method
// and path (Lambda's Invoke, the only one the CLI calls).
func operation(req *http.Request, body []byte) string {
	if target := req.Header.Get("X-Amz-Target"); target != "" {
		return target[strings.LastIndex(target, ".")+1:]
	}
	if strings.HasPrefix(req.Header.Get("Content-Type"), "application/x-www-form-urlencoded") {
		if form, err := url.ParseQuery(string(body)); err == nil && form.Get("Action") != "" {
			return form.Get("Action")
		}
	}
	if req.Method == http.MethodPost && invokePath.MatchString(req.URL.Path) {
		return "Invoke"
	}
	return "unknown operation " + req.Method + " " + req.URL.Path
}

// take returns the actions recorded since the last take, in order.
func (r *awsRecorder) take() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	a := r.actions
	r.actions = nil
	return a
}
