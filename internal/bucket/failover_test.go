package bucket_test

import (
	"context"
	"errors"
	"fmt"
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

// TestClusterFailover: after a master of a cluster failed over to its replica, clients
// whose map of the cluster still names the old master send it each kind of call; the
// old master, a replica now, redirects every one (MOVED) to the new master, which
// answers it once. A cluster's replica never answers the Limiter's calls READONLY (all
// are on keys, redirected before a replica would refuse a write), so the new connection
// made after READONLY (see readOnly) is a standalone primary's alone.
func TestClusterFailover(t *testing.T) {
	ctx := context.Background()
	cluster := redistest.StartCluster(t, 3, 1)
	v := bucket.SecretSlot * len(cluster.Masters) / bucket.Slots // the master of the reservations' secret
	master, replica := cluster.Masters[v], cluster.Replicas[v]
	calls := []struct {
		name    string
		charges int64 // tokens the call takes
		call    func(l *bucket.Limiter, id string) error
	}{
		{"Decide", 1, func(l *bucket.Limiter, id string) error {
			_, err := l.Decide(ctx, bucketgate.Request{Identity: id, Rules: still, Cost: 1})
			return err
		}},
		{"DecideBatch of two requests of the identity (MULTI ... EXEC)", 2, func(l *bucket.Limiter, id string) error {
			q := bucketgate.Request{Identity: id, Rules: still, Cost: 1}
			_, errs := l.DecideBatch(ctx, []bucketgate.Request{q, q})
			return errors.Join(errs...)
		}},
		// The first reserve of a Limiter that has not read the reservations' secret,
		// kept on the master that failed over.
		{"Reserve", 1, func(l *bucket.Limiter, id string) error {
			_, err := l.Decide(ctx, bucketgate.Request{Identity: id, Rules: still, Cost: 1, Op: bucketgate.OpReserve, TTL: time.Minute})
			return err
		}},
		{"Usage", 0, func(l *bucket.Limiter, id string) error {
			days, err := l.Usage(ctx, id, time.Now(), time.Now())
			if err == nil && days[0].Allowed != 1 {
				err = fmt.Errorf("usage %+v, want the check before the failover", days)
			}
			return err
		}},
		{"Time", 0, func(l *bucket.Limiter, id string) error {
			_, err := l.Time(ctx, id)
			return err
		}},
	}
	limiters := make([]*bucket.Limiter, len(calls)) // each with its map naming the old master
	ids := make([]string, len(calls))
	// Their clock still: no connection check after an idle time (see IdleCheck), whose
	// redirection would refresh their maps before the calls.
	var k clock
	for i, call := range calls {
		limiters[i] = bucket.New(connect(t, map[string]string{"REDIS_ADDR": strings.Join(cluster.Seeds(), ",")}), bucket.Usage(1), bucket.Clock(k.now))
		ids[i] = onServer(t, v, len(cluster.Masters), "cluster-failover-"+call.name)
		decide(t, limiters[i], bucketgate.Request{Identity: ids[i], Rules: still, Cost: 1})
	}
	caughtUp(t, replica, master)
	if err := failOver(replica, master); err != nil {
		t.Fatal(err)
	}
	for i, call := range calls {
		t.Run(call.name, func(t *testing.T) {
			if err := call.call(limiters[i], ids[i]); err != nil {
				t.Fatalf("after the failover: %v", err)
			}
			want := still[0].Capacity - 1 - call.charges
			if d := decide(t, limiters[i], bucketgate.Request{Identity: ids[i], Rules: still}); d.Remaining != want {
				t.Fatalf("charged %d times, want %d: %+v", still[0].Capacity-d.Remaining, 1+call.charges, d)
			}
		})
	}
	stats, err := master.Command(ctx, "INFO", "errorstats")
	if err != nil || !strings.Contains(stats, "errorstat_MOVED") || strings.Contains(stats, "READONLY") {
		t.Fatalf("the old master's errors: %q, %v; want MOVED, no READONLY", stats, err)
	}
}

// TestStandaloneFailoverRead: a process that only reads (usage reports, peeks) keeps
// its connection to a standalone primary that a failover demoted: no write of its own
// meets READONLY there. Cut off from the new primary (a partition, a full resync), the
// demoted node answers from what it held; its replication lag, when not. A read after an
// idle second checks the connection first (see IdleCheck), which the demoted node
// refuses (READONLY, nothing written), and the read goes on a new connection, to the new
// primary by the endpoint: it sees what another process wrote there.
func TestStandaloneFailoverRead(t *testing.T) {
	ctx := context.Background()
	primary, replica := redistest.Start(t), redistest.Start(t)
	replicate(t, replica, primary)
	endpoint := redistest.StartProxy(t, primary.Addr)
	env := map[string]string{"REDIS_ADDR": endpoint.Addr}
	calls := []struct {
		name   string
		before bool // the identity charged before the failover too
		read   func(l *bucket.Limiter, id string) (charged int64, err error)
	}{
		{"Usage", true, func(l *bucket.Limiter, id string) (int64, error) {
			days, err := l.Usage(ctx, id, time.Now(), time.Now())
			if err != nil {
				return 0, err
			}
			return days[0].Allowed, nil
		}},
		// An identity the demoted node holds nothing of: the peek writes nothing there
		// (one that finds a bucket lets it live longer, a write, refused with READONLY).
		{"Peek", false, func(l *bucket.Limiter, id string) (int64, error) {
			d, err := l.Decide(ctx, bucketgate.Request{Identity: id, Rules: still})
			return still[0].Capacity - d.Remaining, err
		}},
	}
	writer := bucket.New(connect(t, env), bucket.Usage(1))
	var k clock
	readers := make([]*bucket.Limiter, len(calls)) // each with its connection to the old primary
	for i, call := range calls {
		readers[i] = bucket.New(connect(t, env), bucket.Clock(k.now))
		if call.before {
			decide(t, writer, bucketgate.Request{Identity: call.name, Rules: still, Cost: 1})
		}
		if _, err := call.read(readers[i], call.name); err != nil {
			t.Fatal(err)
		}
	}
	caughtUp(t, replica, primary)

	if _, err := replica.Command(ctx, "REPLICAOF", "NO", "ONE"); err != nil {
		t.Fatal(err)
	}
	nowhere, err := redistest.FreePort() // the new primary, out of the demoted node's reach
	if err != nil {
		t.Fatal(err)
	}
	if _, err := primary.Command(ctx, "REPLICAOF", "127.0.0.1", strconv.Itoa(nowhere)); err != nil {
		t.Fatal(err)
	}
	endpoint.SetTarget(replica.Addr)
	writer = bucket.New(connect(t, env), bucket.Usage(1)) // another process, on the new primary
	k.advance(bucket.IdleCheck)
	for i, call := range calls {
		t.Run(call.name, func(t *testing.T) {
			decide(t, writer, bucketgate.Request{Identity: call.name, Rules: still, Cost: 1})
			want := int64(1)
			if call.before {
				want++
			}
			if charged, err := call.read(readers[i], call.name); err != nil || charged != want {
				t.Fatalf("after the failover: %d charged, %v; want %d (the new primary's)", charged, err, want)
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

// TestDecideBatchClusterFailoverWhileSlotMoves: a batch whose calls a master refused
// (TRYAGAIN: its slot moving, a request's record on no master) and whose master then
// failed over to its replica (see failOver) before the calls were sent again: the
// old master, a replica now, redirects them (MOVED; a cluster's replica never answers
// a write READONLY, which would need a new connection) to the new master, which decides
// each once, in order, once the slot no longer moves.
func TestDecideBatchClusterFailoverWhileSlotMoves(t *testing.T) {
	tests := []struct {
		name string
		qs   func(id string) []bucketgate.Request
	}{
		{"a request alone", func(id string) []bucketgate.Request {
			return []bucketgate.Request{{Identity: id, Rules: still, Cost: 1, RequestID: "first"}}
		}},
		{"two requests of the identity (MULTI ... EXEC)", func(id string) []bucketgate.Request {
			return []bucketgate.Request{{Identity: id, Rules: still, Cost: 1, RequestID: "first"}, {Identity: id, Rules: still, Cost: 1}}
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			cluster := redistest.StartCluster(t, 3, 1)
			from, to, replica := cluster.Masters[0], cluster.Masters[1], cluster.Replicas[0]
			client := &beginning{counting: &counting{Client: connect(t, map[string]string{"REDIS_ADDR": strings.Join(cluster.Seeds(), ",")})}}
			l := bucket.New(client)
			id := onServer(t, 0, 3, "failover-"+tc.name)
			decide(t, l, bucketgate.Request{Identity: id, Rules: still, Cost: 1})
			caughtUp(t, replica, from)
			slot := bucket.Slot(id)
			if err := redistest.BeginMigration(ctx, slot, from, to); err != nil {
				t.Fatal(err)
			}
			moved := make(chan error, 1)
			client.begin = func() {
				if err := failOver(replica, from); err != nil {
					moved <- err
					return
				}
				// The move given up, the slot stays with the new master (Valkey's replica
				// knew it was moving, Redis's did not).
				time.AfterFunc(reshardFor, func() {
					var err error
					for _, n := range []*redistest.Server{replica, to} {
						if err == nil {
							_, err = n.Command(ctx, "CLUSTER", "SETSLOT", strconv.Itoa(slot), "STABLE")
						}
					}
					moved <- err
				})
			}
			deadline, cancel := context.WithTimeout(ctx, 10*time.Second)
			defer cancel()
			qs := tc.qs(id)
			ds, errs := l.DecideBatch(deadline, qs)
			if err := <-moved; err != nil {
				t.Fatal(err)
			}
			for i, d := range ds {
				if want := still[0].Capacity - 2 - int64(i); errs[i] != nil || !d.Allowed || d.Remaining != want {
					t.Errorf("request %d: %+v, %v; want allowed with %d left (each once, in order)", i, d, errs[i], want)
				}
			}
			stats, err := from.Command(ctx, "INFO", "errorstats")
			if err != nil || !strings.Contains(stats, "errorstat_TRYAGAIN") || !strings.Contains(stats, "errorstat_MOVED") || strings.Contains(stats, "READONLY") {
				t.Fatalf("the old master's errors: %q, %v; want TRYAGAIN, then MOVED, no READONLY", stats, err)
			}
			if d := decide(t, l, bucketgate.Request{Identity: id, Rules: still}); d.Remaining != still[0].Capacity-1-int64(len(qs)) {
				t.Fatalf("after the failover, charged %d times: %+v", still[0].Capacity-d.Remaining, d)
			}
		})
	}
}

// failOver makes replica take over from its master (CLUSTER FAILOVER TAKEOVER: no
// vote of the other masters, which a busy machine delays past the failover's timeout)
// and waits until both know it: replica a master, master its replica.
func failOver(replica, master *redistest.Server) error {
	ctx := context.Background()
	if _, err := replica.Command(ctx, "CLUSTER", "FAILOVER", "TAKEOVER"); err != nil {
		return err
	}
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		promoted, err1 := replica.Command(ctx, "ROLE")
		demoted, err2 := master.Command(ctx, "ROLE")
		if err1 == nil && err2 == nil && strings.HasPrefix(promoted, "master") && strings.HasPrefix(demoted, "slave") {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("after CLUSTER FAILOVER: %s %q %v, %s %q %v", replica.Addr, promoted, err1, master.Addr, demoted, err2)
		}
	}
}
