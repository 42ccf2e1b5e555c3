package guard

import (
	"container/heap"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/bucketgate/bucketgate"
	"github.com/bucketgate/bucketgate/internal/wallclock"
)

// DenyCacheMaxAge is the longest a cached denial is served, however long the wait Redis
// gave. Refunds and resets give tokens back: an instance that cached a denial before one
// (anywhere) keeps serving it for at most this long after it.
//
// Ages are told by the wall clock, as Redis's waits run: Go's monotonic clock may stand
// still while a Lambda environment is frozen between invocations, and would keep a
// denial served after a freeze that outlasted its wait. A clock that went back since a
// denial was cached ends it.
const DenyCacheMaxAge = time.Second

// DenyCacheMaxBytes bounds the entries of a deny cache, whatever their number
// (Options.DenyCacheSize): 32 MiB, an eighth of the functions' 256 MB. Each entry counts
// its identity, its rule set's key, the names its decision holds and entryOverhead;
// the worst entry (a check function tenant's 1,000-byte key, 8 rules of 64-byte names)
// counts about 2.6 KB, so a cache of them holds about 12,800. Its tables, allocated at
// its first entry for Options.DenyCacheSize entries or the 43,690 that DenyCacheMaxBytes
// holds at most, whichever is fewer (about 5 MB), come on top.
const DenyCacheMaxBytes = 32 << 20

// entryOverhead is what a deny cache entry takes besides its strings' bytes: the
// denial (the Decision, the send time, its key's strings' headers, its links and its
// place in the heap by end, about 260 bytes), the rounding of every allocation up to its
// size class, and an entry of the map of identities' lists (its table is allocated at
// the first entry, as the entries' and the heap's are).
// TestDenyCacheBytesBound holds the count of a full cache of worst entries to at least
// what they take on the heap.
const entryOverhead = 768

// denyCache remembers, for a check Redis decided, the denial an identical check would
// get until Redis's wait has passed (bucketgate.Decision.Repeat), or DenyCacheMaxAge if
// that comes first: the retry-after of a denial, or, after an admission that left fewer
// than cost tokens, the time until they are back. A repeat of the check in that time is
// denied without asking Redis. Other checks only ever take tokens, so none could have it
// allowed sooner; refunds and resets give tokens back, so this instance forgets an
// identity's denials when it sends one, and the age bound covers the other instances.
// Entries are keyed by identity, rule set and cost: a check that differs in any of them
// never meets another's denial. It holds at most size entries, and at most
// DenyCacheMaxBytes of them (entryBytes); a full cache drops the entries that end first
// to make room: the expired ones (a get drops those it meets; others stay until then),
// then the live ones nearest their end, never a live one while an expired one stays. With askFirst, the first repeat of an admission's check is not denied but
// sent to Redis (see Options.AskFirstDenial). It is safe for concurrent use.
//
// Each entry is found by its key in a map, and linked into its identity's list, which
// forget walks: however many entries an identity has (a check function tenant whose
// checks each cost another amount: tokens of a model), a get, a put or an eviction
// costs the same, and in a heap by its end (ends), where an eviction finds the first.
type denyCache struct {
	size     int
	askFirst bool

	mu      sync.Mutex
	bytes   int                 // the entries' entryBytes
	entries map[denyKey]*denial // by identity and check
	heads   map[string]*denial  // each identity's list of entries, by its first
	ends    ends                // the entries, the one that ends first on top
}

// denyKey is a deny cache entry's key: the identity and the check (checkKey).
type denyKey struct {
	identity, check string
}

// denial is a cached denial: the Decision Redis gave to a check (key) sent at sent (by
// the wall clock: no monotonic reading); unasked when it follows from an admission and
// no repeat of the check has been sent to Redis since. prev and next link the entries
// of its identity; index is its place in the deny cache's ends.
type denial struct {
	key        denyKey
	d          bucketgate.Decision
	sent       time.Time
	unasked    bool
	prev, next *denial
	index      int
}

// end is when e is no longer served: its wait, or DenyCacheMaxAge, after its check was
// sent.
func (e *denial) end() time.Time { return e.sent.Add(min(e.d.RetryAfter, DenyCacheMaxAge)) }

// ends is a heap (container/heap) of deny cache entries by their end, the first on
// top; each entry's index is its place.
type ends []*denial

func (h ends) Len() int           { return len(h) }
func (h ends) Less(i, j int) bool { return h[i].end().Before(h[j].end()) }
func (h ends) Swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].index, h[j].index = i, j
}

// Push adds x, a *denial, at the end.
func (h *ends) Push(x any) {
	e := x.(*denial)
	e.index = len(*h)
	*h = append(*h, e)
}

// Pop removes the last entry and returns it.
func (h *ends) Pop() any {
	old := *h
	e := old[len(old)-1]
	old[len(old)-1] = nil
	*h = old[:len(old)-1]
	return e
}

// newDenyCache returns a deny cache of at most size entries. Its tables are allocated
// at its first entry (alloc), not at a Lambda's cold start (about 1.3 ms of it).
func newDenyCache(size int, askFirst bool) *denyCache {
	return &denyCache{size: size, askFirst: askFirst}
}

// alloc allocates c's tables, when they are not yet, for as many entries as c can hold:
// its size, or, under DenyCacheMaxBytes, fewer. c.mu is held, or c is not shared yet.
func (c *denyCache) alloc() {
	if c.entries == nil {
		most := min(c.size, DenyCacheMaxBytes/entryOverhead)
		c.entries, c.heads, c.ends = make(map[denyKey]*denial, most), make(map[string]*denial, most), make(ends, 0, most)
	}
}

