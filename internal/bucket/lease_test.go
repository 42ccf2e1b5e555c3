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
	"github.com/bucketgate/bucketgate/internal/lua"
)

// TestLeases: a check with a concurrency rule acquires a lease while fewer than its
// most are in flight, and is denied (the rule binding, a retry-after until the earliest
// lease expires, nothing taken from its bucket) when that many are; a release returns
// the lease once (again: Released false, nothing changed); a lease frees itself at its
// ttl; a check denied by a bucket takes no lease; a reserve acquires too; a peek shows
// the leases in flight, a reset removes them; the set lives as long as its last lease.
func TestLeases(t *testing.T) {
	l, c := real(t)
	ctx := context.Background()
	streams := bucketgate.Rule{Name: "streams", Concurrency: 2}
	tokens := bucketgate.Rule{Name: "tokens", Capacity: 10, RefillPerSecond: 0.001}
	rules := []bucketgate.Rule{streams, tokens} // the concurrency rule first: the script numbers it last
	check := func(cost int64) bucketgate.Decision {
		t.Helper()
		q := bucketgate.Request{Identity: "a", Rules: rules, Cost: cost}
		if cost > 0 {
			q.TTL = time.Minute
		}
		d, err := l.Decide(ctx, q)
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	release := func(id string) (bucketgate.Decision, error) {
		return l.Decide(ctx, bucketgate.Request{Identity: "a", Rules: rules, Op: bucketgate.OpRelease, ID: id})
	}
	d1 := check(1)
	if !d1.Allowed || !strings.HasPrefix(d1.Lease, "r3.") || d1.Expires.Sub(d1.At) < 59*time.Second || d1.Rule != "streams" || d1.Remaining != 1 {
		t.Fatalf("first acquire = %+v", d1)
	}
	d2 := check(1)
	if !d2.Allowed || d2.Lease == d1.Lease || d2.Rule != "streams" || d2.Remaining != 0 || d2.ResetAfter < 1999*time.Second || d2.ResetAfter > 2000*time.Second {
		t.Fatalf("second acquire = %+v; want a ResetAfter of the bucket's 2 tokens alone, the leases aside", d2)
	}
	d3 := check(1)
	if d3.Allowed || d3.Rule != "streams" || d3.Limit != 2 || d3.Lease != "" || d3.RetryAfter < 59*time.Second || d3.RetryAfter > time.Minute || d3.ResetAfter < d3.RetryAfter || d3.ResetAfter > time.Minute {
		t.Fatalf("third acquire = %+v; want denied by streams until the first lease expires, reset when the latest does (the bucket aside)", d3)
	}
	peek := check(0)
	if peek.Rules[0].Remaining != 0 || peek.Rules[0].ResetAfter < 59*time.Second || peek.Rules[1].Remaining != 8 {
		t.Fatalf("peek = %+v; want no lease left and 8 tokens (the denial took none)", peek.Rules)
	}
	if z := mustInt(t, do(t, c, c.B().Pexpiretime().Key(bucket.LeaseKey("a", "streams")).Build())); z < d2.Expires.UnixMilli() {
		t.Fatalf("the set expires at %d, before its last lease (%d)", z, d2.Expires.UnixMilli())
	}
	if r, err := release(d1.Lease); err != nil || !r.Released {
		t.Fatalf("release = %+v, %v", r, err)
	}
	if r, err := release(d1.Lease); err != nil || r.Released {
		t.Fatalf("release again = %+v, %v; want Released false", r, err)
	}
	if d := check(1); !d.Allowed {
		t.Fatalf("after a release = %+v", d)
	}
	// Refused ids: nothing released.
	forged := forge(d2.Lease)
	other := bucket.New(c, bucket.Secret([]byte("another secret, thirty-two bytes")))
	r, _ := l.Decide(ctx, bucketgate.Request{Identity: "a", Rules: []bucketgate.Rule{tokens}, Op: bucketgate.OpReserve, Cost: 1})
	for name, err := range map[string]error{
		"forged":    func() error { _, err := release(forged); return err }(),
		"malformed": func() error { _, err := release("r2.x"); return err }(),
		"of another identity": func() error {
			_, err := l.Decide(ctx, bucketgate.Request{Identity: "b", Rules: rules, Op: bucketgate.OpRelease, ID: d2.Lease})
			return err
		}(),
		"of other rules": func() error {
			_, err := l.Decide(ctx, bucketgate.Request{Identity: "a", Rules: []bucketgate.Rule{{Name: "other", Concurrency: 2}}, Op: bucketgate.OpRelease, ID: d2.Lease})
			return err
		}(),
		"of another secret": func() error {
			_, err := other.Decide(ctx, bucketgate.Request{Identity: "a", Rules: rules, Op: bucketgate.OpRelease, ID: d2.Lease})
			return err
		}(),
	} {
		if !errors.Is(err, bucketgate.ErrConflict) || !strings.Contains(err.Error(), "not an id this limiter made") {
			t.Errorf("release of a lease %s: %v, want ErrConflict", name, err)
		}
	}
	if _, err := release(r.Reservation); !errors.Is(err, bucketgate.ErrConflict) || !strings.Contains(err.Error(), "a reservation's id, not a lease's") {
		t.Errorf("release of a reservation id: %v, want ErrConflict saying what it is", err)
	}
	if n := mustInt(t, do(t, c, c.B().Zcard().Key(bucket.LeaseKey("a", "streams")).Build())); n != 2+1 {
		t.Fatalf("%d members after the refused releases, want 2 leases and the set's mark", n)
	}

	// Denied by a bucket: no lease taken.
	if d, err := l.Decide(ctx, bucketgate.Request{Identity: "b", Rules: rules, Cost: 10}); err != nil || !d.Allowed {
		t.Fatal(d, err)
	}
	if d, _ := l.Decide(ctx, bucketgate.Request{Identity: "b", Rules: rules, Cost: 1}); d.Allowed || d.Rule != "tokens" || d.Lease != "" {
		t.Fatalf("a check the bucket denies = %+v", d)
	}
	if n := mustInt(t, do(t, c, c.B().Zcard().Key(bucket.LeaseKey("b", "streams")).Build())); n != 1+1 {
		t.Fatalf("%d members after a denial by the bucket, want 1 lease and the set's mark", n)
	}

	// A lease frees itself at its ttl; a concurrency rule alone; a reserve acquires.
	alone := []bucketgate.Rule{{Name: "one", Concurrency: 1}}
	short, err := l.Decide(ctx, bucketgate.Request{Identity: "c", Rules: alone, Cost: 1, TTL: 20 * time.Millisecond})
	if err != nil || !short.Allowed || short.Rule != "one" || short.Remaining != 0 {
		t.Fatal(short, err)
	}
	if d, _ := l.Decide(ctx, bucketgate.Request{Identity: "c", Rules: alone, Cost: 1}); d.Allowed || d.RetryAfter > 20*time.Millisecond {
		t.Fatalf("while the lease is held = %+v", d)
	}
	time.Sleep(30 * time.Millisecond)
	res, err := l.Decide(ctx, bucketgate.Request{Identity: "c", Rules: append([]bucketgate.Rule{tokens}, alone...), Op: bucketgate.OpReserve, Cost: 3})
	if err != nil || !res.Allowed || res.Lease == "" || res.Reservation == "" || res.Lease == res.Reservation {
		t.Fatalf("a reserve after the lease expired = %+v, %v; want a lease and a reservation", res, err)
	}
	if d, err := l.Decide(ctx, bucketgate.Request{Identity: "c", Rules: alone, Op: bucketgate.OpRelease, ID: short.Lease}); err != nil || d.Released {
		t.Fatalf("release of an expired lease = %+v, %v; want Released false", d, err)
	}
	// Reset: the leases go.
	if _, err := l.Decide(ctx, bucketgate.Request{Identity: "a", Rules: rules, Op: bucketgate.OpReset}); err != nil {
		t.Fatal(err)
	}
	if n := mustInt(t, do(t, c, c.B().Exists().Key(bucket.LeaseKey("a", "streams")).Build())); n != 0 {
		t.Fatal("the leases outlived a reset")
	}
}

// TestDifferentialLeases holds acquires (with buckets and quotas that deny, with
// requestIds, with ttls that end during the run), releases (once, twice, of refused
// ids), peeks, resets, refunds and reserves that acquire on real Redis to the model,
// usage kept 35 days; then every identity's stored fields and leases.
func TestDifferentialLeases(t *testing.T) {
	_, c := real(t)
	differentialLeases(t, c, 2000, 35, 1, time.Sleep)
}

// TestDifferentialLeasesMiniredis holds the same to the model on miniredis, the local
// default's engine, its clock moved by the test.
func TestDifferentialLeasesMiniredis(t *testing.T) {
	m := newMini(t)
	differentialLeases(t, m.client, 2000, 35, 1, m.advance)
}

// TestDifferentialLeasesInBatches holds the same operations, decided in batches
// (DecideBatch, an acquire and a release pipelined with the others), to the model, on
// real Redis and on miniredis.
func TestDifferentialLeasesInBatches(t *testing.T) {
	onRealAndMiniPassing(t, func(t *testing.T, c rueidis.Client, pass func(time.Duration)) {
		differentialLeases(t, c, 2000, 35, 10, pass)
	})
}

// lease is one the differential test acquired: its ids in Redis and in the model.
type lease struct {
	redis, model string
	q            bucketgate.Request
}

// differentialLeases runs ops random operations with concurrency rules against c and
// the model, usage kept usageDays days, comparing every decision and error, and in the
// end every identity's stored fields and sets of leases; pass lets time pass on c's
// clock. With batch above 1 it decides them in batches of 1 to batch (DecideBatch), a
// release only of a lease of an earlier batch; else one by one (Decide).
func differentialLeases(t *testing.T, c rueidis.Client, ops, usageDays, batch int, pass func(time.Duration)) {
	t.Helper()
	l := bucket.New(c, bucket.Usage(usageDays))
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 32))
	concurrency := []bucketgate.Rule{{Name: "streams", Concurrency: 3}, {Name: "one", Concurrency: 1}}
	pool := []bucketgate.Rule{
		{Name: "slow", Capacity: 8, RefillPerSecond: 2},
		{Name: "q-day", Limit: 400, Period: bucketgate.PeriodDay},
		{Name: "shadow", Capacity: 3, RefillPerSecond: 0.5, Shadow: true},
	}
	ids := []string{"lease", "lease{b}c", "lease\x00\xff"} // none of the other differential tests'
	model := bucket.NewModel()
	model.UsageDays = usageDays
	var held []lease
	counts := map[string]int{}
	var last time.Time
	next := func() (q, mq bucketgate.Request) {
		if rng.IntN(4) == 0 {
			pass(time.Duration(rng.IntN(1500)) * time.Microsecond)
		}
		id := ids[rng.IntN(len(ids))]
		q = bucketgate.Request{Identity: id}
		for _, i := range rng.Perm(len(concurrency))[:1+rng.IntN(2)] {
			r := concurrency[i]
			if rng.IntN(5) == 0 {
				r.Concurrency++ // another plan's
			}
			q.Rules = append(q.Rules, r)
		}
		for _, i := range rng.Perm(len(pool))[:rng.IntN(3)] {
			q.Rules = append(q.Rules, pool[i])
		}
		rng.Shuffle(len(q.Rules), func(i, j int) { q.Rules[i], q.Rules[j] = q.Rules[j], q.Rules[i] })
		switch op := rng.IntN(100); {
		case op < 50 || len(held) == 0:
			q.Cost = 1 + rng.Int64N(3)
			if rng.IntN(8) == 0 && slices.ContainsFunc(q.Rules, func(r bucketgate.Rule) bool { return !r.IsConcurrency() }) {
				q.Op = bucketgate.OpReserve
			}
			q.TTL = []time.Duration{0, time.Millisecond, 3 * time.Millisecond, 20 * time.Millisecond, time.Second}[rng.IntN(5)]
			if rng.IntN(3) == 0 {
				q.RequestID = fmt.Sprintf("req-%d", rng.IntN(200))
			}
		case op < 85:
			h := held[max(0, len(held)-1-rng.IntN(4))] // a recent one, more likely held still
			q = h.q
			q.Op, q.Cost, q.TTL, q.RequestID = bucketgate.OpRelease, 0, 0, ""
			mq = q
			q.ID, mq.ID = h.redis, h.model
			switch rng.IntN(12) {
			case 0:
				q.ID, mq.ID = forge(h.redis), "forged"
			case 1:
				q.Identity = ids[(slices.Index(ids, q.Identity)+1)%len(ids)]
				mq.Identity = q.Identity
			}
			if rng.IntN(3) == 0 {
				pass(2 * time.Millisecond)
			}
		case op < 93:
			q.Cost = 0 // a peek
		case op < 98:
			if !slices.ContainsFunc(q.Rules, func(r bucketgate.Rule) bool { return !r.IsConcurrency() }) {
				q.Rules = append(q.Rules, pool[0])
			}
			q.Op, q.Cost = bucketgate.OpRefund, 1
		default:
			q.Op = bucketgate.OpReset
		}
		if mq.Identity == "" {
			mq = q
		}
		return q, mq
	}
	for done := 0; done < ops; {
		qs, mqs := make([]bucketgate.Request, min(1+rng.IntN(batch), ops-done)), []bucketgate.Request(nil)
		for i := range qs {
			var mq bucketgate.Request
			qs[i], mq = next()
			mqs = append(mqs, mq)
		}
		done += len(qs)
		var gots, wants []bucketgate.Decision
		var errs []error
		if batch > 1 {
			gots, wants, errs = decideBatchBoth(t, l, model, qs, mqs)
		} else {
			got, want, err := decideBoth(t, l, model, qs[0], mqs[0])
			gots, wants, errs = []bucketgate.Decision{got}, []bucketgate.Decision{want}, []error{err}
		}
		for i, q := range qs {
			got, want := gots[i], wants[i]
			if errs[i] != nil {
				counts["conflict"]++
				continue
			}
			last = got.At
			if got.Lease != "" && !got.Replayed {
				held = append(held, lease{redis: got.Lease, model: want.Lease, q: q})
			}
			if (got.Lease == "") != (want.Lease == "") || (got.Reservation == "") != (want.Reservation == "") {
				t.Fatalf("request %+v: lease %q, model %q", q, got.Lease, want.Lease)
			}
			got.Lease, want.Lease, got.Reservation, want.Reservation = "", "", "", ""
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("request %+v:\nredis %+v\nmodel %+v", q, got, want)
			}
			counts[q.Op.String()+" "+string(got.Reason)]++
			switch {
			case q.Op == bucketgate.OpRelease && got.Released:
				counts["released"]++
			case q.Op == bucketgate.OpRelease:
				counts["not released"]++
			case !got.Allowed && got.Limit > 0 && slices.ContainsFunc(q.Rules, func(r bucketgate.Rule) bool { return r.Name == got.Rule && r.IsConcurrency() }):
				counts["denied by concurrency"]++
			case !got.Allowed:
				counts["denied by a bucket or quota"]++
			}
		}
	}
	t.Logf("operations: %v", counts)
	if counts["released"] < ops/20 || counts["not released"] < ops/50 || counts["denied by concurrency"] < ops/20 ||
		counts["denied by a bucket or quota"] < ops/100 || counts["conflict"] < ops/100 || counts["check ok"] < ops/10 {
		t.Errorf("workload too one-sided to mean much: %v", counts)
	}
	for _, id := range ids {
		compareStored(t, c, model, id, last, false)
		now := redisTime(t, c)
		for _, r := range concurrency {
			compareLeases(t, c, model, id, r.Name, now)
		}
	}
}

