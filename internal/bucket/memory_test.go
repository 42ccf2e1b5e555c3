package bucket_test

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/rueidis"

	"github.com/bucketgate/bucketgate"
	"github.com/bucketgate/bucketgate/internal/bucket"
	"github.com/bucketgate/bucketgate/internal/lua"
)

// TestMemoryPerIdentity measures Redis's memory per active identity with usage kept 35
// days, on a real server: identities on a plan of a burst and a monthly quota, decided
// by the script at the server's time (checks of cost 1 and 3, some limited), with the 34
// days before today archived as the script archives them (a field "<day>" =
// "<allowed> <cost> <limited>" per day, of a busy identity's figures). It logs MEMORY
// USAGE of each key and used_memory per identity (which adds the keyspace's own
// entries), the figures docs/design.md gives, and holds both hashes to Redis's compact
// encoding, which the figures depend on.
func TestMemoryPerIdentity(t *testing.T) {
	const identities, kept = 1000, 35
	_, c := real(t)
	ctx := context.Background()
	before := usedMemory(t, c)
	l := bucket.New(c, bucket.Usage(kept))
	rules := []bucketgate.Rule{{Name: "burst", Capacity: 100, RefillPerSecond: 50}, {Name: "monthly", Limit: 100000, Period: bucketgate.PeriodMonth}}
	var today int64
	for i := range identities {
		id := fmt.Sprintf("key:%032x", i) // an API key's identity, 36 bytes
		for _, cost := range []int64{1, 3, 1} {
			d := decide(t, l, bucketgate.Request{Identity: id, Rules: rules, Cost: cost})
			today = d.At.Unix() / 86400
		}
		do(t, c, c.B().Hincrby().Key(bucket.Key(id)).Field(lua.UsageField(today, lua.UsageLimited)).Increment(2).Build())
		days := make([]string, 0, 2*(kept-1))
		for d := today - kept + 1; d < today; d++ {
			days = append(days, strconv.FormatInt(d, 10), "12345 61725 321") // a day of 12,345 checks of cost 5, 321 limited
		}
		if err := c.Do(ctx, c.B().Arbitrary("HSET").Keys(bucket.UsageKey(id)).Args(days...).Build()).Error(); err != nil {
			t.Fatal(err)
		}
		do(t, c, c.B().Pexpireat().Key(bucket.UsageKey(id)).MillisecondsTimestamp(time.Now().Add(kept*24*time.Hour).UnixMilli()).Build())
	}
	used := usedMemory(t, c) - before
	id := fmt.Sprintf("key:%032x", 7)
	var sizes []int64
	for _, key := range []string{bucket.Key(id), bucket.UsageKey(id)} {
		size := mustInt(t, do(t, c, c.B().MemoryUsage().Key(key).Samples(0).Build()))
		enc, err := c.Do(ctx, c.B().ObjectEncoding().Key(key).Build()).ToString()
		if err != nil || enc != "listpack" {
			t.Errorf("%s: encoding %q (%v), want listpack: the figures below assume it", key, enc, err)
		}
		fields := mustInt(t, do(t, c, c.B().Hlen().Key(key).Build()))
		t.Logf("%s: %d fields, MEMORY USAGE %d bytes", key, fields, size)
		sizes = append(sizes, size)
	}
	t.Logf("per identity: %d bytes in its two keys (state %d, archive of %d days %d); used_memory %d bytes per identity over %d",
		sizes[0]+sizes[1], sizes[0], kept-1, sizes[1], used/identities, identities)
}

// usedMemory returns the server's used_memory (INFO memory), in bytes.
func usedMemory(t *testing.T, c rueidis.Client) int64 {
	t.Helper()
	out, err := c.Do(context.Background(), c.B().Info().Section("memory").Build()).ToString()
	if err != nil {
		t.Fatal(err)
	}
	for line := range strings.Lines(out) {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "used_memory:"); ok {
			n, _ := strconv.ParseInt(v, 10, 64)
			return n
		}
	}
	t.Fatal("INFO memory has no used_memory")
	return 0
}

