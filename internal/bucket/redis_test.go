package bucket_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/rueidis"

	"github.com/bucketgate/bucketgate"
	"github.com/bucketgate/bucketgate/internal/bucket"
	"github.com/bucketgate/bucketgate/internal/lua"
	"github.com/bucketgate/bucketgate/internal/testkit/redistest"
)

// hostile are identities that try to leave their hash tag, collide, or break the key.
var hostile = []string{
	"plain", "a{b}c", "}", "{", "{}", "%7B", "a:r1:tokens", "\x00\xff", "%7D", "%", "%25", "bg:{x}",
	"\x00", "naïve", strings.Repeat("{", bucketgate.MaxIdentity), "x}y{z",
}

// real starts a redis-server and returns a Limiter and a raw client on it.
func real(t testing.TB) (*bucket.Limiter, rueidis.Client) {
	t.Helper()
	srv := redistest.Start(t)
	c := redistest.Client(t, srv.Addr)
	return bucket.New(c), c
}

func do(t testing.TB, c rueidis.Client, cmd rueidis.Completed) rueidis.RedisResult {
	t.Helper()
	r := c.Do(context.Background(), cmd)
	if err := r.Error(); err != nil && !rueidis.IsRedisNil(err) {
		t.Fatalf("redis: %v", err)
	}
	return r
}

// shiftStamps moves every rule stamp of identity by d, in Redis and in the model (nil
// model: Redis only), as if d had passed (d > 0) or the state came from a clock d ahead
// (d < 0). The key's expiry moves later by the skew so it cannot expire early.
func shiftStamps(t testing.TB, c rueidis.Client, model *bucket.Model, identity string, rules []bucketgate.Rule, d time.Duration) {
	t.Helper()
	key := bucket.Key(identity)
	for _, r := range rules {
		stored, err := c.Do(context.Background(), c.B().Hget().Key(key).Field(r.Name+lua.StampSuffix).Build()).ToString()
		if rueidis.IsRedisNil(err) {
			continue
		} else if err != nil {
			t.Fatalf("HGET ts: %v", err)
		}
		digits, marked := strings.CutPrefix(stored, string(lua.MarkLimited)) // the mark stays
		ts, err := strconv.ParseInt(digits, 10, 64)
		if err != nil {
			t.Fatalf("stamp %q: %v", stored, err)
		}
		ts -= d.Microseconds()
		do(t, c, c.B().Hset().Key(key).FieldValue().FieldValue(r.Name+lua.StampSuffix, stored[:len(stored)-len(digits)]+strconv.FormatInt(ts, 10)).Build())
		if model != nil {
			b, _ := model.Bucket(identity, r.Name)
			model.SetBucket(identity, r.Name, bucket.ModelBucket{Tokens: b.Tokens, Stamp: ts, Limited: marked})
		}
	}
	if d < 0 {
		do(t, c, c.B().Pexpire().Key(key).Milliseconds((-d + time.Hour).Milliseconds()).Build())
	}
}

func TestFreePlanScenarioRealRedis(t *testing.T) {
	l, c := real(t)
	q := bucketgate.Request{Identity: "tenant-1", Rules: free, Cost: 1}
	expectRun(t, l, q, 10, true)
	expectRun(t, l, q, 1, false)
	shiftStamps(t, c, nil, q.Identity, free, 5*time.Second)
	expectRun(t, l, q, 5, true)
	expectRun(t, l, q, 1, false)
}

// TestDifferential holds the script on real Redis to the Go model, decision by decision
// and byte for byte of state, over random identities, rules (buckets and quotas),
// costs and time steps, with usage off; TestDifferentialUsage with usage on.
func TestDifferential(t *testing.T) {
	_, c := real(t)
	differential(t, c, 10_000, 0, 0)
}

// TestDifferentialUsage is TestDifferential with usage kept 35 days: the day's usage
// and the key's expiry, which usage makes cover its days, are the model's too.
func TestDifferentialUsage(t *testing.T) {
	_, c := real(t)
	differential(t, c, 5000, 0, 35)
}

