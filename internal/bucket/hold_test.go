package bucket_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/redis/rueidis"

	"github.com/bucketgate/bucketgate"
	"github.com/bucketgate/bucketgate/internal/bucket"
)

// TestReserveSettle: a reserve takes its estimate and answers an id; a settle gives
// back what the estimate took beyond the actual cost, or takes the rest into a debt of
// the capacity at most; settling again answers the first outcome; a cancel gives every
// token back; the same requestId answers the first decision and writes nothing.
func TestReserveSettle(t *testing.T) {
	l, _ := real(t)
	ctx := context.Background()
	slow := []bucketgate.Rule{{Name: "tokens", Capacity: 10, RefillPerSecond: 0.001}, {Name: "monthly", Limit: 100, Period: bucketgate.PeriodMonth}}
	q := func(id string, op bucketgate.Op, cost int64) bucketgate.Request {
		return bucketgate.Request{Identity: id, Rules: slow, Op: op, Cost: cost}
	}
	peek := func(id string) []bucketgate.RuleState {
		t.Helper()
		d, err := l.Decide(ctx, q(id, bucketgate.OpCheck, 0))
		if err != nil {
			t.Fatal(err)
		}
		return d.Rules
	}
	r, err := l.Decide(ctx, q("a", bucketgate.OpReserve, 6))
	if err != nil || !r.Allowed || !strings.HasPrefix(r.Reservation, "r3.") || r.Remaining != 4 || r.Expires.Sub(r.At) < 299*time.Second {
		t.Fatalf("reserve 6 = %+v, %v", r, err)
	}
	settle := q("a", bucketgate.OpSettle, 2)
	settle.ID = r.Reservation
	s, err := l.Decide(ctx, settle)
	if err != nil || !s.Allowed || s.Replayed || s.Settled != 2 {
		t.Fatalf("settle 2 = %+v, %v", s, err)
	}
	if got := peek("a"); got[0].Remaining != 8 || got[1].Remaining != 98 {
		t.Fatalf("after settling 6 at 2: %+v", got)
	}
	settle.Cost = 9
	if s, err := l.Decide(ctx, settle); err != nil || !s.Replayed || s.Settled != 2 {
		t.Fatalf("settle again = %+v, %v; want the first outcome", s, err)
	}
	if got := peek("a"); got[0].Remaining != 8 {
		t.Fatalf("a second settle changed the bucket: %+v", got)
	}

	// Over the estimate: into a debt of the capacity at most, and a quota over its limit.
	r, _ = l.Decide(ctx, q("b", bucketgate.OpReserve, 5))
	settle = q("b", bucketgate.OpSettle, 40)
	settle.ID = r.Reservation
	if s, err := l.Decide(ctx, settle); err != nil || !s.Allowed || s.Remaining != 0 {
		t.Fatalf("settle 40 = %+v, %v", s, err)
	}
	if d, err := l.Decide(ctx, q("b", bucketgate.OpCheck, 1)); err != nil || d.Allowed || d.RetryAfter < 10999*time.Second {
		t.Fatalf("a check on a debt of 10 = %+v, %v; want denied for 11 tokens' refill (less what the time since the settle refilled)", d, err)
	}
	if got := peek("b"); got[0].Remaining != 0 || got[1].Remaining != 60 {
		t.Fatalf("after settling 5 at 40: %+v", got)
	}

	// Cancel: every token back.
	r, _ = l.Decide(ctx, q("c", bucketgate.OpReserve, 7))
	cancel := q("c", bucketgate.OpCancel, 0)
	cancel.ID = r.Reservation
	if s, err := l.Decide(ctx, cancel); err != nil || s.Settled != 0 {
		t.Fatalf("cancel = %+v, %v", s, err)
	}
	if got := peek("c"); got[0].Remaining != 10 || got[1].Remaining != 100 {
		t.Fatalf("after cancel: %+v", got)
	}

	// Idempotent: the same requestId answers the first decision, another request under
	// it is refused.
	idem := q("d", bucketgate.OpCheck, 3)
	idem.RequestID = "req-1"
	first, err := l.Decide(ctx, idem)
	if err != nil || !first.Allowed || first.Replayed {
		t.Fatalf("first = %+v, %v", first, err)
	}
	again, err := l.Decide(ctx, idem)
	if err != nil || !again.Replayed || again.Remaining != first.Remaining || !again.At.Equal(first.At) {
		t.Fatalf("again = %+v, %v; first %+v", again, err, first)
	}
	if got := peek("d"); got[0].Remaining != 7 {
		t.Fatalf("a replay took tokens: %+v", got)
	}
	idem.Cost = 4
	if _, err := l.Decide(ctx, idem); !errors.Is(err, bucketgate.ErrConflict) || !strings.Contains(err.Error(), "another request") {
		t.Fatalf("another request under the requestId: %v", err)
	}
}

