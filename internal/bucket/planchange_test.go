package bucket_test

import (
	"cmp"
	"context"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/rueidis"

	"github.com/bucketgate/bucketgate"
	"github.com/bucketgate/bucketgate/internal/bucket"
)

// planChanges are a bucket drained (or a quota spent) under one plan, then read under
// another by a call that admits nothing: the state must outlive what the new plan says.
var planChanges = []struct {
	name   string
	before []bucketgate.Rule // cost: the first rule's capacity or limit (or spent), admitted
	spent  int64
	after  bucketgate.Request
}{
	{"slower refill, denied", []bucketgate.Rule{{Name: "burst", Capacity: 200, RefillPerSecond: 100}}, 0,
		bucketgate.Request{Rules: []bucketgate.Rule{{Name: "burst", Capacity: 200, RefillPerSecond: 0.001}}, Cost: 1}},
	{"larger capacity, denied", []bucketgate.Rule{{Name: "burst", Capacity: 200, RefillPerSecond: 100}}, 0,
		bucketgate.Request{Rules: []bucketgate.Rule{{Name: "burst", Capacity: 2000, RefillPerSecond: 100}}, Cost: 50}},
	{"slower refill, peeked", []bucketgate.Rule{{Name: "burst", Capacity: 200, RefillPerSecond: 100}}, 0,
		bucketgate.Request{Rules: []bucketgate.Rule{{Name: "burst", Capacity: 200, RefillPerSecond: 0.001}}}},
	{"slower refill, refunded", []bucketgate.Rule{{Name: "burst", Capacity: 200, RefillPerSecond: 100}}, 0,
		bucketgate.Request{Rules: []bucketgate.Rule{{Name: "burst", Capacity: 200, RefillPerSecond: 0.001}}, Op: bucketgate.OpRefund, Cost: 1}},
	{"slower refill, denied by a second rule", []bucketgate.Rule{{Name: "burst", Capacity: 200, RefillPerSecond: 100}, {Name: "daily", Limit: 200, Period: bucketgate.PeriodDay}}, 0,
		bucketgate.Request{Rules: []bucketgate.Rule{{Name: "daily", Limit: 200, Period: bucketgate.PeriodDay}, {Name: "burst", Capacity: 200, RefillPerSecond: 0.001}}, Cost: 1}},
	{"quota limit lowered, denied", []bucketgate.Rule{{Name: "daily", Limit: 200, Period: bucketgate.PeriodDay}}, 0,
		bucketgate.Request{Rules: []bucketgate.Rule{{Name: "daily", Limit: 100, Period: bucketgate.PeriodDay}}, Cost: 1}},
	{"larger capacity, denied by a lease", []bucketgate.Rule{{Name: "burst", Capacity: 200, RefillPerSecond: 100}, {Name: "streams", Concurrency: 1}}, 100,
		bucketgate.Request{Rules: []bucketgate.Rule{{Name: "burst", Capacity: 2000, RefillPerSecond: 100}, {Name: "streams", Concurrency: 1}}, Cost: 1}},
	{"quota from a day to a month, denied", []bucketgate.Rule{{Name: "q", Limit: 200, Period: bucketgate.PeriodDay}}, 0,
		bucketgate.Request{Rules: []bucketgate.Rule{{Name: "q", Limit: 200, Period: bucketgate.PeriodMonth, Anchor: 1}}, Cost: 1}},
}

// TestPlanChangeOutlivesOldExpiry: a bucket drained under a fast plan, then denied,
// peeked or refunded under a slower one (or a larger capacity), is not full again when
// the old plan's expiry passes: the key lives until the rules of the call that read it
// are full, and a peek ten seconds later (past the old plan's expiry) still finds the
// state, as the model does. Quotas keep their windows either way. On miniredis, whose
// clock the test moves.
func TestPlanChangeOutlivesOldExpiry(t *testing.T) {
	for _, tc := range planChanges {
		t.Run(tc.name, func(t *testing.T) {
			m := newMini(t)
			l := bucket.New(m.client)
			model := bucket.NewModel()
			step := func(q bucketgate.Request) bucketgate.Decision {
				t.Helper()
				q.Identity = "changed"
				got, want := decide(t, l, q), model.Decide(m.now, q)
				if !sameDecision(got, want) {
					t.Fatalf("%+v:\nscript %+v\nmodel  %+v", q, got, want)
				}
				compareStored(t, m.client, model, "changed", m.now, true)
				return got
			}
			step(bucketgate.Request{Rules: tc.before, Cost: cmp.Or(tc.spent, tc.before[0].Max())})
			m.advance(100 * time.Millisecond)
			if d := step(tc.after); tc.after.Op == bucketgate.OpCheck && tc.after.Cost > 0 && d.Allowed {
				t.Fatalf("under the new plan: %+v, want denied", d)
			}
			m.advance(10 * time.Second)
			d := step(bucketgate.Request{Rules: tc.after.Rules})
			for i, r := range d.Rules {
				if r.ResetAfter == 0 {
					t.Fatalf("a peek 10 s later: %s is full (%+v): the state the new plan keeps for longer is gone", tc.after.Rules[i].Name, d)
				}
			}
		})
	}
}