// differential runs ops random operations against c and the model, usage kept
// usageDays days (0: none): decisions on the hostile identities plus extra generated
// ones, time steps of up to 10 s, buckets stamped up to 2 s in the future (a skewed
// failover), and quota windows that end (a real server's clock cannot be moved, so the
// stored window is moved back to the one before: what the script then finds is what it
// finds once a window has ended). Every decision must equal the model's at the same
// Redis time, and in the end every identity's stored fields the model's.
func differential(t *testing.T, c rueidis.Client, ops, extra, usageDays int) {
	t.Helper()
	l := bucket.New(c, bucket.Usage(usageDays))
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 2026))
	rates := []float64{0.01, 0.5, 1, 3.7, 50, 1000, 1000.0 / 86400, 1e6}
	pool := make([]bucketgate.Rule, 7)
	for i := range pool {
		// The last two rules are shadow: requests mix them with enforced rules, or carry
		// shadow rules alone. They and the first two are slow enough to run dry, so that
		// every seed limits often (a pool of fast rules alone once left the cluster's
		// 3,000 operations below the floor of limited ones).
		shadow := i >= len(pool)-2
		rate := rates[rng.IntN(len(rates))]
		if shadow || i < 2 {
			rate = rates[rng.IntN(3)]
		}
		capacity := min(int64(1+rng.IntN(30)), int64(rate*bucketgate.MaxFillTime.Seconds()))
		pool[i] = bucketgate.Rule{Name: fmt.Sprintf("r%d", i), Capacity: capacity, RefillPerSecond: rate, Shadow: shadow}
	}
	pool = append(pool,
		bucketgate.Rule{Name: "q-day", Limit: int64(1 + rng.IntN(30)), Period: bucketgate.PeriodDay},
		bucketgate.Rule{Name: "q-week", Limit: int64(1 + rng.IntN(30)), Period: bucketgate.PeriodWeek},
		bucketgate.Rule{Name: "q-month", Limit: int64(1 + rng.IntN(30)), Period: bucketgate.PeriodMonth, Anchor: uint8(1 + rng.IntN(bucketgate.MaxAnchor))},
		bucketgate.Rule{Name: "q-shadow", Limit: int64(1 + rng.IntN(10)), Period: bucketgate.PeriodMonth, Shadow: true},
	)
	ids := append([]string(nil), hostile[:8]...)
	for i := range extra {
		ids = append(ids, "id-"+strconv.Itoa(i))
	}
	model := bucket.NewModel()
	model.UsageDays = usageDays
	counts := map[string]int{}
	skewed := map[string]bool{} // shiftStamps gave the key an hour's life: its expiry is no longer the model's (even ids only)
	var last time.Time          // the Redis time of the latest decision
	for range ops {
		i := rng.IntN(len(ids))
		id := ids[i]
		switch op := rng.IntN(100); {
		case op < 3 && i%2 == 0: // state from a clock up to 2 s ahead: elapsed below zero counts as zero
			shiftStamps(t, c, model, id, pool, -time.Duration(rng.Int64N(int64(2*time.Second))))
			counts["skew"]++
			skewed[id] = true
		case op < 8: // a time step of up to 10 s
			shiftStamps(t, c, model, id, pool, time.Duration(rng.Int64N(int64(10*time.Second))))
			counts["step"]++
		case op < 10: // every quota's window ends
			if endWindows(t, c, model, id, pool) {
				counts["window ended"]++
			}
		default:
			q := randomRequest(rng, id, pool)
			got := decide(t, l, q)
			want := model.Decide(got.At, q)
			if !got.At.Equal(want.At) {
				t.Fatalf("At %v vs %v", got.At, want.At)
			}
			last = got.At
			got.At, want.At = time.Time{}, time.Time{}
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("request %+v:\nredis %+v\nmodel %+v", q, got, want)
			}
			if !skewed[id] {
				compareExpiry(t, c, model, id)
			}
			counts[string(got.Reason)]++
			switch {
			case q.Op != bucketgate.OpCheck:
				counts[q.Op.String()]++
			case q.Cost == 0:
				counts["peek"]++
			}
			if got.ShadowLimited != 0 {
				counts["shadow-limited"]++
			}
			for _, c := range got.Crossings {
				counts[fmt.Sprintf("%s %d", c.Kind, c.Percent)]++
			}
			if got.Rule == "" {
				counts["shadow only"]++
			}
			if i := slices.IndexFunc(q.Rules, func(r bucketgate.Rule) bool { return r.Name == got.Rule }); i >= 0 && q.Rules[i].IsQuota() {
				counts["quota binds "+string(got.Reason)]++
			}
		}
	}
	t.Logf("operations: %v", counts)
	if counts["ok"] < ops/10 || counts["limited"] < ops/20 || counts["peek"] < ops/20 || counts["refund"] < ops/50 ||
		counts["reset"] < ops/100 || counts["shadow-limited"] < ops/200 || counts["shadow only"] < ops/100 ||
		counts["quota binds limited"] < ops/200 || counts["window ended"] < ops/200 ||
		counts["Rate Limited 0"] < ops/200 || counts["Quota Threshold Reached 80"] < ops/500 || counts["Quota Threshold Reached 100"] < ops/500 {
		t.Errorf("workload too one-sided to mean much: %v", counts)
	}
	for _, id := range ids {
		compareStored(t, c, model, id, last, !skewed[id])
		compareUsage(t, l, model, id, last.AddDate(0, 0, -1), last, last)
	}
	if len(skewed) > (len(ids)+1)/2 {
		t.Fatalf("%d of %d identities skewed: too few expiries compared", len(skewed), len(ids))
	}
}