// TestSettleShadowDenied: a reserve that a shadow rule denied in shadow took nothing
// from that rule, so its settle (or cancel) gives it nothing back and takes nothing more
// from it, whatever the order of the rules: the shadow rule's bucket or quota stays the
// one it would have alone in front of the requests the enforced rules allow, and its
// denials those that enforcing it would add.
func TestSettleShadowDenied(t *testing.T) {
	l, _ := real(t)
	ctx := context.Background()
	tokens := bucketgate.Rule{Name: "tokens", Capacity: 100, RefillPerSecond: 0.001}
	trial := bucketgate.Rule{Name: "trial", Capacity: 5, RefillPerSecond: 0.001, Shadow: true}
	trialMonth := bucketgate.Rule{Name: "trial-month", Limit: 5, Period: bucketgate.PeriodMonth, Shadow: true}
	streams := bucketgate.Rule{Name: "streams", Concurrency: 5}
	tests := []struct {
		name   string
		rules  []bucketgate.Rule
		op     bucketgate.Op
		actual int64
		want   int64 // the enforced bucket's tokens after the settle
	}{
		{"cancel", []bucketgate.Rule{tokens, trial, trialMonth}, bucketgate.OpCancel, 0, 97},
		{"settle below the estimate", []bucketgate.Rule{tokens, trial, trialMonth}, bucketgate.OpSettle, 1, 96},
		{"settle above the estimate", []bucketgate.Rule{tokens, trial, trialMonth}, bucketgate.OpSettle, 9, 88},
		{"shadow rules first", []bucketgate.Rule{trialMonth, trial, tokens}, bucketgate.OpCancel, 0, 97},
		{"a concurrency rule first", []bucketgate.Rule{streams, trial, tokens, trialMonth}, bucketgate.OpSettle, 1, 96},
	}
	for i, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			q := bucketgate.Request{Identity: fmt.Sprintf("shadow-denied-%d", i), Rules: tc.rules, Cost: 3}
			if d, err := l.Decide(ctx, q); err != nil || !d.Allowed || d.ShadowLimited != 0 {
				t.Fatalf("check 3 = %+v, %v", d, err)
			}
			q.Op, q.Cost = bucketgate.OpReserve, 4 // 2 left in each shadow rule: a shadow denial of both
			r, err := l.Decide(ctx, q)
			var shadows bucketgate.RuleSet
			for j, rule := range tc.rules {
				if rule.Shadow {
					shadows |= 1 << j
				}
			}
			if err != nil || !r.Allowed || r.Reservation == "" || r.ShadowLimited != shadows {
				t.Fatalf("reserve 4 = %+v, %v; want allowed, shadow denials %b", r, err, shadows)
			}
			settle := bucketgate.Request{Identity: q.Identity, Rules: tc.rules, Op: tc.op, Cost: tc.actual, ID: r.Reservation}
			if s, err := l.Decide(ctx, settle); err != nil || !s.Allowed || s.Settled != tc.actual {
				t.Fatalf("%v = %+v, %v", tc.op, s, err)
			}
			d, err := l.Decide(ctx, bucketgate.Request{Identity: q.Identity, Rules: tc.rules})
			if err != nil {
				t.Fatal(err)
			}
			for j, rule := range tc.rules {
				want := int64(2) // a shadow rule: as the check of 3 left it
				switch {
				case rule.IsConcurrency():
					continue
				case !rule.Shadow:
					want = tc.want
				}
				if got := d.Rules[j].Remaining; got != want {
					t.Errorf("rule %s after the %v: %d left, want %d", rule.Name, tc.op, got, want)
				}
			}
		})
	}
}

