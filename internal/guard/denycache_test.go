package guard_test

import (
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/bucketgate/bucketgate"
	"github.com/bucketgate/bucketgate/internal/guard"
)

// waits reports whether an identical request would have to wait after r.
func waits(r guard.Result) bool {
	_, ok := r.Repeat()
	return ok
}

// repeats reports whether r is the denial an identical request gets (a denial's own).
func repeats(r guard.Result) bool {
	rep, ok := r.Repeat()
	return ok && reflect.DeepEqual(rep, r.Decision)
}

func TestDenyCache(t *testing.T) {
	_, clk, engine := miniEngine(t)
	g := guard.New(engine, guard.Options{Now: clk.Now, DenyCacheSize: 100})
	a := request("a")
	for i := range 9 {
		if r := decide(t, g, a); !r.Allowed || r.CacheHit || waits(r) {
			t.Fatalf("request %d: %+v", i+1, r)
		}
	}
	// The 10th admission takes the last token: Redis says how long until the next.
	last := decide(t, g, a)
	if rep, _ := last.Repeat(); !last.Allowed || last.CacheHit || rep.RetryAfter != 100*time.Millisecond || rep.Rule != "burst" {
		t.Fatalf("10th: %+v, want allowed with a wait of 100ms for burst", last)
	}
	denied := decide(t, g, a)
	if denied.Allowed || !denied.CacheHit || denied.Reason != bucketgate.ReasonLimited || denied.RetryAfter != 100*time.Millisecond ||
		!repeats(denied) || denied.ResetAfter != time.Second || !denied.At.Equal(last.At) {
		t.Fatalf("the first denial must come from the cache, as the admission's wait: %+v", denied)
	}

	type step struct {
		name          string
		advance       time.Duration
		q             bucketgate.Request
		wantCall      bool
		wantAllowed   bool
		wantRetry     time.Duration
		wantResetLeft time.Duration
	}
	chained := bucketgate.Request{Identity: "a", Rules: append(slices.Clone(burst), bucketgate.Rule{Name: "day", Capacity: 1000, RefillPerSecond: 1}), Cost: 1}
	steps := []step{
		{"repeat: from the cache", 0, a, false, false, 100 * time.Millisecond, time.Second},
		{"later: the wait shrinks", 40 * time.Millisecond, a, false, false, 60 * time.Millisecond, 960 * time.Millisecond},
		{"another rule set asks Redis", 0, chained, true, false, 60 * time.Millisecond, 0},
		{"another cost asks Redis", 0, bucketgate.Request{Identity: "a", Rules: burst, Cost: 2}, true, false, 160 * time.Millisecond, 0},
		{"another identity asks Redis", 0, request("b"), true, true, 0, 0},
		{"a millisecond before retry-after", 59 * time.Millisecond, a, false, false, time.Millisecond, 901 * time.Millisecond},
		{"at retry-after: Redis again", time.Millisecond, a, true, true, 0, 0},
		{"that admission's wait: from the cache", 0, a, false, false, 100 * time.Millisecond, time.Second},
	}
	src := last.Decision // the decision of Redis that a cached answer for a follows from
	for _, s := range steps {
		clk.Advance(s.advance)
		before := engine.calls.Load()
		r := decide(t, g, s.q)
		if !r.CacheHit && s.q.Identity == a.Identity && s.q.Cost == a.Cost && slices.Equal(s.q.Rules, a.Rules) {
			src = r.Decision
		}
		if r.CacheHit && !r.At.Add(r.ResetAfter).Equal(src.At.Add(src.ResetAfter)) {
			t.Fatalf("%s: cached answer resets at %v + %v, Redis said %v + %v", s.name, r.At, r.ResetAfter, src.At, src.ResetAfter)
		}
		called := engine.calls.Load() > before
		if called != s.wantCall || r.CacheHit == s.wantCall || r.Allowed != s.wantAllowed || r.RetryAfter != s.wantRetry {
			t.Fatalf("%s: asked Redis %v (want %v), %+v (want allowed %v, retry after %v)", s.name, called, s.wantCall, r, s.wantAllowed, s.wantRetry)
		}
		if r.CacheHit && (r.Reason != bucketgate.ReasonLimited || r.Rule != "burst" || r.Limit != 10 || r.ResetAfter != s.wantResetLeft) {
			t.Fatalf("%s: cached denial %+v, want reset after %v and the original decision's fields", s.name, r, s.wantResetLeft)
		}
	}
}