// compareLeases checks that identity's set of concurrency rule rule holds the leases
// the model holds at now (their expiries: the members differ) and its mark, scored by
// its expiry, and expires when the model's does.
func compareLeases(t *testing.T, c rueidis.Client, model *bucket.Model, id, rule string, now time.Time) {
	t.Helper()
	zs, err := c.Do(context.Background(), c.B().Zrange().Key(bucket.LeaseKey(id, rule)).Min("0").Max("-1").Withscores().Build()).AsZScores()
	if err != nil {
		t.Fatal(err)
	}
	var got []int64
	mark := int64(0)
	for _, z := range zs {
		if z.Member == lua.LeaseSetMark {
			mark = int64(z.Score)
			continue
		}
		got = append(got, int64(z.Score))
	}
	want, expires := model.Leases(id, rule, now)
	if !slices.Equal(got, want) {
		t.Fatalf("%q's leases of %s: redis %v, model %v", id, rule, got, want)
	}
	at := mustInt(t, do(t, c, c.B().Pexpiretime().Key(bucket.LeaseKey(id, rule)).Build()))
	if expires == 0 && at != -2 || expires != 0 && (at != expires || mark != expires) {
		t.Fatalf("%q's leases of %s expire at %d (mark %d), model %d", id, rule, at, mark, expires)
	}
}

