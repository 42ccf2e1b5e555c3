package guard

import (
	"fmt"
	"testing"
	"time"

	"github.com/bucketgate/bucketgate"
)

// BenchmarkDenyCache measures the deny cache's get and put for one identity holding a
// few entries and one holding 10,000 (a check function tenant whose checks each cost
// another amount: tokens of a model), in a cache as large as its entries, so that a put
// of another cost evicts one.
func BenchmarkDenyCache(b *testing.B) {
	rules := []bucketgate.Rule{{Name: "tokens", Capacity: bucketgate.MaxCapacity, RefillPerSecond: 1}}
	sent := time.Unix(1_800_000_000, 0)
	d := bucketgate.Decision{Reason: bucketgate.ReasonLimited, Rule: "tokens", Limit: bucketgate.MaxCapacity,
		RetryAfter: time.Hour, ResetAfter: time.Hour, At: sent}
	q := func(cost int) bucketgate.Request {
		return bucketgate.Request{Identity: "tenant:llm-app", Rules: rules, Cost: int64(cost)}
	}
	for _, held := range []int{4, 10_000} {
		fill := func() *denyCache {
			c := newDenyCache(held, false)
			for cost := range held {
				c.put(q(cost+1), d, sent)
			}
			return c
		}
		b.Run(fmt.Sprintf("get/%d", held), func(b *testing.B) {
			c := fill()
			last := q(held) // the newest entry
			b.ReportAllocs()
			for b.Loop() {
				if _, ok := c.get(last, sent); !ok {
					b.Fatal("missed a cached denial")
				}
			}
		})
		b.Run(fmt.Sprintf("put-replace/%d", held), func(b *testing.B) {
			c := fill()
			last := q(held) // the newest entry
			b.ReportAllocs()
			for b.Loop() {
				c.put(last, d, sent)
			}
		})
		b.Run(fmt.Sprintf("put-evict/%d", held), func(b *testing.B) {
			c := fill()
			cost := held
			b.ReportAllocs()
			for b.Loop() {
				cost++
				c.put(q(cost), d, sent)
			}
		})
	}
}
