package bucket_test

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/bucketgate/bucketgate"
	"github.com/bucketgate/bucketgate/internal/bucket"
	"github.com/bucketgate/bucketgate/internal/lua"
	"github.com/bucketgate/bucketgate/internal/testkit/redistest"
)

// BenchmarkClientCost measures what one decision costs the client: through the Limiter
// (validation, key, arguments, reply decoding) against a bare rueidis EVALSHA of the same
// script with the same key and arguments prepared once. The difference is internal/bucket's
// own cost; make bench reports the ratio (goal <= 1.2). "limiter" and "bare-evalsha" give
// each side's ns and allocations; "paired" alternates the two call by call (and which goes
// first), so that both see the same moments of a noisy machine, and reports each side's
// mean time per call.
// The rule never runs dry, so every call takes the same (writing) path in the script.
func BenchmarkClientCost(b *testing.B) {
	srv := redistest.Start(b)
	client := redistest.Client(b, srv.Addr)
	ctx := context.Background()
	rule := bucketgate.Rule{Name: "burst", Capacity: bucketgate.MaxCapacity, RefillPerSecond: 1e6}
	req := bucketgate.Request{Identity: "client-cost", Rules: []bucketgate.Rule{rule}, Cost: 1}

	b.Run("limiter", func(b *testing.B) {
		l := bucket.New(client)
		b.ReportAllocs()
		for b.Loop() {
			if _, err := l.Decide(ctx, req); err != nil {
				b.Fatal(err)
			}
		}
	})

	sha, err := client.Do(ctx, client.B().ScriptLoad().Script(lua.BucketSource).Build()).ToString()
	if err != nil {
		b.Fatal(err)
	}
	key := bucket.Key(req.Identity)
	args := []string{"1", rule.Name + lua.TokensSuffix, rule.Name + lua.StampSuffix,
		strconv.FormatInt(rule.Capacity, 10), strconv.FormatFloat(rule.RefillPerSecond, 'g', -1, 64)}
	bare := func(b *testing.B) {
		if _, err := client.Do(ctx, client.B().Evalsha().Sha1(sha).Numkeys(1).Key(key).Arg(args...).Build()).ToArray(); err != nil {
			b.Fatal(err)
		}
	}

	b.Run("bare-evalsha", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			bare(b)
		}
	})

	b.Run("paired", func(b *testing.B) {
		l := bucket.New(client)
		limiter := func(b *testing.B) {
			if _, err := l.Decide(ctx, req); err != nil {
				b.Fatal(err)
			}
		}
		var inLimiter, inBare time.Duration
		timed := func(call func(*testing.B), into *time.Duration) {
			start := time.Now()
			call(b)
			*into += time.Since(start)
		}
		b.ReportAllocs()
		for i := 0; b.Loop(); i++ {
			if i%2 == 0 { // take turns at going first: the first call of a pair can wait longer
				timed(limiter, &inLimiter)
				timed(bare, &inBare)
			} else {
				timed(bare, &inBare)
				timed(limiter, &inLimiter)
			}
		}
		b.ReportMetric(float64(inLimiter.Nanoseconds())/float64(b.N), "limiter-ns/op")
		b.ReportMetric(float64(inBare.Nanoseconds())/float64(b.N), "bare-ns/op")
	})
}