// forge returns id with its last character changed: the MAC no longer the limiter's.
func forge(id string) string {
	last := byte('A')
	if id[len(id)-1] == last {
		last = 'B'
	}
	return id[:len(id)-1] + string(last)
}

// TestLeasesInABatch: a batch decides a request with a concurrency rule as Decide does,
// beside the others.
func TestLeasesInABatch(t *testing.T) {
	l, _ := real(t)
	rules := []bucketgate.Rule{{Name: "one", Concurrency: 1}}
	q := bucketgate.Request{Identity: "batch", Rules: rules, Cost: 1}
	plain := bucketgate.Request{Identity: "batch", Rules: free, Cost: 1}
	ds, errs := l.DecideBatch(context.Background(), []bucketgate.Request{q, plain, q})
	for i, err := range errs {
		if err != nil {
			t.Fatalf("request %d: %v", i, err)
		}
	}
	if !ds[0].Allowed || ds[0].Lease == "" || !ds[1].Allowed || ds[1].Remaining != 9 || ds[2].Allowed || ds[2].Rule != "one" {
		t.Fatalf("batch = %+v", ds)
	}
}

// TestResetOfLeasesSendsTheHash: a reset of a request with a concurrency rule calls the
// script by its hash (EVALSHA), as every other call does, and sends its text (EVAL,
// some 34 KB a call, which ElastiCache Serverless bills by the KB) only to a server
// that answers NOSCRIPT: the bucket is full again and the leases gone either way.
func TestResetOfLeasesSendsTheHash(t *testing.T) {
	streams := bucketgate.Rule{Name: "streams", Concurrency: 2}
	tokens := bucketgate.Rule{Name: "tokens", Capacity: 10, RefillPerSecond: 0.001}
	for _, tc := range []struct {
		name  string
		flush bool // the server forgets the script before the reset
		evals int  // EVAL calls of the reset
	}{
		{"the script loaded", false, 0},
		{"the script flushed", true, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l, c := real(t)
			ctx := context.Background()
			q := bucketgate.Request{Identity: "reset", Rules: []bucketgate.Rule{streams, tokens}, Cost: 4, TTL: time.Minute}
			expectRun(t, l, q, 1, true)
			if tc.flush {
				do(t, c, c.B().ScriptFlush().Build())
			}
			do(t, c, c.B().ConfigResetstat().Build())
			q.Op, q.Cost, q.TTL = bucketgate.OpReset, 0, 0
			if _, err := l.Decide(ctx, q); err != nil {
				t.Fatal(err)
			}
			if evals, shas := commandCalls(t, c, "eval"), commandCalls(t, c, "evalsha"); evals != tc.evals || shas != 1 {
				t.Errorf("the reset made %d EVAL and %d EVALSHA calls, want %d and 1", evals, shas, tc.evals)
			}
			if n := mustInt(t, do(t, c, c.B().Exists().Key(bucket.LeaseKey("reset", "streams")).Build())); n != 0 {
				t.Error("the leases outlived the reset")
			}
			q.Op = bucketgate.OpCheck
			if d := decide(t, l, q); d.Rules[1].Remaining != tokens.Capacity {
				t.Errorf("after the reset, a peek = %+v; want the bucket full", d.Rules)
			}
		})
	}
}