// TestPlanChangeExpiryRealRedis: on redis-server (or valkey-server), after a call under
// another plan the key expires no sooner than its answer says every rule is full again
// (its ResetAfter, but for a lease's denial), and exactly when the model says.
func TestPlanChangeExpiryRealRedis(t *testing.T) {
	l, c := real(t)
	model := bucket.NewModel()
	for _, tc := range planChanges {
		t.Run(tc.name, func(t *testing.T) {
			id := "changed " + tc.name
			first := bucketgate.Request{Identity: id, Rules: tc.before, Cost: cmp.Or(tc.spent, tc.before[0].Max())}
			if got := decide(t, l, first); !sameDecision(got, model.Decide(got.At, first)) {
				t.Fatalf("the first plan: %+v, model %+v", got, model.Decide(got.At, first))
			}
			q := tc.after
			q.Identity = id
			got := decide(t, l, q)
			if want := model.Decide(got.At, q); !sameDecision(got, want) {
				t.Fatalf("under the new plan:\nredis %+v\nmodel %+v", got, want)
			}
			// A lease's denial describes its set, which is not this key (the model tells).
			at := mustInt(t, do(t, c, c.B().Pexpiretime().Key(bucket.Key(id)).Build()))
			if full := got.At.Add(got.ResetAfter).UnixMilli(); at < full && got.Rule != "streams" {
				t.Fatalf("%+v: the key expires at %d, before every rule is full (%d)", got, at, full)
			}
			compareExpiry(t, c, model, id)
		})
	}
}

// sameDecision reports whether the script's decision is the model's, their lease ids
// aside (each names its own): both carry one or neither does.
func sameDecision(got, want bucketgate.Decision) bool {
	if (got.Lease == "") != (want.Lease == "") {
		return false
	}
	got.Lease, want.Lease = "", ""
	return reflect.DeepEqual(got, want)
}

// TestExpiryCalls counts the PEXPIREAT calls the script makes on redis-server (INFO
// commandstats, reset before each phase): an admission of a quota's window set the
// key's expiry, so a later admission makes one call at most (it made two, GT then NX),
// and a denial none while the quota's window outlives every rule.
func TestExpiryCalls(t *testing.T) {
	monthly := bucketgate.Rule{Name: "monthly", Limit: 100000, Period: bucketgate.PeriodMonth}
	for _, tc := range []struct {
		name    string
		rules   []bucketgate.Rule
		cost    int64
		allowed bool
		most    int // PEXPIREAT calls for ten such checks
	}{
		{"admissions of a bucket and a quota", []bucketgate.Rule{{Name: "burst", Capacity: 100, RefillPerSecond: 10}, monthly}, 1, true, 0},
		{"admissions of a quota", []bucketgate.Rule{monthly}, 1, true, 0},
		{"denials of a bucket under a quota", []bucketgate.Rule{{Name: "burst", Capacity: 100, RefillPerSecond: 0.01}, monthly}, 100, false, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, c := real(t)
			var k clock // still: no check of the connection after an idle second, whose PEXPIREAT would count
			l := bucket.New(c, bucket.Clock(k.now))
			q := bucketgate.Request{Identity: "calls", Rules: tc.rules, Cost: tc.cost}
			decide(t, l, q) // the key's first write
			do(t, c, c.B().ConfigResetstat().Build())
			expectRun(t, l, q, 10, tc.allowed)
			if calls := commandCalls(t, c, "pexpireat"); calls > tc.most {
				t.Fatalf("%d PEXPIREAT calls for ten checks, want %d at most", calls, tc.most)
			}
		})
	}
}

