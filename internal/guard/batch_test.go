package guard_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/bucketgate/bucketgate"
	"github.com/bucketgate/bucketgate/internal/bucket"
	"github.com/bucketgate/bucketgate/internal/guard"
	"github.com/bucketgate/bucketgate/internal/testkit/redistest"
)

// decideBatch decides qs on g and fails t on an error.
func decideBatch(t *testing.T, g *guard.Guard, ctx context.Context, qs ...bucketgate.Request) []guard.Result {
	t.Helper()
	rs, err := g.DecideBatch(ctx, qs)
	if err != nil || len(rs) != len(qs) {
		t.Fatalf("DecideBatch: %d results for %d requests, %v", len(rs), len(qs), err)
	}
	return rs
}

// TestDecideBatch: one call to the engine decides a batch in order; the deny cache
// answers what it can, except a check after a refund or reset of its identity in the
// same batch; an invalid request refuses the whole batch before anything is asked.
func TestDecideBatch(t *testing.T) {
	_, clk, engine := miniEngine(t)
	g := guard.New(engine, guard.Options{Now: clk.Now, DenyCacheSize: 100})
	ctx := context.Background()
	qs := make([]bucketgate.Request, 12)
	for i := range qs {
		qs[i] = request("a")
	}
	qs[11] = request("b")
	rs := decideBatch(t, g, ctx, qs...)
	for i, r := range rs {
		if wantAllowed := i < 10 || i == 11; r.Allowed != wantAllowed || r.CacheHit {
			t.Fatalf("results[%d] = %+v, want allowed %v from Redis", i, r, wantAllowed)
		}
	}
	if rs[9].Remaining != 0 || rs[10].Reason != bucketgate.ReasonLimited || rs[11].Remaining != 9 {
		t.Fatalf("results %+v: want a's bucket spent in order, b untouched", rs)
	}
	if n := engine.calls.Load(); n != 1 {
		t.Fatalf("%d calls to the engine for one batch", n)
	}

	rs = decideBatch(t, g, ctx, request("a"), bucketgate.Request{Identity: "a", Rules: burst, Op: bucketgate.OpReset}, request("a"))
	if !rs[0].CacheHit || rs[0].Allowed || rs[1].CacheHit || !rs[1].Allowed || rs[1].Remaining != 10 || rs[2].CacheHit || !rs[2].Allowed || rs[2].Remaining != 9 {
		t.Fatalf("check, reset, check: %+v\nwant a cached denial, then Redis for the reset and the check after it", rs)
	}

	before := engine.calls.Load()
	bad := request("a")
	bad.Cost = 11
	_, err := g.DecideBatch(ctx, []bucketgate.Request{request("c"), bad})
	var be *guard.BatchError
	if !errors.As(err, &be) || be.Index != 1 || !errors.Is(err, bucketgate.ErrInvalid) || engine.calls.Load() != before {
		t.Fatalf("an invalid request: %v (calls %d -> %d), want a BatchError at index 1, nothing asked", err, before, engine.calls.Load())
	}
}

// TestDecideBatchCircuitOpen: while the circuit is open a batch is answered by the
// failure policy at once, every request of it.
func TestDecideBatchCircuitOpen(t *testing.T) {
	mr, clk, engine := miniEngine(t)
	g := guard.New(engine, guard.Options{Now: clk.Now, FailuresToOpen: 1, FailOpen: true})
	mr.Close()
	if rs := decideBatch(t, g, context.Background(), request("a"), request("b")); rs[0].Failure != guard.FailureRedisError || rs[1].Failure != guard.FailureRedisError {
		t.Fatalf("Redis gone: %+v", rs)
	}
	before := engine.calls.Load()
	for i, r := range decideBatch(t, g, context.Background(), request("a"), request("b"), request("c")) {
		if !r.CircuitOpen || !r.Allowed || r.Reason != bucketgate.ReasonDegraded || !errors.Is(r.Err, guard.ErrCircuitOpen) {
			t.Fatalf("results[%d] with the circuit open: %+v", i, r)
		}
	}
	if engine.calls.Load() != before {
		t.Fatal("an open circuit asked Redis")
	}
}

