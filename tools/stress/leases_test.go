package stress

import (
	"context"
	"io"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/redis/rueidis"

	"github.com/bucketgate/bucketgate"
	"github.com/bucketgate/bucketgate/internal/bucket"
	"github.com/bucketgate/bucketgate/internal/testkit/redistest"
)

func TestLeaseLedger(t *testing.T) {
	rule := bucketgate.Rule{Name: "tokens", Capacity: 10, RefillPerSecond: 10}
	at := func(us int64) time.Time { return time.UnixMicro(us) }
	allowed := func(us int64) bucketgate.Decision { return bucketgate.Decision{Allowed: true, At: at(us)} }
	// settles answers a settle at actual sent twice at once: the first decided at us, the
	// second its replay.
	settles := func(us, actual int64) [2]bucketgate.Decision {
		d := bucketgate.Decision{Allowed: true, At: at(us), Settled: actual}
		r := d
		r.Replayed, r.At = true, at(us+100)
		return [2]bucketgate.Decision{d, r}
	}
	tests := []struct {
		name string
		feed func(l leaseLedger)
		want int64
	}{
		// A reserve of 10 settled at 20 takes the bucket to -9: the next 5 tokens are
		// there 1.4 s later, not 0.5 s (an engine whose settle took nothing).
		{"a reserve after a settle's overrun, too early", func(l leaseLedger) {
			l.admitted("a", allowed(0), 10)
			l.settled("a", settles(second/10, 20), 10, rule.Capacity)
			l.admitted("a", allowed(6*second/10), 5)
		}, 9},
		{"a reserve after a settle's overrun, once refilled", func(l leaseLedger) {
			l.admitted("a", allowed(0), 10)
			l.settled("a", settles(second/10, 20), 10, rule.Capacity)
			l.admitted("a", allowed(3*second/2), 5)
		}, 0},
		// A settle takes the rest down to minus the capacity at most: a reserve of 10
		// settled at 30 on an empty bucket leaves it at -10, not -20, and it is full
		// again 2 s later.
		{"a reserve once refilled from the floor", func(l leaseLedger) {
			l.admitted("a", allowed(0), 10)
			l.settled("a", settles(second/10, 30), 10, rule.Capacity)
			l.admitted("a", allowed(21*second/10), 10)
		}, 0},
		{"a reserve too early after the floor", func(l leaseLedger) {
			l.admitted("a", allowed(0), 10)
			l.settled("a", settles(second/10, 30), 10, rule.Capacity)
			l.admitted("a", allowed(15*second/10), 10)
		}, 6},
		// Many settles on an empty bucket: it owes its capacity at most.
		{"settles on an empty bucket", func(l leaseLedger) {
			l.admitted("a", allowed(0), 10)
			for k := range int64(5) {
				l.settled("a", settles(k, 20), 10, rule.Capacity)
			}
			l.admitted("a", allowed(3*second), 10)
		}, 0},
		// Taking the rest never fails: the settle itself admits nothing.
		{"a settle beyond the tokens there", func(l leaseLedger) {
			l.admitted("a", allowed(0), 10)
			l.settled("a", settles(0, 20), 10, rule.Capacity)
		}, 0},
		{"a check charged twice", func(l leaseLedger) {
			l.checked("a", [2]bucketgate.Decision{allowed(0), allowed(1)}, 6)
		}, 2},
		{"a check's replay answered first", func(l leaseLedger) {
			d := allowed(5 * second)
			r := d
			r.Replayed, r.At = true, at(6*second)
			l.admitted("a", allowed(0), 10)
			l.checked("a", [2]bucketgate.Decision{r, d}, 10)
			l.admitted("a", allowed(6*second), 10)
		}, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			l := leaseLedger{}
			tc.feed(l)
			if got := l.overAdmitted(rule); got != tc.want {
				t.Fatalf("over-admitted %d, want %d", got, tc.want)
			}
		})
	}
}

// TestReleaseStormAccountsItsBucket: the release storm's checks take from a bucket too
// (leaseTokens, beside the concurrency rule); every one allowed must reach the
// over-admission count.
func TestReleaseStormAccountsItsBucket(t *testing.T) {
	srv := redistest.Start(t)
	c, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{srv.Addr}, DisableCache: true})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	r := &runner{opts: Options{Log: io.Discard}}
	rng := rand.New(rand.NewPCG(1, 2))
	res, led := &LeasesResult{}, leaseLedger{}
	var mu sync.Mutex
	for range 40 {
		if _, err := r.acquireRelease(context.Background(), bucket.New(c), rng, res, &mu, led, &replayLog{}); err != nil {
			t.Fatal(err)
		}
	}
	n := 0
	for _, adm := range led {
		n += len(adm)
	}
	if res.Acquired == 0 || int64(n) != res.Acquired {
		t.Fatalf("%d admissions in the ledger for %d acquired", n, res.Acquired)
	}
	if over := led.overAdmitted(leaseTokens); over != 0 {
		t.Fatalf("over-admitted %d", over)
	}
}

// TestLeasesRun: a short leases run against a real server fails none of its checks
// (its replay through the reference model too), and the model verifies its calls.
func TestLeasesRun(t *testing.T) {
	srv := redistest.Start(t)
	r := &runner{opts: Options{Log: io.Discard, Seed: 1}, sum: &Summary{}}
	if err := r.leases(context.Background(), srv, 1500*time.Millisecond, 8); err != nil {
		t.Fatal(err)
	}
	res := r.sum.Leases
	if f := r.sum.Failures(); len(f) > 0 {
		t.Fatalf("failures: %v", f)
	}
	if res.Allowed == 0 || res.Acquired == 0 || res.Idempotent == 0 || res.Replay.Verified == 0 {
		t.Fatalf("%+v: want reserves allowed, leases, idempotent checks, and decisions the model reached too", res)
	}
}
