package bucket_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/redis/rueidis"

	"github.com/bucketgate/bucketgate"
	"github.com/bucketgate/bucketgate/internal/bucket"
	"github.com/bucketgate/bucketgate/internal/lua"
	"github.com/bucketgate/bucketgate/internal/testkit/redistest"
)

// TestLeaseSweepIsBounded: a call removes lua.LeaseSweepMax expired leases of a set at
// most, however many expired unreleased, and still decides on the leases in flight: a
// set holding more members than the rule's most (expired ones left for later calls)
// admits while fewer are in flight, denies when that many are (until the earliest in
// flight expires), and a release of an expired lease the sweep did not reach releases
// nothing. On real Redis (its user's also narrowed to redisconn.MinimalACL, which must
// grant the sweep's commands) and on miniredis, every decision and set held to the
// model's.
func TestLeaseSweepIsBounded(t *testing.T) {
	t.Run("real", func(t *testing.T) {
		_, c := real(t)
		leaseSweep(t, c, c, time.Sleep)
	})
	t.Run("real, as a user of MinimalACL", func(t *testing.T) {
		srv := redistest.Start(t)
		ctx := context.Background()
		c := limiterUserClient(t, srv)
		leaseSweep(t, c, redistest.Client(t, srv.Addr), time.Sleep)
		if refused, err := srv.ACLRefused(ctx); err != nil || len(refused) > 0 {
			t.Errorf("the server refused %q to the limiter's user (%v)", refused, err)
		}
	})
	t.Run("miniredis", func(t *testing.T) {
		m := newMini(t)
		leaseSweep(t, m.client, m.client, m.advance)
	})
}

