package bucket_test

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

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
	info := func() int64 {
		out, err := c.Do(ctx, c.B().Info().Section("memory").Build()).ToString()
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
	before := info()
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
	used := info() - before
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