// commandCalls is how many times redis-server on c ran the command cmd (lower case)
// since its statistics were last reset (CONFIG RESETSTAT).
func commandCalls(t testing.TB, c rueidis.Client, cmd string) int {
	t.Helper()
	stats, err := c.Do(context.Background(), c.B().Info().Section("commandstats").Build()).ToString()
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := strings.Cut(stats, "cmdstat_"+cmd+":calls=")
	if !ok {
		return 0
	}
	calls, err := strconv.Atoi(rest[:strings.IndexByte(rest, ',')])
	if err != nil {
		t.Fatalf("INFO commandstats of %s: %v", cmd, err)
	}
	return calls
}

// TestShadowOutlivesDenials: a shadow bucket drained under a fast plan, then read by
// denials of an enforced rule under a slower one, keeps its state until it is full under
// the slower plan: the denials let the key live that long (its shadow rules too, not only
// the enforced ones), so a peek past the enforced rule's time (and the old plan's
// expiry) still finds the shadow rule short, as the model does; on redis-server, the key
// expires no sooner. A shadow rule reset early would under-count the denials enforcing it
// would add.
func TestShadowOutlivesDenials(t *testing.T) {
	enforced := bucketgate.Rule{Name: "burst", Capacity: 20, RefillPerSecond: 1}
	trial := func(refill float64) bucketgate.Rule {
		return bucketgate.Rule{Name: "trial", Capacity: 100, RefillPerSecond: refill, Shadow: true}
	}
	before := bucketgate.Request{Identity: "trial", Rules: []bucketgate.Rule{enforced, trial(100)}, Cost: 20}
	after := bucketgate.Request{Identity: "trial", Rules: []bucketgate.Rule{enforced, trial(0.001)}, Cost: 20}
	t.Run("miniredis", func(t *testing.T) {
		m := newMini(t)
		l := bucket.New(m.client)
		model := bucket.NewModel()
		step := func(q bucketgate.Request) bucketgate.Decision {
			t.Helper()
			got, want := decide(t, l, q), model.Decide(m.now, q)
			if !sameDecision(got, want) {
				t.Fatalf("%+v:\nscript %+v\nmodel  %+v", q, got, want)
			}
			compareStored(t, m.client, model, q.Identity, m.now, true)
			return got
		}
		step(before)
		m.advance(100 * time.Millisecond)
		if d := step(after); d.Allowed {
			t.Fatalf("under the slower plan: %+v, want denied", d)
		}
		m.advance(30 * time.Second) // the enforced rule full, the old plan's expiry past
		peek := after
		peek.Cost = 0
		if d := step(peek); d.Rules[1].ResetAfter == 0 {
			t.Fatalf("a peek 30 s later: the shadow rule is full (%+v): its state under the slower plan is gone", d)
		}
	})
	t.Run("real", func(t *testing.T) {
		l, c := real(t)
		model := bucket.NewModel()
		for _, q := range []bucketgate.Request{before, after} {
			got := decide(t, l, q)
			if want := model.Decide(got.At, q); !sameDecision(got, want) {
				t.Fatalf("%+v:\nredis %+v\nmodel %+v", q, got, want)
			}
			compareExpiry(t, c, model, q.Identity)
			if q.Cost == after.Cost && q.Rules[1] == after.Rules[1] {
				at := mustInt(t, do(t, c, c.B().Pexpiretime().Key(bucket.Key(q.Identity)).Build()))
				if full := got.At.Add(19_000 * time.Second).UnixMilli(); at < full { // 20 tokens at 0.001 a second
					t.Fatalf("after the denial the key expires at %d, before the shadow rule is full (%d at least)", at, full)
				}
			}
		}
	})
}

