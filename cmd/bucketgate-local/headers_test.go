package main

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"maps"
	"net"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bucketgate/bucketgate/ratelimitheaders"
)

// The quick start's scenario (README.md), through the real local gateway on a Redis
// whose clock the test holds: a fresh key's first three requests answer 200 with
// X-RateLimit-Remaining 9, 8, 7 and the RateLimit headers (no Retry-After), as the
// deployed HTTP API maps them; the 11th answers 429 with the same headers plus
// Retry-After.
func TestRateLimitHeadersOnEveryAnswer(t *testing.T) {
	m := miniAt(t)
	g := startGateway(t, map[string]string{"REDIS_ADDR": m.Addr(), "DENY_CACHE_SIZE": "0"})
	reset := func(seconds int64) string { return strconv.FormatInt(t0.Unix()+seconds, 10) }
	for i := range 10 {
		r := g.get(t, "/scores", "fresh")
		if r.status != http.StatusOK {
			t.Fatalf("request %d: %d %v", i+1, r.status, r.body)
		}
		left := 9 - i
		want := map[string]string{
			"RateLimit":             `"burst";r=` + strconv.Itoa(left) + ";t=" + strconv.Itoa(10-left),
			"RateLimit-Policy":      `"burst";q=10;w=10`,
			"X-RateLimit-Limit":     "10",
			"X-RateLimit-Remaining": strconv.Itoa(left),
			"X-RateLimit-Reset":     reset(int64(10 - left)),
			"Retry-After":           "",
		}
		for name, v := range want {
			if got := r.header.Get(name); got != v {
				t.Errorf("request %d: %s %q, want %q", i+1, name, got, v)
			}
		}
	}
	r := g.get(t, "/scores", "fresh")
	if r.status != http.StatusTooManyRequests {
		t.Fatalf("11th: %d %v, want 429", r.status, r.body)
	}
	want := map[string]string{
		"RateLimit": `"burst";r=0;t=1`, "RateLimit-Policy": `"burst";q=10;w=10`, "X-RateLimit-Limit": "10",
		"X-RateLimit-Remaining": "0", "X-RateLimit-Reset": reset(10), "Retry-After": "1",
	}
	for name, v := range want {
		if got := r.header.Values(name); len(got) != 1 || got[0] != v {
			t.Errorf("11th: %s %q, want %q", name, got, v)
		}
	}
}

// seen is what a backend received.
type seen struct {
	method, path, query, body string
	rawPath                   string // the path as sent, percent-encodings kept
	header                    http.Header
}

// recordingBackend is a test server standing for the user's service: it records every
// request and answers 201 with its own headers, one of them a rate-limit header the
// gateway must replace.
func recordingBackend(t *testing.T) (*httptest.Server, func() []seen) {
	t.Helper()
	var (
		mu   sync.Mutex
		reqs []seen
	)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		mu.Lock()
		reqs = append(reqs, seen{r.Method, r.URL.Path, r.URL.RawQuery, string(body), r.URL.EscapedPath(), r.Header.Clone()})
		mu.Unlock()
		w.Header().Set("X-Backend", "yes")
		w.Header().Set("X-RateLimit-Limit", "999")
		w.Header().Set("RateLimit", `"backend";r=1;t=1`)
		w.Header().Set("X-RateLimit-Degraded", "backend")
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusCreated)
		_, _ = w.Write([]byte(`{"created":true}`))
	}))
	t.Cleanup(srv.Close)
	return srv, func() []seen {
		mu.Lock()
		defer mu.Unlock()
		return append([]seen(nil), reqs...)
	}
}