func TestDenyCacheIsBounded(t *testing.T) {
	_, clk, engine := miniEngine(t)
	g := guard.New(engine, guard.Options{Now: clk.Now, DenyCacheSize: 2})
	ids := []string{"a", "b", "c"}
	for _, id := range ids {
		for range 11 { // 10 allowed (the 10th caches the wait it leaves), then a denial
			decide(t, g, request(id))
		}
	}
	before := engine.calls.Load()
	hits := 0
	for _, id := range ids {
		if r := decide(t, g, request(id)); r.CacheHit {
			hits++
		} else if r.Allowed {
			t.Fatalf("%s allowed while its bucket is empty: %+v", id, r)
		}
	}
	// An unbounded cache would answer all three; a miss re-caches its identity over an
	// arbitrary other, so the hits may be anywhere from 0 to 2.
	misses := int(engine.calls.Load() - before)
	if misses == 0 || hits+misses != len(ids) {
		t.Fatalf("3 denied identities in a cache of 2: %d hits, %d misses; want at least one miss", hits, misses)
	}
}

// floodRequests and floodEvery make the flood of TestDenyCacheFlood: 1,000 requests of
// one identity at 100 per second, ten times its rule's refill of 10 per second.
const (
	floodRequests = 1000
	floodEvery    = 10 * time.Millisecond
)

// flood sends the flood through a Guard with a deny cache of cacheSize (0: none) and
// returns which requests were allowed and how many reached Redis.
func flood(t *testing.T, cacheSize int) (allowed []bool, calls int64) {
	_, clk, engine := miniEngine(t)
	g := guard.New(engine, guard.Options{Now: clk.Now, DenyCacheSize: cacheSize})
	for i := range floodRequests {
		r := decide(t, g, request("flooder"))
		allowed = append(allowed, r.Allowed)
		if r.Reason != bucketgate.ReasonOK && r.Reason != bucketgate.ReasonLimited {
			t.Fatalf("request %d: %+v", i, r)
		}
		clk.Advance(floodEvery)
	}
	return allowed, engine.calls.Load()
}

func TestDenyCacheFlood(t *testing.T) {
	withCache, cachedCalls := flood(t, 100)
	without, plainCalls := flood(t, 0)
	if !slices.Equal(withCache, without) {
		t.Fatal("the deny cache changed which requests were allowed")
	}
	admitted := int64(0)
	for _, a := range withCache {
		if a {
			admitted++
		}
	}
	// Never more than capacity + refill over the window (the model's bound).
	window := time.Duration(floodRequests-1) * floodEvery
	if limit := burst[0].Capacity + int64(burst[0].RefillPerSecond*window.Seconds()); admitted > limit {
		t.Fatalf("admitted %d > %d", admitted, limit)
	}
	deniedCalls := cachedCalls - admitted
	t.Logf("flood of %d at 10x the limit: %d admitted; Redis calls %d with the deny cache (%d for denials), %d without",
		floodRequests, admitted, cachedCalls, deniedCalls, plainCalls)
	if plainCalls != floodRequests {
		t.Fatalf("without a cache %d calls, want %d", plainCalls, floodRequests)
	}
	// Every admission needs Redis; after the burst, each one says how long until the next
	// token, so no denial reaches Redis.
	if deniedCalls != 0 {
		t.Fatalf("%d denials reached Redis for %d admissions: want none", deniedCalls, admitted)
	}
}

