package middleware_test

import (
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/bucketgate/bucketgate/internal/testkit/redistest"
	"github.com/bucketgate/bucketgate/middleware"
	"github.com/bucketgate/bucketgate/ratelimitheaders"
)

// The answers' X-RateLimit-Reset, RateLimit t and the 429 body's resetAt are, on a real
// Redis, the binding rule's reset, the one whose remaining they show: beside a monthly
// quota that counted something, a daily quota's midnight, a bucket's time until full;
// not the month's end, which told a client with X-RateLimit-Remaining: 0 to wait a month.
func TestResetIsTheBindingRules(t *testing.T) {
	midnight := func(at time.Time) int64 { return at.UTC().Truncate(24 * time.Hour).Add(24 * time.Hour).Unix() }
	tests := []struct {
		name  string
		rules string
		// reset gives the bounds of the answers' reset, Unix s, n requests in (1, 2, the
		// 429), for a request made between before and after.
		reset func(n int, before, after time.Time) (lo, hi int64)
	}{
		{"a day's quota beside a month's", "[{name: daily, limit: 2, period: day}, {name: monthly, limit: 100, period: month}]",
			func(_ int, before, after time.Time) (int64, int64) { return midnight(before), midnight(after) }},
		// Two tokens, one every 1800 s: one short of full after the first, two after the
		// second and at the 429; refilled meanwhile by less than a minute's worth.
		{"a bucket beside a month's quota", "[{name: burst, capacity: 2, refill: 2, per: hour}, {name: monthly, limit: 100, period: month}]",
			func(n int, before, after time.Time) (int64, int64) {
				short := int64(min(n, 2)) * 1800
				return before.Unix() + short - 60, after.Unix() + short + 1
			}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			l := newLimiter(t, map[string]string{"REDIS_ADDR": redistest.Start(t).Addr, "RATE_LIMIT_CONFIG": "defaultPlan: free\nplans: {free: " + tc.rules + "}"}, middleware.Options{})
			for n := 1; n <= 3; n++ {
				before := time.Now()
				w := serve(l, httptest.NewRequest("GET", "/orders/42", nil))
				lo, hi := tc.reset(n, before, time.Now())
				reset := int64(whole(t, w.Header(), ratelimitheaders.KeyReset))
				if want := map[bool]int{true: http.StatusOK, false: http.StatusTooManyRequests}[n < 3]; w.Code != want {
					t.Fatalf("request %d: %d, want %d", n, w.Code, want)
				}
				if reset < lo || reset > hi {
					t.Errorf("request %d: X-RateLimit-Reset %d, want %d to %d: the binding rule's (headers %v)", n, reset, lo, hi, w.Header())
				}
				if n == 3 {
					if at := resetAt(t, w.Body.String()); at != time.Unix(reset, 0).UTC().Format(time.RFC3339) {
						t.Errorf("429 body's resetAt %s, X-RateLimit-Reset %d", at, reset)
					}
					continue
				}
				rl := header(w.Header(), ratelimitheaders.HeaderRateLimit)
				window, err := strconv.ParseInt(rl[strings.LastIndex(rl, "=")+1:], 10, 64) // t, the last parameter
				if err != nil || !strings.Contains(rl, ";t=") || before.Unix()+window < lo-1 || before.Unix()+window > hi {
					t.Errorf("request %d: RateLimit %s, want t the reset's %d to %d s away", n, rl, lo-before.Unix(), hi-before.Unix())
				}
			}
		})
	}
}
