package localgw

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"

	"github.com/aws/aws-lambda-go/events"

	"github.com/bucketgate/bucketgate/ratelimitheaders"
)

// Invoker runs a Lambda handler on a raw payload; lambda.NewHandler(h) is one.
type Invoker interface {
	Invoke(ctx context.Context, payload []byte) ([]byte, error)
}

// errUnauthorized is the message an authorizer returns to get API Gateway's 401.
const errUnauthorized = "Unauthorized"

// requestIDPrefix starts the request id of every event, followed by a sequence number.
const requestIDPrefix = "local-"

// Gateway is a local REST API stage: every request goes through Authorizer first. It is
// safe for concurrent use when Authorizer and Backend are.
type Gateway struct {
	// Authorizer is the REQUEST authorizer, invoked with payload 1.0 events.
	Authorizer Invoker
	// Backend serves the requests the authorizer allows.
	Backend http.Handler
	// Responses are the gateway responses of the template.
	Responses Responses
	// MethodARNPrefix starts every method ARN, up to and including the stage:
	// "arn:aws:execute-api:REGION:ACCOUNT:API/STAGE".
	MethodARNPrefix string
	// Secret is sent to Backend in ratelimitheaders.HeaderGatewaySecret with every
	// allowed request, as the template's HTTP integration sends the stack's
	// BackendSecret; empty, none is. A client's own copy never reaches Backend.
	Secret string

	requests atomic.Uint64 // numbers the request ids
}

// ServeHTTP authorizes r and then forwards it or answers with a gateway response.
func (g *Gateway) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	event := g.event(r)
	payload, err := json.Marshal(event)
	if err != nil {
		g.Responses.Lookup(AuthorizerConfigErr).Write(w, r, nil)
		return
	}
	ctx, cancel := Context(r.Context()) // as Lambda invokes the authorizer
	out, err := g.Authorizer.Invoke(ctx, payload)
	cancel()
	if err != nil {
		kind := AuthorizerFailure
		if err.Error() == errUnauthorized {
			kind = Unauthorized
		}
		g.Responses.Lookup(kind).Write(w, r, nil)
		return
	}
	var resp events.APIGatewayCustomAuthorizerResponse
	if err := json.Unmarshal(out, &resp); err != nil || resp.PrincipalID == "" || !flat(resp.Context) {
		g.Responses.Lookup(AuthorizerConfigErr).Write(w, r, nil)
		return
	}
	if !allows(resp.PolicyDocument, event.MethodArn) {
		g.Responses.Lookup(AccessDenied).Write(w, r, resp.Context)
		return
	}
	g.integrate(w, r, resp.Context)
}

// integrate hands an allowed request to the backend as the template's integrations do:
// the rate-limit values of the authorizer context, and the request's reservation and
// lease, go to the backend as request headers (the REST API's HTTP integration maps
// them so; a client's own headers of those names are replaced), and onto the backend's answer as response headers (the HTTP API's
// response mapping), replacing any the backend set. The backend gets g.Secret, when
// there is one, in place of any copy of its header the client sent, in any spelling a
// backend reads as it (ratelimitheaders.SameName).
func (g *Gateway) integrate(w http.ResponseWriter, r *http.Request, context map[string]any) {
	r = r.Clone(r.Context())
	ratelimitheaders.SetHeader(r.Header, context)
	ratelimitheaders.SetHeldHeaders(r.Header, context)
	for name := range r.Header {
		if ratelimitheaders.SameName(name, ratelimitheaders.HeaderGatewaySecret) {
			delete(r.Header, name)
		}
	}
	if g.Secret != "" {
		r.Header.Set(ratelimitheaders.HeaderGatewaySecret, g.Secret)
	}
	g.Backend.ServeHTTP(&headerWriter{ResponseWriter: w, context: context}, r)
}