// With AskFirstDenial, the first repeat of a check that an admission left short goes
// to Redis, which denies it (and reports it: its crossings), and the repeats after it
// are the cache's; a denial Redis gave is served from the cache at once.
func TestDenyCacheAskFirstDenial(t *testing.T) {
	_, clk, engine := miniEngine(t)
	g := guard.New(engine, guard.Options{Now: clk.Now, DenyCacheSize: 100, AskFirstDenial: true})
	a := request("a")
	for range 10 {
		if r := decide(t, g, a); !r.Allowed {
			t.Fatalf("draining: %+v", r)
		}
	}
	for i, wantCall := range []bool{true, false, false} {
		before := engine.calls.Load()
		r := decide(t, g, a)
		if called := engine.calls.Load() > before; called != wantCall || r.Allowed || r.CacheHit == wantCall {
			t.Fatalf("denial %d: asked Redis %v (want %v): %+v", i+1, called, wantCall, r)
		}
		if wantCall && len(r.Crossings) != 1 {
			t.Fatalf("the first denial, Redis's: crossings %+v, want its Rate Limited", r.Crossings)
		}
	}
}

// TestDenyCacheGivesWayToRefundsAndResets: a refund or reset sent through a Guard drops
// its identity's cached denials at once; a denial cached anywhere else is served for
// DenyCacheMaxAge at most, however long the wait Redis gave; a shadow rule is part of
// the rule set a denial is cached for.
func TestDenyCacheGivesWayToRefundsAndResets(t *testing.T) {
	_, clk, engine := miniEngine(t)
	g := guard.New(engine, guard.Options{Now: clk.Now, DenyCacheSize: 100})
	daily := []bucketgate.Rule{{Name: "daily", Capacity: 10, RefillPerSecond: 10.0 / 86400}}
	drain := func(id string) bucketgate.Request {
		q := bucketgate.Request{Identity: id, Rules: daily, Cost: 10}
		if r := decide(t, g, q); !r.Allowed {
			t.Fatalf("draining %s: %+v", id, r)
		}
		return bucketgate.Request{Identity: id, Rules: daily, Cost: 1}
	}
	step := func(name string, q bucketgate.Request, wantCall, wantAllowed bool) {
		t.Helper()
		before := engine.calls.Load()
		r := decide(t, g, q)
		if called := engine.calls.Load() > before; called != wantCall || r.Allowed != wantAllowed || r.CacheHit == wantCall {
			t.Fatalf("%s: asked Redis %v (want %v), %+v (want allowed %v)", name, called, wantCall, r, wantAllowed)
		}
	}

	one := drain("a")
	step("drained: Redis denies", one, true, false)
	step("a repeat: from the cache", one, false, false)
	step("a refund goes to Redis", bucketgate.Request{Identity: "a", Rules: daily, Cost: 1, Op: bucketgate.OpRefund}, true, true)
	step("after the refund: Redis again", one, true, true)
	step("the admission's wait: from the cache", one, false, false)
	step("a reset goes to Redis", bucketgate.Request{Identity: "a", Rules: daily, Op: bucketgate.OpReset}, true, true)
	step("after the reset: Redis again", one, true, true)

	one = drain("b")
	step("b drained: Redis denies for hours", one, true, false)
	shadow := one
	shadow.Rules = []bucketgate.Rule{daily[0]}
	shadow.Rules[0].Shadow = true
	step("the same rule as shadow: Redis", shadow, true, true)
	clk.Advance(guard.DenyCacheMaxAge - time.Millisecond)
	step("just before the age bound: from the cache", one, false, false)
	clk.Advance(time.Millisecond)
	step("at the age bound: Redis again", one, true, false)
}