// TestMemoryOfRecords measures, on a real server, what the records of idempotent
// requests and settled reservations cost, and holds the assumptions of the figures
// docs/design.md gives: every distinct requestId of a check that takes tokens leaves
// one record, a denied one too (the deny cache answers none), whatever its length (a
// record is named by a digest of it), living IDEMPOTENCY_TTL_MS (a reserve's, or an
// acquire's, its ttl longer); every settled reservation leaves one, living until
// IDEMPOTENCY_TTL_MS past its reservation's expiry. It logs MEMORY USAGE of a record and
// used_memory per record (which adds the keyspace's own entries).
func TestMemoryOfRecords(t *testing.T) {
	const n = 1000
	_, c := real(t)
	l := bucket.New(c)
	ctx := context.Background()
	rules := []bucketgate.Rule{{Name: "burst", Capacity: 100, RefillPerSecond: 1}}
	long := func(i int) string { return fmt.Sprintf("%0*d", bucketgate.MaxRequestID, i) }
	decide(t, l, bucketgate.Request{Identity: "warm", Rules: rules, Cost: 1, RequestID: "1"}) // the script loaded before any figure
	sizes := map[string]int64{}                                                               // MEMORY USAGE of a record, by case
	for _, tc := range []struct {
		name     string
		identity string
		infix    string        // the records' keys: Key(identity), infix and a nonce
		life     time.Duration // the longest a record lives
		send     func(i int)
	}{
		{"checks, a requestId of 128 bytes each", "key:" + strings.Repeat("a", 32), lua.RecordInfix, bucket.DefaultIdempotency, func(i int) {
			decide(t, l, bucketgate.Request{Identity: "key:" + strings.Repeat("a", 32), Rules: rules, Cost: 1, RequestID: long(i)})
		}},
		{"checks, a requestId of at most 3 bytes each", "key:" + strings.Repeat("b", 32), lua.RecordInfix, bucket.DefaultIdempotency, func(i int) {
			decide(t, l, bucketgate.Request{Identity: "key:" + strings.Repeat("b", 32), Rules: rules, Cost: 1, RequestID: strconv.Itoa(i)})
		}},
		{"reserves of a requestId each", "key:" + strings.Repeat("c", 32), lua.RecordInfix, bucket.DefaultIdempotency + bucketgate.DefaultTTL, func(i int) {
			decide(t, l, bucketgate.Request{Identity: "key:" + strings.Repeat("c", 32), Rules: rules, Op: bucketgate.OpReserve, Cost: 1, RequestID: long(i)})
		}},
		{"reserves settled", "key:" + strings.Repeat("d", 32), lua.SettledInfix, bucket.DefaultIdempotency + bucketgate.DefaultTTL, func(int) {
			q := bucketgate.Request{Identity: "key:" + strings.Repeat("d", 32), Rules: []bucketgate.Rule{{Name: "burst", Capacity: 2 * n, RefillPerSecond: 1}}, Op: bucketgate.OpReserve, Cost: 2}
			r := decide(t, l, q)
			if !r.Allowed {
				t.Fatalf("reserve: %+v", r)
			}
			q.Op, q.Cost, q.ID = bucketgate.OpSettle, 1, r.Reservation
			decide(t, l, q)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := usedMemory(t, c)
			for i := range n {
				tc.send(i)
			}
			used := usedMemory(t, c) - before
			var records []string
			for cursor := uint64(0); ; {
				e, err := c.Do(ctx, c.B().Scan().Cursor(cursor).Match(bucket.Key(tc.identity)+tc.infix+"*").Count(1000).Build()).AsScanEntry()
				if err != nil {
					t.Fatal(err)
				}
				records = append(records, e.Elements...)
				if cursor = e.Cursor; cursor == 0 {
					break
				}
			}
			if len(records) != n {
				t.Fatalf("%d records, want %d: one per request", len(records), n)
			}
			for _, key := range records {
				if ttl := time.Duration(mustInt(t, do(t, c, c.B().Pttl().Key(key).Build()))) * time.Millisecond; ttl <= 0 || ttl > tc.life {
					t.Fatalf("%s lives %v more, want at most %v", key, ttl, tc.life)
				}
			}
			size := mustInt(t, do(t, c, c.B().MemoryUsage().Key(records[0]).Samples(0).Build()))
			sizes[tc.name] = size
			t.Logf("%d records: MEMORY USAGE %d bytes each (%s); used_memory %d bytes per record", n, size, records[0], used/n)
		})
	}
	if long, short := sizes["checks, a requestId of 128 bytes each"], sizes["checks, a requestId of at most 3 bytes each"]; long != short {
		t.Errorf("a record of a 128-byte requestId takes %d bytes, of a short one %d: a requestId's length should cost nothing", long, short)
	}
}

