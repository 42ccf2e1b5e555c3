package authorizer

import (
	"fmt"
	"testing"
	"time"

	"github.com/bucketgate/bucketgate"
	"github.com/bucketgate/bucketgate/internal/guard"
	"github.com/bucketgate/bucketgate/internal/testkit/samples"
	"github.com/bucketgate/bucketgate/ratelimitheaders"
)

func TestRateLimitPolicy(t *testing.T) {
	tests := []struct {
		name  string
		rules []bucketgate.Rule
		want  string
	}{
		{"free", []bucketgate.Rule{{Name: "burst", Capacity: 10, RefillPerSecond: 1}}, `"burst";q=10;w=10`},
		{"pro fills in 2 s", []bucketgate.Rule{{Name: "burst", Capacity: 100, RefillPerSecond: 50}}, `"burst";q=100;w=2`},
		{"burst and daily quota", []bucketgate.Rule{
			{Name: "burst", Capacity: 10, RefillPerSecond: 1},
			{Name: "daily", Capacity: 1000, RefillPerSecond: 1000.0 / 86400},
		}, `"burst";q=10;w=10, "daily";q=1000;w=86400`},
		{"fill time rounded up", []bucketgate.Rule{{Name: "a.b-c_d", Capacity: 3, RefillPerSecond: 2}}, `"a.b-c_d";q=3;w=2`},
		{"sub-second fill is at least 1", []bucketgate.Rule{{Name: "fast", Capacity: 1, RefillPerSecond: 1000}}, `"fast";q=1;w=1`},
		{"shadow rules are no policy", []bucketgate.Rule{
			{Name: "trial", Capacity: 5, RefillPerSecond: 1, Shadow: true},
			{Name: "burst", Capacity: 10, RefillPerSecond: 1},
			{Name: "strict", Capacity: 2, RefillPerSecond: 1, Shadow: true},
		}, `"burst";q=10;w=10`},
		{"shadow rules alone", []bucketgate.Rule{{Name: "trial", Capacity: 5, RefillPerSecond: 1, Shadow: true}}, ``},
		{"a monthly quota: its window, February's", []bucketgate.Rule{
			{Name: "burst", Capacity: 10, RefillPerSecond: 1},
			{Name: "monthly", Limit: 100000, Period: bucketgate.PeriodMonth},
		}, `"burst";q=10;w=10, "monthly";q=100000;w=2419200`},
		{"a billing month from the 15th: February 15 to March 15, 2026", []bucketgate.Rule{{Name: "m", Limit: 5, Period: bucketgate.PeriodMonth, Anchor: 15}}, `"m";q=5;w=2419200`},
		{"a concurrency rule: its most in flight, in the unit of concurrent requests, no window", []bucketgate.Rule{
			{Name: "burst", Capacity: 10, RefillPerSecond: 1},
			{Name: "streams", Concurrency: 5},
		}, `"burst";q=10;w=10, "streams";q=5;qu="concurrency"`},
		{"a day and a week", []bucketgate.Rule{{Name: "d", Limit: 5, Period: bucketgate.PeriodDay}, {Name: "w", Limit: 9, Period: bucketgate.PeriodWeek}}, `"d";q=5;w=86400, "w";q=9;w=604800`},
	}
	at := time.Date(2026, 2, 20, 9, 0, 0, 0, time.UTC)
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := rateLimitPolicy(tc.rules, at); got != tc.want {
				t.Fatalf("rateLimitPolicy = %s, want %s", got, tc.want)
			}
		})
	}
}

func TestRateLimit(t *testing.T) {
	tests := []struct {
		name string
		r    guard.Result
		want string
	}{
		{"allowed: window until full", guard.Result{Decision: bucketgate.Decision{Allowed: true, Reason: bucketgate.ReasonOK, Rule: "burst", Remaining: 7, ResetAfter: 2500 * time.Millisecond}}, `"burst";r=7;t=3`},
		{"allowed and full", guard.Result{Decision: bucketgate.Decision{Allowed: true, Reason: bucketgate.ReasonOK, Rule: "burst", Remaining: 9, ResetAfter: 0}}, `"burst";r=9;t=0`},
		{"limited: window is the retry-after", guard.Result{Decision: bucketgate.Decision{Reason: bucketgate.ReasonLimited, Rule: "burst", RetryAfter: 1 * time.Second, ResetAfter: 10 * time.Second}}, `"burst";r=0;t=1`},
		{"limited, retry-after rounded up", guard.Result{Decision: bucketgate.Decision{Reason: bucketgate.ReasonLimited, Rule: "daily", Remaining: 1, RetryAfter: 86_399_001 * time.Millisecond}}, `"daily";r=1;t=86400`},
		{"shadow rules alone: nothing enforced", guard.Result{Decision: bucketgate.Decision{Allowed: true, Reason: bucketgate.ReasonOK}}, ``},
		{"degraded: no service limit known", guard.Result{Decision: bucketgate.Decision{Allowed: true, Reason: bucketgate.ReasonDegraded, Rule: "burst"}, Failure: guard.FailureTimeout}, ``},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := rateLimit(tc.r); got != tc.want {
				t.Fatalf("rateLimit = %s, want %s", got, tc.want)
			}
		})
	}
}

