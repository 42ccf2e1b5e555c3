package bucket_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/rueidis"

	"github.com/bucketgate/bucketgate/internal/bucket"
	"github.com/bucketgate/bucketgate/internal/redisconn"
	"github.com/bucketgate/bucketgate/internal/redistest"
)

// connect returns a production client (redisconn) for env, closed when t ends.
func connect(t *testing.T, env map[string]string, opts ...redisconn.Option) rueidis.Client {
	t.Helper()
	c, err := redisconn.New(redistest.Settings(t, env), opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c
}

// TestTLSScenario runs seed 001's scenario over TLS, as an ACL user, as on ElastiCache.
func TestTLSScenario(t *testing.T) {
	srv, ca := redistest.StartTLS(t, redistest.ACLUser("app", "pw")...)
	c := connect(t, map[string]string{"REDIS_ADDR": srv.Addr, "REDIS_TLS": "true", "REDIS_USERNAME": "app", "REDIS_PASSWORD": "pw"},
		redisconn.WithRootCAs(ca.Pool))
	l := bucket.New(c)
	q := bucket.Request{Identity: "tls", Rules: []bucket.Rule{{Name: "burst", Capacity: 10, RefillPerSecond: 1}}, Cost: 1}
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
	t.Run("differential", func(t *testing.T) { differential(t, c, 3000) })
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
	t.Run("concurrent multi-rule decisions", func(t *testing.T) {
		concurrent(t, []rueidis.Client{c, connect(t, env)})
	})
}

// Rules of the differential test: a fast burst, a slow fractional refill, a daily quota.
var diffRules = []bucket.Rule{
	{Name: "fast", Capacity: 5, RefillPerSecond: 50},
	{Name: "slow", Capacity: 20, RefillPerSecond: 0.75},
	{Name: "day", Capacity: 1000, RefillPerSecond: 1000.0 / 86400},
}

// hostile identities: braces, percent signs, separators; none may change its slot or
// meet another's bucket.
var hostile = []string{"{a}", "a}", "{", "}{", "%7B", "%", "a:fast:tokens", "bg:{x}", "{}", "\x00\xff"}

// differential decides ops random requests on the cluster and holds every decision to
// the model's at the same Redis time. Time steps come from real time (short sleeps) and,
// now and then, from a bucket stamped in the future (a skewed failover), written to both.
func differential(t *testing.T, c rueidis.Client, ops int) {
	rng := rand.New(rand.NewPCG(1, 2))
	l := bucket.New(c)
	model := bucket.NewModel()
	ids := append([]string(nil), hostile...)
	for i := range 60 {
		ids = append(ids, "id-"+strconv.Itoa(i))
	}
	ctx := context.Background()
	for op := range ops {
		q := randomRequest(rng, ids)
		d, err := l.Decide(ctx, q)
		if err != nil {
			t.Fatalf("op %d %+v: %v", op, q, err)
		}
		if want := model.Decide(d.At, q); d != want {
			t.Fatalf("op %d %+v:\nscript %+v\n model %+v", op, q, d, want)
		}
		switch rng.IntN(50) {
		case 0:
			time.Sleep(time.Duration(rng.IntN(30)) * time.Millisecond)
		case 1:
			skew(t, c, model, q.Identity, q.Rules[0].Name, d.At, rng)
		}
	}
}

func randomRequest(rng *rand.Rand, ids []string) bucket.Request {
	perm := rng.Perm(len(diffRules))[:1+rng.IntN(len(diffRules))]
	q := bucket.Request{Identity: ids[rng.IntN(len(ids))]}
	smallest := int64(bucket.MaxCapacity)
	for _, i := range perm {
		q.Rules = append(q.Rules, diffRules[i])
		smallest = min(smallest, diffRules[i].Capacity)
	}
	switch r := rng.IntN(10); {
	case r == 0:
		q.Cost = 0
	case r == 1:
		q.Cost = smallest - rng.Int64N(2)
	default:
		q.Cost = 1
	}
	return q
}

// skew stamps identity's rule a few seconds after at, with a fractional level, in
// Redis and in the model alike.
func skew(t *testing.T, c rueidis.Client, model *bucket.Model, identity, rule string, at time.Time, rng *rand.Rand) {
	t.Helper()
	b := bucket.ModelBucket{Tokens: float64(rng.IntN(8)) / 4, Stamp: at.Add(time.Duration(1+rng.IntN(3)) * time.Second).UnixMicro()}
	cmd := c.B().Hset().Key(bucket.Key(identity)).FieldValue().
		FieldValue(rule+":tokens", strconv.FormatFloat(b.Tokens, 'g', -1, 64)).
		FieldValue(rule+":ts", strconv.FormatInt(b.Stamp, 10)).Build()
	if err := c.Do(context.Background(), cmd).Error(); err != nil {
		t.Fatal(err)
	}
	model.SetBucket(identity, rule, b)
}

// Shape of the concurrency test.
const (
	concurrentWorkers    = 16
	concurrentIdentities = 64
	concurrentFor        = 1500 * time.Millisecond
)

var chained = []bucket.Rule{
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
				d, err := l.Decide(context.Background(), bucket.Request{Identity: id, Rules: chained, Cost: 1})
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