// TestDenyCacheKeepsTheWindowsEnd: a quota's denial served from the cache any time
// after Redis gave it, to the microsecond, still ends at the window's end: from its
// At's millisecond (as the reset headers count), ResetAfter reaches the window's end,
// a whole second, exactly, and not a millisecond past it, which would put the reset a
// second late; its waits stay whole milliseconds.
func TestDenyCacheKeepsTheWindowsEnd(t *testing.T) {
	tests := []struct {
		name  string
		after time.Duration
	}{
		{"at once", 0},
		{"a microsecond later", time.Microsecond},
		{"a sub-millisecond crossing At's millisecond", 400 * time.Microsecond},
		{"just under a millisecond", 999 * time.Microsecond},
		{"milliseconds and a half", 40*time.Millisecond + 500*time.Microsecond},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, clk, engine := miniEngine(t)
			g := guard.New(engine, guard.Options{Now: clk.Now, DenyCacheSize: 100})
			clk.Advance(700 * time.Microsecond) // At inside its millisecond
			daily := bucketgate.Request{Identity: "a", Rules: []bucketgate.Rule{{Name: "daily", Limit: 1, Period: bucketgate.PeriodDay}}, Cost: 1}
			first := decide(t, g, daily)
			src, ok := first.Repeat()
			if !first.Allowed || !ok {
				t.Fatalf("the admission that reaches the limit: %+v, want allowed with a wait", first)
			}
			_, end := daily.Rules[0].Window(first.At)
			clk.Advance(tc.after)
			r := decide(t, g, daily)
			switch {
			case !r.CacheHit || r.Allowed:
				t.Fatalf("%+v, want the cached denial", r)
			case !r.At.Add(r.ResetAfter).Equal(src.At.Add(src.ResetAfter)):
				t.Fatalf("resets at %v + %v, Redis said %v + %v", r.At, r.ResetAfter, src.At, src.ResetAfter)
			case !r.At.Truncate(time.Millisecond).Add(r.ResetAfter).Equal(end):
				t.Fatalf("from At's millisecond %v, ResetAfter %v reaches %v, want the window's end %v",
					r.At.Truncate(time.Millisecond), r.ResetAfter, r.At.Truncate(time.Millisecond).Add(r.ResetAfter), end)
			case r.RetryAfter%time.Millisecond != 0 || r.ResetAfter%time.Millisecond != 0 || r.RetryAfter <= 0:
				t.Fatalf("waits %v and %v, want whole milliseconds", r.RetryAfter, r.ResetAfter)
			}
		})
	}
}

// TestDenyCacheClockWentBack: the deny cache tells ages by the wall clock (see
// DenyCacheMaxAge), which may step back (NTP): a denial cached after the time the clock
// went back to is not served, however long its wait.
func TestDenyCacheClockWentBack(t *testing.T) {
	tests := []struct {
		name     string
		back     time.Duration
		wantCall bool
	}{
		{"no step: from the cache", 0, false},
		{"back a millisecond: Redis", time.Millisecond, true},
		{"back an hour: Redis", time.Hour, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, clk, engine := miniEngine(t)
			var back time.Duration
			g := guard.New(engine, guard.Options{Now: func() time.Time { return clk.Now().Add(-back) }, DenyCacheSize: 100})
			daily := bucketgate.Request{Identity: "a", Rules: []bucketgate.Rule{{Name: "daily", Capacity: 10, RefillPerSecond: 10.0 / 86400}}, Cost: 10}
			if r := decide(t, g, daily); !r.Allowed || !waits(r) {
				t.Fatalf("draining: %+v, want an admission that leaves a wait", r)
			}
			back = tc.back
			before := engine.calls.Load()
			r := decide(t, g, daily)
			if called := engine.calls.Load() > before; called != tc.wantCall || r.CacheHit == tc.wantCall || r.Allowed {
				t.Fatalf("asked Redis %v (want %v): %+v", called, tc.wantCall, r)
			}
		})
	}
}