// leaseSweep runs TestLeaseSweepIsBounded's cases against c, reading the sets with
// admin, pass letting time pass on c's clock.
func leaseSweep(t *testing.T, c, admin rueidis.Client, pass func(time.Duration)) {
	t.Helper()
	const inFlight = 150
	expired := lua.LeaseSweepMax + 50 // more than a call sweeps
	most := expired + inFlight        // the plan the set was filled under
	before := expired + inFlight + 1  // the set's members, its mark too
	cases := []struct {
		name      string
		most      int  // the concurrency of the call (another plan's, when not most)
		release   int  // 0: an acquire; -1: a release of the last expired lease; 1: of the first in flight
		allowed   bool // an acquire's decision, a release's Released
		remaining int64
		members   int64 // the set's members after the call
	}{
		{name: "acquire under the plan it was filled under", most: most, allowed: true, remaining: int64(most - inFlight - 1), members: int64(before - lua.LeaseSweepMax + 1)},
		{name: "acquire under a lowered plan: fewer in flight than the set holds", most: inFlight + 30, allowed: true, remaining: 29, members: int64(before - lua.LeaseSweepMax + 1)},
		{name: "acquire under a plan lowered to the leases in flight: denied", most: inFlight, members: int64(before - lua.LeaseSweepMax)},
		{name: "release of an expired lease the sweep did not reach", most: most, release: -1, members: int64(before - lua.LeaseSweepMax - 1)},
		{name: "release of a lease in flight", most: most, release: 1, allowed: true, members: int64(before - lua.LeaseSweepMax - 1)},
	}
	l := bucket.New(c)
	model := bucket.NewModel()
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			id := fmt.Sprintf("sweep%d", i)
			rules := func(most int) []bucketgate.Rule {
				return []bucketgate.Rule{{Name: "streams", Concurrency: int32(most)}}
			}
			decide := func(q, mq bucketgate.Request) (bucketgate.Decision, bucketgate.Decision) {
				t.Helper()
				got, want, err := decideBoth(t, l, model, q, mq)
				if err != nil {
					t.Fatal(err)
				}
				if !sameDecision(got, want) {
					t.Fatalf("request %+v:\nredis %+v\nmodel %+v", q, got, want)
				}
				return got, want
			}
			acquire := func(most int, ttl time.Duration) lease {
				t.Helper()
				q := bucketgate.Request{Identity: id, Rules: rules(most), Cost: 1, TTL: ttl}
				got, want := decide(q, q)
				return lease{redis: got.Lease, model: want.Lease, q: q}
			}
			// Expired leases, each a millisecond later than the one before (no two alike:
			// which of two of the same expiry a sweep reaches first is the nonces' order,
			// Redis's not the model's), none swept: the set never holds more than most.
			var last, first lease
			for k := range expired {
				last = acquire(most, time.Duration(k+1)*time.Millisecond)
			}
			pass(time.Duration(expired+50) * time.Millisecond)
			for k := range inFlight {
				if h := acquire(most, time.Hour); k == 0 {
					first = h
				}
			}
			if n := mustInt(t, do(t, admin, admin.B().Zcard().Key(bucket.LeaseKey(id, "streams")).Build())); n != int64(before) {
				t.Fatalf("%d members before the call, want %d", n, before)
			}

			var got bucketgate.Decision
			if tc.release == 0 {
				q := bucketgate.Request{Identity: id, Rules: rules(tc.most), Cost: 1, TTL: time.Hour}
				got, _ = decide(q, q)
				if got.Allowed != tc.allowed || got.Allowed && got.Remaining != tc.remaining {
					t.Errorf("acquire = %+v; want allowed %v, %d left", got, tc.allowed, tc.remaining)
				}
				if !got.Allowed && (got.Rule != "streams" || got.RetryAfter < 59*time.Minute) {
					t.Errorf("acquire = %+v; want denied by streams until the first lease in flight expires", got)
				}
			} else {
				h := last
				if tc.release > 0 {
					h = first
				}
				q := bucketgate.Request{Identity: id, Rules: rules(tc.most), Op: bucketgate.OpRelease, ID: h.redis}
				mq := q
				mq.ID = h.model
				if got, _ = decide(q, mq); got.Released != tc.allowed {
					t.Errorf("release = %+v; want Released %v", got, tc.allowed)
				}
			}
			if n := mustInt(t, do(t, admin, admin.B().Zcard().Key(bucket.LeaseKey(id, "streams")).Build())); n != tc.members {
				t.Errorf("%d members after the call, want %d (at most %d expired swept)", n, tc.members, lua.LeaseSweepMax)
			}
			compareLeases(t, admin, model, id, "streams", got.At)
		})
	}
}

// TestLeaseSweepTies: expired leases that share their expiry where a sweep's
// lua.LeaseSweepMax-th removal falls are removed in their members' order, Redis's rank
// for equal scores, and the model removes the same ones: a release of a tied lease the
// release's own sweep left removes it too (the set one member shorter), one the sweep
// took finds nothing more to remove. The tied leases carry a RequestID, whose member
// the Limiter names by it (a lease without one has a random member, which no model
// can know). On real Redis (or Valkey, BUCKETGATE_REDIS_SERVER) and on miniredis,
// every decision and set held to the model's.
func TestLeaseSweepTies(t *testing.T) {
	onRealAndMiniPassing(t, leaseSweepTies)
}

