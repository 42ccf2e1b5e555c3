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
// stays within that plus its tables, allocated at its first entry (alloc, here before
// the entries). The figure is the heap's, read
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
	c.alloc()
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
		len(c.entries), c.bytes, c.bytes/max(len(c.entries), 1), held, held/int64(max(len(c.entries), 1)), tableBytes)
	switch {
	case len(c.entries) == 0:
		t.Fatal("nothing cached")
	case c.bytes > DenyCacheMaxBytes:
		t.Fatalf("counted %d bytes, want at most DenyCacheMaxBytes (%d)", c.bytes, DenyCacheMaxBytes)
	case held > int64(c.bytes):
		t.Fatalf("the entries take %d bytes of heap, more than the %d counted: the count is short", held, c.bytes)
	}
}

// TestDenyCacheBytesBoundAfterShrinking: one identity's list of denials that grew long
// (a tenant whose checks each cost another amount: tokens of a model) and then lost
// them (served past their wait, or evicted) takes no more heap than the deny cache
// counts for what it still holds: a list keeps no room for the entries it once had,
// which the count no longer holds.
func TestDenyCacheBytesBoundAfterShrinking(t *testing.T) {
	const noise = 64 << 10 // what the runtime and the test's own goroutines allocate or free meanwhile; a list of 1,000 entries' room is 300 KB
	rules := []bucketgate.Rule{{Name: "tokens", Capacity: bucketgate.MaxCapacity, RefillPerSecond: 1}}
	sent := time.Unix(1_800_000_000, 0)
	d := bucketgate.Decision{Reason: bucketgate.ReasonLimited, Rule: "tokens", Limit: bucketgate.MaxCapacity, RetryAfter: time.Hour, ResetAfter: time.Hour, At: sent}
	for _, tc := range []struct {
		name string
		grow int // the entries the list had
		keep int // the entries it keeps
	}{
		{"5,000 entries, 1 kept", 5000, 1},
		{"5,000 entries, 100 kept", 5000, 100},
		{"1,000 entries, 10 kept", 1000, 10},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var before, after runtime.MemStats
			c := newDenyCache(tc.grow, false)
			c.alloc() // its tables, for as many as it may hold: not the room of a list
			runtime.GC()
			runtime.ReadMemStats(&before)
			q := func(cost int) bucketgate.Request {
				return bucketgate.Request{Identity: "tenant:llm-app", Rules: rules, Cost: int64(cost)}
			}
			for cost := range tc.grow {
				c.put(q(cost+1), d, sent)
			}
			for cost := tc.grow; cost > tc.keep; cost-- { // the last first: no shift of the others
				if _, ok := c.get(q(cost), sent.Add(2*DenyCacheMaxAge)); ok {
					t.Fatalf("cost %d: a denial served past DenyCacheMaxAge", cost)
				}
			}
			runtime.GC()
			runtime.ReadMemStats(&after)
			held := int64(after.HeapAlloc) - int64(before.HeapAlloc)
			runtime.KeepAlive(c)
			t.Logf("%d entries held, counted %d bytes, heap %d bytes", len(c.entries), c.bytes, held)
			if len(c.entries) != tc.keep {
				t.Fatalf("%d entries held, want %d", len(c.entries), tc.keep)
			}
			if held > int64(c.bytes)+noise {
				t.Fatalf("the entries take %d bytes of heap, more than the %d counted: the list kept the room of the entries it lost", held, c.bytes)
			}
		})
	}
}

// TestDenyCacheAllocatesAtFirstEntry: a new deny cache allocates its tables (about 5 MB
// at the largest DENY_CACHE_SIZE) at its first entry, not when a function starts: a
// cold start pays nothing for a cache it may never fill.
func TestDenyCacheAllocatesAtFirstEntry(t *testing.T) {
	const caches, slack = 10, 64 << 10 // what the runtime allocates meanwhile
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	kept := make([]*denyCache, caches)
	for i := range kept {
		kept[i] = newDenyCache(100_000, false) // settings.MaxDenyCacheSize
	}
	runtime.ReadMemStats(&after)
	runtime.KeepAlive(kept)
	if n := after.TotalAlloc - before.TotalAlloc; n > slack {
		t.Fatalf("%d new deny caches allocated %d bytes, want their tables left to their first entry", caches, n)
	}
}