// endWindows ends the stored window of every quota of identity among rules, in Redis
// and in the model, by moving its end back to its start (in the past); it reports
// whether one had a window stored.
func endWindows(t testing.TB, c rueidis.Client, model *bucket.Model, identity string, rules []bucketgate.Rule) bool {
	t.Helper()
	key := bucket.Key(identity)
	moved := false
	for _, r := range rules {
		if !r.IsQuota() {
			continue
		}
		stored, err := c.Do(context.Background(), c.B().Hget().Key(key).Field(r.Name+lua.EndSuffix).Build()).AsFloat64() // marks and all
		if rueidis.IsRedisNil(err) {
			continue
		} else if err != nil {
			t.Fatalf("HGET end: %v", err)
		}
		start, _ := r.Window(time.Unix(int64(stored), 0).Add(-time.Second))
		do(t, c, c.B().Hset().Key(key).FieldValue().FieldValue(r.Name+lua.EndSuffix, strconv.FormatInt(start.Unix(), 10)).Build())
		q, _ := model.Quota(identity, r.Name)
		model.SetQuota(identity, r.Name, bucket.ModelQuota{Used: q.Used, End: start.Unix(), Of: q.Of})
		moved = true
	}
	return moved
}

// randomRequest draws 1 to 3 distinct rules and an operation: a check of cost 0 (a
// peek), 1, a random cost or the smallest capacity; a refund of 1 to the smallest
// capacity; or a reset. One rule in four comes as another plan has it (otherPlan): the
// same bucket under a smaller capacity and a faster rate, so that checks, refunds and
// peeks meet buckets another plan left above their capacity; one in eight of the rest
// as a larger plan has it (largerPlan), which needs the key longer than the expiry the
// last admission set, and reports a quota's thresholds of its larger limit.
func randomRequest(rng *rand.Rand, id string, pool []bucketgate.Rule) bucketgate.Request {
	perm := rng.Perm(len(pool))[:1+rng.IntN(3)]
	q := bucketgate.Request{Identity: id}
	// smallest: the smallest capacity or limit of an enforced rule, which bounds a cost
	// and a refund; a shadow rule's bounds neither (what it cannot hold is a shadow
	// denial, and a refund fills it at most), so that with shadow rules alone a cost may
	// be up to twice the largest of theirs.
	smallest, shadowMost := int64(bucketgate.MaxCapacity), int64(0)
	for _, i := range perm {
		r := pool[i]
		if rng.IntN(4) == 0 {
			r = otherPlan(r)
		} else if rng.IntN(8) == 0 {
			r = largerPlan(r)
		}
		q.Rules = append(q.Rules, r)
		if r.Shadow {
			shadowMost = max(shadowMost, 2*r.Max())
		} else {
			smallest = min(smallest, r.Max())
		}
	}
	if smallest == bucketgate.MaxCapacity {
		smallest = shadowMost
	}
	switch rng.IntN(20) {
	case 0, 1, 2, 3:
		q.Cost = 0
	case 4, 5, 6, 7:
		q.Cost = smallest
	case 8, 9, 10, 11:
		q.Cost = rng.Int64N(smallest + 1)
	case 12, 13:
		q.Op, q.Cost = bucketgate.OpRefund, 1+rng.Int64N(smallest)
	case 14:
		q.Op = bucketgate.OpReset
	default:
		q.Cost = 1
	}
	return q
}

// otherPlan returns r as another plan has it: the same name (the same bucket), a third
// of its capacity (at least 1) and twice its rate (at most bucketgate.MaxRefillPerSecond);
// for a quota, a third of its limit (at least 1) in the same windows.
func otherPlan(r bucketgate.Rule) bucketgate.Rule {
	if r.IsQuota() {
		r.Limit = max(1, r.Limit/3)
		return r
	}
	r.Capacity = max(1, r.Capacity/3)
	r.RefillPerSecond = min(2*r.RefillPerSecond, bucketgate.MaxRefillPerSecond)
	return r
}

// largerPlan returns r as a larger plan has it: the same name, twice its capacity at
// half its rate (as far as a fill of 366 days allows); for a quota, three times its
// limit in the same windows.
func largerPlan(r bucketgate.Rule) bucketgate.Rule {
	if r.IsQuota() {
		r.Limit *= 3
		return r
	}
	r.RefillPerSecond /= 2
	r.Capacity = max(1, min(2*r.Capacity, int64(r.RefillPerSecond*bucketgate.MaxFillTime.Seconds())))
	return r
}

// compareExpiry checks that identity's key expires when the model says, and exists
// exactly when the model has state for it.
func compareExpiry(t *testing.T, c rueidis.Client, model *bucket.Model, id string) {
	t.Helper()
	got := mustInt(t, do(t, c, c.B().Pexpiretime().Key(bucket.Key(id)).Build())) // -2: no key
	want, ok := model.ExpiresAt(id)
	switch {
	case !ok && got != -2:
		t.Fatalf("%q: PEXPIRETIME %d, but the model has no state", id, got)
	case ok && got != want.UnixMilli():
		t.Fatalf("%q: PEXPIRETIME %d, model %d", id, got, want.UnixMilli())
	}
}

