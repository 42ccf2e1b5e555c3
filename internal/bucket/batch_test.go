package bucket_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"reflect"
	"strings"
	"sync"
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

// TestDecideBatchAfterFlush: a batch after the server lost its script cache sends the
// script's text (34 KB) once, not with each of its calls.
func TestDecideBatchAfterFlush(t *testing.T) {
	srv := redistest.Start(t)
	c := redistest.Client(t, srv.Addr)
	loadsOnce(t, c, 1, func() { run(t, c, "SCRIPT", "FLUSH") })
}

// TestDecideBatchScriptNeverKept: a server that refuses the script's every EVALSHA
// however often its text is sent (its cache flushed as fast as it fills: a fake) costs
// a batch a bounded number of round trips, each call then going with the text, and
// runs each call once.
func TestDecideBatchScriptNeverKept(t *testing.T) {
	fake := redistest.StartFake(t, func(cmd []string) string {
		if strings.EqualFold(cmd[0], "EVALSHA") {
			return "-NOSCRIPT No matching script.\r\n"
		}
		return "-ERR the text ran\r\n"
	})
	counted := &counting{Client: redistest.Client(t, fake.Addr)}
	qs := make([]bucketgate.Request, 20)
	for i := range qs {
		qs[i] = bucketgate.Request{Identity: fmt.Sprintf("never-%d", i), Rules: free, Cost: 1}
	}
	_, errs := bucket.New(counted).DecideBatch(context.Background(), qs)
	for i, err := range errs {
		if err == nil || !strings.Contains(err.Error(), "the text ran") {
			t.Fatalf("request %d: %v, want the answer to its text", i, err)
		}
	}
	if counted.texts != len(qs) {
		t.Fatalf("%d calls with the script's text for %d requests, want one each", counted.texts, len(qs))
	}
	if want := 1 + bucket.MaxLoads + 1; counted.trips != want { // the batch, the rounds, the rest with the text
		t.Fatalf("%d round trips, want %d", counted.trips, want)
	}
}

// loadsOnce decides a batch of 100 checks, each of its own identity, on c after flush
// emptied the script cache of every node, and fails unless each is allowed and the
// script's text (EVAL) went with masters calls at most, one a node that lacked it.
func loadsOnce(t *testing.T, c rueidis.Client, masters int, flush func()) {
	t.Helper()
	rules := []bucketgate.Rule{{Name: "burst", Capacity: 10, RefillPerSecond: 1}}
	qs := make([]bucketgate.Request, 100)
	for i := range qs {
		qs[i] = bucketgate.Request{Identity: fmt.Sprintf("flushed-%d", i), Rules: rules, Cost: 1}
	}
	counted := &counting{Client: c}
	l := bucket.New(counted)
	flush()
	decisions, errs := l.DecideBatch(context.Background(), qs)
	for i, d := range decisions {
		if errs[i] != nil || !d.Allowed || d.Remaining != rules[0].Capacity-1 {
			t.Fatalf("request %d after the flush: %+v, %v", i, d, errs[i])
		}
	}
	t.Logf("%d calls with the script's text, %d bytes sent", counted.texts, counted.bytes)
	if counted.texts < 1 || counted.texts > masters {
		t.Fatalf("%d calls with the script's text, want 1 to %d: once a master that lost it", counted.texts, masters)
	}
}

// counting is a client that counts the script calls sent with the script's text (EVAL),
// the bytes of every command's arguments, the round trips, the round trips that
// carry a script call (EVALSHA or EVAL): each Do of one, and each DoMulti with one,
// whose commands go in one write and are answered together, and the reads of the
// secrets (a GET of bucket.SecretKey). DoMulti may be called from several goroutines at
// once (a batch on a cluster sends each transaction on its own).
type counting struct {
	rueidis.Client
	mu                                  sync.Mutex // guards the counts while calls are sent
	texts, bytes, trips, scripts, reads int
}

// Do counts cmd and sends it.
func (c *counting) Do(ctx context.Context, cmd rueidis.Completed) rueidis.RedisResult {
	c.count(cmd)
	return c.Client.Do(ctx, cmd)
}

// DoMulti counts cmds and sends them.
func (c *counting) DoMulti(ctx context.Context, cmds ...rueidis.Completed) []rueidis.RedisResult {
	c.count(cmds...)
	return c.Client.DoMulti(ctx, cmds...)
}

// count counts the round trip of cmds, before they are sent (rueidis reuses a command
// sent).
func (c *counting) count(cmds ...rueidis.Completed) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.trips++
	script := false
	for _, cmd := range cmds {
		args := cmd.Commands()
		switch strings.ToUpper(args[0]) {
		case "EVAL":
			c.texts++
			script = true
		case "EVALSHA":
			script = true
		case "GET":
			if len(args) == 2 && args[1] == bucket.SecretKey {
				c.reads++
			}
		}
		for _, a := range args {
			c.bytes += len(a)
		}
	}
	if script {
		c.scripts++
	}
}

