package bucket_test

import (
	"context"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/bucketgate/bucketgate"
	"github.com/bucketgate/bucketgate/internal/bucket"
	"github.com/bucketgate/bucketgate/internal/redisconn"
	"github.com/bucketgate/bucketgate/internal/testkit/redistest"
	"github.com/redis/rueidis"
)

// reshardFor is how long the slot of the test's identity stays half moved: longer than
// a slot takes to move on a real cluster, shorter than the test's deadline.
const reshardFor = 100 * time.Millisecond

// duringReshard runs call, under a deadline of 10 s, while identity's slot moves from
// one master to the other: the migration begun before call, ended reshardFor after.
func duringReshard(t *testing.T, from, to *redistest.Server, identity string, call func(deadline context.Context)) {
	t.Helper()
	ctx := context.Background()
	slot := bucket.Slot(identity)
	if err := redistest.BeginMigration(ctx, slot, from, to); err != nil {
		t.Fatal(err)
	}
	moved := make(chan error, 1)
	time.AfterFunc(reshardFor, func() { moved <- redistest.EndMigration(ctx, slot, from, to) })
	deadline, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	call(deadline)
	if err := <-moved; err != nil {
		t.Fatal(err)
	}
}

// TestDecideDuringReshard: while the slot of an identity moves to another master, a
// call on several of its keys, some not made yet (the usage archive before the first
// day ends, an idempotent request's record), is refused by Redis (TRYAGAIN: nothing
// ran) until the keys have moved; the Limiter sends it again until they have, within
// the call's deadline, and it is decided once, by the new master.
func TestDecideDuringReshard(t *testing.T) {
	cluster := redistest.StartCluster(t, 3, 0)
	c := connect(t, map[string]string{"REDIS_ADDR": strings.Join(cluster.Seeds(), ",")})
	from, to := cluster.Masters[0], cluster.Masters[1]
	tests := []struct {
		name      string
		usageDays int
		requestID string
		batch     bool
	}{
		{"Decide with usage", 1, "", false},
		{"DecideBatch with usage", 1, "", true},
		{"Decide, idempotent", 0, "request-1", false},
		{"DecideBatch, idempotent", 0, "request-1", true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			l := bucket.New(c, bucket.Usage(tc.usageDays))
			q := bucketgate.Request{Identity: onServer(t, 0, 3, "reshard-"+tc.name), Rules: still, Cost: 1}
			if d := decide(t, l, q); d.Remaining != still[0].Capacity-1 {
				t.Fatalf("before the reshard: %+v", d)
			}
			q.RequestID = tc.requestID
			var d bucketgate.Decision
			var err error
			duringReshard(t, from, to, q.Identity, func(deadline context.Context) {
				if tc.batch {
					ds, errs := l.DecideBatch(deadline, []bucketgate.Request{q})
					d, err = ds[0], errs[0]
				} else {
					d, err = l.Decide(deadline, q)
				}
			})
			if err != nil || d.Remaining != still[0].Capacity-2 || d.Replayed {
				t.Fatalf("during the reshard: %+v, %v", d, err)
			}
			if n, err := to.Command(ctx, "EXISTS", bucket.Key(q.Identity)); err != nil || n != "1" {
				t.Fatalf("the new master holds %s: %s, %v", bucket.Key(q.Identity), n, err)
			}
			if d := decide(t, l, bucketgate.Request{Identity: q.Identity, Rules: still}); d.Remaining != still[0].Capacity-2 {
				t.Fatalf("after the reshard, charged %d times: %+v", still[0].Capacity-d.Remaining, d)
			}
			if q.RequestID != "" { // its record moved with the slot: sent again, answered again
				if again := decide(t, l, q); !again.Replayed || again.Remaining != d.Remaining || !again.At.Equal(d.At) {
					t.Fatalf("sent again after the reshard: %+v; want the first decision %+v", again, d)
				}
			}
		})
	}
}