// serve -backend URL proxies allowed requests to the user's service: it sees the
// method, path (under the URL's own), query, headers and body, with the rate-limit
// values as request headers (a client's own of those names replaced), as the template's
// HTTP integration sends them; the client sees the service's status, headers and body
// with the rate-limit headers. A denied request never reaches it.
func TestBackendProxy(t *testing.T) {
	srv, requests := recordingBackend(t)
	g := startGatewayWith(t, serveOptions{template: templatePath, backend: srv.URL + "/base"}, map[string]string{"REDIS_ADDR": miniAt(t).Addr(), "DENY_CACHE_SIZE": "0"})
	req, err := http.NewRequest(http.MethodPost, g.url+"/orders/42?page=2&page=3", bytes.NewReader([]byte("hello")))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("X-API-Key", "k")
	req.Header.Set("X-Custom", "c")
	req.Header.Set("X-RateLimit-Remaining", "1000") // a client's attempt at the backend's headers
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusCreated || string(body) != `{"created":true}` || resp.Header.Get("X-Backend") != "yes" {
		t.Fatalf("client got %d %s %v, want the service's 201", resp.StatusCode, body, resp.Header)
	}
	for name, want := range map[string]string{"X-RateLimit-Limit": "10", "X-RateLimit-Remaining": "9", "RateLimit": `"burst";r=9;t=1`, "RateLimit-Policy": `"burst";q=10;w=10`} {
		if got := resp.Header.Values(name); len(got) != 1 || got[0] != want {
			t.Errorf("client: %s %q, want %q", name, got, want)
		}
	}
	if out := g.stdout.String(); !strings.Contains(out, "your service at "+srv.URL+"/base") { // printed before the first answer
		t.Errorf("banner does not name the backend:\n%s", out)
	}
	got := requests()
	if len(got) != 1 {
		t.Fatalf("the service saw %d requests, want 1", len(got))
	}
	s := got[0]
	if s.method != http.MethodPost || s.path != "/base/orders/42" || s.query != "page=2&page=3" || s.body != "hello" {
		t.Errorf("the service saw %s %s?%s %q", s.method, s.path, s.query, s.body)
	}
	for name, want := range map[string]string{
		"X-Api-Key": "k", "X-Custom": "c", "X-Forwarded-For": "127.0.0.1",
		"X-RateLimit-Limit": "10", "X-RateLimit-Remaining": "9", "X-RateLimit-Reset": strconv.FormatInt(t0.Unix()+1, 10),
		"RateLimit": `"burst";r=9;t=1`, "RateLimit-Policy": `"burst";q=10;w=10`,
	} {
		if v := s.header.Values(name); len(v) != 1 || v[0] != want {
			t.Errorf("the service saw %s %q, want %q", name, v, want)
		}
	}
	for range 9 {
		g.get(t, "/orders", "k")
	}
	if r := g.get(t, "/orders", "k"); r.status != http.StatusTooManyRequests {
		t.Fatalf("11th: %d, want 429", r.status)
	}
	if n := len(requests()); n != 10 {
		t.Errorf("the service saw %d requests, want the 10 allowed", n)
	}
}

// A service that cannot be reached gets the template's INTEGRATION_FAILURE gateway
// response: 502 with a JSON body like the other gateway responses, never an empty one,
// and, as API Gateway sends it, only the headers the template maps for it: none of the
// rate-limit headers that the service's own answers get.
func TestBackendUnreachable(t *testing.T) {
	srv, _ := recordingBackend(t)
	url := srv.URL
	srv.Close()
	g := startGatewayWith(t, serveOptions{template: templatePath, backend: url}, map[string]string{"REDIS_ADDR": miniAt(t).Addr()})
	r := g.get(t, "/scores", "")
	if r.status != http.StatusBadGateway || r.header.Get("Content-Type") != "application/json" {
		t.Fatalf("status %d, Content-Type %q: want 502, application/json", r.status, r.header.Get("Content-Type"))
	}
	if r.body["error"] != "Bad gateway" || r.body["message"] == nil {
		t.Errorf("body %v, want the template's INTEGRATION_FAILURE body", r.body)
	}
	if !strings.Contains(g.stderr.String(), "backend: ") {
		t.Errorf("the reason is not on stderr:\n%s", g.stderr.String())
	}
	for name := range r.header {
		if ratelimitheaders.Owned(name) {
			t.Errorf("the 502 carries %s: %q; INTEGRATION_FAILURE maps no such header", name, r.header.Get(name))
		}
	}
}

// A service that streams (server-sent events, an LLM's tokens) streams through the local
// gateway: each event it flushes reaches the client while the stream is still open,
// with the rate-limit headers, as an HTTP integration with response streaming passes it.
func TestBackendStreams(t *testing.T) {
	read := make(chan struct{})
	service := func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, "data: first\n\n")
		w.(http.Flusher).Flush()
		select { // the stream stays open until the client has the first event
		case <-read:
			io.WriteString(w, "data: last\n\n")
		case <-r.Context().Done():
		case <-time.After(10 * time.Second):
			io.WriteString(w, "data: the first event never reached the client\n\n")
		}
	}
	_, resp, events, first := streamThrough(t, service)
	close(read)
	rest, _ := io.ReadAll(events)
	if first != "data: first\n" || !strings.Contains(string(rest), "data: last") || resp.Header.Get("X-RateLimit-Remaining") != "9" {
		t.Fatalf("first line %q, then %q, headers %v", first, rest, resp.Header)
	}
}