// TestSettleRefused: an expired reservation stays charged at its estimate; an id forged,
// of another identity, of other rules or of another secret is refused; nothing changes.
func TestSettleRefused(t *testing.T) {
	_, c := real(t)
	l := bucket.New(c, bucket.Secret([]byte("the first secret, 32 bytes long.")))
	other := bucket.New(c, bucket.Secret([]byte("the other secret, also that long.")))
	ctx := context.Background()
	rules := []bucketgate.Rule{{Name: "tokens", Capacity: 10, RefillPerSecond: 0.001}}
	r, err := l.Decide(ctx, bucketgate.Request{Identity: "a", Rules: rules, Op: bucketgate.OpReserve, Cost: 4, TTL: time.Millisecond})
	if err != nil || !r.Allowed {
		t.Fatal(r, err)
	}
	time.Sleep(5 * time.Millisecond)
	settle := func(l *bucket.Limiter, id, identity string, rules []bucketgate.Rule) error {
		_, err := l.Decide(ctx, bucketgate.Request{Identity: identity, Rules: rules, Op: bucketgate.OpSettle, Cost: 1, ID: id})
		return err
	}
	forged := forge(r.Reservation)
	both := []bucketgate.Rule{{Name: "streams", Concurrency: 2}, rules[0]}
	held, err := l.Decide(ctx, bucketgate.Request{Identity: "c", Rules: both, Op: bucketgate.OpReserve, Cost: 1})
	if err != nil || held.Reservation == "" || held.Lease == "" {
		t.Fatal(held, err)
	}
	release := func(id string) error {
		_, err := l.Decide(ctx, bucketgate.Request{Identity: "c", Rules: both, Op: bucketgate.OpRelease, ID: id})
		return err
	}
	for _, tt := range []struct {
		name, want string
		err        error
	}{
		{"expired", "stays charged at its estimate", settle(l, r.Reservation, "a", rules)},
		{"forged", "not an id this limiter made", settle(l, forged, "a", rules)},
		{"malformed", "not an id this limiter made", settle(l, "r2.x", "a", rules)},
		{"of another identity", "not an id this limiter made", settle(l, r.Reservation, "b", rules)},
		{"of another secret", "not an id this limiter made", settle(other, r.Reservation, "a", rules)},
		{"of other rules", "not an id this limiter made", settle(l, r.Reservation, "a", []bucketgate.Rule{{Name: "x", Capacity: 10, RefillPerSecond: 1}})},
		{"a lease's", `lease's id, not a reservation's: a release returns it`, settle(l, held.Lease, "c", both)},
		{"released, a reservation's", `reservation's id, not a lease's: a settle or a cancel ends it`, release(held.Reservation)},
	} {
		if !errors.Is(tt.err, bucketgate.ErrConflict) || !strings.Contains(tt.err.Error(), tt.want) {
			t.Errorf("%s: %v, want ErrConflict saying %q", tt.name, tt.err, tt.want)
		}
	}
	if d, err := l.Decide(ctx, bucketgate.Request{Identity: "a", Rules: rules}); err != nil || d.Rules[0].Remaining != 6 {
		t.Fatalf("after the refusals: %+v, %v; want the estimate still charged", d, err)
	}
}