// TestResetOfLeasesDuringReshard: a reset of a bucket and a concurrency rule while the
// identity's slot moves (its reset key made by the script does not exist on either
// master: TRYAGAIN) is sent again until the slot has moved, as every other call is:
// the bucket is full and the leases gone.
func TestResetOfLeasesDuringReshard(t *testing.T) {
	cluster := redistest.StartCluster(t, 3, 0)
	l := bucket.New(connect(t, map[string]string{"REDIS_ADDR": strings.Join(cluster.Seeds(), ",")}))
	from, to := cluster.Masters[0], cluster.Masters[1]
	rules := []bucketgate.Rule{{Name: "streams", Concurrency: 2}, {Name: "tokens", Capacity: 10, RefillPerSecond: 0.001}}
	q := bucketgate.Request{Identity: onServer(t, 0, 3, "reset-leases"), Rules: rules, Cost: 4, TTL: time.Minute}
	decide(t, l, q)
	var err error
	duringReshard(t, from, to, q.Identity, func(deadline context.Context) {
		_, err = l.Decide(deadline, bucketgate.Request{Identity: q.Identity, Rules: rules, Op: bucketgate.OpReset})
	})
	if err != nil {
		t.Fatalf("a reset during the reshard: %v", err)
	}
	if d := decide(t, l, bucketgate.Request{Identity: q.Identity, Rules: rules}); d.Rules[0].Remaining != 2 || d.Rules[1].Remaining != 10 {
		t.Fatalf("after the reset, a peek = %+v; want both rules full", d.Rules)
	}
}

// TestDecideDuringStalledReshard: a slot left half moved (a resharding stopped midway)
// fails the calls on it with TRYAGAIN once they have waited TryAgainFor, even without a
// deadline; they are never decided, and answer again once the slot has moved.
func TestDecideDuringStalledReshard(t *testing.T) {
	cluster := redistest.StartCluster(t, 3, 0)
	l := bucket.New(connect(t, map[string]string{"REDIS_ADDR": strings.Join(cluster.Seeds(), ",")}), bucket.Usage(1))
	ctx := context.Background()
	from, to := cluster.Masters[0], cluster.Masters[1]
	q := bucketgate.Request{Identity: onServer(t, 0, 3, "stalled"), Rules: still, Cost: 1}
	decide(t, l, q)
	slot := bucket.Slot(q.Identity)
	if err := redistest.BeginMigration(ctx, slot, from, to); err != nil {
		t.Fatal(err)
	}
	if _, err := l.Decide(ctx, q); err == nil || !strings.Contains(err.Error(), "TRYAGAIN") {
		t.Fatalf("a slot left half moved: %v, want TRYAGAIN", err)
	}
	if ds, errs := l.DecideBatch(ctx, []bucketgate.Request{q}); errs[0] == nil || !strings.Contains(errs[0].Error(), "TRYAGAIN") {
		t.Fatalf("a batch on a slot left half moved: %+v %v, want TRYAGAIN", ds[0], errs[0])
	}
	if err := redistest.EndMigration(ctx, slot, from, to); err != nil {
		t.Fatal(err)
	}
	if d := decide(t, l, q); d.Remaining != still[0].Capacity-2 {
		t.Fatalf("once the slot moved, charged %d times: %+v", still[0].Capacity-d.Remaining, d)
	}
}

// TestReshardAsRestrictedUser: while the slot of an identity moves, a command on a key
// its old master does not hold is redirected (ASK) to the new master, which runs it
// after ASKING: a user of redisconn.MinimalACL (a cluster of your own, or a node-based
// ElastiCache cluster resharding online) may send ASKING, so that the call is decided
// while the slot moves, not sent back and forth (ASK, then MOVED) until it has moved.
func TestReshardAsRestrictedUser(t *testing.T) {
	cluster := redistest.StartCluster(t, 3, 0)
	ctx := context.Background()
	for _, n := range cluster.Masters {
		addLimiterUser(t, n)
	}
	l := bucket.New(connect(t, map[string]string{"REDIS_ADDR": strings.Join(cluster.Seeds(), ","), "REDIS_USERNAME": "limiter", "REDIS_PASSWORD": "pw"}))
	from, to := cluster.Masters[0], cluster.Masters[1]
	streams := []bucketgate.Rule{{Name: "streams", Concurrency: 2}}
	tests := []struct {
		name string
		q    bucketgate.Request
	}{
		{"a peek of leases", bucketgate.Request{Rules: streams}},
		{"a reset of leases", bucketgate.Request{Rules: streams, Op: bucketgate.OpReset}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tc.q.Identity = onServer(t, 0, 3, "acl-"+tc.name)
			slot := bucket.Slot(tc.q.Identity)
			if err := redistest.BeginMigration(ctx, slot, from, to); err != nil {
				t.Fatal(err)
			}
			deadline, cancel := context.WithTimeout(ctx, 5*time.Second)
			defer cancel()
			d, err := l.Decide(deadline, tc.q)
			if err := redistest.EndMigration(ctx, slot, from, to); err != nil {
				t.Fatal(err)
			}
			if err != nil || !d.Allowed {
				t.Fatalf("while the slot moves: %+v, %v", d, err)
			}
		})
	}
}