// get returns the denial cached for q, brought forward to now: its waits shortened by
// the time since the check that Redis decided was sent, in whole milliseconds (rounded
// down), and its At moved on by as much, so that its waits stay whole milliseconds and
// At + ResetAfter is still exactly the moment Redis gave (a quota's window's end, a
// whole second, which the reset headers would otherwise round up to the next). It finds nothing once that
// check's wait, or DenyCacheMaxAge, has passed, nor when now is before the check was
// sent (the clock went back); with askFirst, nor for the first repeat of an admission's
// check, which goes to Redis (the repeats after it are denied).
func (c *denyCache) get(q bucketgate.Request, now time.Time) (bucketgate.Decision, bool) {
	key := denyKey{q.Identity, checkKey(q)}
	now = now.Round(0) // the wall clock (see DenyCacheMaxAge)
	c.mu.Lock()
	e, found := c.entries[key]
	var d bucketgate.Decision
	var sent time.Time
	if found {
		d, sent = e.d, e.sent
		switch {
		case !wallclock.Young(now, e.sent, min(e.d.RetryAfter, DenyCacheMaxAge)):
			c.remove(e)
			found = false
		case e.unasked && c.askFirst:
			e.unasked = false
			found = false
		}
	}
	c.mu.Unlock()
	if !found {
		return bucketgate.Decision{}, false
	}
	elapsed := now.Sub(sent).Truncate(time.Millisecond)
	d.RetryAfter -= elapsed // at least a millisecond: less than RetryAfter has passed
	d.ResetAfter = max(d.ResetAfter-elapsed, d.RetryAfter)
	d.At = d.At.Add(elapsed)
	return d, true
}

// put caches the denial that follows d, Redis's decision for the check q sent at sent,
// when there is one to wait out (d.Repeat). The wait counts from when the check was
// sent, before Redis decided: the entry ends no later than the moment Redis gave.
func (c *denyCache) put(q bucketgate.Request, d bucketgate.Decision, sent time.Time) {
	admitted := d.Allowed
	d, ok := d.Repeat()
	if !ok {
		return
	}
	key := denyKey{q.Identity, checkKey(q)}
	sent = sent.Round(0)
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, found := c.entries[key]; found {
		c.bytes -= entryBytes(e)
		e.d, e.sent, e.unasked = d, sent, admitted
		c.bytes += entryBytes(e)
		heap.Fix(&c.ends, e.index)
		for c.bytes > DenyCacheMaxBytes { // its denial names a longer rule than before
			c.remove(c.ends[0])
		}
		return
	}
	c.alloc()
	fresh := denial{key: key, d: d, sent: sent, unasked: admitted}
	need := entryBytes(&fresh)
	var e *denial
	for len(c.entries) > 0 && (len(c.entries) >= c.size || c.bytes+need > DenyCacheMaxBytes) {
		e = c.ends[0] // the first to end: an expired one, while one stays
		c.remove(e)   // no longer linked nor found: its room serves the new entry
	}
	if e == nil {
		e = new(denial)
	}
	*e = fresh
	if head := c.heads[e.key.identity]; head != nil {
		e.key.identity = head.key.identity // one string for the identity's entries and its heads key
		e.next, head.prev = head, e
	}
	c.heads[e.key.identity] = e
	c.entries[e.key] = e
	heap.Push(&c.ends, e)
	c.bytes += need
}

// entryBytes is what the deny cache counts for entry e: the bytes of its strings (its
// identity counted with each of its entries; the decision holds one of its own, its
// rule's name) and entryOverhead.
func entryBytes(e *denial) int {
	return len(e.key.identity) + len(e.key.check) + len(e.d.Rule) + entryOverhead
}

// forget drops every denial cached for identity.
func (c *denyCache) forget(identity string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for e := c.heads[identity]; e != nil; e = e.next {
		c.bytes -= entryBytes(e)
		delete(c.entries, e.key)
		heap.Remove(&c.ends, e.index)
	}
	delete(c.heads, identity)
}

// remove drops entry e. c.mu must be held.
func (c *denyCache) remove(e *denial) {
	c.bytes -= entryBytes(e)
	delete(c.entries, e.key)
	heap.Remove(&c.ends, e.index)
	switch {
	case e.prev != nil:
		e.prev.next = e.next
	case e.next != nil:
		c.heads[e.key.identity] = e.next
	default:
		delete(c.heads, e.key.identity)
	}
	if e.next != nil {
		e.next.prev = e.prev
	}
}

// checkKey is the cost and each rule in order (shadow or not; a bucket's capacity and
// rate, a quota's limit, period and anchor, a concurrency rule's most in flight), separated by bytes that Validate allows in
// no rule name or number.
func checkKey(q bucketgate.Request) string {
	var b strings.Builder
	b.Grow(32*len(q.Rules) + 24)
	b.WriteString(strconv.FormatInt(q.Cost, 10))
	for _, r := range q.Rules {
		b.WriteByte('|')
		if r.Shadow {
			b.WriteByte('~')
		}
		b.WriteString(r.Name)
		b.WriteByte(' ')
		if r.IsConcurrency() { // its most in flight: "c:5"
			b.WriteString("c:")
			b.WriteString(strconv.Itoa(int(r.Concurrency)))
			continue
		}
		if r.IsQuota() { // limit, period and anchor: "q:1000:month:15"
			b.WriteString("q:")
			b.WriteString(strconv.FormatInt(r.Limit, 10))
			b.WriteByte(':')
			b.WriteString(r.Period.String())
			b.WriteByte(':')
			b.WriteString(strconv.Itoa(max(int(r.Anchor), 1)))
			continue
		}
		b.WriteString(strconv.FormatInt(r.Capacity, 10))
		b.WriteByte(' ')
		b.WriteString(strconv.FormatFloat(r.RefillPerSecond, 'g', -1, 64))
	}
	return b.String()
}
