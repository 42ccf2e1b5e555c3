package middleware_test

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/bucketgate/bucketgate/middleware"
	"github.com/bucketgate/bucketgate/ratelimitheaders"
)

// Behind a CORS handler (Example_browsers'), a preflight spends nothing and is never
// refused, and the limiter's 429 keeps the CORS headers set before it, so that a page
// reads its status and Retry-After.
func TestBrowsersBehindACORSHandler(t *testing.T) {
	l := newLimiter(t, map[string]string{"RATE_LIMIT_CONFIG": tenTokens + "\nanonymous: refuse"}, middleware.Options{})
	h := cors(l.Handler(ok))
	send := func(method, origin string) *httptest.ResponseRecorder {
		r := httptest.NewRequest(method, "/scores", nil)
		r.Header.Set("X-API-Key", "k")
		if origin != "" {
			r.Header.Set("Origin", origin)
		}
		if method == http.MethodOptions {
			r.Header.Del("X-API-Key") // a browser sends no credentials with a preflight
			r.Header.Set("Access-Control-Request-Method", "GET")
		}
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		return w
	}
	for i := range 10 {
		if w := send(http.MethodOptions, allowedOrigin); w.Code != http.StatusNoContent || w.Header().Get("Access-Control-Allow-Origin") != allowedOrigin {
			t.Fatalf("preflight %d: %d, headers %v", i+1, w.Code, w.Header())
		}
		if w := send(http.MethodGet, allowedOrigin); w.Code != http.StatusOK || w.Header().Get("Access-Control-Expose-Headers") != ratelimitheaders.ExposeHeaders {
			t.Fatalf("request %d after its preflight: %d, headers %v", i+1, w.Code, w.Header())
		}
	}
	w := send(http.MethodGet, allowedOrigin)
	for name, want := range map[string]string{
		"Access-Control-Allow-Origin":     allowedOrigin,
		"Access-Control-Expose-Headers":   ratelimitheaders.ExposeHeaders,
		ratelimitheaders.HeaderRetryAfter: w.Header().Get(ratelimitheaders.HeaderRetryAfter),
	} {
		if got := w.Header().Get(name); w.Code != http.StatusTooManyRequests || got != want || got == "" {
			t.Errorf("the 11th request: %d, %s %q, want %q", w.Code, name, got, want)
		}
	}
	if w := send(http.MethodOptions, "https://elsewhere.example"); w.Code != http.StatusUnauthorized || w.Header().Get("Access-Control-Allow-Origin") != "" {
		t.Errorf("a preflight from another origin reaches the limiter (anonymous: refuse): %d, headers %v", w.Code, w.Header())
	}
}