// TestSettleOfARuleThatChangedKind: a reservation of a bucket whose name is a quota by
// its settle (a plan or a document changed the rule's kind, keeping its name), or of a
// quota that is a bucket by then, is refused as one of other rules: the rule it would
// give back to never held the estimate, and a quota would admit more than its limit.
func TestSettleOfARuleThatChangedKind(t *testing.T) {
	_, c := real(t)
	l := bucket.New(c)
	ctx := context.Background()
	bucketRule := []bucketgate.Rule{{Name: "tokens", Capacity: 100, RefillPerSecond: 0.001}}
	quotaRule := []bucketgate.Rule{{Name: "tokens", Limit: 100, Period: bucketgate.PeriodMonth}}
	for _, tc := range []struct {
		name          string
		reserved, now []bucketgate.Rule
	}{
		{"a bucket made a quota", bucketRule, quotaRule},
		{"a quota made a bucket", quotaRule, bucketRule},
	} {
		identity := "kind-" + tc.now[0].Period.String()
		r, err := l.Decide(ctx, bucketgate.Request{Identity: identity, Rules: tc.reserved, Op: bucketgate.OpReserve, Cost: 50})
		if err != nil || !r.Allowed {
			t.Fatal(r, err)
		}
		if d, err := l.Decide(ctx, bucketgate.Request{Identity: identity, Rules: tc.now, Cost: 60}); err != nil || !d.Allowed {
			t.Fatalf("%s: spending 60 of the new rule: %+v, %v", tc.name, d, err)
		}
		_, err = l.Decide(ctx, bucketgate.Request{Identity: identity, Rules: tc.now, Op: bucketgate.OpSettle, Cost: 0, ID: r.Reservation})
		if !errors.Is(err, bucketgate.ErrConflict) || !strings.Contains(err.Error(), "not an id this limiter made") {
			t.Errorf("%s: the settle: %v, want ErrConflict", tc.name, err)
		}
		if d, err := l.Decide(ctx, bucketgate.Request{Identity: identity, Rules: tc.now, Cost: 0}); err != nil || d.Rules[0].Remaining != 40 {
			t.Errorf("%s: after the settle: %+v, %v; want 40 left, nothing given back", tc.name, d, err)
		}
	}
}

// TestSettleAfterExpiry: a settle made before its reservation expired answers its first
// outcome after the expiry too (a retry whose answer was lost), whatever cost it names;
// one never settled is refused there, its estimate still charged.
func TestSettleAfterExpiry(t *testing.T) {
	_, c := real(t)
	l := bucket.New(c, bucket.Secret([]byte("the first secret, 32 bytes long.")))
	ctx := context.Background()
	rules := []bucketgate.Rule{{Name: "tokens", Capacity: 10, RefillPerSecond: 0.001}}
	reserve := func(cost int64) bucketgate.Decision {
		t.Helper()
		d, err := l.Decide(ctx, bucketgate.Request{Identity: "a", Rules: rules, Op: bucketgate.OpReserve, Cost: cost, TTL: time.Second})
		if err != nil || !d.Allowed {
			t.Fatalf("reserve %d = %+v, %v", cost, d, err)
		}
		return d
	}
	settle := func(id string, cost int64) (bucketgate.Decision, error) {
		return l.Decide(ctx, bucketgate.Request{Identity: "a", Rules: rules, Op: bucketgate.OpSettle, Cost: cost, ID: id})
	}
	// Each step's time is its own: settled at once after its reserve (a second, however
	// slow the machine), and the sleep until both reservations expired, the later one's
	// expiry (a reserve made a while after the first).
	settled := reserve(4)
	first, err := settle(settled.Reservation, 1)
	if err != nil || first.Replayed || first.Settled != 1 {
		t.Fatalf("settle 4 at 1 = %+v, %v", first, err)
	}
	unsettled := reserve(3)
	time.Sleep(time.Until(unsettled.Expires.Add(20 * time.Millisecond)))
	again, err := settle(settled.Reservation, 9)
	if err != nil || !again.Replayed || again.Settled != 1 || !again.At.Equal(first.At) || again.Remaining != first.Remaining {
		t.Fatalf("settled again after the expiry = %+v, %v; want the first outcome %+v", again, err, first)
	}
	if _, err := settle(unsettled.Reservation, 1); !errors.Is(err, bucketgate.ErrConflict) || !strings.Contains(err.Error(), "stays charged at its estimate") {
		t.Fatalf("a first settle after the expiry: %v, want ErrConflict saying it stays charged", err)
	}
	if d, err := l.Decide(ctx, bucketgate.Request{Identity: "a", Rules: rules}); err != nil || d.Rules[0].Remaining != 6 {
		t.Fatalf("after the settles: %+v, %v; want 10 - 4 + 3 (settled at 1) - 3 (unsettled) = 6 before this check", d, err)
	}
}