// streamThrough starts a gateway in front of the service and opens a stream through
// it: the answer, a reader of its body, and the body's first line, read from it.
func streamThrough(t *testing.T, service http.HandlerFunc) (g *gateway, resp *http.Response, events *bufio.Reader, first string) {
	t.Helper()
	srv := httptest.NewServer(service)
	t.Cleanup(srv.Close) // last: once the gateway has stopped
	g = startGatewayWith(t, serveOptions{template: templatePath, backend: srv.URL}, map[string]string{"REDIS_ADDR": miniAt(t).Addr()})
	resp, err := http.Get(g.url + "/v1/chat")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	events = bufio.NewReader(resp.Body)
	if first, err = events.ReadString('\n'); err != nil {
		t.Fatalf("first line %q: %v", first, err)
	}
	return g, resp, events, first
}

// make run BACKEND=URL is the documented spelling of serve -backend URL.
func TestMakeRunBackend(t *testing.T) {
	out, err := exec.Command("make", "--no-print-directory", "-n", "-C", "../..", "run", "BACKEND=http://127.0.0.1:3000/v1", "PORT=9090").CombinedOutput()
	if err != nil {
		t.Fatalf("make -n run: %v\n%s", err, out)
	}
	if want := "serve -addr 127.0.0.1:9090 -backend 'http://127.0.0.1:3000/v1'"; !strings.Contains(string(out), want) {
		t.Errorf("make -n run BACKEND=...: %s, want %q", out, want)
	}
}

// TestForgedRateLimitHeadersAlwaysReplaced: whatever the decision, the backend never
// sees a client's own RateLimit, RateLimit-Policy or X-RateLimit-* headers (spelled with
// '_' for '-' too, as a CGI, WSGI or Rack backend reads them alike), and the
// client never sees the backend's: they are replaced, or removed, also when the
// decision has no figures (failing open with Redis down: degraded; every rule shadow).
// A degraded answer says so to both with X-RateLimit-Degraded: true, and so does one
// whose rules are all shadow when Redis could not decide it, whatever FAIL_MODE says.
func TestForgedRateLimitHeadersAlwaysReplaced(t *testing.T) {
	down := miniAt(t)
	downAddr := down.Addr()
	down.Close()
	shadowOnly := "defaultPlan: trial\nplans: {trial: {shadow: true, rules: [{name: burst, capacity: 10, refillPerSecond: 1}]}}"
	forged := map[string]string{
		"RateLimit": `"forged";r=1000;t=1`, "RateLimit-Policy": `"forged";q=1000;w=1`, "X-RateLimit-Limit": "1000",
		"x-ratelimit-remaining": "1000", "X-RateLimit-Reset": "1", "X-RateLimit-Degraded": "false", "X-RateLimit-Tier": "gold",
		// CGI, WSGI and Rack read these as X-RateLimit-*: a client's must not reach them.
		"X_RateLimit_Remaining": "1000", "X_RateLimit_Reservation": "r2.forged", "X-RateLimit_Lease": "r2.forged", "RateLimit_Policy": "forged",
	}
	tests := []struct {
		name string
		env  map[string]string
		want map[string]string // the rate-limit headers backend and client see, all of them
	}{
		{"degraded", map[string]string{"REDIS_ADDR": downAddr, "FAIL_MODE": "open", "REDIS_TIMEOUT_MS": "50"},
			map[string]string{"X-Ratelimit-Degraded": "true", "Ratelimit-Policy": `"burst";q=10;w=10`}},
		{"every rule shadow", map[string]string{"REDIS_ADDR": miniAt(t).Addr(), "RATE_LIMIT_CONFIG": shadowOnly}, map[string]string{}},
		{"every rule shadow, Redis down", map[string]string{"REDIS_ADDR": downAddr, "REDIS_TIMEOUT_MS": "50", "RATE_LIMIT_CONFIG": shadowOnly},
			map[string]string{"X-Ratelimit-Degraded": "true"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			srv, requests := recordingBackend(t)
			g := startGatewayWith(t, serveOptions{template: templatePath, backend: srv.URL}, tc.env)
			req, err := http.NewRequest(http.MethodGet, g.url+"/scores", nil)
			if err != nil {
				t.Fatal(err)
			}
			for name, v := range forged {
				req.Header[name] = []string{v}
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != http.StatusCreated {
				t.Fatalf("status %d, want the backend's 201", resp.StatusCode)
			}
			got := requests()
			if len(got) != 1 {
				t.Fatalf("the backend saw %d requests", len(got))
			}
			for who, h := range map[string]http.Header{"the backend": got[0].header, "the client": resp.Header} {
				rate := map[string]string{}
				for name, vs := range h {
					if n := strings.ReplaceAll(strings.ToLower(name), "_", "-"); n == "ratelimit" || n == "ratelimit-policy" || strings.HasPrefix(n, "x-ratelimit-") {
						rate[http.CanonicalHeaderKey(name)] = strings.Join(vs, " | ")
					}
				}
				if !maps.Equal(rate, tc.want) {
					t.Errorf("%s saw the rate-limit headers %v, want %v", who, rate, tc.want)
				}
			}
		})
	}
}

// Ctrl-C stops the gateway also while a stream is open: the streams still open after
// the grace period are cut, stderr says so, and serve ends without an error (exit 0),
// never with a bare "context deadline exceeded".
func TestCtrlCWithAStreamOpen(t *testing.T) {
	g, _, _, first := streamThrough(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, "data: first\n\n")
		w.(http.Flusher).Flush()
		<-r.Context().Done() // streams until the gateway hangs up
	})
	if first != "data: first\n" {
		t.Fatalf("first line %q", first)
	}
	if err := g.stop(); err != nil {
		t.Fatalf("Ctrl-C with a stream open: serve: %v", err)
	}
	if want := "closed the connections still open after 5s"; !strings.Contains(g.stderr.String(), want) {
		t.Errorf("stderr does not say %q:\n%s", want, g.stderr)
	}
}

