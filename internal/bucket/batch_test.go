package bucket_test

import (
	"context"
	"errors"
	"math/rand/v2"
	"reflect"
	"testing"
	"time"

	"github.com/redis/rueidis"

	"github.com/bucketgate/bucketgate"
	"github.com/bucketgate/bucketgate/internal/bucket"
	"github.com/bucketgate/bucketgate/internal/testkit/redistest"
)

func TestDecideBatch(t *testing.T) {
	srv := redistest.Start(t)
	c := redistest.Client(t, srv.Addr)
	batchDifferential(t, c, func() { run(t, c, "SCRIPT", "FLUSH") })
}

// batchDifferential decides batches of random requests on c and holds every answer to
// the model, in order: a later request of a batch sees what an earlier one wrote, and
// none is decided twice. Every third batch is preceded by flush, which may empty the
// server's script cache (the calls are then sent again with the script's text), and
// carries an invalid request, which is refused alone.
func batchDifferential(t *testing.T, c rueidis.Client, flush func()) {
	t.Helper()
	l := bucket.New(c)
	model := bucket.NewModel()
	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 14))
	pool := []bucketgate.Rule{
		{Name: "burst", Capacity: 5, RefillPerSecond: 0.01},
		{Name: "daily", Capacity: 20, RefillPerSecond: 20.0 / 86400},
		{Name: "trial", Capacity: 3, RefillPerSecond: 0.01, Shadow: true},
	}
	counts := map[string]int{}
	for round := range 30 {
		qs := make([]bucketgate.Request, 1+rng.IntN(100))
		for i := range qs {
			qs[i] = randomRequest(rng, hostile[rng.IntN(len(hostile))], pool)
		}
		invalid := -1
		if round%3 == 0 {
			flush()
			invalid = rng.IntN(len(qs))
			qs[invalid].Cost = -1
		}
		decisions, errs := l.DecideBatch(context.Background(), qs)
		if len(decisions) != len(qs) || len(errs) != len(qs) {
			t.Fatalf("%d decisions and %d errors for %d requests", len(decisions), len(errs), len(qs))
		}
		for i, q := range qs {
			if i == invalid {
				if !errors.Is(errs[i], bucketgate.ErrInvalid) {
					t.Fatalf("round %d, request %d (invalid): %+v, %v", round, i, decisions[i], errs[i])
				}
				continue
			}
			if errs[i] != nil {
				t.Fatalf("round %d, request %d: %v", round, i, errs[i])
			}
			got, want := decisions[i], model.Decide(decisions[i].At, q)
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("round %d, request %d %+v:\nredis %+v\nmodel %+v", round, i, q, got, want)
			}
			counts[string(got.Reason)+" "+q.Op.String()]++
		}
	}
	t.Logf("decided: %v", counts)
	if counts["ok check"] == 0 || counts["limited check"] == 0 || counts["ok refund"] == 0 || counts["ok reset"] == 0 {
		t.Fatalf("the batches were too one-sided to mean much: %v", counts)
	}
}

// run sends a command to c.
func run(t *testing.T, c rueidis.Client, args ...string) {
	t.Helper()
	if err := c.Do(context.Background(), c.B().Arbitrary(args...).Build()).Error(); err != nil {
		t.Fatalf("%v: %v", args, err)
	}
}

// TestDecideBatchInOrderWithLeases: a batch with a concurrency rule is decided in order
// too: a request after one that drained the bucket is denied, whichever has the
// concurrency rule, and one before it is decided first.
func TestDecideBatchInOrderWithLeases(t *testing.T) {
	l, _ := real(t)
	tokens := bucketgate.Rule{Name: "tokens", Capacity: 10, RefillPerSecond: 0.001}
	streams := bucketgate.Rule{Name: "streams", Concurrency: 5}
	drain := bucketgate.Request{Identity: "a", Rules: []bucketgate.Rule{tokens}, Cost: 10}
	acquire := bucketgate.Request{Identity: "a", Rules: []bucketgate.Rule{tokens, streams}, Cost: 1}
	for _, tt := range []struct {
		name    string
		qs      []bucketgate.Request
		allowed []bool
	}{
		{"a drain, then an acquire", []bucketgate.Request{drain, acquire}, []bool{true, false}},
		{"an acquire, then a drain", []bucketgate.Request{acquire, drain, acquire}, []bool{true, false, true}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			decide(t, l, bucketgate.Request{Identity: "a", Rules: []bucketgate.Rule{tokens, streams}, Op: bucketgate.OpReset})
			ds, errs := l.DecideBatch(context.Background(), tt.qs)
			for i, d := range ds {
				if errs[i] != nil || d.Allowed != tt.allowed[i] {
					t.Fatalf("request %d: %+v, %v; want allowed %v (decided in the batch's order)", i, d, errs[i], tt.allowed[i])
				}
			}
		})
	}
}