// TestSettleAboveAfterAPlanCut: a settle above its estimate takes the rest and never
// gives anything back, also when the plan cut the rule's capacity or limit since the
// reserve, below what a debt or a count already held: a bucket already in a debt deeper
// than its new capacity, or a quota counting more than twice its new limit, stays where
// it was (it was clamped to minus the new capacity, or twice the new limit: tokens given
// back, which the old plan, back in the window, admitted again). On redis-server (or
// valkey-server), as the model does.
func TestSettleAboveAfterAPlanCut(t *testing.T) {
	for _, tc := range []struct {
		name        string
		old, cut    bucketgate.Rule
		spent       int64 // taken under the old rule before the two reserves of 5
		spent2      int64 // the first reserve settled at, under the old rule
		left        int64 // remaining of a peek under the old rule in the end, at most
		fullAtLeast time.Duration
	}{
		{"a quota's limit cut below half its count", bucketgate.Rule{Name: "q", Limit: 1000, Period: bucketgate.PeriodMonth},
			bucketgate.Rule{Name: "q", Limit: 100, Period: bucketgate.PeriodMonth}, 890, 5, 100, 0},
		{"a bucket's capacity cut below its debt", bucketgate.Rule{Name: "b", Capacity: 1000, RefillPerSecond: 0.001},
			bucketgate.Rule{Name: "b", Capacity: 100, RefillPerSecond: 0.001}, 990, 905, 0, 1_800_000 * time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l, c := real(t)
			model := bucket.NewModel()
			id := "cut"
			step := heldStep(t, l, c, model, id)
			old, cut := []bucketgate.Rule{tc.old}, []bucketgate.Rule{tc.cut}
			step(bucketgate.Request{Rules: old, Cost: tc.spent}, "")
			var ids, mids []string
			for range 2 {
				q := bucketgate.Request{Identity: id, Rules: old, Op: bucketgate.OpReserve, Cost: 5}
				got, err := l.Decide(context.Background(), q)
				if err != nil || !got.Allowed {
					t.Fatalf("reserve: %+v, %v", got, err)
				}
				want, err := model.Hold(got.At, q, bucket.DefaultIdempotency)
				if err != nil || !want.Allowed {
					t.Fatalf("the model's reserve: %+v, %v", want, err)
				}
				ids, mids = append(ids, got.Reservation), append(mids, want.Reservation)
			}
			step(bucketgate.Request{Rules: old, Op: bucketgate.OpSettle, Cost: tc.spent2, ID: ids[0]}, mids[0])
			before, _ := step(bucketgate.Request{Rules: old}, "")
			step(bucketgate.Request{Rules: cut, Op: bucketgate.OpSettle, Cost: 10, ID: ids[1]}, mids[1])
			after, _ := step(bucketgate.Request{Rules: old}, "")
			if after.Remaining > min(before.Remaining, tc.left) || after.ResetAfter < tc.fullAtLeast {
				t.Fatalf("a settle 5 above its estimate under the cut plan gave back: before %+v\nafter %+v", before, after)
			}
		})
	}
}

// TestSettleBelowAfterAWindowEdit: a settle below its estimate the same UTC day as its
// reserve gives the difference back to a quota whose window a plan moved since (a
// monthly anchor edited, a daily quota made monthly): no window can have ended since
// (every window ends at a midnight UTC), so the count stored is the one the reserve
// took from, whatever window the settle's rules would put the reserve in. It gave
// nothing back. Script and model, decision by decision and state by state.
func TestSettleBelowAfterAWindowEdit(t *testing.T) {
	monthly := func(anchor uint8) bucketgate.Rule {
		return bucketgate.Rule{Name: "q", Limit: 100, Period: bucketgate.PeriodMonth, Anchor: anchor}
	}
	for _, tc := range []struct {
		name     string
		old, now bucketgate.Rule
	}{
		{"anchor 1 made 15", monthly(1), monthly(15)},
		{"anchor 15 made 1", monthly(15), monthly(1)},
		{"a daily quota made monthly", bucketgate.Rule{Name: "q", Limit: 100, Period: bucketgate.PeriodDay}, monthly(1)},
		{"a weekly quota made monthly", bucketgate.Rule{Name: "q", Limit: 100, Period: bucketgate.PeriodWeek}, monthly(15)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l, c := real(t)
			// A reserve and its settle that straddle a midnight UTC test nothing here:
			// once, a second identity's pair cannot straddle one too.
			for _, id := range []string{"edited", "edited-again"} {
				if settleBelowAfterEdit(t, l, c, id, tc.old, tc.now) {
					return
				}
			}
			t.Fatal("two reserves and their settles each straddled a midnight UTC")
		})
	}
}

