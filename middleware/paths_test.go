package middleware_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/bucketgate/bucketgate/middleware"
	"github.com/bucketgate/bucketgate/ratelimitheaders"
)

// The middleware in front of a real Go ServeMux charges a request at least the cost of
// the route the mux serves it by, however its dot segments are disguised: "%2e%2e" is a
// segment to Go ("/a/{id}/admin"), though Node reads it as ".." ("/admin"), so it pays
// the dearer route's cost.
func TestMiddlewareChargesWhatTheMuxServes(t *testing.T) {
	const doc = "defaultPlan: free\nplans: {free: [{name: burst, capacity: 1000, refill: 1, per: minute}]}\n" +
		"routes: [{path: /a/*/admin, cost: 100}, {path: /admin, cost: 2}]"
	costs := map[string]float64{"/a/{id}/admin": 100, "/admin": 2}
	mux := http.NewServeMux()
	for pattern := range costs {
		mux.HandleFunc(pattern, func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, r.Pattern) })
	}
	for _, tc := range []struct{ name, path string }{
		{"a segment", "/a/x/admin"},
		{"dots", "/a/../admin"},
		{"dots with a parameter", "/a/..;x/admin"},
		{"encoded dots", "/a/%2e%2e/admin"},
		{"an encoded dot", "/a/%2e/admin"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l := newLimiter(t, map[string]string{"RATE_LIMIT_CONFIG": doc}, middleware.Options{})
			service := httptest.NewServer(l.Handler(mux))
			defer service.Close()
			resp, err := http.Get(service.URL + tc.path)
			if err != nil {
				t.Fatal(err)
			}
			served, err := io.ReadAll(resp.Body)
			resp.Body.Close()
			cost, ok := costs[string(served)]
			if err != nil || resp.StatusCode != http.StatusOK || !ok {
				t.Fatalf("GET %s: %d %q, %v: want one of the mux's patterns", tc.path, resp.StatusCode, served, err)
			}
			if charged := 1000 - whole(t, resp.Header, ratelimitheaders.KeyRemaining); charged < cost {
				t.Errorf("GET %s: charged %v, want %v or more: the mux serves it by %s", tc.path, charged, cost, served)
			}
		})
	}
}

// A path whose readings match routes none of which is dearer (each adds a rule the
// other lacks) takes the rules of both, at the most tokens either takes: a request to
// it is decided on every bucket either reading's route would charge.
func TestMiddlewareChargesBothRoutesRules(t *testing.T) {
	const doc = "defaultPlan: free\nplans: {free: [{name: burst, capacity: 1000, refill: 1, per: minute}]}\n" +
		"routes: [{path: /a/*/admin, cost: 3, rules: [{name: admins, capacity: 30, refill: 1, per: minute}]}, " +
		"{path: /admin, cost: 2, rules: [{name: audit, capacity: 20, refill: 1, per: minute}]}]"
	l := newLimiter(t, map[string]string{"RATE_LIMIT_CONFIG": doc}, middleware.Options{})
	w := serve(l, httptest.NewRequest("GET", "/a/%2e%2e/admin", nil))
	policy := header(w.Header(), ratelimitheaders.HeaderRateLimitPolicy)
	if w.Code != http.StatusOK || !strings.Contains(policy, `"admins"`) || !strings.Contains(policy, `"audit"`) {
		t.Fatalf("GET /a/%%2e%%2e/admin: %d, RateLimit-Policy %q: want the service's answer, decided on admins and audit", w.Code, policy)
	}
	if left := whole(t, w.Header(), ratelimitheaders.KeyRemaining); left != 17 {
		t.Errorf("GET /a/%%2e%%2e/admin: %v left, want 17: the 3 tokens of /a/{id}/admin from audit's 20, the fewest left", left)
	}
}
