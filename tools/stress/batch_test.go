package stress

import (
	"context"
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/bucketgate/bucketgate"
	"github.com/bucketgate/bucketgate/internal/testkit/redistest"
)

func TestOutOfOrder(t *testing.T) {
	q := func(id string) bucketgate.Request { return bucketgate.Request{Identity: id} }
	at := func(us int64) bucketgate.Decision { return bucketgate.Decision{At: time.UnixMicro(us)} }
	failed := errors.New("timeout")
	tests := []struct {
		name string
		qs   []bucketgate.Request
		ds   []bucketgate.Decision
		errs []error
		want int64
	}{
		{"in order", []bucketgate.Request{q("a"), q("a"), q("b")}, []bucketgate.Decision{at(1), at(2), at(3)}, make([]error, 3), 0},
		{"a tie", []bucketgate.Request{q("a"), q("a")}, []bucketgate.Decision{at(2), at(2)}, make([]error, 2), 0},
		{"a later request first", []bucketgate.Request{q("a"), q("a"), q("a")}, []bucketgate.Decision{at(5), at(3), at(6)}, make([]error, 3), 1},
		{"other identities in any order", []bucketgate.Request{q("a"), q("b"), q("c")}, []bucketgate.Decision{at(5), at(3), at(1)}, make([]error, 3), 0},
		{"a failed request is no decision", []bucketgate.Request{q("a"), q("a")}, []bucketgate.Decision{{}, at(1)}, []error{failed, nil}, 0},
		{"after one later than it", []bucketgate.Request{q("a"), q("b"), q("a"), q("a")}, []bucketgate.Decision{at(9), at(1), at(4), at(5)}, make([]error, 4), 2},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := outOfOrder(tc.qs, tc.ds, tc.errs); got != tc.want {
				t.Fatalf("%d out of order, want %d", got, tc.want)
			}
		})
	}
}

func TestBatchAccountsTwice(t *testing.T) {
	decided := bucketgate.Decision{Allowed: true, At: time.UnixMicro(1)}
	replayed := decided
	replayed.Replayed = true
	released := decided
	released.Released = true
	tests := []struct {
		name string
		c    batchCall
		d    bucketgate.Decision
		want int64
	}{
		{"a settle decided", batchCall{q: bucketgate.Request{Identity: "a", Op: bucketgate.OpSettle, Cost: 3}, est: 3}, decided, 0},
		{"a settle sent once answered as a replay", batchCall{q: bucketgate.Request{Identity: "a", Op: bucketgate.OpSettle, Cost: 3}, est: 3}, replayed, 1},
		{"a cancel answered as a replay", batchCall{q: bucketgate.Request{Identity: "a", Op: bucketgate.OpCancel}, est: 3}, replayed, 1},
		{"a check with a requestId answered as a replay", batchCall{q: bucketgate.Request{Identity: "a", Cost: 1, RequestID: "r"}}, replayed, 1},
		{"a release of a lease held", batchCall{q: bucketgate.Request{Identity: "a", Op: bucketgate.OpRelease}, h: &held{}}, released, 0},
		{"a release of a lease held answered not released", batchCall{q: bucketgate.Request{Identity: "a", Op: bucketgate.OpRelease}, h: &held{}}, decided, 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := &batchState{led: leaseLedger{}, usage: map[string]*usageCount{}}
			s.account(tc.c, tc.d)
			if s.res.Twice != tc.want {
				t.Fatalf("%d decided twice, want %d", s.res.Twice, tc.want)
			}
		})
	}
}

// TestBatchRun: a short batch run on a real cluster whose script caches are flushed
// meanwhile fails none of its checks (none out of order, with batches of up to 100
// requests longer than a read of Redis's query buffer too), and its calls reach every
// kind and the model.
func TestBatchRun(t *testing.T) {
	c, err := redistest.NewCluster(3, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	for _, tc := range []struct {
		name string
		most int
	}{
		{"batches of up to 8", 8},
		{"batches of up to 100", 100},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, m := range c.Masters { // the identities and their leases from nothing
				if _, err := m.Command(context.Background(), "FLUSHALL"); err != nil {
					t.Fatal(err)
				}
			}
			r := &runner{opts: Options{Log: io.Discard, Seed: 1, BatchMost: tc.most}, sum: &Summary{}}
			if err := r.batch(context.Background(), c, 1500*time.Millisecond, 2, 8); err != nil {
				t.Fatal(err)
			}
			if f := r.sum.Failures(); len(f) > 0 {
				t.Fatalf("failures: %v", f)
			}
			b := r.sum.Batch
			if b.Flushes == 0 || b.Loads == 0 || b.Acquired == 0 || b.Reserved == 0 || b.Settles == 0 || b.Cancels == 0 || b.Releases == 0 || b.Refunds == 0 || b.Checks == 0 || b.Peeks == 0 || b.Replay.Verified == 0 {
				t.Fatalf("%+v: want flushes, loads, and calls of every kind the model reached too", b)
			}
		})
	}
}

// TestRunRefusesShortBatches: a batch run of at most one request a batch is refused
// before anything starts, with an error naming it, not a panic of the random sizes.
func TestRunRefusesShortBatches(t *testing.T) {
	for _, tc := range []struct {
		name string
		most int
	}{{"one", 1}, {"negative", -3}} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Run(context.Background(), Options{BatchMost: tc.most})
			if err == nil || !strings.Contains(err.Error(), "a batch of at most") {
				t.Fatalf("Run with BatchMost %d: %v", tc.most, err)
			}
		})
	}
}
