package guard

import (
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/bucketgate/bucketgate/internal/bucket"
)

// denyCache remembers, for a request Redis decided, the denial an identical request would
// get until Redis's wait has passed (bucket.Decision.Repeat): the retry-after of a
// denial, or, after an admission that left fewer than cost tokens, the time until they
// are back. A repeat of the
// request in that time is denied without asking Redis. Other requests only ever take
// tokens, so no instance could have it allowed sooner.
// Entries are keyed by identity, rule set and cost: a request that differs in any of
// them never meets another's denial. It holds at most size entries; a full cache drops
// an arbitrary one to make room. It is safe for concurrent use.
type denyCache struct {
	size int

	mu      sync.Mutex
	entries map[string]denial
}

// denial is a cached denial: the Decision Redis gave to a request sent at sent.
type denial struct {
	d    bucket.Decision
	sent time.Time
}

func newDenyCache(size int) *denyCache {
	return &denyCache{size: size, entries: make(map[string]denial, size)}
}

// get returns the denial cached for q, brought forward to now: its waits shortened by
// the time since the request that Redis decided was sent, and its At moved on by as
// much, so that At + ResetAfter is still the moment Redis gave. It finds nothing once
// that request's wait has passed.
func (c *denyCache) get(q bucket.Request, now time.Time) (bucket.Decision, bool) {
	key := cacheKey(q)
	c.mu.Lock()
	e, ok := c.entries[key]
	if ok && !now.Before(e.sent.Add(e.d.RetryAfter)) {
		delete(c.entries, key)
		ok = false
	}
	c.mu.Unlock()
	if !ok {
		return bucket.Decision{}, false
	}
	elapsed := now.Sub(e.sent)
	d := e.d
	d.RetryAfter = ceilMillis(d.RetryAfter - elapsed)
	d.ResetAfter = ceilMillis(max(d.ResetAfter-elapsed, d.RetryAfter))
	d.At = d.At.Add(elapsed)
	return d, true
}

// put caches the denial that follows d, Redis's decision for q sent at sent, when there
// is one to wait out (d.Repeat). The wait counts from when the request was sent, before
// Redis decided: the entry ends no later than the moment Redis gave.
func (c *denyCache) put(q bucket.Request, d bucket.Decision, sent time.Time) {
	d, ok := d.Repeat()
	if !ok {
		return
	}
	key := cacheKey(q)
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.entries[key]; !ok && len(c.entries) >= c.size {
		for k := range c.entries { // map order: an arbitrary entry
			delete(c.entries, k)
			break
		}
	}
	c.entries[key] = denial{d: d, sent: sent}
}

// cacheKey is the identity, each rule in order and the cost, separated by bytes that
// Validate allows in no rule name or number. The identity comes last: it may hold any byte.
func cacheKey(q bucket.Request) string {
	var b strings.Builder
	b.Grow(len(q.Identity) + 32*len(q.Rules) + 24)
	b.WriteString(strconv.FormatInt(q.Cost, 10))
	for _, r := range q.Rules {
		b.WriteByte('|')
		b.WriteString(r.Name)
		b.WriteByte(' ')
		b.WriteString(strconv.FormatInt(r.Capacity, 10))
		b.WriteByte(' ')
		b.WriteString(strconv.FormatFloat(r.RefillPerSecond, 'g', -1, 64))
	}
	b.WriteByte('#')
	b.WriteString(q.Identity)
	return b.String()
}

// ceilMillis rounds d up to whole milliseconds, as every wait of a Decision is.
func ceilMillis(d time.Duration) time.Duration {
	return (d + time.Millisecond - 1).Truncate(time.Millisecond)
}
