package authorizer

import (
	"strconv"
	"testing"
	"time"

	"github.com/bucketgate/bucketgate/internal/config"
	"github.com/bucketgate/bucketgate/internal/testkit/samples"
	"github.com/bucketgate/bucketgate/ratelimitheaders"
)

// A monthly quota binds like a bucket: once its month is spent the answer is a 429
// whose Retry-After and X-RateLimit-Reset are the window's end, its RateLimit-Policy
// names the quota with its limit and the month's length, and RateLimit waits for the
// month's end.
func TestMonthlyQuotaBinds(t *testing.T) {
	cfg, err := config.Parse([]byte(`
defaultPlan: metered
plans:
  metered:
    - {name: burst, capacity: 100, refillPerSecond: 100}
    - {name: monthly, limit: 3, period: month}
`))
	if err != nil {
		t.Fatal(err)
	}
	f := newFixture(t, options{config: cfg})
	event := samples.Read(t, restEvent)
	for i := range 3 {
		if a := f.mustInvoke(t, event); !a.allowed(t) || a.num(t, ratelimitheaders.KeyRemaining) != int64(2-i) {
			t.Fatalf("request %d: %v", i+1, a)
		}
	}
	a := f.mustInvoke(t, event)
	end := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC) // t0 is 2025-12-11 16:15 UTC
	wait := int64(end.Sub(t0) / time.Second)
	switch {
	case a.allowed(t):
		t.Fatalf("the 4th of a month of 3: %v", a)
	case a.str(t, ratelimitheaders.KeyRule) != "monthly" || a.num(t, ratelimitheaders.KeyLimit) != 3:
		t.Errorf("binding rule %q, limit %d", a.str(t, ratelimitheaders.KeyRule), a.num(t, ratelimitheaders.KeyLimit))
	case a.num(t, ratelimitheaders.KeyRetryAfter) != wait:
		t.Errorf("retryAfter %d, want %d s: until the month's end", a.num(t, ratelimitheaders.KeyRetryAfter), wait)
	case a.num(t, ratelimitheaders.KeyReset) != end.Unix() || a.str(t, ratelimitheaders.KeyResetAt) != "2026-01-01T00:00:00Z":
		t.Errorf("reset %d (%s), want the window's end %d", a.num(t, ratelimitheaders.KeyReset), a.str(t, ratelimitheaders.KeyResetAt), end.Unix())
	case a.str(t, ratelimitheaders.KeyRateLimitPolicy) != `"burst";q=100;w=1, "monthly";q=3;w=2678400`:
		t.Errorf("policy %s: want December's 31 days", a.str(t, ratelimitheaders.KeyRateLimitPolicy))
	case a.str(t, ratelimitheaders.KeyRateLimit) != `"monthly";r=0;t=`+strconv.FormatInt(wait, 10):
		t.Errorf("RateLimit %s", a.str(t, ratelimitheaders.KeyRateLimit))
	}
}

// A daily quota binding beside a monthly quota that counted something: its answers'
// reset (X-RateLimit-Reset, the body's resetAt, an admission's RateLimit t) is the
// binding rule's, the day's end, as Retry-After and the 429's t are; not the month's,
// which told a client with 0 remaining to wait a month.
func TestDailyQuotaBindsBesideAMonth(t *testing.T) {
	cfg := mustParse(t, `
defaultPlan: metered
plans:
  metered:
    - {name: burst, capacity: 100, refillPerSecond: 100}
    - {name: daily, limit: 2, period: day}
    - {name: monthly, limit: 100, period: month}
`)
	f := newFixture(t, options{config: cfg})
	event := samples.Read(t, restEvent)
	midnight := time.Date(2025, 12, 12, 0, 0, 0, 0, time.UTC) // t0 is 2025-12-11 16:15 UTC
	untilMidnight := strconv.FormatInt(int64(midnight.Sub(t0)/time.Second), 10)
	tests := []struct {
		name      string
		allowed   bool
		rateLimit string
	}{
		{"the first: the day's quota binds, until midnight", true, `"daily";r=1;t=` + untilMidnight},
		{"the second spends the day", true, `"daily";r=0;t=` + untilMidnight},
		{"the third waits for midnight", false, `"daily";r=0;t=` + untilMidnight},
	}
	for _, tc := range tests {
		a := f.mustInvoke(t, event)
		wantRetry := int64(0)
		if !tc.allowed {
			wantRetry = int64(midnight.Sub(t0) / time.Second)
		}
		switch {
		case a.allowed(t) != tc.allowed || a.str(t, ratelimitheaders.KeyRule) != "daily" || a.num(t, ratelimitheaders.KeyLimit) != 2:
			t.Fatalf("%s: %v", tc.name, a)
		case a.str(t, ratelimitheaders.KeyRateLimit) != tc.rateLimit:
			t.Errorf("%s: RateLimit %s, want %s", tc.name, a.str(t, ratelimitheaders.KeyRateLimit), tc.rateLimit)
		case a.num(t, ratelimitheaders.KeyRetryAfter) != wantRetry:
			t.Errorf("%s: retryAfter %d, want %d", tc.name, a.num(t, ratelimitheaders.KeyRetryAfter), wantRetry)
		case a.num(t, ratelimitheaders.KeyReset) != midnight.Unix() || a.str(t, ratelimitheaders.KeyResetAt) != "2025-12-12T00:00:00Z":
			t.Errorf("%s: reset %d (%s), want midnight %d", tc.name, a.num(t, ratelimitheaders.KeyReset), a.str(t, ratelimitheaders.KeyResetAt), midnight.Unix())
		}
	}
}