// TestUsageDuringReshard: a usage read while the identity's slot moves (its archive not
// made yet: on neither master) is refused by Redis (TRYAGAIN: nothing ran) until the
// slot has moved; the Limiter reads again, as it sends a script call again, within the
// call's deadline, and answers the day's counts.
func TestUsageDuringReshard(t *testing.T) {
	cluster := redistest.StartCluster(t, 3, 0)
	l := bucket.New(connect(t, map[string]string{"REDIS_ADDR": strings.Join(cluster.Seeds(), ",")}), bucket.Usage(1))
	from, to := cluster.Masters[0], cluster.Masters[1]
	q := bucketgate.Request{Identity: onServer(t, 0, 3, "usage-reshard"), Rules: free, Cost: 1}
	d := decide(t, l, q)
	var days []bucketgate.DayUsage
	var err error
	duringReshard(t, from, to, q.Identity, func(deadline context.Context) {
		days, err = l.Usage(deadline, q.Identity, d.At, d.At)
	})
	if err != nil || len(days) != 1 || days[0].Allowed != 1 || days[0].Cost != 1 {
		t.Fatalf("usage during the reshard: %+v, %v; want 1 allowed of cost 1", days, err)
	}
}

// beginning is a counting client that calls begin once its first round trip of
// commands (DoMulti) has been answered.
type beginning struct {
	*counting
	mu    sync.Mutex // guards begin: a batch on a cluster sends each transaction on its own
	begin func()
}

// DoMulti sends cmds, then begins.
func (b *beginning) DoMulti(ctx context.Context, cmds ...rueidis.Completed) []rueidis.RedisResult {
	results := b.counting.DoMulti(ctx, cmds...)
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.begin != nil {
		b.begin()
		b.begin = nil
	}
	return results
}

// TestDecideBatchFlushedDuringReshard: a batch on masters that lost the script while
// the slot of one identity moves decides each of its calls once, in order, in a
// bounded number of round trips, when the moving slot's calls are refused with
// TRYAGAIN at once, and when they were refused with NOSCRIPT first, so that the round
// that sends one of them with the script's text is refused (TRYAGAIN, before the text
// is loaded) and loads nothing. The moving identity's first two requests come in a row,
// the first needing a key made by no master yet (its record): once the old master
// redirects them (ASK, its keys moved), they go to the new master whole, in their
// transaction, where the first is refused (TRYAGAIN) and the second waits for it.
func TestDecideBatchFlushedDuringReshard(t *testing.T) {
	cluster := redistest.StartCluster(t, 3, 0)
	c := connect(t, map[string]string{"REDIS_ADDR": strings.Join(cluster.Seeds(), ",")})
	from, to := cluster.Masters[0], cluster.Masters[1]
	tests := []struct {
		name       string
		afterFirst bool // the migration begins once the batch's first round trip is answered
		texts      int  // the calls with the script's text: one a master, and one refused
	}{
		{"the slot moving before the batch", false, 2},
		{"the slot moving after its first round trip", true, 3},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			moving := onServer(t, 0, 3, "flushed-reshard-"+tc.name)
			counted := &counting{Client: c}
			client := &beginning{counting: counted}
			l := bucket.New(client)
			if d := decide(t, l, bucketgate.Request{Identity: moving, Rules: still, Cost: 1}); d.Remaining != still[0].Capacity-1 {
				t.Fatalf("before the reshard: %+v", d)
			}
			qs := []bucketgate.Request{
				{Identity: moving, Rules: still, Cost: 1, RequestID: "first"}, // its record on no master: TRYAGAIN
				{Identity: moving, Rules: still, Cost: 1},
				{Identity: onServer(t, 0, 3, "flushed-same-node-"+tc.name), Rules: still, Cost: 1},
				{Identity: onServer(t, 1, 3, "flushed-other-node-"+tc.name), Rules: still, Cost: 1},
				{Identity: moving, Rules: still, Cost: 1, RequestID: "second"},
			}
			want := []int64{still[0].Capacity - 2, still[0].Capacity - 3, still[0].Capacity - 1, still[0].Capacity - 1, still[0].Capacity - 4}
			for _, m := range cluster.Masters {
				if _, err := m.Command(ctx, "SCRIPT", "FLUSH"); err != nil {
					t.Fatal(err)
				}
			}
			slot := bucket.Slot(moving)
			begin := func() {
				if err := redistest.BeginMigration(ctx, slot, from, to); err != nil {
					t.Error(err)
				}
			}
			if tc.afterFirst {
				client.begin = begin
			} else {
				begin()
			}
			counted.trips, counted.texts = 0, 0
			moved := make(chan error, 1)
			time.AfterFunc(reshardFor, func() { moved <- redistest.EndMigration(ctx, slot, from, to) })
			deadline, cancel := context.WithTimeout(ctx, 10*time.Second)
			defer cancel()
			ds, errs := l.DecideBatch(deadline, qs)
			if err := <-moved; err != nil {
				t.Fatal(err)
			}
			t.Logf("%d round trips, %d calls with the script's text", counted.trips, counted.texts)
			for i, d := range ds {
				if errs[i] != nil || !d.Allowed || d.Replayed || d.Remaining != want[i] {
					t.Fatalf("request %d: %+v, %v; want allowed with %d left (each once, in order)", i, d, errs[i], want[i])
				}
			}
			if d := decide(t, l, bucketgate.Request{Identity: moving, Rules: still}); d.Remaining != still[0].Capacity-4 {
				t.Fatalf("after the reshard, charged %d times: %+v", still[0].Capacity-d.Remaining, d)
			}
			// The first round trip; then each wait for the slot: a round trip for the calls
			// refused, and the rounds of loading the script (bucket.MaxLoads, and one with
			// the text for every call still refused).
			rounds := 1 + (1+bucket.MaxLoads+1)*(1+int(bucket.TryAgainFor/bucket.TryAgainWait))
			if counted.trips > rounds || counted.texts != tc.texts {
				t.Fatalf("%d round trips and %d calls with the script's text, want at most %d and %d", counted.trips, counted.texts, rounds, tc.texts)
			}
		})
	}
}

