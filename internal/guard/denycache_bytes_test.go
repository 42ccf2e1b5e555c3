package guard

import (
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/bucketgate/bucketgate"
	"github.com/bucketgate/bucketgate/checkapi"
)

// worstDenial returns the i-th of a flood of the deny cache's worst entries: a check
// function tenant with the longest key, bucketgate.MaxRules rules with the longest names
// and numbers, a cost of MaxCapacity, and a denial naming a rule by a string of its own
// (inline rules' names are decoded afresh for each request).
func worstDenial(i int, rules []bucketgate.Rule) (bucketgate.Request, bucketgate.Decision) {
	id := fmt.Sprintf("tenant:%0*d", checkapi.MaxKey, i)
	q := bucketgate.Request{Identity: id, Rules: rules, Cost: bucketgate.MaxCapacity}
	d := bucketgate.Decision{Reason: bucketgate.ReasonLimited, Rule: strings.Clone(rules[7].Name), Limit: bucketgate.MaxCapacity,
		RetryAfter: time.Hour, ResetAfter: time.Hour, At: time.Unix(1_800_000_000, 0)}
	return q, d
}

// TestDenyCacheBytesBound: filled with its worst entries, a deny cache of the largest
// DENY_CACHE_SIZE holds at most DenyCacheMaxBytes of them, counted structurally (its
// count of each entry is at least what the entry takes on the heap), and its heap
// stays within that plus its table, allocated at init. The figure is the heap's, read
// after a collection: a generous bound, not a timing.
func TestDenyCacheBytesBound(t *testing.T) {
	rules := make([]bucketgate.Rule, bucketgate.MaxRules)
	for i := range rules {
		rules[i] = bucketgate.Rule{Name: fmt.Sprintf("%s%d", strings.Repeat("r", bucketgate.MaxRuleName-1), i), Capacity: bucketgate.MaxCapacity, RefillPerSecond: 0.011574074074074073}
	}
	const size = 100_000 // settings.MaxDenyCacheSize
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	c := newDenyCache(size, false)
	runtime.GC()
	var table runtime.MemStats
	runtime.ReadMemStats(&table)
	sent := time.Unix(1_800_000_000, 0)
	for i := range size {
		q, d := worstDenial(i, rules)
		c.put(q, d, sent)
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	held := int64(after.HeapAlloc) - int64(table.HeapAlloc)
	tableBytes := int64(table.HeapAlloc) - int64(before.HeapAlloc)
	runtime.KeepAlive(c)
	t.Logf("%d entries held, counted %d bytes (%d each), heap %d bytes (%d each) beside the table's %d",
		c.n, c.bytes, c.bytes/max(c.n, 1), held, held/int64(max(c.n, 1)), tableBytes)
	switch {
	case c.n == 0:
		t.Fatal("nothing cached")
	case c.bytes > DenyCacheMaxBytes:
		t.Fatalf("counted %d bytes, want at most DenyCacheMaxBytes (%d)", c.bytes, DenyCacheMaxBytes)
	case held > int64(c.bytes):
		t.Fatalf("the entries take %d bytes of heap, more than the %d counted: the count is short", held, c.bytes)
	}
}
