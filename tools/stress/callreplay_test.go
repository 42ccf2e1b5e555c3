package stress

import (
	"fmt"
	"testing"
	"time"

	"github.com/bucketgate/bucketgate"
	"github.com/bucketgate/bucketgate/internal/bucket"
)

func TestReplayLog(t *testing.T) {
	at := func(ms int64) time.Time { return time.UnixMilli(1_800_000_000_000 + ms) }
	rules := func(rs ...bucketgate.Rule) []bucketgate.Rule { return rs }
	// A reserve of 10 on a, settled at 30 under a plan that added b (b owes nothing),
	// then a check of b; a reserve with a lease, settled, released under another plan.
	calls := []bucketgate.Request{
		{Rules: rules(changeA), Op: bucketgate.OpReserve, Cost: 10, TTL: time.Second},
		{Rules: rules(changeA, changeB), Op: bucketgate.OpSettle, Cost: 30, ID: "redis-0"},
		{Rules: rules(changeB), Cost: 1},
		{Rules: rules(changeLeases, changeA), Op: bucketgate.OpReserve, Cost: 5, TTL: time.Second},
		{Rules: rules(changeLeases, changeA), Op: bucketgate.OpSettle, Cost: 5, ID: "redis-3"},
		{Rules: rules(changeB, changeMore, changeLeases), Op: bucketgate.OpRelease, ID: "lease-3"},
	}
	// answers is what an engine that does what the model does answers calls, at 1 ms
	// apart, with ids of its own.
	type call struct {
		q bucketgate.Request
		d bucketgate.Decision
	}
	answers := func() []call {
		m, ids := bucket.NewModel(), map[string]string{}
		var ops []call
		for i, q := range calls {
			q.Identity = "i"
			mq := q
			mq.ID = ids[q.ID]
			d, err := m.Hold(at(int64(i)), mq, bucket.DefaultIdempotency)
			if err != nil {
				t.Fatalf("%+v: %v", q, err)
			}
			if d.Reservation != "" {
				ids[fmt.Sprintf("redis-%d", i)], d.Reservation = d.Reservation, fmt.Sprintf("redis-%d", i)
			}
			if d.Lease != "" {
				ids[fmt.Sprintf("lease-%d", i)], d.Lease = d.Lease, fmt.Sprintf("lease-%d", i)
			}
			ops = append(ops, call{q, d})
		}
		return ops
	}
	tests := []struct {
		name           string
		engine         func(ops []call) // what the engine answered otherwise
		taint          bool
		want, verified int64
	}{
		{"the model's answers, in another order", func(ops []call) { ops[0], ops[5] = ops[5], ops[0] }, false, 0, 6},
		// The engine took the settle's 20 beyond its estimate from b too, which the
		// reserve did not take from: b's next check finds 20 fewer.
		{"a settle above its estimate charges a rule added since", func(ops []call) { ops[2].d.Remaining -= 20 }, false, 1, 2},
		{"a release that ended nothing", func(ops []call) { ops[5].d.Released = false }, false, 1, 5},
		{"a settle of another cost", func(ops []call) { ops[4].d.Settled = 4 }, false, 1, 4},
		{"an identity a call of which failed", func(ops []call) { ops[2].d.Remaining -= 20 }, true, 0, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ops := answers()
			tc.engine(ops)
			var o replayLog
			for _, op := range ops {
				o.add(op.q, op.d)
				replayed := op.d // the other settle's answer: a replay, which changes nothing
				replayed.Replayed, replayed.Allowed = true, !op.d.Allowed
				o.add(op.q, replayed)
			}
			if tc.taint {
				o.taint("i")
			}
			r := o.replay()
			if r.Disagreements != tc.want || r.Verified != tc.verified || r.Verified+r.Disagreements+r.Unverifiable != int64(len(calls)) {
				t.Fatalf("%+v: want %d differing, %d verified", r, tc.want, tc.verified)
			}
		})
	}
}

// TestReplayLogTie: two calls of one identity at one Redis microsecond replay in an
// ambiguous order: a disagreement there is unverifiable, not a failure; a microsecond
// apart, it is one.
func TestReplayLogTie(t *testing.T) {
	at := time.UnixMicro(1_800_000_000_000_000)
	tests := []struct {
		name                           string
		later                          time.Duration // the time Redis gave the first call after the second's
		differ, unverifiable, verified int64
	}{
		{"at one microsecond", 0, 0, 2, 0},
		{"a microsecond apart", time.Microsecond, 1, 1, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			// Redis took 20 of a's 60, then denied 50.
			m := bucket.NewModel()
			small := bucketgate.Request{Identity: "i", Rules: []bucketgate.Rule{changeA}, Cost: 20}
			large := small
			large.Cost = 50
			first, err := m.Hold(at, small, bucket.DefaultIdempotency)
			if err != nil {
				t.Fatal(err)
			}
			second, err := m.Hold(at, large, bucket.DefaultIdempotency)
			if err != nil || !first.Allowed || second.Allowed {
				t.Fatalf("%+v, %+v, %v: want 20 allowed, 50 denied", first, second, err)
			}
			first.At = first.At.Add(tc.later)
			var o replayLog
			o.add(large, second) // recorded first
			o.add(small, first)
			r := o.replay()
			if r.Disagreements != tc.differ || r.Unverifiable != tc.unverifiable || r.Verified != tc.verified {
				t.Fatalf("%+v: want %d differing, %d unverifiable, %d verified", r, tc.differ, tc.unverifiable, tc.verified)
			}
		})
	}
}