// TestMemoryOfAnAddressFlood measures, on a real server, what a flood of one check from
// each of many source addresses (IPv6 /64s, one identity each) leaves in Redis, and
// holds the assumptions of the figures docs/design.md gives: one key per address (its
// state hash, no usage archive), living USAGE_RETENTION_DAYS with usage of addresses
// counted, and only until its bucket is full again without.
func TestMemoryOfAnAddressFlood(t *testing.T) {
	const n, kept = 1000, 35
	_, c := real(t)
	rules := []bucketgate.Rule{{Name: "perip", Capacity: 60, RefillPerSecond: 1}}
	decide(t, bucket.New(c), bucketgate.Request{Identity: "warm", Rules: rules, Cost: 1}) // the script loaded before any figure
	for _, tc := range []struct {
		name      string
		addresses bool
		life      time.Duration // the longest an address's key lives
	}{
		{"usage of addresses", true, kept*24*time.Hour + bucket.ExpiryMargin},
		{"no usage of addresses", false, time.Second + bucket.ExpiryMargin},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l := bucket.New(c, bucket.Usage(kept), bucket.UsageOfAddresses(tc.addresses))
			before, keys := usedMemory(t, c), mustInt(t, do(t, c, c.B().Dbsize().Build()))
			prefix := fmt.Sprintf("ip:2001:db8:%x", map[bool]int{true: 1, false: 2}[tc.addresses])
			for i := range n {
				decide(t, l, bucketgate.Request{Identity: fmt.Sprintf("%s:%x::/64", prefix, i), Rules: rules, Cost: 1})
			}
			used := usedMemory(t, c) - before
			if added := mustInt(t, do(t, c, c.B().Dbsize().Build())) - keys; added != n {
				t.Fatalf("%d keys added, want %d: one per address", added, n)
			}
			id := prefix + ":7::/64"
			if ttl := time.Duration(mustInt(t, do(t, c, c.B().Pttl().Key(bucket.Key(id)).Build()))) * time.Millisecond; ttl <= 0 || ttl > tc.life {
				t.Fatalf("%s lives %v more, want at most %v", bucket.Key(id), ttl, tc.life)
			}
			size := mustInt(t, do(t, c, c.B().MemoryUsage().Key(bucket.Key(id)).Samples(0).Build()))
			t.Logf("%d addresses: MEMORY USAGE %d bytes each (%s); used_memory %d bytes per address", n, size, bucket.Key(id), used/n)
		})
	}
}