// leaseSweepTies runs TestLeaseSweepTies's cases against c, pass letting time pass on
// c's clock.
func leaseSweepTies(t *testing.T, c rueidis.Client, pass func(time.Duration)) {
	t.Helper()
	const (
		tied   = 6                          // leases of one expiry, half of them within the sweep's reach
		below  = lua.LeaseSweepMax - tied/2 // expired earlier: the sweep's first removals
		above  = 5                          // expired later: out of the sweep's reach
		before = below + tied + above + 2   // the set's members: a lease in flight and the mark too
	)
	rules := []bucketgate.Rule{{Name: "streams", Concurrency: 1000}}
	l := bucket.New(c)
	type tiedLease struct {
		lease
		member string // its member in the set: Redis's order for equal scores
	}
	// build fills identity id's set and returns its tied leases in their members'
	// order, or none when Redis's clock turned a millisecond while it took them (the
	// caller tries again with another identity).
	build := func(t *testing.T, model *bucket.Model, id string) []tiedLease {
		t.Helper()
		acquire := func(ttl time.Duration) bucketgate.Decision {
			t.Helper()
			q := bucketgate.Request{Identity: id, Rules: rules, Cost: 1, TTL: ttl}
			got, want, err := decideBoth(t, l, model, q, q)
			if err != nil || !got.Allowed || !sameDecision(got, want) {
				t.Fatalf("acquire %+v: %v\nredis %+v\nmodel %+v", q, err, got, want)
			}
			return got
		}
		for k := range below { // each a millisecond later than the one before
			acquire(time.Duration(k+1) * time.Millisecond)
		}
		var qs []bucketgate.Request // at once, in one MULTI ... EXEC: of one expiry unless the clock turned
		for k := range tied {
			qs = append(qs, bucketgate.Request{Identity: id, Rules: rules, Cost: 1, TTL: time.Duration(below+100) * time.Millisecond, RequestID: fmt.Sprintf("tied-%d", k)})
		}
		gots, wants, errs := decideBatchBoth(t, l, model, qs, qs)
		var ties []tiedLease
		for k, got := range gots {
			if errs[k] != nil || !got.Allowed || !sameDecision(got, wants[k]) {
				t.Fatalf("tied acquire %+v: %v\nredis %+v\nmodel %+v", qs[k], errs[k], got, wants[k])
			}
			ties = append(ties, tiedLease{lease{redis: got.Lease, model: wants[k].Lease, q: qs[k]}, bucket.LeaseMember(got.Lease)})
		}
		var last bucketgate.Decision
		for k := range above {
			last = acquire(time.Duration(below+200+k) * time.Millisecond)
		}
		pass(last.Expires.Sub(last.At) + 2*time.Millisecond) // every lease above expired
		acquire(time.Hour)                                   // in flight: the set lives on
		if !gots[0].Expires.Equal(gots[tied-1].Expires) {
			return nil
		}
		slices.SortFunc(ties, func(a, b tiedLease) int { return strings.Compare(a.member, b.member) })
		return ties
	}
	for rank := range tied {
		swept := rank < tied/2 // within the sweep's first lua.LeaseSweepMax removals
		name := fmt.Sprintf("release of the tied lease of rank %d, left by the sweep", rank)
		members := int64(before - lua.LeaseSweepMax - 1)
		if swept {
			name = fmt.Sprintf("release of the tied lease of rank %d, swept", rank)
			members = int64(before - lua.LeaseSweepMax)
		}
		t.Run(name, func(t *testing.T) {
			var (
				model = bucket.NewModel()
				id    string
				ties  []tiedLease
			)
			for try := 0; ties == nil; try++ {
				if try == 20 {
					t.Fatal("20 tries, and every time Redis's clock turned a millisecond during the tied leases' batch")
				}
				model, id = bucket.NewModel(), fmt.Sprintf("ties%d.%d", rank, try)
				ties = build(t, model, id)
			}
			key := bucket.LeaseKey(id, "streams")
			if n := mustInt(t, do(t, c, c.B().Zcard().Key(key).Build())); n != before {
				t.Fatalf("%d members before the release, want %d", n, before)
			}
			h := ties[rank]
			q := bucketgate.Request{Identity: id, Rules: rules, Op: bucketgate.OpRelease, ID: h.redis}
			mq := q
			mq.ID = h.model
			got, want, err := decideBoth(t, l, model, q, mq)
			if err != nil || !sameDecision(got, want) || got.Released {
				t.Fatalf("release: %v\nredis %+v\nmodel %+v; want alike, nothing released (the lease expired)", err, got, want)
			}
			if n := mustInt(t, do(t, c, c.B().Zcard().Key(key).Build())); n != members {
				t.Errorf("%d members after the release, want %d", n, members)
			}
			compareLeases(t, c, model, id, "streams", got.At)
		})
	}
}
