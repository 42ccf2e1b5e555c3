package bucket_test

import (
	"context"
	"strconv"
	"testing"

	"github.com/bucketgate/bucketgate/internal/bucket"
	"github.com/bucketgate/bucketgate/internal/lua"
	"github.com/bucketgate/bucketgate/internal/redistest"
)

// BenchmarkClientCost measures what one decision costs the client: through the Limiter
// (validation, key, arguments, reply decoding) against a bare rueidis EVALSHA of the same
// script with the same key and arguments prepared once. The difference is internal/bucket's
// own cost; make bench reports the ratio (goal <= 1.2). The rule never runs dry, so every
// call takes the same (writing) path in the script.
func BenchmarkClientCost(b *testing.B) {
	srv := redistest.Start(b)
	client := redistest.Client(b, srv.Addr)
	ctx := context.Background()
	rule := bucket.Rule{Name: "burst", Capacity: bucket.MaxCapacity, RefillPerSecond: 1e6}
	req := bucket.Request{Identity: "client-cost", Rules: []bucket.Rule{rule}, Cost: 1}

	b.Run("limiter", func(b *testing.B) {
		l := bucket.New(client)
		b.ReportAllocs()
		for b.Loop() {
			if _, err := l.Decide(ctx, req); err != nil {
				b.Fatal(err)
			}
		}
	})

	b.Run("bare-evalsha", func(b *testing.B) {
		sha, err := client.Do(ctx, client.B().ScriptLoad().Script(lua.BucketSource).Build()).ToString()
		if err != nil {
			b.Fatal(err)
		}
		key := bucket.Key(req.Identity)
		args := []string{"1", strconv.FormatInt(bucket.ExpiryMargin.Milliseconds(), 10),
			rule.Name, strconv.FormatInt(rule.Capacity, 10), strconv.FormatFloat(rule.RefillPerSecond, 'g', -1, 64)}
		b.ReportAllocs()
		for b.Loop() {
			if _, err := client.Do(ctx, client.B().Evalsha().Sha1(sha).Numkeys(1).Key(key).Arg(args...).Build()).ToArray(); err != nil {
				b.Fatal(err)
			}
		}
	})
}
