package bucket_test

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/bucketgate/bucketgate"
	"github.com/bucketgate/bucketgate/internal/bucket"
	"github.com/bucketgate/bucketgate/internal/testkit/redistest"
)

// TestStandaloneFailover: after a failover of a primary and its replica reached by a
// name (an ElastiCache primary endpoint with cluster mode disabled: a proxy here), the
// connection made before it reaches the old primary, now a replica that refuses every
// write (READONLY, nothing written); the Limiter connects again, reaching the new
// primary by the name, and the decision is made there, once.
func TestStandaloneFailover(t *testing.T) {
	ctx := context.Background()
	primary, replica := redistest.Start(t), redistest.Start(t)
	replicate(t, replica, primary)
	endpoint := redistest.StartProxy(t, primary.Addr)
	slow := []bucketgate.Rule{{Name: "slow", Capacity: 10, RefillPerSecond: 0.001}} // nothing back while the test waits
	calls := []struct {
		name      string
		call      func(l *bucket.Limiter, q bucketgate.Request) (bucketgate.Decision, error)
		remaining int64 // left after the call
	}{
		{"Decide", func(l *bucket.Limiter, q bucketgate.Request) (bucketgate.Decision, error) { return l.Decide(ctx, q) }, slow[0].Capacity - 2},
		{"DecideBatch", func(l *bucket.Limiter, q bucketgate.Request) (bucketgate.Decision, error) {
			ds, errs := l.DecideBatch(ctx, []bucketgate.Request{q})
			return ds[0], errs[0]
		}, slow[0].Capacity - 2},
		// The first reserve of a Limiter that has not read the reservations' secret,
		// which no instance has written yet: written on the new primary.
		{"Reserve", func(l *bucket.Limiter, q bucketgate.Request) (bucketgate.Decision, error) {
			q.Op, q.TTL = bucketgate.OpReserve, time.Minute
			return l.Decide(ctx, q)
		}, slow[0].Capacity - 2},
		// A reset of leases too: the script's reset and theirs in one round trip.
		{"ResetLeases", func(l *bucket.Limiter, q bucketgate.Request) (bucketgate.Decision, error) {
			q.Op, q.Cost, q.Rules = bucketgate.OpReset, 0, append(q.Rules, bucketgate.Rule{Name: "streams", Concurrency: 2})
			return l.Decide(ctx, q)
		}, slow[0].Capacity},
	}
	limiters := make([]*bucket.Limiter, len(calls)) // each with its connection to the old primary
	for i, call := range calls {
		limiters[i] = bucket.New(connect(t, map[string]string{"REDIS_ADDR": endpoint.Addr}))
		decide(t, limiters[i], bucketgate.Request{Identity: call.name, Rules: slow, Cost: 1})
	}
	caughtUp(t, replica, primary)

	if _, err := replica.Command(ctx, "REPLICAOF", "NO", "ONE"); err != nil {
		t.Fatal(err)
	}
	replicate(t, primary, replica)
	endpoint.SetTarget(replica.Addr)
	for i, call := range calls {
		t.Run(call.name, func(t *testing.T) {
			d, err := call.call(limiters[i], bucketgate.Request{Identity: call.name, Rules: slow, Cost: 1})
			if err != nil || d.Remaining != call.remaining {
				t.Fatalf("after the failover: %+v, %v", d, err)
			}
		})
	}
}

// caughtUp waits until replica has processed everything primary has written. (WAIT
// would not do: it waits for the writes of its own connection, and the limiters wrote
// on theirs, so that it answered at once, and a replica lagging under load was promoted
// without them.)
func caughtUp(t *testing.T, replica, primary *redistest.Server) {
	t.Helper()
	want := replOffset(t, primary)
	for deadline := time.Now().Add(10 * time.Second); replOffset(t, replica) < want; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%s has not processed %s's writes to offset %d in 10 s", replica.Addr, primary.Addr, want)
		}
	}
}

// replOffset is s's replication offset: what it has written (a primary) or processed
// (a replica) of the replication stream.
func replOffset(t *testing.T, s *redistest.Server) int64 {
	t.Helper()
	info, err := s.Command(context.Background(), "INFO", "replication")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(info, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "master_repl_offset:"); ok {
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil {
				t.Fatalf("%s: master_repl_offset %q: %v", s.Addr, v, err)
			}
			return n
		}
	}
	t.Fatalf("%s: no master_repl_offset in INFO replication: %s", s.Addr, info)
	return 0
}

// replicate makes replica a replica of primary and waits until its link is up.
func replicate(t *testing.T, replica, primary *redistest.Server) {
	t.Helper()
	ctx := context.Background()
	host, port, _ := strings.Cut(primary.Addr, ":")
	if _, err := replica.Command(ctx, "REPLICAOF", host, port); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		info, err := replica.Command(ctx, "INFO", "replication")
		if err == nil && strings.Contains(info, "master_link_status:up") {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s not replicating %s: %s %v", replica.Addr, primary.Addr, info, err)
		}
	}
}