// TestDenyCacheKeepsRequestIDs: a check with a RequestID is answered by Redis, never by
// the deny cache, so that a retry of it answers its first decision (Replayed) however
// the cache holds a denial of the same rules and cost: a retry of an admitted check must
// not be told it was limited.
func TestDenyCacheKeepsRequestIDs(t *testing.T) {
	_, _, engine := miniEngine(t)
	g := guard.New(engine, guard.Options{Now: func() time.Time { return epoch }, DenyCacheSize: 100})
	all := bucketgate.Request{Identity: "a", Rules: burst, Cost: 10, RequestID: "job-1"}
	first := decide(t, g, all)
	if !first.Allowed || first.CacheHit || !waits(first) {
		t.Fatalf("first: %+v, want allowed with a wait (every token taken)", first)
	}
	for _, name := range []string{"the retry", "a retry after another request's denial"} {
		before := engine.calls.Load()
		again := decide(t, g, all)
		if engine.calls.Load() == before || again.CacheHit || !again.Allowed || !again.Replayed {
			t.Fatalf("%s: %+v, want the first decision (allowed) replayed by Redis", name, again)
		}
		other := all
		other.RequestID = "job-2"
		if r := decide(t, g, other); r.Allowed {
			t.Fatalf("another request: %+v, want denied", r)
		}
	}
}

// TestDenyCacheAnswersReserves: a reserve is decided by Redis as the check of its
// estimate, so the deny cache answers a repeat of a reserve (or a check of the same
// cost) that Redis denied, with no reservation; a settle that gives tokens back makes
// the instance forget the identity's denials, as a refund does. A reserve's admission
// caches no denial, though it left fewer tokens than its estimate: its settle gives
// most of them back, through another instance (the backend's check function settles
// what the authorizer reserved), and a repeat denied from the cache would wait out an
// estimate that is no longer taken (an LLM client's next call 429 for minutes, after a
// call that used a few tokens).
func TestDenyCacheAnswersReserves(t *testing.T) {
	_, _, engine := miniEngine(t)
	now := func() time.Time { return epoch }
	g := guard.New(engine, guard.Options{Now: now, DenyCacheSize: 100})
	settler := guard.New(engine, guard.Options{Now: now, DenyCacheSize: 100}) // another instance
	reserve := bucketgate.Request{Identity: "a", Rules: burst, Cost: 6, Op: bucketgate.OpReserve}
	step := func(name string, g *guard.Guard, q bucketgate.Request, wantCall, wantAllowed bool) guard.Result {
		t.Helper()
		before := engine.calls.Load()
		r := decide(t, g, q)
		if called := engine.calls.Load() > before; called != wantCall || r.Allowed != wantAllowed || r.CacheHit == wantCall {
			t.Fatalf("%s: asked Redis %v (want %v), %+v (want allowed %v)", name, called, wantCall, r, wantAllowed)
		}
		return r
	}
	first := step("first reserve", g, reserve, true, true)
	if first.Reservation == "" || !waits(first) {
		t.Fatalf("first reserve: %+v, want a reservation and a wait (4 tokens left)", first)
	}
	step("another instance settles at 1: 5 back, 9 left", settler, bucketgate.Request{Identity: "a", Rules: burst, Op: bucketgate.OpSettle, ID: first.Reservation, Cost: 1}, true, true)
	second := step("the same reserve: Redis, not a denial the first's estimate implied", g, reserve, true, true)

	denied := step("3 left: Redis denies the same reserve", g, reserve, true, false)
	if r := step("the same reserve: from the cache", g, reserve, false, false); r.Reservation != "" || r.Reason != bucketgate.ReasonLimited || r.RetryAfter != denied.RetryAfter {
		t.Fatalf("a cached denial of a reserve: %+v, want Redis's denial %+v with no reservation", r, denied)
	}
	check := reserve
	check.Op = bucketgate.OpCheck
	step("a check of the estimate: from the cache", g, check, false, false)
	step("a settle gives 4 back: Redis", g, bucketgate.Request{Identity: "a", Rules: burst, Op: bucketgate.OpSettle, ID: second.Reservation, Cost: 2}, true, true)
	step("after the settle: Redis again", g, reserve, true, true)
}