// TestDifferentialHolds holds reserves, settles (under and over the estimate, into
// debt, after expiry, twice), cancels and idempotent requests on real Redis to the
// model, among plain checks, refunds, resets (settles after them too) and time steps;
// usage kept 35 days.
func TestDifferentialHolds(t *testing.T) {
	_, c := real(t)
	differentialHolds(t, c, 3000, 35)
}

// reservation is one the differential test made: its ids in Redis and in the model.
type reservation struct {
	redis, model string
	q            bucketgate.Request
	short        bool              // a ttl of 1 ms: expired when settled
	at           time.Time         // its reserve's
	settled      []bucketgate.Rule // the rules of its first settle (or cancel), once settled
}

// differentialHolds runs ops random operations with holds against c and the model, usage
// kept usageDays days, comparing every decision and error, and in the end every
// identity's stored fields and usage (which settles under and over their estimates,
// cancels and settles made twice correct, or not).
func differentialHolds(t *testing.T, c rueidis.Client, ops, usageDays int) {
	t.Helper()
	l := bucket.New(c, bucket.Usage(usageDays))
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 31))
	pool := []bucketgate.Rule{
		{Name: "slow", Capacity: 20, RefillPerSecond: 0.5},
		{Name: "tiny", Capacity: 5, RefillPerSecond: 0.01},
		{Name: "fast", Capacity: 30, RefillPerSecond: 1000},
		{Name: "shadow", Capacity: 6, RefillPerSecond: 0.01, Shadow: true},
		{Name: "q-day", Limit: 40, Period: bucketgate.PeriodDay},
		{Name: "q-month", Limit: 25, Period: bucketgate.PeriodMonth, Anchor: 3},
	}
	ids := []string{"hold", "hold{b}c", "hold\x00\xff", "hold%7B"} // none of the other differential tests'
	model := bucket.NewModel()
	model.UsageDays = usageDays
	var held []reservation
	resets := map[string]time.Time{} // each identity's last reset
	counts := map[string]int{}
	var last time.Time
	for range ops {
		id := ids[rng.IntN(len(ids))]
		var q bucketgate.Request
		var r *reservation
		switch op := rng.IntN(100); {
		case op < 5:
			shiftStamps(t, c, model, id, pool, time.Duration(rng.Int64N(int64(20*time.Second))))
			counts["step"]++
			continue
		case op < 30:
			q = randomRequest(rng, id, pool)
		case op < 60 || len(held) == 0:
			q = randomRequest(rng, id, pool)
			q.Op, q.Cost = bucketgate.OpReserve, 1+rng.Int64N(q.Cost+3)
			for _, rule := range q.Rules {
				q.Cost = min(q.Cost, rule.Max())
			}
			if rng.IntN(10) == 0 {
				q.TTL = time.Millisecond
			}
		case op < 90:
			r = &held[rng.IntN(len(held))]
			q = r.q
			q.Op, q.Cost, q.TTL, q.RequestID = bucketgate.OpSettle, rng.Int64N(3*r.q.Cost+1), 0, ""
			if rng.IntN(5) == 0 {
				q.Op, q.Cost = bucketgate.OpCancel, 0
			}
			if rng.IntN(4) == 0 {
				q.Rules = append([]bucketgate.Rule(nil), q.Rules...)
				q.Rules[0] = otherPlan(q.Rules[0]) // a settle under another plan: the same names
			}
			add := pool[rng.IntN(len(pool))]
			named := func(r bucketgate.Rule) bool { return r.Name == add.Name }
			// The rules changed since the reserve, or since a first settle: a settle
			// answered again names the binding rule of its first among its own rules.
			switch k := rng.IntN(8); {
			case k == 0: // a rule added to the plan since (a shadow one, say): it gets nothing
				if !slices.ContainsFunc(q.Rules, named) {
					q.Rules = append(slices.Clone(q.Rules), add)
					counts["settled with a rule added"]++
				}
			case k == 1: // one removed (and perhaps one added): gone; a plan of none of its rules is refused
				if q.Rules = slices.Clone(q.Rules[1:]); !slices.ContainsFunc(q.Rules, named) {
					q.Rules = append(q.Rules, add)
				}
				counts["settled with a rule removed"]++
			}
			if r.short {
				time.Sleep(2 * time.Millisecond)
			}
		default:
			q = randomRequest(rng, id, pool)
			q.Cost = max(q.Cost, 1)
			if q.Op == bucketgate.OpReset {
				q.Op = bucketgate.OpCheck
			}
		}
		if q.Op != bucketgate.OpSettle && q.Op != bucketgate.OpCancel && q.Op != bucketgate.OpReset && (q.Op != bucketgate.OpCheck || q.Cost > 0) && rng.IntN(2) == 0 {
			q.RequestID = fmt.Sprintf("req-%d", rng.IntN(40))
			// A plan that made a rule shadow or enforced since the requestId's first use:
			// the same request's fingerprint, answered again as first decided.
			if k := rng.IntN(len(q.Rules)); rng.IntN(4) == 0 && !q.Rules[k].IsConcurrency() && (!q.Rules[k].Shadow || q.Cost <= q.Rules[k].Max()) {
				q.Rules = slices.Clone(q.Rules)
				q.Rules[k].Shadow = !q.Rules[k].Shadow
				counts["a rule made shadow or enforced"]++
			}
		}
		mq := q
		if r != nil {
			q.ID, mq.ID = r.redis, r.model
		}
		got, want, err := decideBoth(t, l, model, q, mq)
		if err != nil {
			counts["conflict"]++
			if strings.Contains(err.Error(), "expired") {
				counts["expired"]++
			}
			continue
		}
		last = got.At
		if r != nil && r.settled == nil {
			r.settled = q.Rules
		} else if r != nil && !reflect.DeepEqual(q.Rules, r.settled) {
			counts["settled again under other rules"]++
		}
		if q.Op == bucketgate.OpReserve && got.Allowed {
			held = append(held, reservation{redis: got.Reservation, model: want.Reservation, q: q, short: q.TTL == time.Millisecond, at: got.At})
		}
		if q.Op == bucketgate.OpReset {
			resets[q.Identity] = got.At
		}
		if r != nil && q.Cost < r.q.Cost && !got.Replayed && !resets[q.Identity].Before(r.at) {
			counts["given back after a reset"]++
		}
		if (got.Reservation == "") != (want.Reservation == "") {
			t.Fatalf("request %+v: reservation %q, model %q", q, got.Reservation, want.Reservation)
		}
		got.Reservation, want.Reservation = "", ""
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("request %+v:\nredis %+v\nmodel %+v", q, got, want)
		}
		counts[q.Op.String()+" "+string(got.Reason)]++
		if got.Replayed {
			counts["replayed"]++
		}
		if q.Op == bucketgate.OpSettle && q.Cost > r.q.Cost && !got.Replayed {
			counts["settle over"]++
		}
	}
	t.Logf("operations: %v", counts)
	if counts["reserve ok"] < ops/20 || counts["settle ok"] < ops/20 || counts["cancel ok"] < ops/100 || counts["replayed"] < ops/50 ||
		counts["conflict"] < ops/100 || counts["expired"] < ops/200 || counts["settle over"] < ops/100 || counts["reserve limited"] < ops/50 ||
		counts["given back after a reset"] < ops/400 || counts["settled with a rule added"] < ops/1000 || counts["settled with a rule removed"] < ops/1000 || // a few per run: 9 to 45 seen, so a floor of 2 in 2,000
		counts["settled again under other rules"] < ops/300 || counts["a rule made shadow or enforced"] < ops/50 {
		t.Errorf("workload too one-sided to mean much: %v", counts)
	}
	for _, id := range ids {
		compareStored(t, c, model, id, last, false)
		compareUsage(t, l, model, id, bucketgate.UTCDay(last).AddDate(0, 0, -1), last, last) // settles' corrections too
	}
}