// TestLeaseSetMark: a set keeps a mark scored by its expiry, the first whole minute at
// least a second past its latest lease, which only a lease of a later minute moves; a
// release of its last lease leaves the set and its mark, which no decision counts as a
// lease; a sweep of the full set keeps the mark; at the set's expiry all of it goes.
// Every decision and the set are held to the model's, on miniredis's clock.
func TestLeaseSetMark(t *testing.T) {
	m := newMini(t)
	l := bucket.New(m.client)
	model := bucket.NewModel()
	rules := []bucketgate.Rule{{Name: "streams", Concurrency: 2}}
	key := bucket.LeaseKey("mark", "streams")
	decide := func(q bucketgate.Request, mq bucketgate.Request) bucketgate.Decision {
		t.Helper()
		q.Identity, mq.Identity, q.Rules, mq.Rules = "mark", "mark", rules, rules
		got, want, err := decideBoth(t, l, model, q, mq)
		if err != nil {
			t.Fatal(err)
		}
		if !sameDecision(got, want) {
			t.Fatalf("request %+v:\nredis %+v\nmodel %+v", q, got, want)
		}
		compareLeases(t, m.client, model, "mark", "streams", m.now)
		return want
	}
	expiry := func() int64 { return mustInt(t, do(t, m.client, m.client.B().Pexpiretime().Key(key).Build())) }
	acquire := func(ttl time.Duration) (id, modelID string, d bucketgate.Decision) {
		t.Helper()
		q := bucketgate.Request{Identity: "mark", Rules: rules, Cost: 1, TTL: ttl}
		got, err := l.Decide(context.Background(), q)
		if err != nil {
			t.Fatal(err)
		}
		want := model.Decide(got.At, q)
		if got.Allowed != want.Allowed || got.Remaining != want.Remaining || got.RetryAfter != want.RetryAfter {
			t.Fatalf("acquire: redis %+v, model %+v", got, want)
		}
		compareLeases(t, m.client, model, "mark", "streams", m.now)
		return got.Lease, want.Lease, got
	}
	release := func(redis, modelID string) {
		t.Helper()
		decide(bucketgate.Request{Op: bucketgate.OpRelease, ID: redis}, bucketgate.Request{Op: bucketgate.OpRelease, ID: modelID})
	}

	r1, m1, d1 := acquire(40 * time.Second) // 12:00:40 and a second: the set expires at 12:01
	if want := epoch.Add(time.Minute).UnixMilli(); expiry() != want || !d1.Allowed || d1.Remaining != 1 {
		t.Fatalf("first acquire %+v, set expires at %d, want %d", d1, expiry(), want)
	}
	m.advance(30 * time.Second)
	r2, m2, d2 := acquire(5 * time.Second) // 12:00:35 and a second: the same minute, the expiry stays
	if want := epoch.Add(time.Minute).UnixMilli(); expiry() != want || d2.Remaining != 0 {
		t.Fatalf("second acquire %+v, set expires at %d, want %d", d2, expiry(), want)
	}
	if _, _, d := acquire(time.Second); d.Allowed || d.Rule != "streams" {
		t.Fatalf("a third acquire = %+v, want denied: the mark is no lease", d)
	}
	release(r1, m1)
	release(r2, m2)
	if n := mustInt(t, do(t, m.client, m.client.B().Zcard().Key(key).Build())); n != 1 {
		t.Fatalf("%d members once every lease was released, want the mark alone", n)
	}
	if peek := decide(bucketgate.Request{}, bucketgate.Request{}); peek.Rules[0].Remaining != 2 {
		t.Fatalf("peek after the releases = %+v, want 2 leases left", peek.Rules)
	}
	r3, _, d3 := acquire(40 * time.Second) // 12:01:10 and a second: the mark and the expiry move to 12:02
	if want := epoch.Add(2 * time.Minute).UnixMilli(); expiry() != want || d3.Remaining != 1 || r3 == "" {
		t.Fatalf("acquire after the releases %+v, set expires at %d, want %d", d3, expiry(), want)
	}
	acquire(time.Millisecond)
	m.advance(5 * time.Millisecond)
	if _, _, d := acquire(time.Second); !d.Allowed || d.Remaining != 0 {
		t.Fatalf("acquire of a full set with an expired lease = %+v, want it swept and the lease taken", d)
	}
	m.advance(2 * time.Minute) // past the set's expiry: no set, no mark
	if n := mustInt(t, do(t, m.client, m.client.B().Exists().Key(key).Build())); n != 0 {
		t.Fatal("the set outlived its expiry")
	}
	compareLeases(t, m.client, model, "mark", "streams", m.now)
}

