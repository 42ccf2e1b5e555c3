package main

import (
	"net/http"
	"strings"
	"testing"
)

// The authorizer decides a request by the path the backend receives, as it is sent, as
// routes match (internal/testkit/samples/path-variants.json): a percent-encoded '#',
// '?' or '/' stays inside its segment for the service behind the gateway, so it must
// for the route too. Decoded first, "/files/a%23/delete" read as "/files/a", and
// "/files/a%2Fb/delete" as four segments, and both escaped the cost of the route the
// service then served them by; so did "/files/%20/delete" and "/files/;x/delete", read
// as "/files/delete", and "/files/%2e%2e/delete", which Go serves by /files/{id}/delete.
func TestRoutesMatchThePathTheBackendReceives(t *testing.T) {
	srv, requests := recordingBackend(t)
	const doc = `{defaultPlan: free, plans: {free: [{name: burst, capacity: 10, refillPerSecond: 1}]},
		routes: [{path: /files/*/delete, cost: 10}]}`
	tests := []struct {
		name, path string
		sent       string // the path the service receives (after the backend URL's own)
	}{
		{"plain", "/files/a/delete", "/files/a/delete"},
		{"encoded #", "/files/a%23/delete", "/files/a%23/delete"},
		{"encoded ?", "/files/a%3F/delete", "/files/a%3F/delete"},
		{"encoded # and ?", "/files/%23%3F/delete", "/files/%23%3F/delete"},
		{"encoded /", "/files/a%2Fb/delete", "/files/a%2Fb/delete"},
		// Go, Node and Python serve a segment of spaces, or of ;parameters alone, as a
		// segment: /files/{id}/delete with the id " " or ";x".
		{"a segment of spaces", "/files/%20/delete", "/files/%20/delete"},
		{"a segment of two spaces", "/files/%20%20/delete", "/files/%20%20/delete"},
		{"a segment of ;parameters", "/files/;x/delete", "/files/;x/delete"},
		{"a segment of a semicolon", "/files/;/delete", "/files/;/delete"},
		{"a segment of a tab", "/files/%09/delete", "/files/%09/delete"},
		// Go's ServeMux and chi serve an encoded dot segment as a segment too, though Node
		// reads it as a dot: the dearer reading's route.
		{"encoded dots", "/files/%2e%2e/delete", "/files/%2e%2e/delete"},
		{"an encoded dot", "/files/%2E/delete", "/files/%2E/delete"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			g := startGatewayWith(t, serveOptions{template: templatePath, backend: srv.URL}, map[string]string{
				"REDIS_ADDR": miniAt(t).Addr(), "DENY_CACHE_SIZE": "0", "RATE_LIMIT_CONFIG": doc})
			before := len(requests())
			req, err := http.NewRequest(http.MethodGet, g.url+tc.path, nil)
			if err != nil {
				t.Fatal(err)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			got := requests()
			if resp.StatusCode != http.StatusCreated || len(got) != before+1 {
				t.Fatalf("%s: %d, %d requests reached the service: want the service's 201, once", tc.path, resp.StatusCode, len(got)-before)
			}
			if raw := got[len(got)-1].rawPath; raw != tc.sent {
				t.Errorf("the service received %q, want %q", raw, tc.sent)
			}
			if left := resp.Header.Get("X-RateLimit-Remaining"); left != "0" {
				t.Errorf("%s: X-RateLimit-Remaining %q, want 0: the route /files/*/delete costs 10 of the 10", tc.path, left)
			}
		})
	}
}

// The access log writes a request's path as sent: a percent-encoded line break stays
// encoded, so a client cannot write lines of its own into the gateway's output.
func TestAccessLogShowsThePathAsSent(t *testing.T) {
	g := startGateway(t, map[string]string{"REDIS_ADDR": miniAt(t).Addr()})
	const forged = "00:00:00 GET /admin -> 200"
	path := "/x%0A" + strings.ReplaceAll(strings.ReplaceAll(forged, " ", "%20"), ">", "%3E")
	if r := g.get(t, path, ""); r.status != http.StatusOK {
		t.Fatalf("GET %s: %d", path, r.status)
	}
	out := g.stdout.String()
	for line := range strings.Lines(out) {
		if strings.HasPrefix(line, forged) {
			t.Errorf("the access log holds a line the client wrote:\n%s", out)
		}
	}
	if !strings.Contains(out, "GET "+path+" -> 200") {
		t.Errorf("the access log does not show the path as sent, %s:\n%s", path, out)
	}
}

// Every path goes to the authorizer as it is sent, as API Gateway sends it, however it
// is spelt: none is answered by a redirect to its cleaned form (Go's ServeMux answers
// "//scores" or "/a/../scores" so) that no authorizer decided and no gateway response
// shaped.
func TestUncleanPathsGoThroughTheAuthorizer(t *testing.T) {
	g := startGateway(t, map[string]string{"REDIS_ADDR": miniAt(t).Addr()})
	client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	for _, path := range []string{"//scores", "/a/../scores", "/scores/./x", "/scores//x", "//2015-03-31/functions/f/invocations"} {
		t.Run(path, func(t *testing.T) {
			resp, err := client.Get(g.url + path)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK || resp.Header.Get("X-RateLimit-Limit") != "10" {
				t.Errorf("GET %s: %d (Location %q, X-RateLimit-Limit %q): want the sample backend's 200 with the decision's headers",
					path, resp.StatusCode, resp.Header.Get("Location"), resp.Header.Get("X-RateLimit-Limit"))
			}
		})
	}
}