// A denial of a cost above one names the rule of the longest wait (the month's) with the
// tokens of the tightest rule (the burst's), as docs/api-gateway.md says: its RateLimit
// and X-RateLimit-Remaining say 5, the burst's, while the month has 8 left.
func TestDenialOfACostNamesTheLongestWait(t *testing.T) {
	cfg := mustParse(t, `
defaultPlan: metered
plans:
  metered:
    - {name: burst, capacity: 15, refillPerSecond: 1}
    - {name: monthly, limit: 18, period: month}
routes: [{method: GET, path: /orders/42, cost: 10}]
`)
	f := newFixture(t, options{config: cfg})
	event := samples.Read(t, restEvent)
	if a := f.mustInvoke(t, event); !a.allowed(t) {
		t.Fatalf("the first 10: %v", a)
	}
	wait := strconv.FormatInt(int64(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).Sub(t0)/time.Second), 10)
	a := f.mustInvoke(t, event)
	switch {
	case a.allowed(t) || a.str(t, ratelimitheaders.KeyRule) != "monthly" || a.num(t, ratelimitheaders.KeyLimit) != 18:
		t.Fatalf("the second 10: %v, want the month's denial", a)
	case a.num(t, ratelimitheaders.KeyRemaining) != 5 || a.str(t, ratelimitheaders.KeyRateLimit) != `"monthly";r=5;t=`+wait:
		t.Errorf("remaining %d, RateLimit %s: want the burst's 5 under the month's name", a.num(t, ratelimitheaders.KeyRemaining), a.str(t, ratelimitheaders.KeyRateLimit))
	}
}

// A bucket binding beside a monthly quota that counted something resets when the bucket
// is full again, to the second at a held Redis clock: one token short after the first
// request, two after the second and at the 429, 1800 s a token; its RateLimit t says the
// same when allowed, Retry-After when denied. Not the month's end.
func TestBucketBindsBesideAMonth(t *testing.T) {
	f := newFixture(t, options{config: mustParse(t, `
defaultPlan: metered
plans:
  metered:
    - {name: burst, capacity: 2, refill: 2, per: hour}
    - {name: monthly, limit: 100, period: month}
`)})
	event := samples.Read(t, restEvent)
	tests := []struct {
		name      string
		allowed   bool
		rateLimit string
		reset     time.Duration // after t0
	}{
		{"one token left", true, `"burst";r=1;t=1800`, 1800 * time.Second},
		{"none left: full in two tokens' time", true, `"burst";r=0;t=3600`, 3600 * time.Second},
		{"denied: a token in 1800 s, full in 3600 s", false, `"burst";r=0;t=1800`, 3600 * time.Second},
	}
	for _, tc := range tests {
		a := f.mustInvoke(t, event)
		want := t0.Add(tc.reset)
		switch {
		case a.allowed(t) != tc.allowed || a.str(t, ratelimitheaders.KeyRule) != "burst":
			t.Fatalf("%s: %v", tc.name, a)
		case a.str(t, ratelimitheaders.KeyRateLimit) != tc.rateLimit:
			t.Errorf("%s: RateLimit %s, want %s", tc.name, a.str(t, ratelimitheaders.KeyRateLimit), tc.rateLimit)
		case a.num(t, ratelimitheaders.KeyReset) != want.Unix() || a.str(t, ratelimitheaders.KeyResetAt) != want.Format(time.RFC3339):
			t.Errorf("%s: reset %d (%s), want %d (%s)", tc.name, a.num(t, ratelimitheaders.KeyReset), a.str(t, ratelimitheaders.KeyResetAt), want.Unix(), want.Format(time.RFC3339))
		}
	}
}