// TestRequestIDNeverGivesAHeldIDTwice: a reservation's or a lease's id of a request with
// a RequestID is named by the RequestID, so the RequestID is remembered for as long as
// what it holds may be held (or its settle replayed): past the Idempotency option by
// the ttl. Else the same RequestID after the Idempotency, while the first lease is still
// held, acquired a second lease of the same member (counted once: one more in flight
// than the rule's concurrency), and reserved again under the same nonce, whose settle
// answered the first reservation's outcome and settled nothing.
func TestRequestIDNeverGivesAHeldIDTwice(t *testing.T) {
	m := newMini(t)
	l := bucket.New(m.client, bucket.Idempotency(time.Second))
	tokens := bucketgate.Rule{Name: "tokens", Capacity: 100, RefillPerSecond: 0.001}
	acquire := bucketgate.Request{Identity: "a", Rules: []bucketgate.Rule{{Name: "streams", Concurrency: 2}, tokens}, Cost: 1, TTL: time.Minute}
	first := acquire
	first.RequestID = "job-1"
	d1 := decide(t, l, first)
	m.advance(2 * time.Second) // past the Idempotency, within the lease's ttl
	if d := decide(t, l, first); !d.Allowed || !d.Replayed || d.Lease != d1.Lease {
		t.Fatalf("the same requestId while its lease is held = %+v; want the first decision replayed (lease %s)", d, d1.Lease)
	}
	if d := decide(t, l, acquire); !d.Allowed {
		t.Fatalf("a second lease = %+v", d)
	}
	if d := decide(t, l, acquire); d.Allowed {
		t.Fatalf("a third lease of 2 in flight = %+v; want denied", d)
	}
	m.advance(time.Minute) // every lease expired, and the requestId's record with them
	if d := decide(t, l, first); !d.Allowed || d.Replayed {
		t.Fatalf("the same requestId once its lease has expired = %+v; want a new decision", d)
	}

	reserve := bucketgate.Request{Identity: "b", Rules: []bucketgate.Rule{tokens}, Op: bucketgate.OpReserve, Cost: 50, TTL: time.Minute, RequestID: "job-2"}
	r1 := decide(t, l, reserve)
	if s := decide(t, l, bucketgate.Request{Identity: "b", Rules: reserve.Rules, Op: bucketgate.OpSettle, Cost: 10, ID: r1.Reservation}); s.Replayed || s.Remaining != 90 {
		t.Fatalf("settle = %+v; want 90 left", s)
	}
	m.advance(2 * time.Second)
	if r := decide(t, l, reserve); !r.Replayed || r.Reservation != r1.Reservation || r.Remaining != 50 {
		t.Fatalf("the same requestId while its settle is remembered = %+v; want the first reserve replayed, nothing taken", r)
	}
	if p := decide(t, l, bucketgate.Request{Identity: "b", Rules: reserve.Rules}); p.Rules[0].Remaining != 90 {
		t.Fatalf("peek = %+v; want the 90 the settle left", p.Rules)
	}
}