// TestEveryKeyExpires: whatever a caller sends, every key the limiter writes but the
// reservations' secret (bucket.SecretKey, one key for all) expires, and none lives
// longer than its rules and usage need (here usage kept K days, plus the margin: the
// rules' fill time and window are shorter): operations of every kind, allowed and
// denied, with usage on, leave no key that Redis would keep for ever.
func TestEveryKeyExpires(t *testing.T) {
	const kept = 35
	_, c := real(t)
	l := bucket.New(c, bucket.Usage(kept))
	ctx := context.Background()
	rules := []bucketgate.Rule{
		{Name: "burst", Capacity: 5, RefillPerSecond: 0.01},
		{Name: "monthly", Limit: 100, Period: bucketgate.PeriodMonth},
		{Name: "inflight", Concurrency: 3},
	}
	send := func(q bucketgate.Request) bucketgate.Decision {
		t.Helper()
		d, err := l.Decide(ctx, q)
		if err != nil {
			t.Fatalf("%+v: %v", q, err)
		}
		return d
	}
	for _, id := range []string{"key:" + strings.Repeat("e", 32), "ip:2001:db8::/64", "tenant:acme", "acct:acme"} {
		q := func(op bucketgate.Op, cost int64, requestID string) bucketgate.Request {
			return bucketgate.Request{Identity: id, Rules: rules, Op: op, Cost: cost, RequestID: requestID}
		}
		send(q(bucketgate.OpCheck, 0, ""))
		send(q(bucketgate.OpReset, 0, ""))
		lease := send(q(bucketgate.OpCheck, 1, "check-1"))
		send(q(bucketgate.OpCheck, 1, "check-1")) // a replay
		r := send(q(bucketgate.OpReserve, 1, ""))
		cancelled := send(q(bucketgate.OpReserve, 1, "reserve-1"))
		if d := send(q(bucketgate.OpCheck, 3, "denied")); d.Allowed { // 2 tokens left
			t.Fatalf("a check of 3 of 2 tokens left: %+v", d)
		}
		settle := q(bucketgate.OpSettle, 2, "")
		settle.ID = r.Reservation
		send(settle)
		cancel := q(bucketgate.OpCancel, 0, "")
		cancel.ID = cancelled.Reservation
		send(cancel)
		send(q(bucketgate.OpRefund, 1, "refund-1"))
		release := q(bucketgate.OpRelease, 0, "")
		release.ID = lease.Lease
		send(release)
	}
	longest := kept*24*time.Hour + bucket.ExpiryMargin
	var keys []string
	for cursor := uint64(0); ; {
		e, err := c.Do(ctx, c.B().Scan().Cursor(cursor).Count(1000).Build()).AsScanEntry()
		if err != nil {
			t.Fatal(err)
		}
		keys = append(keys, e.Elements...)
		if cursor = e.Cursor; cursor == 0 {
			break
		}
	}
	for _, infix := range []string{lua.RecordInfix, lua.SettledInfix, lua.LeaseInfix, lua.ResetSuffix} {
		if !slices.ContainsFunc(keys, func(k string) bool { return strings.Contains(k, infix) }) {
			t.Fatalf("keys %q: none with %q, whose expiry this test is to hold", keys, infix)
		}
	}
	for _, key := range keys {
		if key == bucket.SecretKey {
			continue
		}
		if ttl := time.Duration(mustInt(t, do(t, c, c.B().Pttl().Key(key).Build()))) * time.Millisecond; ttl <= 0 || ttl > longest {
			t.Errorf("%s lives %v more (PTTL), want 0 to %v", key, ttl, longest)
		}
	}
	t.Logf("%d keys, each expiring", len(keys))
}

// TestRuleFieldsStay: a rule's fields stay in its identity's state hash while the key
// lives, whether later checks name the rule or not, and every check that takes tokens
// extends the key's life (with usage kept, USAGE_RETENTION_DAYS past it): a key checked
// under a new rule name each time holds two fields more each time, as docs/check.md
// says, with what they cost (MEMORY USAGE of the hash as it grows).
func TestRuleFieldsStay(t *testing.T) {
	const names, kept = 300, 35
	_, c := real(t)
	l := bucket.New(c, bucket.Usage(kept))
	id := "tenant:many-names"
	size := func() int64 { return mustInt(t, do(t, c, c.B().MemoryUsage().Key(bucket.Key(id)).Samples(0).Build())) }
	var first, at128 int64
	for i := range names {
		name := fmt.Sprintf("model-%d", i) // a rule named after what varies
		decide(t, l, bucketgate.Request{Identity: id, Rules: []bucketgate.Rule{{Name: name, Capacity: 10, RefillPerSecond: 1}}, Cost: 1})
		switch i {
		case 0:
			first = size()
		case 60:
			at128 = size()
		}
	}
	fields := mustInt(t, do(t, c, c.B().Hlen().Key(bucket.Key(id)).Build()))
	if want := int64(2*names + 1); fields != want { // each rule's tokens and ts, and the day's checks allowed
		t.Errorf("%d fields, want %d: every rule named once keeps its two", fields, want)
	}
	if ttl := time.Duration(mustInt(t, do(t, c, c.B().Pttl().Key(bucket.Key(id)).Build()))) * time.Millisecond; ttl < (kept-1)*24*time.Hour {
		t.Errorf("the key lives %v more, want about %d days: usage keeps it", ttl, kept)
	}
	last := size()
	t.Logf("MEMORY USAGE: %d bytes with 1 rule, %d with 61 (%d a rule), %d with %d (%d a rule)", first, at128, (at128-first)/60, last, names, (last-first)/(names-1))
}