// decideBatchBoth decides qs with l in one batch and each of mqs (qs with the model's
// ids) in turn with the model at the Redis time of l's decision, or for a request that
// failed the time of the last decision before it (Redis's time before the batch for the
// first), failing the test unless both fail alike (ErrConflict) or neither does.
func decideBatchBoth(t *testing.T, l *bucket.Limiter, model *bucket.Model, qs, mqs []bucketgate.Request) (got, want []bucketgate.Decision, errs []error) {
	t.Helper()
	now, err := l.Time(context.Background(), "")
	if err != nil {
		t.Fatal(err)
	}
	got, errs = l.DecideBatch(context.Background(), qs)
	want = make([]bucketgate.Decision, len(qs))
	for i, q := range qs {
		if errs[i] == nil {
			now = got[i].At
		}
		var werr error
		if holds := q.Op == bucketgate.OpReserve || q.Op == bucketgate.OpSettle || q.Op == bucketgate.OpCancel || q.Op == bucketgate.OpRelease; holds || q.RequestID != "" {
			want[i], werr = model.Hold(now, mqs[i], bucket.DefaultIdempotency)
		} else {
			want[i] = model.Decide(now, mqs[i])
		}
		if (errs[i] == nil) != (werr == nil) || errs[i] != nil && !(errors.Is(errs[i], bucketgate.ErrConflict) && errors.Is(werr, bucketgate.ErrConflict)) {
			t.Fatalf("request %d of the batch %+v:\nredis %v\nmodel %v", i, q, errs[i], werr)
		}
	}
	return got, want, errs
}

