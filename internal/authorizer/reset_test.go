package authorizer

import (
	"fmt"
	"testing"
	"time"

	"github.com/bucketgate/bucketgate/internal/testkit/redistest"
	"github.com/bucketgate/bucketgate/internal/testkit/samples"
	"github.com/bucketgate/bucketgate/ratelimitheaders"
)

// resetStep is one call of TestResetIsTheBindingRules and its answer: reset gives the
// bounds of its reset (Unix s) for a call made between before and after.
type resetStep struct {
	allowed   bool
	rule      string
	remaining int64
	reset     func(before, after time.Time) (lo, hi int64)
}

// The reset of an answer, on a real Redis, is its binding rule's, the one whose
// remaining it shows (docs/api-gateway.md): a daily quota's midnight beside a monthly
// quota that counted something, a bucket's time until full beside one; not the month's
// end, which told a client with 0 remaining to wait a month. So is an admission's
// RateLimit t. Both the REST context (the 429's body and headers) and the HTTP API's.
func TestResetIsTheBindingRules(t *testing.T) {
	day := func(before, after time.Time) (int64, int64) {
		return before.UTC().Truncate(24 * time.Hour).Add(24 * time.Hour).Unix(), after.UTC().Truncate(24 * time.Hour).Add(24 * time.Hour).Unix()
	}
	// The bucket's reset, n tokens (1800 s each) short of full: refilled meanwhile by
	// less than a minute's worth on a loaded machine.
	short := func(n int64) func(before, after time.Time) (int64, int64) {
		return func(before, after time.Time) (int64, int64) {
			return before.Unix() + n*1800 - 60, after.Unix() + n*1800 + 1
		}
	}
	tests := []struct {
		name  string
		plan  string
		steps []resetStep
	}{
		{"a day's quota beside a month's", "[{name: daily, limit: 2, period: day}, {name: monthly, limit: 100, period: month}]",
			[]resetStep{{true, "daily", 1, day}, {true, "daily", 0, day}, {false, "daily", 0, day}}},
		{"a bucket beside a month's quota", "[{name: burst, capacity: 2, refill: 2, per: hour}, {name: monthly, limit: 100, period: month}]",
			[]resetStep{{true, "burst", 1, short(1)}, {true, "burst", 0, short(2)}, {false, "burst", 0, short(2)}}},
	}
	for _, tc := range tests {
		for _, event := range []string{restEvent, httpEvent} {
			t.Run(tc.name+"/"+event, func(t *testing.T) {
				f := newFixture(t, options{config: mustParse(t, "defaultPlan: metered\nplans: {metered: "+tc.plan+"}\n"),
					redis: redistest.Client(t, redistest.Start(t).Addr)})
				for i, st := range tc.steps {
					before := time.Now()
					a := f.mustInvoke(t, samples.Read(t, event))
					lo, hi := st.reset(before, time.Now())
					reset := a.num(t, ratelimitheaders.KeyReset)
					var window int64 // RateLimit's t
					if _, err := fmt.Sscanf(a.str(t, ratelimitheaders.KeyRateLimit), fmt.Sprintf("%q;r=%d;t=%%d", st.rule, st.remaining), &window); err != nil {
						t.Fatalf("request %d: RateLimit %s: %v", i+1, a.str(t, ratelimitheaders.KeyRateLimit), err)
					}
					switch {
					case a.allowed(t) != st.allowed || a.str(t, ratelimitheaders.KeyRule) != st.rule || a.num(t, ratelimitheaders.KeyRemaining) != st.remaining:
						t.Fatalf("request %d: %v, want allowed %v by %s with %d left", i+1, a.Context, st.allowed, st.rule, st.remaining)
					case reset < lo || reset > hi:
						t.Errorf("request %d: reset %d (%s), want %d to %d: the binding rule's", i+1, reset, a.str(t, ratelimitheaders.KeyResetAt), lo, hi)
					case a.str(t, ratelimitheaders.KeyResetAt) != time.Unix(reset, 0).UTC().Format(time.RFC3339):
						t.Errorf("request %d: resetAt %s, reset %d", i+1, a.str(t, ratelimitheaders.KeyResetAt), reset)
					case st.allowed && (before.Unix()+window < lo-1 || before.Unix()+window > hi):
						t.Errorf("request %d: RateLimit t=%d, want the reset's %d to %d s away", i+1, window, lo-before.Unix(), hi-before.Unix())
					}
				}
			})
		}
	}
}