// TestRequestIDAcquiredAgain: a RequestID acquired again once its record has ended
// (Idempotency past its lease's ttl) names the same member as its first lease, which,
// expired and not swept yet (the set was never full), is moved to the new lease's
// expiry (ZADD GT): the set holds one lease of it, not two, and the next acquires count
// as many in flight, on real Redis (or Valkey) and miniredis, held to the model's.
func TestRequestIDAcquiredAgain(t *testing.T) {
	onRealAndMiniPassing(t, requestIDAcquiredAgain)
}

// requestIDAcquiredAgain runs TestRequestIDAcquiredAgain against c, pass letting time
// pass on c's clock.
func requestIDAcquiredAgain(t *testing.T, c rueidis.Client, pass func(time.Duration)) {
	const idempotency = time.Second
	l, model := bucket.New(c, bucket.Idempotency(idempotency)), bucket.NewModel()
	rules := []bucketgate.Rule{{Name: "streams", Concurrency: 3}}
	job := bucketgate.Request{Identity: "again", Rules: rules, Cost: 1, TTL: time.Millisecond, RequestID: "job-1"}
	other := bucketgate.Request{Identity: "again", Rules: rules, Cost: 1, TTL: time.Hour}
	again := job
	again.TTL = time.Hour
	steps := []struct {
		name  string
		q     bucketgate.Request
		after time.Duration // let pass after it
	}{
		{"the job's first lease", job, 0},
		{"another lease, which keeps the set", other, idempotency + 100*time.Millisecond},
		{"the job again, its record ended", again, 0},
		{"a third lease", other, 0},
		{"a fourth, of 3 in flight", other, 0},
	}
	for _, s := range steps {
		ctx := context.Background()
		got, err := l.Decide(ctx, s.q)
		if err != nil {
			t.Fatalf("%s: %v", s.name, err)
		}
		want, err := model.Hold(got.At, s.q, idempotency) // as Decide, for a request without a RequestID
		if err != nil {
			t.Fatalf("%s: model: %v", s.name, err)
		}
		if !sameDecision(got, want) || got.Replayed {
			t.Fatalf("%s:\nredis %+v\nmodel %+v; want alike, not replayed", s.name, got, want)
		}
		compareLeases(t, c, model, "again", "streams", got.At)
		pass(s.after)
	}
}

