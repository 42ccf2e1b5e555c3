package main

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/redis/rueidis"

	"github.com/bucketgate/bucketgate"
	"github.com/bucketgate/bucketgate/internal/bucket"
	"github.com/bucketgate/bucketgate/internal/settings"
)

// The embedded Redis gives a decision embeddedTimeoutMS unless REDIS_TIMEOUT_MS is set;
// a Redis of one's own gets the setting as it is.
func TestEmbeddedRedisTimeout(t *testing.T) {
	tests := []struct {
		name string
		set  map[string]string
		want string
	}{
		{"embedded, unset", map[string]string{}, embeddedTimeoutMS},
		{"embedded, set", map[string]string{settings.EnvTimeoutMS: "70"}, "70"},
		{"own Redis, unset", map[string]string{settings.EnvRedisAddr: "127.0.0.1:1"}, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			env, _, stop, err := withRedis(func(k string) string { return tc.set[k] })
			if err != nil {
				t.Fatal(err)
			}
			defer stop()
			if got := env(settings.EnvTimeoutMS); got != tc.want {
				t.Fatalf("%s = %q, want %q", settings.EnvTimeoutMS, got, tc.want)
			}
		})
	}
}

// The embedded Redis expires keys as the wall clock passes: a lease, a reservation, a
// quota's window end there as on a real server.
func TestEmbeddedRedisExpiresKeys(t *testing.T) {
	env, _, stop, err := withRedis(func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	c, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{env(settings.EnvRedisAddr)}, DisableCache: true})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx := t.Context()
	if err := c.Do(ctx, c.B().Set().Key("lease").Value("1").Px(time.Millisecond).Build()).Error(); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		n, err := c.Do(ctx, c.B().Exists().Key("lease").Build()).AsInt64()
		if err != nil {
			t.Fatal(err)
		}
		if n == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("a key of 1 ms is still there 30 s on")
		}
	}
}

// A decision on the embedded Redis after many identities have been decided, whose keys
// live for days (usage): miniredis's TTL clock must not make each one slower as they
// pile up over a long make run.
func BenchmarkEmbeddedRedisDecide(b *testing.B) {
	for _, identities := range []int{0, 1_000, 10_000} {
		b.Run(fmt.Sprintf("identities=%d", identities), func(b *testing.B) {
			env, _, stop, err := withRedis(func(string) string { return "" })
			if err != nil {
				b.Fatal(err)
			}
			defer stop()
			c, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{env(settings.EnvRedisAddr)}, DisableCache: true})
			if err != nil {
				b.Fatal(err)
			}
			defer c.Close()
			l := bucket.New(c, bucket.Usage(settings.DefaultUsageDays))
			rules := []bucketgate.Rule{{Name: "burst", Capacity: 100, RefillPerSecond: 10}}
			ctx := context.Background()
			decide := func(identity string) {
				if _, err := l.Decide(ctx, bucketgate.Request{Identity: identity, Rules: rules, Cost: 1}); err != nil {
					b.Fatal(err)
				}
			}
			for i := range identities {
				decide(fmt.Sprintf("key:%032x", i))
			}
			b.ReportAllocs()
			for b.Loop() {
				decide("key:bench")
			}
		})
	}
}