// decideBoth decides q with l and mq (q with the model's ids) with the model at the
// Redis time of l's decision (read apart after an error, and the error then made again),
// failing the test unless both fail alike (ErrConflict) or neither does.
func decideBoth(t *testing.T, l *bucket.Limiter, model *bucket.Model, q, mq bucketgate.Request) (got, want bucketgate.Decision, err error) {
	t.Helper()
	ctx := context.Background()
	got, err = l.Decide(ctx, q)
	now := got.At
	if err != nil {
		if now, err = l.Time(ctx, q.Identity); err != nil {
			t.Fatal(err)
		}
		_, err = l.Decide(ctx, q) // the error again, after the time read
	}
	var werr error
	switch q.Op {
	case bucketgate.OpReserve, bucketgate.OpSettle, bucketgate.OpCancel, bucketgate.OpRelease:
		want, werr = model.Hold(now, mq, bucket.DefaultIdempotency)
	default:
		if q.RequestID != "" {
			want, werr = model.Hold(now, mq, bucket.DefaultIdempotency)
		} else {
			want = model.Decide(now, mq)
		}
	}
	if (err == nil) != (werr == nil) || err != nil && !(errors.Is(err, bucketgate.ErrConflict) && errors.Is(werr, bucketgate.ErrConflict)) {
		t.Fatalf("request %+v:\nredis %v\nmodel %v", q, err, werr)
	}
	return got, want, err
}