// TestDecideBatchDeadline: a batch on a server that does not answer ends at the
// guard's deadline, every check failing by the policy (fail closed: denied, unavailable;
// fail open: allowed, degraded); none is sent again, so none is charged twice; and a
// context whose deadline is within the margin asks nothing and fails by the same policy.
func TestDecideBatchDeadline(t *testing.T) {
	tests := []struct {
		name        string
		failOpen    bool
		wantAllowed bool
		wantReason  bucketgate.Reason
	}{
		{name: "fail closed", wantReason: bucketgate.ReasonUnavailable},
		{name: "fail open", failOpen: true, wantAllowed: true, wantReason: bucketgate.ReasonDegraded},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			const checks, capacity = 50, 100
			srv := redistest.Start(t)
			g := guard.New(bucket.New(redistest.Client(t, srv.Addr)), guard.Options{Timeout: 200 * time.Millisecond, Margin: 20 * time.Millisecond, FailOpen: tc.failOpen})
			rules := []bucketgate.Rule{{Name: "slow", Capacity: capacity, RefillPerSecond: 0.001}}
			q := bucketgate.Request{Identity: "paused", Rules: rules, Cost: 1}
			qs := make([]bucketgate.Request, checks)
			for i := range qs {
				qs[i] = q
			}
			ctx := context.Background()
			decideBatch(t, g, ctx, q) // connected, script loaded

			srv.Pause()
			start := time.Now()
			rs := decideBatch(t, g, ctx, qs...)
			took := time.Since(start)
			srv.Resume()
			for i, r := range rs {
				if r.Failure != guard.FailureTimeout || r.Allowed != tc.wantAllowed || r.Reason != tc.wantReason || r.Rule != "slow" || r.Limit != capacity {
					t.Fatalf("results[%d] on a paused server: %+v, want allowed %v, reason %s, rule slow", i, r, tc.wantAllowed, tc.wantReason)
				}
			}
			if took > slack {
				t.Fatalf("the batch took %v", took)
			}
			peek := q
			peek.Cost = 0
			// Redis runs the checks it read before the pause as soon as it resumes, some of
			// them or all: they are done once every check is counted, or once two peeks
			// 200 ms apart see the same figure.
			left := int64(-1)
			for deadline := time.Now().Add(slack); ; time.Sleep(200 * time.Millisecond) {
				before := left
				left = decideBatch(t, g, ctx, peek)[0].Remaining
				if left <= capacity-1-checks || left == before || time.Now().After(deadline) {
					break
				}
			}
			if left < capacity-1-checks {
				t.Fatalf("%d tokens left after 1 + %d checks of 1: a check was charged twice", left, checks)
			}

			short, cancel := context.WithTimeout(ctx, 10*time.Millisecond)
			defer cancel()
			for i, r := range decideBatch(t, g, short, qs[:3]...) {
				if r.Failure != guard.FailureTimeout || r.Allowed != tc.wantAllowed || r.Reason != tc.wantReason ||
					!errors.Is(r.Err, context.DeadlineExceeded) || !strings.Contains(r.Err.Error(), "deadline") || r.Latency != 0 {
					t.Fatalf("results[%d] within the margin: %+v", i, r)
				}
			}
			if r, err := g.Decide(short, q); err != nil || r.Failure != guard.FailureTimeout || r.Reason != tc.wantReason || r.Latency != 0 {
				t.Fatalf("a decision within the margin: %+v, %v", r, err)
			}
			if rs := decideBatch(t, g, ctx, peek); rs[0].Remaining != left {
				t.Fatalf("%d tokens left after checks within the margin, %d before: Redis was asked", rs[0].Remaining, left)
			}
		})
	}
}