// A backend built as docs/deploy.md says (ratelimitheaders.FromGateway refusing a call
// without the stack's secret) works behind make run as behind the REST API: with
// BUCKETGATE_BACKEND_SECRET set, every allowed request reaches it with that secret in
// X-Bucketgate-Secret, once; and, set or not, a client's own copy of the header (in any
// spelling a backend reads as it) never reaches it, as the REST API's mapping
// overwrites it.
func TestBackendSecret(t *testing.T) {
	const secret = "s3cretS3cretS3cretS3cretS3cretS3cretS3cretS3cret"
	tests := []struct {
		name   string
		env    string            // BUCKETGATE_BACKEND_SECRET
		forged map[string]string // the client's headers
		want   []string          // the X-Bucketgate-Secret values the backend sees
	}{
		{"unset, no client copy", "", nil, nil},
		{"unset, a client's copy", "", map[string]string{"X-Bucketgate-Secret": "guess"}, nil},
		{"unset, a client's copy spelled with _", "", map[string]string{"x_bucketgate_secret": "guess"}, nil},
		{"set, no client copy", secret, nil, []string{secret}},
		{"set, a client's copy", secret, map[string]string{"X-Bucketgate-Secret": "guess"}, []string{secret}},
		{"set, a client's copy spelled with _", secret, map[string]string{"X_Bucketgate_Secret": "guess"}, []string{secret}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			srv, requests := recordingBackend(t)
			g := startGatewayWith(t, serveOptions{template: templatePath, backend: srv.URL},
				map[string]string{"REDIS_ADDR": miniAt(t).Addr(), envBackendSecret: tc.env})
			req, err := http.NewRequest(http.MethodGet, g.url+"/scores", nil)
			if err != nil {
				t.Fatal(err)
			}
			for name, v := range tc.forged {
				req.Header[name] = []string{v}
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			got := requests()
			if resp.StatusCode != http.StatusCreated || len(got) != 1 {
				t.Fatalf("status %d, the backend saw %d requests: want 201, 1", resp.StatusCode, len(got))
			}
			var values []string
			for name, vs := range got[0].header {
				if ratelimitheaders.SameName(name, ratelimitheaders.HeaderGatewaySecret) {
					values = append(values, vs...)
				}
			}
			if !slices.Equal(values, tc.want) {
				t.Errorf("the backend saw X-Bucketgate-Secret %q, want %q", values, tc.want)
			}
			if ok := ratelimitheaders.FromGateway(got[0].header, secret); ok != (tc.env == secret) {
				t.Errorf("FromGateway: %v, want %v", ok, tc.env == secret)
			}
		})
	}
}

// A BUCKETGATE_BACKEND_SECRET that no HTTP header can carry stops serve with an error
// naming the variable, never echoing the value, rather than a 502 per request.
func TestBackendSecretRefused(t *testing.T) {
	for _, tc := range []struct{ name, value string }{
		{"a line break", "abc\ndef"},
		{"a NUL", "abc\x00def"},
		{"a leading space", " abc"},
		{"a trailing tab", "abc\t"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			var stdout, stderr bytes.Buffer
			ctx, cancel := context.WithCancel(context.Background())
			cancel() // serve stops at once when it starts: the variable must stop it before
			err = serve(ctx, l, serveOptions{template: templatePath, backend: "http://127.0.0.1:1"},
				getenvOf(map[string]string{"REDIS_ADDR": miniAt(t).Addr(), envBackendSecret: tc.value}), &stdout, &stderr)
			if err == nil || !strings.Contains(err.Error(), envBackendSecret) || strings.Contains(err.Error(), "abc") {
				t.Errorf("serve: %v, want an error naming %s and not the value", err, envBackendSecret)
			}
		})
	}
}