// TestKeyShapeAndExpiry: one hash per identity with readable fields, expiring exactly
// when every bucket is full again plus the margin; peeks and denials leave it alone.
func TestKeyShapeAndExpiry(t *testing.T) {
	l, c := real(t)
	daily := bucketgate.Rule{Name: "daily", Capacity: 1000, RefillPerSecond: 1000.0 / 86400}
	rules := []bucketgate.Rule{free[0], daily}
	model := bucket.NewModel()
	key := bucket.Key("tenant-9")

	peek := decide(t, l, bucketgate.Request{Identity: "tenant-9", Rules: rules, Cost: 0})
	if n := do(t, c, c.B().Exists().Key(key).Build()); mustInt(t, n) != 0 {
		t.Fatal("a peek created the key")
	}
	if !peek.Allowed || peek.Remaining != 10 || peek.Rule != "burst" {
		t.Errorf("peek: %+v", peek)
	}

	q := bucketgate.Request{Identity: "tenant-9", Rules: rules, Cost: 3}
	d := decide(t, l, q)
	model.Decide(d.At, q)
	fields, err := c.Do(context.Background(), c.B().Hgetall().Key(key).Build()).AsStrMap()
	if err != nil {
		t.Fatal(err)
	}
	names := make([]string, 0, len(fields))
	for f := range fields {
		names = append(names, f)
	}
	slices.Sort(names)
	if want := []string{"burst:tokens", "burst:ts", "daily:tokens", "daily:ts"}; !slices.Equal(names, want) {
		t.Errorf("fields %v, want %v", names, want)
	}
	if fields["burst:tokens"] != "7" || fields["daily:tokens"] != "997" {
		t.Errorf("tokens: %v", fields)
	}
	wantExpiry, _ := model.ExpiresAt("tenant-9")
	if d.ResetAfter != 3*86400*time.Second/1000 {
		t.Errorf("reset after %v, want the daily rule's 259.2 s", d.ResetAfter)
	}
	expiry := mustInt(t, do(t, c, c.B().Pexpiretime().Key(key).Build()))
	if expiry != wantExpiry.UnixMilli() {
		t.Errorf("PEXPIRETIME %d, want %d (full again + %v)", expiry, wantExpiry.UnixMilli(), bucket.ExpiryMargin)
	}

	// A denial writes nothing, so the expiry stays.
	expectRun(t, l, bucketgate.Request{Identity: "tenant-9", Rules: rules, Cost: 8}, 1, false)
	if again := mustInt(t, do(t, c, c.B().Pexpiretime().Key(key).Build())); again != expiry {
		t.Errorf("denial moved expiry %d -> %d", expiry, again)
	}
	// A call with only the short rule must not shorten the life of the daily bucket.
	shiftStamps(t, c, nil, "tenant-9", free, time.Hour)
	expectRun(t, l, bucketgate.Request{Identity: "tenant-9", Rules: free, Cost: 1}, 1, true)
	if again := mustInt(t, do(t, c, c.B().Pexpiretime().Key(key).Build())); again < expiry {
		t.Errorf("a burst-only call shortened expiry %d -> %d", expiry, again)
	}
	// A rule new to the key (the script tries NX first on a fresh rule set) neither
	// shortens its life nor fails to lengthen it.
	expiry = mustInt(t, do(t, c, c.B().Pexpiretime().Key(key).Build()))
	minute := bucketgate.Rule{Name: "minute", Capacity: 5, RefillPerSecond: 1}
	expectRun(t, l, bucketgate.Request{Identity: "tenant-9", Rules: []bucketgate.Rule{minute}, Cost: 1}, 1, true)
	if again := mustInt(t, do(t, c, c.B().Pexpiretime().Key(key).Build())); again != expiry {
		t.Errorf("a new short rule moved expiry %d -> %d", expiry, again)
	}
	month := bucketgate.Rule{Name: "month", Capacity: 10, RefillPerSecond: 10.0 / (30 * 86400)}
	m := expectRun(t, l, bucketgate.Request{Identity: "tenant-9", Rules: []bucketgate.Rule{month}, Cost: 1}, 1, true)
	want := m.At.Add(m.ResetAfter + bucket.ExpiryMargin)
	if again := mustInt(t, do(t, c, c.B().Pexpiretime().Key(key).Build())); again <= expiry || again > want.UnixMilli()+1 {
		t.Errorf("a new long rule: expiry %d -> %d, want about %d", expiry, again, want.UnixMilli())
	}
}