// TestLeaseBindsOnATie: an admission whose concurrency rule has as many leases left as
// its bucket has whole tokens is bound by the concurrency rule, whose slot frees at the
// lease's expiry at the latest, on Redis and in the model, checks and peeks alike: the
// bucket's window (a second) would send a client back while its slot is held. A bucket
// with fewer left binds; of two concurrency rules with as many left, the first.
func TestLeaseBindsOnATie(t *testing.T) {
	l, _ := real(t)
	ctx := context.Background()
	streams, more := bucketgate.Rule{Name: "streams", Concurrency: 1}, bucketgate.Rule{Name: "more", Concurrency: 3}
	bucketOf := func(n int64) bucketgate.Rule { return bucketgate.Rule{Name: "tokens", Capacity: n, RefillPerSecond: 1} }
	tests := []struct {
		name  string
		rules []bucketgate.Rule
		want  string // the binding rule of the admission and of the peek after it
		left  int64
	}{
		{"both spent", []bucketgate.Rule{bucketOf(1), streams}, "streams", 0},
		{"both spent, the concurrency rule listed first", []bucketgate.Rule{streams, bucketOf(1)}, "streams", 0},
		{"as many left", []bucketgate.Rule{bucketOf(3), more}, "more", 2},
		{"the bucket has fewer left", []bucketgate.Rule{bucketOf(2), more}, "tokens", 1},
		{"the concurrency rule has fewer left", []bucketgate.Rule{bucketOf(3), streams}, "streams", 0},
		{"two concurrency rules with as many left: the first", []bucketgate.Rule{bucketOf(5), {Name: "a", Concurrency: 1}, {Name: "b", Concurrency: 1}}, "a", 0},
	}
	for i, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			model := bucket.NewModel()
			q := bucketgate.Request{Identity: fmt.Sprint("tie", i), Rules: tc.rules, Cost: 1, TTL: time.Minute}
			d, err := l.Decide(ctx, q)
			if err != nil || !d.Allowed || d.Rule != tc.want || d.Remaining != tc.left {
				t.Fatalf("Redis: %+v, %v; want allowed, %s binding with %d left", d, err, tc.want, tc.left)
			}
			if m := model.Decide(d.At, q); !m.Allowed || m.Rule != tc.want || m.Remaining != tc.left {
				t.Fatalf("model: %+v; want allowed, %s binding with %d left", m, tc.want, tc.left)
			}
			q.Cost, q.TTL = 0, 0
			p, err := l.Decide(ctx, q)
			if err != nil || p.Rule != tc.want || p.Remaining != tc.left {
				t.Fatalf("peek on Redis: %+v, %v; want %s binding with %d left", p, err, tc.want, tc.left)
			}
			if m := model.Decide(p.At, q); m.Rule != tc.want || m.Remaining != tc.left {
				t.Fatalf("peek of the model: %+v; want %s binding with %d left", m, tc.want, tc.left)
			}
		})
	}
}