func TestCeilings(t *testing.T) {
	secs := []struct {
		d    time.Duration
		want int64
	}{{0, 0}, {-time.Second, 0}, {time.Millisecond, 1}, {time.Second, 1}, {1001 * time.Millisecond, 2}}
	for _, tc := range secs {
		if got := ceilSeconds(tc.d); got != tc.want {
			t.Errorf("ceilSeconds(%v) = %d, want %d", tc.d, got, tc.want)
		}
	}
	if got := ceilUnix(t0); got != t0.Unix() {
		t.Errorf("ceilUnix(whole second) = %d, want %d", got, t0.Unix())
	}
	if got := ceilUnix(t0.Add(time.Microsecond)); got != t0.Unix()+1 {
		t.Errorf("ceilUnix(just past) = %d, want %d", got, t0.Unix()+1)
	}
}

func TestWriteSFStringEscapes(t *testing.T) {
	r := guard.Result{Decision: bucketgate.Decision{Allowed: true, Reason: bucketgate.ReasonOK, Rule: `a"b\c`}}
	if got, want := rateLimit(r), `"a\"b\\c";r=0;t=0`; got != want {
		t.Fatalf("rateLimit = %s, want %s", got, want)
	}
}

func BenchmarkRateLimitPolicy(b *testing.B) {
	rules := []bucketgate.Rule{{Name: "burst", Capacity: 10, RefillPerSecond: 1}, {Name: "daily", Capacity: 1000, RefillPerSecond: 1000.0 / 86400}}
	b.ReportAllocs()
	for b.Loop() {
		_ = rateLimitPolicy(rules, time.Time{})
	}
}

// An admission that a concurrency rule binds holds a lease the next request may wait
// for until it expires (a release may come sooner): its RateLimit window and its reset
// are the lease's expiry, the binding rule's, never the buckets' second while the next request's
// Retry-After is the lease's ttl, also on a tie with a bucket; a bucket that binds beside
// a concurrency rule (fewer left) keeps its own window.
func TestRateLimitOfALease(t *testing.T) {
	tests := []struct {
		name, rules     string
		ttlMs           int64
		rateLimit       string
		reset           time.Duration // after t0
		deniedAfterward bool
	}{
		{"concurrency 1 binds: the lease's ttl", "[{name: burst, capacity: 10, refillPerSecond: 1}, {name: streams, concurrency: 1}]", 600000, `"streams";r=0;t=600`, 600 * time.Second, true},
		// The buckets full later (100 s) are not the binding rule's: its slot frees sooner.
		{"concurrency binds, the buckets take longer: the lease's ttl still", "[{name: burst, capacity: 10, refillPerSecond: 0.01}, {name: streams, concurrency: 1}]", 30000, `"streams";r=0;t=30`, 30 * time.Second, true},
		{"concurrency binds with leases left", "[{name: burst, capacity: 10, refillPerSecond: 1}, {name: streams, concurrency: 3}]", 600000, `"streams";r=2;t=600`, 600 * time.Second, false},
		// A tie: the bucket's window alone (a second) would send the client back while
		// its slot is still held, to a 429 with Retry-After: 600.
		{"concurrency and a bucket both spent: the lease's ttl", "[{name: burst, capacity: 1, refillPerSecond: 1}, {name: streams, concurrency: 1}]", 600000, `"streams";r=0;t=600`, 600 * time.Second, true},
		{"concurrency and a bucket with as many left", "[{name: burst, capacity: 3, refillPerSecond: 1}, {name: streams, concurrency: 3}]", 600000, `"streams";r=2;t=600`, 600 * time.Second, false},
		{"a bucket binds beside a concurrency rule: its own window", "[{name: burst, capacity: 2, refillPerSecond: 1}, {name: streams, concurrency: 5}]", 600000, `"burst";r=1;t=1`, time.Second, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cfg := mustParse(t, fmt.Sprintf("defaultPlan: free\nplans: {free: %s}\nroutes: [{path: /stream, ttlMs: %d}]", tc.rules, tc.ttlMs))
			f := newFixture(t, options{config: cfg})
			event := withPath(t, samples.Read(t, restEvent), "/stream")
			a := f.mustInvoke(t, event)
			if !a.allowed(t) || a.str(t, ratelimitheaders.KeyLease) == "" {
				t.Fatalf("first request: %s, want allowed with a lease", a.raw)
			}
			if got := a.str(t, ratelimitheaders.KeyRateLimit); got != tc.rateLimit {
				t.Errorf("RateLimit %s, want %s", got, tc.rateLimit)
			}
			if got, want := a.num(t, ratelimitheaders.KeyReset), t0.Add(tc.reset).Unix(); got != want {
				t.Errorf("reset %d, want %d (t0 + %v)", got, want, tc.reset)
			}
			next := f.mustInvoke(t, event)
			if next.allowed(t) == tc.deniedAfterward {
				t.Fatalf("the next request: %s, want denied %v", next.raw, tc.deniedAfterward)
			}
			if tc.deniedAfterward && next.num(t, ratelimitheaders.KeyRetryAfter)*int64(time.Second) > int64(tc.reset) {
				t.Errorf("the next request's Retry-After %d s is past the admission's reset (t0 + %v)", next.num(t, ratelimitheaders.KeyRetryAfter), tc.reset)
			}
		})
	}
}