// secretReads returns the reads of the secrets counted so far.
func (c *counting) secretReads() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.reads
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

// TestDecideBatchOfLeasesInOneRoundTrip: a batch of acquires, of releases, of reserves
// that acquire, and of their settles and cancels, with a concurrency rule each (a
// backend returning its leases together), goes to Redis in one round trip, as a batch
// of checks does, each decided as Decide decides it; a peek and a reset of leases still
// take a round trip of their own.
func TestDecideBatchOfLeasesInOneRoundTrip(t *testing.T) {
	srv := redistest.Start(t)
	c := &counting{Client: redistest.Client(t, srv.Addr)}
	l := bucket.New(c, bucket.Secret([]byte("a secret of thirty-two bytes or more")))
	rules := []bucketgate.Rule{{Name: "tokens", Capacity: 1000, RefillPerSecond: 0.001}, {Name: "streams", Concurrency: 100}}
	ctx := context.Background()
	batch := func(n int, q func(i int) bucketgate.Request) []bucketgate.Request {
		qs := make([]bucketgate.Request, n)
		for i := range qs {
			qs[i] = q(i)
			qs[i].Identity, qs[i].Rules = fmt.Sprintf("streamer-%d", i%10), rules
		}
		return qs
	}
	decide(t, l, bucketgate.Request{Identity: "warm", Rules: rules[:1], Cost: 1}) // the script known: no NOSCRIPT, no EVAL after
	var leases, reservations []string
	for _, tt := range []struct {
		name  string
		qs    func() []bucketgate.Request
		trips int
		want  func(i int, d bucketgate.Decision) bool
		keep  func(ds []bucketgate.Decision)
	}{
		{"100 acquires", func() []bucketgate.Request {
			return batch(100, func(int) bucketgate.Request { return bucketgate.Request{Cost: 1} })
		}, 1, func(_ int, d bucketgate.Decision) bool { return d.Allowed && d.Lease != "" }, func(ds []bucketgate.Decision) {
			for _, d := range ds {
				leases = append(leases, d.Lease)
			}
		}},
		{"their 100 releases", func() []bucketgate.Request {
			return batch(100, func(i int) bucketgate.Request { return bucketgate.Request{Op: bucketgate.OpRelease, ID: leases[i]} })
		}, 1, func(_ int, d bucketgate.Decision) bool { return d.Allowed && d.Released }, nil},
		{"the releases again", func() []bucketgate.Request {
			return batch(100, func(i int) bucketgate.Request { return bucketgate.Request{Op: bucketgate.OpRelease, ID: leases[i]} })
		}, 1, func(_ int, d bucketgate.Decision) bool { return d.Allowed && !d.Released }, nil},
		{"20 reserves that acquire", func() []bucketgate.Request {
			return batch(20, func(int) bucketgate.Request { return bucketgate.Request{Op: bucketgate.OpReserve, Cost: 10} })
		}, 1, func(_ int, d bucketgate.Decision) bool { return d.Allowed && d.Lease != "" && d.Reservation != "" }, func(ds []bucketgate.Decision) {
			for _, d := range ds {
				reservations = append(reservations, d.Reservation)
			}
		}},
		{"their settles and cancels, and refunds", func() []bucketgate.Request {
			return batch(30, func(i int) bucketgate.Request {
				switch {
				case i >= 20:
					return bucketgate.Request{Op: bucketgate.OpRefund, Cost: 1}
				case i%2 == 0:
					return bucketgate.Request{Op: bucketgate.OpSettle, ID: reservations[i], Cost: 4}
				}
				return bucketgate.Request{Op: bucketgate.OpCancel, ID: reservations[i]}
			})
		}, 1, func(i int, d bucketgate.Decision) bool {
			// Each identity had 1000 - 10 - 2*10 = 970 after its acquires and two reserves;
			// an even one's settles give 6 back each, an odd one's cancels 10, then a
			// refund 1.
			want := [][2]int64{{976, 980}, {982, 990}, {983, 991}}[i/10][i%2]
			return d.Allowed && d.Remaining == want
		}, nil},
		{"two acquires, a peek, an acquire, a reset, an acquire", func() []bucketgate.Request {
			return batch(6, func(i int) bucketgate.Request {
				return []bucketgate.Request{{Cost: 1}, {Cost: 1}, {}, {Cost: 1}, {Op: bucketgate.OpReset}, {Cost: 1}}[i]
			})
		}, 5, func(int, bucketgate.Decision) bool { return true }, nil},
	} {
		t.Run(tt.name, func(t *testing.T) {
			before := c.scripts
			ds, errs := l.DecideBatch(ctx, tt.qs())
			for i, d := range ds {
				if errs[i] != nil || !tt.want(i, d) {
					t.Fatalf("request %d: %+v, %v", i, d, errs[i])
				}
			}
			if tt.keep != nil {
				tt.keep(ds)
			}
			if got := c.scripts - before; got != tt.trips {
				t.Fatalf("%d round trips with a script call, want %d", got, tt.trips)
			}
		})
	}
}
