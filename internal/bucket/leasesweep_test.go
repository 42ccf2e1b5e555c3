package bucket_test

import (
	"context"
	"fmt"
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
