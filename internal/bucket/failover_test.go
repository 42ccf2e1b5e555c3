package bucket_test

import (
	"context"
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
	if n, err := primary.Command(ctx, "WAIT", "1", "5000"); err != nil || n != "1" {
		t.Fatalf("WAIT for the replica: %s, %v", n, err)
	}

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