func mustInt(t testing.TB, r rueidis.RedisResult) int64 {
	t.Helper()
	v, err := r.AsInt64()
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// TestHostileIdentities: every identity gets its own key, in its own hash tag, and
// draining one leaves every other full.
func TestHostileIdentities(t *testing.T) {
	l, c := real(t)
	for i, id := range hostile {
		expectRun(t, l, bucketgate.Request{Identity: id, Rules: free, Cost: 10}, 1, true)
		for _, other := range hostile[i+1:] {
			if d := decide(t, l, bucketgate.Request{Identity: other, Rules: free, Cost: 0}); d.Remaining != 10 {
				t.Fatalf("draining %q took from %q: %+v", id, other, d)
			}
		}
	}
	keys, err := c.Do(context.Background(), c.B().Keys().Pattern("*").Build()).AsStrSlice()
	if err != nil {
		t.Fatal(err)
	}
	if len(keys) != len(hostile) {
		t.Fatalf("%d keys for %d identities", len(keys), len(hostile))
	}
	for _, id := range hostile {
		if !slices.Contains(keys, bucket.Key(id)) {
			t.Errorf("no key for %q", id)
		}
	}
}

// TestConcurrentAdmission: 16 goroutines on two clients hammer one key; the admitted
// count never exceeds capacity + rate * elapsed + 1, elapsed measured by Redis TIME.
func TestConcurrentAdmission(t *testing.T) {
	const (
		workers = 16
		runFor  = 2 * time.Second
	)
	srv := redistest.Start(t)
	clients := []rueidis.Client{redistest.Client(t, srv.Addr), redistest.Client(t, srv.Addr)}
	rule := bucketgate.Rule{Name: "hot", Capacity: 50, RefillPerSecond: 200}
	q := bucketgate.Request{Identity: "hot", Rules: []bucketgate.Rule{rule}, Cost: 1}
	start := redisTime(t, clients[0])
	var admitted, denied atomic.Int64
	var wg sync.WaitGroup
	stop := time.Now().Add(runFor)
	for w := range workers {
		wg.Go(func() {
			l := bucket.New(clients[w%len(clients)])
			for time.Now().Before(stop) {
				d, err := l.Decide(context.Background(), q)
				switch {
				case err != nil:
					t.Error(err)
					return
				case d.Allowed:
					admitted.Add(1)
				default:
					denied.Add(1)
				}
			}
		})
	}
	wg.Wait()
	elapsed := redisTime(t, clients[0]).Sub(start)
	bound := float64(rule.Capacity) + rule.RefillPerSecond*elapsed.Seconds() + 1
	t.Logf("admitted %d, denied %d in %v (bound %.1f)", admitted.Load(), denied.Load(), elapsed, bound)
	if float64(admitted.Load()) > bound {
		t.Errorf("admitted %d > bound %.1f", admitted.Load(), bound)
	}
	if admitted.Load() <= rule.Capacity || denied.Load() == 0 {
		t.Errorf("no contention to speak of: admitted %d, denied %d", admitted.Load(), denied.Load())
	}
}

func redisTime(t testing.TB, c rueidis.Client) time.Time {
	t.Helper()
	parts, err := c.Do(context.Background(), c.B().Time().Build()).AsStrSlice()
	if err != nil || len(parts) != 2 {
		t.Fatalf("TIME: %v %v", parts, err)
	}
	s, _ := strconv.ParseInt(parts[0], 10, 64)
	us, _ := strconv.ParseInt(parts[1], 10, 64)
	return time.Unix(s, us*1000)
}

// TestScriptCapacityNotANumber: a capacity that is not a number at all is read by
// arithmetic and stops the script with Lua's own error (bucket.lua's header), before any
// write. The error names the line of bucket.lua that reads it (the text sent keeps the
// file's lines, its comments emptied) and the script by lua.BucketSHA1.
func TestScriptCapacityNotANumber(t *testing.T) {
	_, c := real(t)
	err := c.Do(context.Background(), c.B().Eval().Script(lua.BucketSource).Numkeys(1).Key(bucket.Key("x")).
		Arg("1", "b:tokens", "b:ts", "ten", "1").Build()).Error()
	if err == nil || !slices.ContainsFunc(lua.ArithmeticErrors, func(text string) bool { return strings.Contains(err.Error(), text) }) {
		t.Fatalf("error %v, want Lua's arithmetic error", err)
	}
	file, ferr := os.ReadFile("../lua/bucket.lua")
	at := strings.Index(string(file), "local cap, rate, period = argv[j] + 0")
	if ferr != nil || at < 0 {
		t.Fatalf("the line that reads a capacity in bucket.lua: %v, at %d", ferr, at)
	}
	for _, want := range []string{fmt.Sprintf("user_script:%d:", 1+strings.Count(string(file[:at]), "\n")), lua.BucketSHA1} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %v, want it to name %s", err, want)
		}
	}
	if n := mustInt(t, do(t, c, c.B().Dbsize().Build())); n != 0 {
		t.Fatalf("%d keys written", n)
	}
}

