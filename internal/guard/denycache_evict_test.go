package guard

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/bucketgate/bucketgate"
)

// A full deny cache makes room for a new denial by dropping the entry that ends first:
// an expired one while there is one, never a live denial in its stead (which would send
// its caller's next requests to Redis while a dead entry stays), and never holds more
// than its size. Each case is tried many times, each on a cache of its own: the order
// of a map's entries changes from one to the next.
func TestDenyCacheMakesRoomWithTheEntryThatEndsFirst(t *testing.T) {
	at := time.Unix(1_800_000_000, 0)
	burst := []bucketgate.Rule{{Name: "burst", Capacity: 10, RefillPerSecond: 10}}
	type entry struct {
		identity string
		sent     time.Duration // after at
		wait     time.Duration // its RetryAfter
	}
	cases := []struct {
		name    string
		size    int
		held    []entry
		dropped string // the identity whose entry makes room for "new", at at+500ms
	}{
		{"an expired entry among live ones", 4, []entry{{"live1", 400 * time.Millisecond, time.Second}, {"expired", 0, 100 * time.Millisecond}, {"live2", 450 * time.Millisecond, 200 * time.Millisecond}, {"live3", 0, time.Hour}}, "expired"},
		{"every entry live: the one ending first", 3, []entry{{"late", 0, time.Hour}, {"first", 400 * time.Millisecond, 200 * time.Millisecond}, {"later", 300 * time.Millisecond, 500 * time.Millisecond}}, "first"},
		{"a denial cached again ends later", 3, []entry{{"renewed", 0, 50 * time.Millisecond}, {"expired", 0, 100 * time.Millisecond}, {"live", 0, time.Hour}, {"renewed", 450 * time.Millisecond, time.Second}}, "expired"},
		{"past the age bound though its wait is long", 3, []entry{{"live1", 400 * time.Millisecond, time.Hour}, {"aged", -600 * time.Millisecond, time.Hour}, {"live2", 0, 900 * time.Millisecond}}, "aged"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			for range 50 {
				cache := newDenyCache(c.size, false)
				for _, e := range c.held {
					cache.put(bucketgate.Request{Identity: e.identity, Rules: burst, Cost: 1}, bucketgate.Decision{Reason: bucketgate.ReasonLimited, Rule: "burst", RetryAfter: e.wait, ResetAfter: e.wait, At: at}, at.Add(e.sent))
				}
				cache.put(bucketgate.Request{Identity: "new", Rules: burst, Cost: 1}, bucketgate.Decision{Reason: bucketgate.ReasonLimited, Rule: "burst", RetryAfter: time.Second, ResetAfter: time.Second, At: at}, at.Add(500*time.Millisecond))
				if len(cache.entries) > c.size {
					t.Fatalf("%d entries in a cache of %d", len(cache.entries), c.size)
				}
				for _, e := range append(c.held, entry{identity: "new"}) {
					_, found := cache.entries[denyKey{e.identity, checkKey(bucketgate.Request{Rules: burst, Cost: 1})}]
					if found == (e.identity == c.dropped) {
						t.Fatalf("%s held %v after the new entry came, want %v: %s made room", e.identity, found, !found, c.dropped)
					}
				}
			}
		})
	}
}

// A denial cached again for the same check may name another of its rules, with a
// longer name: the cache still holds at most DenyCacheMaxBytes, making room as for a
// new entry, not only when an entry is new.
func TestDenyCacheStaysWithinItsBytesWhenADenialIsCachedAgain(t *testing.T) {
	long := strings.Repeat("l", bucketgate.MaxRuleName)
	rules := []bucketgate.Rule{{Name: "s", Capacity: 10, RefillPerSecond: 10}, {Name: long, Capacity: 10, RefillPerSecond: 10}}
	at := time.Unix(1_800_000_000, 0)
	c := newDenyCache(100_000, false) // settings.MaxDenyCacheSize: the bytes bind first
	n := DenyCacheMaxBytes/(entryOverhead+1_000) + 1
	for _, rule := range []string{"s", long} { // each identity's denial, then the same check's naming the long rule
		for i := range n {
			q := bucketgate.Request{Identity: fmt.Sprintf("tenant:%0994d", i), Rules: rules, Cost: 1}
			c.put(q, bucketgate.Decision{Reason: bucketgate.ReasonLimited, Rule: rule, RetryAfter: time.Hour, ResetAfter: time.Hour, At: at}, at)
			if c.bytes > DenyCacheMaxBytes {
				t.Fatalf("denial %d naming %.8q: the cache counts %d bytes, more than DenyCacheMaxBytes (%d)", i, rule, c.bytes, DenyCacheMaxBytes)
			}
		}
	}
}
