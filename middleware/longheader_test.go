package middleware_test

import (
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"testing"

	"github.com/bucketgate/bucketgate/middleware"
	"github.com/bucketgate/bucketgate/ratelimitheaders"
)

// A header as long as a Go server lets one be (its default header limit is 1 MB) costs
// the Limiter a walk through it, not a list of its parts: an API key header of one key
// copied, joined by commas, is that key, and an X-Forwarded-For of blank hops after the
// source a trusted proxy added is that source, each allocating less than the header's
// length.
func TestLongHeaderCostsAWalk(t *testing.T) {
	keys := "defaultPlan: free\nunknownKeys: refuse\nplans: {free: [{name: burst, capacity: 10, refill: 1, per: day}]}\nkeys: {" + digest("k") + ": free}"
	for _, tc := range []struct {
		name, doc, header, value string
	}{
		{"a key copied", keys, "X-API-Key", strings.Repeat("k,", 1<<19)},
		{"blank hops", tenTokens, "X-Forwarded-For", strings.Repeat(",", 1<<20) + "198.51.100.1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l := newLimiter(t, map[string]string{"RATE_LIMIT_CONFIG": tc.doc}, middleware.Options{TrustedProxies: []string{"192.0.2.0/24"}})
			serve(l, httptest.NewRequest(http.MethodGet, "/", nil)) // the connection to Redis made before, by another caller
			r := httptest.NewRequest(http.MethodGet, "/", nil)      // from 192.0.2.1, the trusted proxy
			r.Header.Set(tc.header, tc.value)
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			w := serve(l, r)
			runtime.ReadMemStats(&after)
			if w.Code != http.StatusOK || header(w.Header(), ratelimitheaders.HeaderRemaining) != "9" {
				t.Fatalf("%d, %s remaining: want 200 with 9 remaining", w.Code, header(w.Header(), ratelimitheaders.HeaderRemaining))
			}
			if got := after.TotalAlloc - before.TotalAlloc; got > uint64(len(tc.value)) {
				t.Errorf("a header of %d bytes: %d bytes allocated, want fewer than the header's", len(tc.value), got)
			}
		})
	}
}