// headerWriter sets the rate-limit headers of an authorizer context on the answer when
// its final header is written (and on any 1xx before it, whose header the proxy clears).
type headerWriter struct {
	http.ResponseWriter
	context map[string]any
	written bool
}

func (w *headerWriter) WriteHeader(code int) {
	if !w.written {
		ratelimitheaders.SetHeader(w.Header(), w.context)
		w.written = code >= 200 || code == http.StatusSwitchingProtocols // a 1xx but 101 (103 Early Hints) precedes the final header
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *headerWriter) Write(b []byte) (int, error) {
	if !w.written {
		w.WriteHeader(http.StatusOK)
	}
	return w.ResponseWriter.Write(b)
}

// Unwrap returns the writer underneath, for http.ResponseController (flushing a
// streamed answer).
func (w *headerWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// flat reports whether every context value is a string, a number or a boolean: API
// Gateway refuses any other answer as a configuration error.
func flat(context map[string]any) bool {
	for _, v := range context {
		switch v.(type) {
		case string, float64, bool:
		default:
			return false
		}
	}
	return true
}

// event builds the payload 1.0 REQUEST authorizer event of r, for a {proxy+} resource.
func (g *Gateway) event(r *http.Request) events.APIGatewayCustomAuthorizerRequestTypeRequest {
	headers := map[string]string{"Host": r.Host}
	multi := map[string][]string{"Host": {r.Host}}
	for name, values := range r.Header {
		headers[name], multi[name] = values[0], values
	}
	query := map[string]string{}
	for name, values := range r.URL.Query() {
		query[name] = values[0]
	}
	ip, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		ip = r.RemoteAddr
	}
	// The path as sent, percent-encodings kept: what the backend receives, so that a
	// route matches what the backend serves ("/files/a%23/delete" decoded would end at
	// its '#' for the route, not for the backend).
	path := r.URL.EscapedPath()
	return events.APIGatewayCustomAuthorizerRequestTypeRequest{
		Type:                            "REQUEST",
		MethodArn:                       fmt.Sprintf("%s/%s%s", g.MethodARNPrefix, r.Method, path),
		Resource:                        "/{proxy+}",
		Path:                            path,
		HTTPMethod:                      r.Method,
		Headers:                         headers,
		MultiValueHeaders:               multi,
		QueryStringParameters:           query,
		MultiValueQueryStringParameters: r.URL.Query(),
		PathParameters:                  map[string]string{"proxy": strings.TrimPrefix(path, "/")},
		RequestContext: events.APIGatewayCustomAuthorizerRequestTypeRequestContext{
			Path:         path,
			HTTPMethod:   r.Method,
			ResourcePath: "/{proxy+}",
			RequestID:    requestIDPrefix + strconv.FormatUint(g.requests.Add(1), 10),
			Identity:     events.APIGatewayCustomAuthorizerRequestTypeRequestIdentity{SourceIP: ip},
		},
	}
}

// allows reports whether policy lets arn through: an Allow statement matches it and no
// Deny statement does. Resources may use * wildcards.
func allows(policy events.APIGatewayCustomAuthorizerPolicy, arn string) bool {
	allowed := false
	for _, s := range policy.Statement {
		for _, res := range s.Resource {
			if !wildcardMatch(res, arn) {
				continue
			}
			switch s.Effect {
			case "Deny":
				return false
			case "Allow":
				allowed = true
			}
		}
	}
	return allowed
}

// wildcardMatch matches s against pattern, where * stands for any run of characters.
func wildcardMatch(pattern, s string) bool {
	parts := strings.Split(pattern, "*")
	if len(parts) == 1 {
		return pattern == s
	}
	if !strings.HasPrefix(s, parts[0]) {
		return false
	}
	s = s[len(parts[0]):]
	for _, p := range parts[1 : len(parts)-1] {
		i := strings.Index(s, p)
		if i < 0 {
			return false
		}
		s = s[i+len(p):]
	}
	return strings.HasSuffix(s, parts[len(parts)-1])
}
