package bucket_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/rueidis"

	"github.com/bucketgate/bucketgate"
	"github.com/bucketgate/bucketgate/internal/bucket"
	"github.com/bucketgate/bucketgate/internal/redisconn"
	"github.com/bucketgate/bucketgate/internal/testkit/redistest"
)

// connect returns the client of a production connection (redisconn) for env, closed
// when t ends.
func connect(t *testing.T, env map[string]string, opts ...redisconn.Option) rueidis.Client {
	t.Helper()
	conn, err := redisconn.New(redistest.Settings(t, env), opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(conn.Close)
	c, err := conn.Client(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// TestTLSScenario runs the free-plan scenario over TLS, as an ACL user, as on ElastiCache.
func TestTLSScenario(t *testing.T) {
	srv, ca := redistest.StartTLS(t, redistest.ACLUser("app", "pw")...)
	c := connect(t, map[string]string{"REDIS_ADDR": srv.Addr, "REDIS_TLS": "true", "REDIS_USERNAME": "app", "REDIS_PASSWORD": "pw"},
		redisconn.WithRootCAs(ca.Pool))
	l := bucket.New(c)
	q := bucketgate.Request{Identity: "tls", Rules: []bucketgate.Rule{{Name: "burst", Capacity: 10, RefillPerSecond: 1}}, Cost: 1}
	for i := range 10 {
		if d, err := l.Decide(context.Background(), q); err != nil || !d.Allowed {
			t.Fatalf("request %d over TLS: %+v %v", i+1, d, err)
		}
	}
	if d, err := l.Decide(context.Background(), q); err != nil || d.Allowed || d.RetryAfter <= 0 {
		t.Fatalf("11th over TLS: %+v %v", d, err)
	}
}

// TestCluster runs the engine against a 3-master cluster made for it: the script
// against the model over random operations on identities spread across every master,
// and concurrent multi-rule decisions that never admit more than the rules allow.
func TestCluster(t *testing.T) {
	cluster := redistest.StartCluster(t, 3, 0)
	env := map[string]string{"REDIS_ADDR": strings.Join(cluster.Seeds(), ",")}
	c := connect(t, env)
	if c.Mode() != rueidis.ClientModeCluster {
		t.Fatalf("client mode %q", c.Mode())
	}
	t.Run("slots", func(t *testing.T) {
		ids := []string{"", "tenant-42", "a{b}c", "}{", "%", "key:Zm9v", "ip:2001:db8::/56", "\x00\xff", strings.Repeat("long", 40)}
		rng := rand.New(rand.NewPCG(1, 2))
		for range 200 {
			b := make([]byte, 1+rng.IntN(30))
			for i := range b {
				b[i] = byte(rng.IntN(256))
			}
			ids = append(ids, string(b))
		}
		for _, id := range ids {
			want, err := cluster.Masters[0].Command(context.Background(), "CLUSTER", "KEYSLOT", bucket.Key(id))
			if err != nil {
				t.Fatal(err)
			}
			if got := fmt.Sprint(bucket.Slot(id)); got != want {
				t.Fatalf("Slot(%q) = %s, CLUSTER KEYSLOT %q = %s", id, got, bucket.Key(id), want)
			}
		}
	})
	t.Run("differential", func(t *testing.T) { differential(t, c, 3000, 60, 0) })
	t.Run("differential with holds", func(t *testing.T) { differentialHolds(t, c, 2000, 35) })
	t.Run("differential with leases", func(t *testing.T) { differentialLeases(t, c, 1500, 0, 1, time.Sleep) })
	t.Run("identities spread over every master", func(t *testing.T) {
		for _, m := range cluster.Masters {
			n, err := m.Command(context.Background(), "DBSIZE")
			if err != nil {
				t.Fatal(err)
			}
			if n == "0" {
				t.Fatalf("master %s holds no bucket", m.Addr)
			}
		}
	})
	t.Run("differential with usage", func(t *testing.T) {
		for _, m := range cluster.Masters { // the same identities, from nothing
			if _, err := m.Command(context.Background(), "FLUSHALL"); err != nil {
				t.Fatal(err)
			}
		}
		differential(t, c, 2000, 60, 35)
	})
	t.Run("differential with leases in batches", func(t *testing.T) {
		for _, m := range cluster.Masters { // the same identities and requestIds, from nothing
			if _, err := m.Command(context.Background(), "FLUSHALL"); err != nil {
				t.Fatal(err)
			}
		}
		differentialLeases(t, c, 1500, 0, 10, time.Sleep)
	})
	flushScripts := func() { // every master forgets the script
		for _, m := range cluster.Masters {
			if _, err := m.Command(context.Background(), "SCRIPT", "FLUSH"); err != nil {
				t.Fatal(err)
			}
		}
	}
	t.Run("batches across slots", func(t *testing.T) { batchDifferential(t, c, flushScripts) })
	t.Run("a batch after a flush sends the script's text once a master", func(t *testing.T) {
		loadsOnce(t, c, len(cluster.Masters), flushScripts)
	})
	t.Run("a batch of one identity in order while every master reloads the script", func(t *testing.T) {
		inOrderWhileReloading(t, c, cluster.Masters)
	})
	t.Run("concurrent multi-rule decisions", func(t *testing.T) {
		concurrent(t, []rueidis.Client{c, connect(t, env)})
	})
}

// Shape of the concurrency test.
const (
	concurrentWorkers    = 16
	concurrentIdentities = 64
	concurrentFor        = 1500 * time.Millisecond
)

var chained = []bucketgate.Rule{
	{Name: "burst", Capacity: 20, RefillPerSecond: 10},
	{Name: "minute", Capacity: 30, RefillPerSecond: 0.5},
}

// admissions counts one identity's admitted requests and the Redis times of its
// first and last decisions.
type admissions struct {
	admitted    int64
	first, last time.Time
}

// concurrent runs workers on the clients for a while, each deciding two-rule requests
// for random identities, and checks that no identity was admitted more than any of
// its rules allows between its first and last decision (Redis time): capacity +
// refill * elapsed + 1.
func concurrent(t *testing.T, clients []rueidis.Client) {
	var mu sync.Mutex
	seen := map[string]*admissions{}
	var wg sync.WaitGroup
	errs := make(chan error, concurrentWorkers)
	stop := time.Now().Add(concurrentFor)
	for w := range concurrentWorkers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			l := bucket.New(clients[w%len(clients)])
			rng := rand.New(rand.NewPCG(uint64(w), 7))
			for time.Now().Before(stop) {
				id := fmt.Sprintf("conc-%d", rng.IntN(concurrentIdentities))
				d, err := l.Decide(context.Background(), bucketgate.Request{Identity: id, Rules: chained, Cost: 1})
				if err != nil {
					errs <- fmt.Errorf("%s: %w", id, err)
					return
				}
				mu.Lock()
				a := seen[id]
				if a == nil {
					a = &admissions{first: d.At, last: d.At}
					seen[id] = a
				}
				if d.Allowed {
					a.admitted++
				}
				if d.At.Before(a.first) {
					a.first = d.At
				}
				if d.At.After(a.last) {
					a.last = d.At
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	total := int64(0)
	for id, a := range seen {
		total += a.admitted
		elapsed := a.last.Sub(a.first).Seconds()
		for _, r := range chained {
			if limit := float64(r.Capacity) + r.RefillPerSecond*elapsed + 1; float64(a.admitted) > limit {
				t.Errorf("%s: %d admitted over %.3fs, rule %s allows %.1f", id, a.admitted, elapsed, r.Name, limit)
			}
		}
	}
	if len(seen) < concurrentIdentities/2 || total == 0 {
		t.Fatalf("%d identities seen, %d admitted: the test did not exercise the cluster", len(seen), total)
	}
}

// TestTimeOnIdentityMaster: on a cluster, Time(identity) reads the clock of the master
// that holds identity's slot, whose clock the script reads for its decisions and days,
// not another node's: each master answers the TIMEs of its identities and no other
// (INFO commandstats, counted from CONFIG RESETSTAT).
func TestTimeOnIdentityMaster(t *testing.T) {
	cluster := redistest.StartCluster(t, 3, 0)
	l := bucket.New(connect(t, map[string]string{"REDIS_ADDR": strings.Join(cluster.Seeds(), ",")}))
	ctx := context.Background()
	const reads = 3 // each a master's identity's
	for i := range cluster.Masters {
		t.Run(fmt.Sprintf("an identity of master %d", i), func(t *testing.T) {
			resetStats(t, cluster.Masters)
			id := onServer(t, i, len(cluster.Masters), "time")
			for range reads {
				if _, err := l.Time(ctx, id); err != nil {
					t.Fatal(err)
				}
			}
			for k, m := range cluster.Masters {
				want := 0
				if k == i {
					want = reads
				}
				if calls := timeCalls(t, m); calls != want {
					t.Errorf("master %d answered TIME %d times, want %d", k, calls, want)
				}
			}
		})
	}
}

// TestTimeAfterSlotMoved: Time(identity) reads the clock of the identity's master when
// the client's map of the cluster is stale, its slot having moved to another master
// (resharding) or its master having failed over to its replica: a keyless TIME went to
// the old master, which answered it with its own clock (no MOVED corrects a command on
// no key), while the identity's checks and days counted by the new master's.
func TestTimeAfterSlotMoved(t *testing.T) {
	tests := []struct {
		name     string
		replicas int
		// move moves id's slot away from the cluster's master 0, and returns its new
		// master.
		move func(t *testing.T, cluster *redistest.Cluster, id string) *redistest.Server
	}{
		{"resharded to another master", 0, func(t *testing.T, cluster *redistest.Cluster, id string) *redistest.Server {
			ctx, from, to := context.Background(), cluster.Masters[0], cluster.Masters[1]
			if err := redistest.BeginMigration(ctx, bucket.Slot(id), from, to); err != nil {
				t.Fatal(err)
			}
			if err := redistest.EndMigration(ctx, bucket.Slot(id), from, to); err != nil {
				t.Fatal(err)
			}
			return to
		}},
		{"failed over to its replica", 1, func(t *testing.T, cluster *redistest.Cluster, id string) *redistest.Server {
			if err := failOver(cluster.Replicas[0], cluster.Masters[0]); err != nil {
				t.Fatal(err)
			}
			return cluster.Replicas[0]
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			cluster := redistest.StartCluster(t, 3, tc.replicas)
			// Its clock still: no connection check after an idle time (see IdleCheck),
			// whose redirection would refresh the client's map before the read.
			var k clock
			l := bucket.New(connect(t, map[string]string{"REDIS_ADDR": strings.Join(cluster.Seeds(), ",")}), bucket.Clock(k.now))
			id := onServer(t, 0, len(cluster.Masters), "time-moved")
			if _, err := l.Time(ctx, id); err != nil { // the client's map: id on master 0
				t.Fatal(err)
			}
			now := tc.move(t, cluster, id)
			nodes := cluster.Nodes()
			resetStats(t, nodes)
			if _, err := l.Time(ctx, id); err != nil {
				t.Fatal(err)
			}
			for _, n := range nodes {
				want := 0
				if n == now {
					want = 1
				}
				if calls := timeCalls(t, n); calls != want {
					t.Errorf("node %s (the new master: %v) answered TIME %d times, want %d", n.Addr, n == now, calls, want)
				}
			}
		})
	}
}

// resetStats resets the statistics of each of nodes (CONFIG RESETSTAT).
func resetStats(t *testing.T, nodes []*redistest.Server) {
	t.Helper()
	for _, n := range nodes {
		if _, err := n.Command(context.Background(), "CONFIG", "RESETSTAT"); err != nil {
			t.Fatal(err)
		}
	}
}

// timeCalls returns how many times node ran TIME since its statistics were reset
// (INFO commandstats: a script's calls count too).
func timeCalls(t *testing.T, node *redistest.Server) int {
	t.Helper()
	stats, err := node.Command(context.Background(), "INFO", "commandstats")
	if err != nil {
		t.Fatal(err)
	}
	calls := 0
	if _, line, ok := strings.Cut(stats, "cmdstat_time:calls="); ok {
		if _, err := fmt.Sscanf(line, "%d", &calls); err != nil {
			t.Fatalf("%s: %q: %v", node.Addr, line, err)
		}
	}
	return calls
}