// TestDecideBatchAsUserDuringReshard: when the slot of an identity has moved (MOVED,
// the client's map of slots not refreshed yet) or is moving with its keys moved already
// (ASK), the old master redirects the batch's calls of the identity and runs none: each
// is decided once, in order, by the new master, as every other call of the batch is,
// once the slot has moved (ASK) or the client knows it has (MOVED); as a user of
// redisconn.MinimalACL, in MULTI ... EXEC, and as a user whose ACL lacks MULTI, one by
// one. Then, a call the new master refuses (TRYAGAIN: its record on no master) after a
// later call of its identity ran there is never run: it fails, naming the refused
// MULTI, and charges nothing.
func TestDecideBatchAsUserDuringReshard(t *testing.T) {
	cluster := redistest.StartCluster(t, 3, 0)
	ctx := context.Background()
	users := []struct{ name, acl string }{
		{"with-multi", redisconn.MinimalACL},
		{"without-multi", strings.Replace(redisconn.MinimalACL, " +multi", "", 1)},
	}
	for _, u := range users {
		for _, n := range cluster.Masters {
			if _, err := n.Command(ctx, append(append([]string{"ACL", "SETUSER", u.name}, strings.Fields(u.acl)...), ">pw")...); err != nil {
				t.Fatal(err)
			}
		}
	}
	from, to := cluster.Masters[0], cluster.Masters[1]
	moving := func(slot int) error { // its keys moved, the slot still moving
		if err := redistest.BeginMigration(ctx, slot, from, to); err != nil {
			return err
		}
		return redistest.MoveKeys(ctx, slot, from, to)
	}
	moved := func(slot int) error {
		if err := redistest.BeginMigration(ctx, slot, from, to); err != nil {
			return err
		}
		return redistest.EndMigration(ctx, slot, from, to)
	}
	ending := func(slot int) error { return redistest.EndMigration(ctx, slot, from, to) }
	capacity := still[0].Capacity
	each := []int64{capacity - 2, capacity - 1, capacity - 3} // each once, in order
	tests := []struct {
		name      string
		user      string               // "": each
		move      func(slot int) error // before the batch
		end       func(slot int) error // reshardFor after the batch began
		requestID string               // the first request's
		want      []int64              // left after each request; 0: failed, naming MULTI
	}{
		{"its keys moved, the slot moving (ASK)", "", moving, ending, "", each},
		{"the slot moved (MOVED)", "", moved, func(int) error { return nil }, "", each},
		{"the first refused (ASK, then TRYAGAIN): sent again with the second", "with-multi", moving, ending, "first", each},
		{"the first refused (ASK, then TRYAGAIN) after the second ran", "without-multi", moving, ending, "first", []int64{0, capacity - 1, capacity - 2}},
	}
	for _, tc := range tests {
		for _, u := range users {
			if tc.user != "" && tc.user != u.name {
				continue
			}
			t.Run(u.name+", "+tc.name, func(t *testing.T) {
				l := bucket.New(connect(t, map[string]string{"REDIS_ADDR": strings.Join(cluster.Seeds(), ","), "REDIS_USERNAME": u.name, "REDIS_PASSWORD": "pw"}))
				id := onServer(t, 0, 3, u.name+"-"+tc.name)
				if d := decide(t, l, bucketgate.Request{Identity: id, Rules: still, Cost: 1}); d.Remaining != capacity-1 {
					t.Fatalf("before the reshard: %+v", d)
				}
				slot := bucket.Slot(id)
				if err := tc.move(slot); err != nil {
					t.Fatal(err)
				}
				qs := []bucketgate.Request{
					{Identity: id, Rules: still, Cost: 1, RequestID: tc.requestID},
					{Identity: onServer(t, 1, 3, u.name+"-other-"+tc.name), Rules: still, Cost: 1},
					{Identity: id, Rules: still, Cost: 1},
				}
				ended := make(chan error, 1)
				time.AfterFunc(reshardFor, func() { ended <- tc.end(slot) })
				deadline, cancel := context.WithTimeout(ctx, 10*time.Second)
				defer cancel()
				ds, errs := l.DecideBatch(deadline, qs)
				if err := <-ended; err != nil {
					t.Fatal(err)
				}
				for i, d := range ds {
					switch want := tc.want[i]; {
					case want == 0 && (errs[i] == nil || !strings.Contains(errs[i].Error(), "NOPERM") || !strings.Contains(errs[i].Error(), "not sent again")):
						t.Errorf("request %d: %+v, %v; want refused, naming MULTI, not sent again", i, d, errs[i])
					case want != 0 && (errs[i] != nil || !d.Allowed || d.Remaining != want):
						t.Errorf("request %d: %+v, %v; want allowed with %d left", i, d, errs[i], want)
					}
				}
				if d := decide(t, l, bucketgate.Request{Identity: id, Rules: still}); d.Remaining != tc.want[2] {
					t.Fatalf("after the reshard, charged %d times: %+v", capacity-d.Remaining, d)
				}
			})
		}
	}
}