// settleBelowAfterEdit reserves 5 of id's quota under old and settles it at 0 under now,
// script and model, and reports whether the two were on one UTC day, when it checks
// that the whole limit is left.
func settleBelowAfterEdit(t *testing.T, l *bucket.Limiter, c rueidis.Client, id string, old, now bucketgate.Rule) bool {
	t.Helper()
	model := bucket.NewModel()
	step := heldStep(t, l, c, model, id)
	q := bucketgate.Request{Identity: id, Rules: []bucketgate.Rule{old}, Op: bucketgate.OpReserve, Cost: 5}
	reserved, err := l.Decide(context.Background(), q)
	if err != nil || !reserved.Allowed {
		t.Fatalf("reserve: %+v, %v", reserved, err)
	}
	mres, err := model.Hold(reserved.At, q, bucket.DefaultIdempotency)
	if err != nil || !mres.Allowed {
		t.Fatalf("the model's reserve: %+v, %v", mres, err)
	}
	rules := []bucketgate.Rule{now}
	settled, _ := step(bucketgate.Request{Rules: rules, Op: bucketgate.OpSettle, Cost: 0, ID: reserved.Reservation}, mres.Reservation)
	if !settled.At.Truncate(24 * time.Hour).Equal(reserved.At.Truncate(24 * time.Hour)) {
		return false
	}
	if p, _ := step(bucketgate.Request{Rules: rules}, ""); p.Remaining != 100 {
		t.Fatalf("after a settle at 0 the day of its reserve of 5: %+v, want 100 left", p)
	}
	return true
}

// TestLeaseWaitUnderALoweredConcurrency: a plan that lowers a concurrency rule below the
// leases held denies every acquire until enough of them are gone, and its retry-after
// is until then: with three leases held (of 1, 2 and 3 minutes) and a concurrency of 2
// now, until the second lease expires (two must go), not the first, after which the
// retry was denied again. The leases held are still released, and once one is, the
// retry-after is until the next expiry. On redis-server (or valkey-server), as the
// model does.
func TestLeaseWaitUnderALoweredConcurrency(t *testing.T) {
	l, _ := real(t)
	model := bucket.NewModel()
	streams := func(n int32) []bucketgate.Rule {
		return []bucketgate.Rule{{Name: "streams", Concurrency: n}, {Name: "burst", Capacity: 100, RefillPerSecond: 100}}
	}
	step := heldStep(t, l, nil, model, "lowered")
	var ids, mids []string
	for _, ttl := range []time.Duration{time.Minute, 2 * time.Minute, 3 * time.Minute} {
		d, m := step(bucketgate.Request{Rules: streams(3), Cost: 1, TTL: ttl}, "")
		if !d.Allowed {
			t.Fatalf("acquire under 3: %+v", d)
		}
		ids, mids = append(ids, d.Lease), append(mids, m.Lease)
	}
	acquire := bucketgate.Request{Rules: streams(2), Cost: 1, TTL: time.Minute}
	if d, _ := step(acquire, ""); d.Allowed || d.Rule != "streams" || d.RetryAfter <= 110*time.Second || d.RetryAfter > 2*time.Minute || d.ResetAfter < 170*time.Second {
		t.Fatalf("acquire under 2 with 3 held: %+v; want denied until the second lease expires", d)
	}
	if d, _ := step(bucketgate.Request{Rules: streams(2), Op: bucketgate.OpRelease, ID: ids[1]}, mids[1]); !d.Released {
		t.Fatalf("release of the second lease under 2: %+v", d)
	}
	if d, _ := step(acquire, ""); d.Allowed || d.RetryAfter <= 50*time.Second || d.RetryAfter > time.Minute {
		t.Fatalf("acquire under 2 with 2 held: %+v; want denied until the first lease expires", d)
	}
}

// heldStep returns a step of a test of holds: it decides q for id by the script (through
// l) and by model (with mid as q's id when not empty, the model's own id of a hold),
// fails t unless both decide alike (their reservation ids aside) and, with c, store
// alike, and returns both decisions.
func heldStep(t *testing.T, l *bucket.Limiter, c rueidis.Client, model *bucket.Model, id string) func(q bucketgate.Request, mid string) (bucketgate.Decision, bucketgate.Decision) {
	return func(q bucketgate.Request, mid string) (bucketgate.Decision, bucketgate.Decision) {
		t.Helper()
		q.Identity = id
		mq := q
		if mid != "" {
			mq.ID = mid
		}
		got, want, err := decideBoth(t, l, model, q, mq)
		if err != nil {
			t.Fatalf("%+v: %v", q, err)
		}
		got.Reservation, want.Reservation = "", ""
		if !sameDecision(got, want) {
			t.Fatalf("%+v:\nredis %+v\nmodel %+v", q, got, want)
		}
		if c != nil {
			compareStored(t, c, model, id, got.At, false)
		}
		return got, want
	}
}