func BenchmarkDecideRealRedis(b *testing.B) {
	for _, n := range []int{1, 2} {
		b.Run(fmt.Sprintf("rules=%d", n), func(b *testing.B) {
			l, _ := real(b)
			rules := []bucketgate.Rule{{Name: "burst", Capacity: 1_000_000, RefillPerSecond: 1e6}, {Name: "daily", Capacity: 1_000_000, RefillPerSecond: 1e3}}[:n]
			q := bucketgate.Request{Identity: "bench", Rules: rules, Cost: 1}
			ctx := context.Background()
			b.ReportAllocs()
			for b.Loop() {
				if _, err := l.Decide(ctx, q); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkReserveSettleRealRedis measures the decisions that sign and verify an id: a
// reserve alone, and a reserve then its settle (two round trips). Its allocations are
// the cost of the secret on the common path.
func BenchmarkReserveSettleRealRedis(b *testing.B) {
	l, _ := real(b)
	rules := []bucketgate.Rule{{Name: "burst", Capacity: bucketgate.MaxCapacity, RefillPerSecond: 1e6}}
	reserve := bucketgate.Request{Identity: "bench", Rules: rules, Op: bucketgate.OpReserve, Cost: 10, TTL: time.Minute}
	ctx := context.Background()
	b.Run("reserve", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := l.Decide(ctx, reserve); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("reserve-settle", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			d, err := l.Decide(ctx, reserve)
			if err == nil {
				_, err = l.Decide(ctx, bucketgate.Request{Identity: "bench", Rules: rules, Op: bucketgate.OpSettle, Cost: 4, ID: d.Reservation})
			}
			if err != nil {
				b.Fatal(err)
			}
		}
	})
}

// TestScriptRefusesBadArguments calls the script directly, past the Go validation: every
// bad argument is an error reply naming it, and nothing is written.
func TestScriptRefusesBadArguments(t *testing.T) {
	_, c := real(t)
	tests := []struct {
		name string
		argv []string
		want string
	}{
		{"fractional cost", []string{"1.5", "b:tokens", "b:ts", "10", "1"}, "operation must be a whole number"},
		{"fractional refund", []string{"-1.5", "b:tokens", "b:ts", "10", "1"}, "operation must be a whole number"},
		{"unknown operation", []string{"refund", "b:tokens", "b:ts", "10", "1"}, "operation must be a whole number"},
		{"infinite cost", []string{"inf", "b:tokens", "b:ts", "10", "1"}, "operation must be a whole number"},
		{"no rules", []string{"1"}, "ARGV must be"},
		{"partial rule", []string{"2", "b:tokens", "b:ts", "10", "1", "x", "y"}, "a hold must be"},
		{"a rule and a half without the operation", []string{"b:tokens", "b:ts", "10", "1", "c:tokens", "c:ts", "x"}, "a hold must be"},
		{"hold: a peek", []string{"0", "0", "1000 fp", "b:tokens", "b:ts", "10", "1"}, "a hold is for a check that takes tokens"},
		{"hold: a reset", []string{"reset", "0", "1000 fp", "b:tokens", "b:ts", "10", "1"}, "a hold is for"},
		{"hold: a record of no life", []string{"1", "0", "0 fp", "b:tokens", "b:ts", "10", "1"}, "a hold must be"},
		{"hold: malformed", []string{"1", "0", "1 1000 fp", "b:tokens", "b:ts", "10", "1"}, "a hold must be"},
		{"hold: a settle of a fraction", []string{"s1.5", "0", "5 1 1000", "b:tokens", "b:ts", "10", "1"}, "a settle must be s and the actual cost"},
		{"hold: a settle above 1e9", []string{"s1000000001", "0", "5 1 1000", "b:tokens", "b:ts", "10", "1"}, "a settle must be"},
		{"hold: a settle of an estimate of 0", []string{"s1", "0", "0 1 1000", "b:tokens", "b:ts", "10", "1"}, "a settle must be"},
		{"hold: a settle without its expiry", []string{"s1", "0", "5 1000", "b:tokens", "b:ts", "10", "1"}, "a settle must be"},
		{"hold: a settle after its expiry", []string{"s1", "0", "5 1 1000", "b:tokens", "b:ts", "10", "1"}, "reservation expired at 1 ms"},
		{"hold: a settle with its reserve's time, no resets", []string{"s1", "0", "5 9999999999999 1000 1", "b:tokens", "b:ts", "10", "1"}, "and its resets, KEYS[4], with the time"},
		{"usage kept 0 days", []string{"1", "0", "b:tokens", "b:ts", "10", "1"}, "usage needs the days it is kept, a whole number from 1 to 400, and its archive"},
		{"usage kept 401 days", []string{"1", "401", "b:tokens", "b:ts", "10", "1"}, "usage needs the days it is kept"},
		{"usage kept half a day", []string{"1", "1.5", "b:tokens", "b:ts", "10", "1"}, "usage needs the days it is kept"},
		{"usage kept no number", []string{"1", "x", "b:tokens", "b:ts", "10", "1"}, "usage needs the days it is kept"},
		{"usage without its archive", []string{"1", "35", "b:tokens", "b:ts", "10", "1"}, "usage needs the days it is kept"},
		{"quota of period 0", []string{"1", "q:used", "q:end", "10", "-2"}, "rule q: period must be -1 (a day), -7 (a week)"},
		{"quota of anchor 29", []string{"1", "q:used", "q:end", "10", "-129"}, "rule q: period must be"},
		{"quota of anchor 0", []string{"1", "q:used", "q:end", "10", "-100"}, "rule q: period must be"},
		{"quota of a fractional period", []string{"1", "q:used", "q:end", "10", "-101.5"}, "rule q: period must be"},
		{"quota of limit 0", []string{"1", "q:used", "q:end", "0", "-1"}, "rule q: capacity or limit must be"},
		{"quota of limit above 1e9", []string{"1", "q:used", "q:end", "1000000001", "-7"}, "rule q: capacity or limit must be"},
		{"cost above a limit", []string{"11", "q:used", "q:end", "10", "-1"}, "rule q: cost 11 exceeds limit 10"},
		{"zero capacity", []string{"1", "b:tokens", "b:ts", "0", "1"}, "rule b: capacity or limit"},
		{"shadow zero capacity", []string{"1", "b:tokens", "b:ts", "-0", "1"}, "rule b: capacity or limit"},
		{"capacity above 1e9", []string{"1", "b:tokens", "b:ts", "1000000001", "1e9"}, "rule b: capacity or limit"},
		{"shadow capacity above 1e9", []string{"1", "b:tokens", "b:ts", "-1000000001", "1e9"}, "rule b: capacity or limit"},
		{"fractional shadow capacity", []string{"1", "b:tokens", "b:ts", "-1.5", "1"}, "rule b: capacity or limit"},
		{"NaN rate", []string{"1", "b:tokens", "b:ts", "10", "nan"}, "rule b: refill per second"},
		{"infinite rate", []string{"1", "b:tokens", "b:ts", "10", "inf"}, "rule b: refill per second"},
		{"rate above 1e9", []string{"1", "b:tokens", "b:ts", "10", "1000000001"}, "rule b: refill per second"},
		{"fills in more than 366 days", []string{"1", "b:tokens", "b:ts", "1000", "0.00003"}, "rule b: fills in more than 366 days"},
		{"cost above capacity", []string{"11", "b:tokens", "b:ts", "10", "1"}, "rule b: cost 11 exceeds capacity 10"},
		{"refund above capacity", []string{"-11", "b:tokens", "b:ts", "10", "1"}, "rule b: refund 11 exceeds capacity 10"},
		{"second rule bad", []string{"1", "a:tokens", "a:ts", "b:tokens", "b:ts", "10", "1", "0.5", "1"}, "rule b: capacity or limit"},
		{"the operation left out, bad rule", []string{"b:tokens", "b:ts", "10", "0"}, "rule b: refill per second"},
		{"duplicate rule", []string{"1", "a:tokens", "a:ts", "a:tokens", "a:ts", "10", "1", "10", "1"}, "rule a appears twice"},
		{"duplicate third rule", []string{"1", "a:tokens", "a:ts", "b:tokens", "b:ts", "a:tokens", "a:ts", "10", "1", "10", "1", "5", "1"}, "rule a appears twice"},
		{"reset, bad rule", []string{"reset", "b:tokens", "b:ts", "10", "0"}, "rule b: refill per second"},
		{"reset without its resets", []string{"reset", "b:tokens", "b:ts", "10", "1"}, "or reset (with its resets, KEYS[2])"},
		{"lease: concurrency 0", []string{"1", "0", "@1000/0 n", "b:tokens", "b:ts", "10", "1"}, "a lease must be @"},
		{"lease: concurrency above 10000", []string{"1", "0", "@1000/10001 n", "b:tokens", "b:ts", "10", "1"}, "a lease must be @"},
		{"lease: no nonce", []string{"1", "0", "@1000/2", "b:tokens", "b:ts", "10", "1"}, "a lease must be @"},
		{"lease: malformed", []string{"1", "0", "@1000/x n", "b:tokens", "b:ts", "10", "1"}, "a lease must be @"},
		{"lease: the set's mark as its nonce", []string{"1", "0", "@1000/2 ~", "b:tokens", "b:ts", "10", "1"}, "a lease must be @"},
		{"lease: two rules, three sets", []string{"1", "0", "@1000/2/3 n", "b:tokens", "b:ts", "10", "1"}, "a lease must be @"},
		{"lease: a peek", []string{"0", "0", "@1000/2 n", "b:tokens", "b:ts", "10", "1"}, "a lease is for a check that takes tokens"},
		{"lease: a refund", []string{"-1", "0", "@1000/2 n", "b:tokens", "b:ts", "10", "1"}, "a lease is for a check that takes tokens"},
		{"lease: a settle", []string{"s1", "0", "5 1 1000 @1000/2 n", "b:tokens", "b:ts", "10", "1"}, "a settle must be"},
		{"lease: a record, no record key", []string{"1", "0", "1000 fp @1000/2 n", "b:tokens", "b:ts", "10", "1"}, "a hold must be"},
		{"lease: after a hold that is not a lease", []string{"1", "0", "1000 fp 1000/2 n", "b:tokens", "b:ts", "10", "1"}, "a hold must be"},
		{"lease: usage, no archive", []string{"1", "35", "@1000/2 n", "b:tokens", "b:ts", "10", "1"}, "a lease must be @"},
		{"lease: ttl 0", []string{"1", "0", "@0/2 n", "b:tokens", "b:ts", "10", "1"}, "lives 1 to 3600000 ms"},
		{"lease: ttl above an hour", []string{"1", "0", "@3600001/2 n", "b:tokens", "b:ts", "10", "1"}, "lives 1 to 3600000 ms"},
		{"lease: a bad record", []string{"1", "0", "0 fp @1000/2 n", "b:tokens", "b:ts", "10", "1"}, "a hold must be"},
		{"lease: alone, bad", []string{"1", "0", "@1000/0 n"}, "a lease must be @"},
		{"lease: alone after a record, bad", []string{"1", "0", "1000 fp @1000/0 n"}, "a lease must be @"},
		{"hold: a fingerprint with an @, no rule", []string{"1", "0", "1000 f@p"}, "ARGV must be"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			keys := []string{bucket.Key("x")}
			if strings.HasPrefix(tt.name, "usage kept") { // with the archive: the days are at fault
				keys = append(keys, bucket.UsageKey("x"))
			}
			if strings.HasPrefix(tt.name, "reset,") { // with its resets: the rule is at fault
				keys = append(keys, bucket.Key("x")+lua.ResetSuffix)
			}
			if strings.HasPrefix(tt.name, "hold") { // with the record: the hold is at fault
				keys = append(keys, bucket.UsageKey("x"), bucket.Key("x")+lua.RecordInfix+"n")
			}
			if strings.HasPrefix(tt.name, "lease") && strings.Contains(tt.argv[2], " fp") && !strings.Contains(tt.name, "no record key") { // a lease with a record
				keys = append(keys, bucket.UsageKey("x"), bucket.Key("x")+lua.RecordInfix+"n")
			}
			if strings.HasPrefix(tt.name, "lease") && !strings.Contains(tt.name, "three sets") {
				keys = append(keys, bucket.LeaseKey("x", "c"))
			}
			if strings.Contains(tt.name, "three sets") {
				keys = append(keys, bucket.LeaseKey("x", "c"), bucket.LeaseKey("x", "d"), bucket.LeaseKey("x", "e"))
			}
			err := c.Do(context.Background(), c.B().Eval().Script(lua.BucketSource).Numkeys(int64(len(keys))).Key(keys...).Arg(tt.argv...).Build()).Error()
			if err == nil || !strings.Contains(err.Error(), tt.want) || !strings.Contains(err.Error(), "bucketgate") {
				t.Fatalf("error %v, want one mentioning %q", err, tt.want)
			}
			if n := mustInt(t, do(t, c, c.B().Dbsize().Build())); n != 0 {
				t.Fatalf("%d keys written", n)
			}
		})
	}
}

// BenchmarkDecideBatchRealRedis decides a batch of 100 checks, each of its own identity,
// in one round trip to a real server; a batch of 100 checks of one identity (inside
// MULTI ... EXEC), in one round trip too; and a batch of 100 acquires of a concurrency
// rule then one of their 100 releases, a round trip each.
func BenchmarkDecideBatchRealRedis(b *testing.B) {
	l, _ := real(b)
	streams := bucketgate.Rule{Name: "streams", Concurrency: 1000}
	ctx := context.Background()
	for _, bc := range []struct {
		name     string
		rules    []bucketgate.Rule
		identity string // of every request, or each its own
	}{
		{"checks", []bucketgate.Rule{benchBurst}, ""},
		{"checks-of-one-identity", []bucketgate.Rule{benchBurst}, "bench-one"},
		{"acquires-then-releases", []bucketgate.Rule{benchBurst, streams}, ""},
	} {
		b.Run(bc.name, func(b *testing.B) {
			qs := benchBatch(bc.rules...)
			for i := range qs {
				if bc.identity != "" {
					qs[i].Identity = bc.identity
				}
			}
			releases := benchBatch(bc.rules...)
			b.ReportAllocs()
			for b.Loop() {
				ds, errs := l.DecideBatch(ctx, qs)
				if errs[0] != nil {
					b.Fatal(errs[0])
				}
				if ds[0].Lease == "" {
					continue
				}
				for i, d := range ds {
					releases[i].Op, releases[i].Cost, releases[i].ID = bucketgate.OpRelease, 0, d.Lease
				}
				if _, errs := l.DecideBatch(ctx, releases); errs[0] != nil {
					b.Fatal(errs[0])
				}
			}
		})
	}
}

// benchBurst is a bucket that never runs dry in a benchmark.
var benchBurst = bucketgate.Rule{Name: "burst", Capacity: 1_000_000, RefillPerSecond: 1e6}

// benchBatch is a batch of 100 requests of rules, each of its own identity.
func benchBatch(rules ...bucketgate.Rule) []bucketgate.Request {
	qs := make([]bucketgate.Request, 100)
	for i := range qs {
		qs[i] = bucketgate.Request{Identity: fmt.Sprintf("bench-%d", i), Rules: rules, Cost: 1}
	}
	return qs
}

// BenchmarkDecideBatchAfterFlushRealRedis decides the batch of
// BenchmarkDecideBatchRealRedis on a server that has just lost the script (SCRIPT
// FLUSH, untimed): the batch sends its text once, and a round trip more.
func BenchmarkDecideBatchAfterFlushRealRedis(b *testing.B) {
	l, c := real(b)
	qs := benchBatch(benchBurst)
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		b.StopTimer()
		do(b, c, c.B().ScriptFlush().Build())
		b.StartTimer()
		if _, errs := l.DecideBatch(ctx, qs); errs[0] != nil {
			b.Fatal(errs[0])
		}
	}
}