// TestUsageExecRedirected: a usage read whose EXEC a cluster redirected (the slot moved
// between the reads' queuing and EXEC: Redis discarded the transaction, and rueidis sent
// EXEC alone to the new master, which answered that no MULTI came first) is read again,
// as a read refused with TRYAGAIN is, not failed. A fake cluster gives the replies.
func TestUsageExecRedirected(t *testing.T) {
	var execs atomic.Int32
	var addr atomic.Value // the fake's, once started
	fake := redistest.StartFakeCluster(t, func(cmd []string) string {
		switch strings.ToUpper(cmd[0]) {
		case "EXISTS":
			return ":1\r\n"
		case "MULTI":
			return "+OK\r\n"
		case "HMGET":
			return "+QUEUED\r\n"
		case "EXEC":
			switch execs.Add(1) {
			case 1:
				return "-MOVED 1 " + addr.Load().(string) + "\r\n"
			case 2:
				return "-ERR EXEC without MULTI\r\n"
			}
			return "*2\r\n*3\r\n$1\r\n1\r\n$-1\r\n$-1\r\n*1\r\n$-1\r\n" // today: 1 check allowed
		}
		return "-ERR unexpected " + cmd[0] + "\r\n"
	})
	addr.Store(fake.Addr)
	l := bucket.New(redistest.Client(t, fake.Addr))
	days, err := l.Usage(context.Background(), "u", epoch, epoch)
	if err != nil || len(days) != 1 || days[0].Allowed != 1 || days[0].Cost != 1 {
		t.Fatalf("usage read again after its EXEC was redirected: %+v, %v; want 1 check allowed", days, err)
	}
	if n := execs.Load(); n != 3 {
		t.Fatalf("%d EXECs, want 3: the redirected one, rueidis's alone, and the one read again", n)
	}
}
