package registry_test

import (
	"context"
	"fmt"
	"runtime"
	"slices"
	"sync"
	"testing"
	"time"
	"weak"

	"github.com/bucketgate/bucketgate/internal/config"
	"github.com/bucketgate/bucketgate/internal/registry"
)

// BenchmarkCacheRelease measures a configuration change (what Live has the cache do at
// each: let go of the earlier document) in a cache of 100,000 and 1,000,000 entries
// (REGISTRY_CACHE_SIZE's most), and the lookups of a goroutine meanwhile: how many per
// change, and how long they took (p99 and max, with the collector's pauses): a lookup
// must not wait for a walk of every entry. Run it alone with
// go test -run '^$' -bench CacheRelease -benchtime 10x ./internal/registry
func BenchmarkCacheRelease(b *testing.B) {
	cfgs := [2]*config.Config{config.Default(), config.Default()}
	for _, n := range []int{100_000, 1_000_000} {
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			c := registry.NewCache(copying{}, registry.Options{TTL: time.Hour, Size: n})
			ctx := context.Background()
			for i := range n {
				if _, err := c.Lookup(ctx, cfgs[0], apiKeyID(i)); err != nil {
					b.Fatal(err)
				}
			}
			var (
				took []time.Duration // each lookup's, made while the cache releases
				stop = make(chan struct{})
				wg   sync.WaitGroup
			)
			wg.Go(func() {
				for i := 0; ; i++ {
					select {
					case <-stop:
						return
					default:
					}
					start := time.Now()
					if _, err := c.Lookup(ctx, cfgs[0], apiKeyID(i%n)); err != nil {
						b.Error(err)
						return
					}
					took = append(took, time.Since(start))
				}
			})
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				i++
				registry.Release(c, cfgs[i%2])
			}
			close(stop)
			wg.Wait()
			slices.Sort(took)
			b.ReportMetric(float64(len(took))/float64(b.N), "lookups/op")
			b.ReportMetric(float64(took[len(took)*99/100]), "p99-lookup-ns")
			b.ReportMetric(float64(took[len(took)-1]), "max-lookup-ns")
		})
	}
}

// TestCacheReleaseLetsGoOfTheDocument: after a configuration change, no entry holds the
// earlier document, in a cache of more entries than release walks at a time, and for
// keys of an account (whose plan is made with their account's).
func TestCacheReleaseLetsGoOfTheDocument(t *testing.T) {
	tests := []struct {
		name    string
		src     registry.Source
		entries int
	}{
		{"a few keys", copying{}, 10},
		{"keys in many batches", copying{}, 2500},
		{"keys of an account in many batches", copying{account: accountName}, 2500},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := registry.NewCache(tc.src, registry.Options{TTL: time.Hour, Size: tc.entries + 1})
			old := sizeDocument(t)
			for i := range tc.entries {
				if e, err := c.Lookup(context.Background(), old, apiKeyID(i)); err != nil || e.Plan == nil {
					t.Fatalf("lookup %d: %+v, %v", i, e, err)
				}
			}
			gone := weak.Make(old)
			old = nil
			registry.Release(c, config.Default())
			runtime.GC()
			if gone.Value() != nil {
				t.Fatal("the earlier document is still held after the change")
			}
			runtime.KeepAlive(c)
		})
	}
}
