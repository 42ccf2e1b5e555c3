package guard

import (
	"slices"
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
// counts about 2.6 KB, so a cache of them holds about 12,800. Its table, allocated at
// init for Options.DenyCacheSize entries (about 6 MB for 100,000), comes on top.
const DenyCacheMaxBytes = 32 << 20

// entryOverhead is what a deny cache entry takes besides its strings' bytes: the
// denial (the Decision, the send time, its strings' headers, about 200 bytes) with room
// for its list's growth, a map entry of its identity, and the rounding of every
// allocation up to its size class. TestDenyCacheBytesBound holds the count of a full
// cache of worst entries to at least what they take on the heap.
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
// DenyCacheMaxBytes of them (entryBytes); a full cache drops arbitrary ones to make
// room. With askFirst, the first repeat of an admission's check is not denied but
// sent to Redis (see Options.AskFirstDenial). It is safe for concurrent use.
type denyCache struct {
	size     int
	askFirst bool

	mu      sync.Mutex
	n       int                 // entries held
	bytes   int                 // their entryBytes
	entries map[string][]denial // by identity
}

// denial is a cached denial: the Decision Redis gave to a check of rules and cost (by
// checkKey) sent at sent (by the wall clock: no monotonic reading); unasked when it follows from an admission and no repeat of
// the check has been sent to Redis since.
type denial struct {
	check   string
	d       bucketgate.Decision
	sent    time.Time
	unasked bool
}

func newDenyCache(size int, askFirst bool) *denyCache {
	return &denyCache{size: size, askFirst: askFirst, entries: make(map[string][]denial, size)}
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
	check := checkKey(q)
	now = now.Round(0) // the wall clock (see DenyCacheMaxAge)
	c.mu.Lock()
	list := c.entries[q.Identity]
	i := index(list, check)
	var e denial
	if i >= 0 {
		e = list[i]
		switch {
		case !wallclock.Young(now, e.sent, min(e.d.RetryAfter, DenyCacheMaxAge)):
			c.remove(q.Identity, list, i)
			i = -1
		case e.unasked && c.askFirst:
			list[i].unasked = false
			i = -1
		}
	}
	c.mu.Unlock()
	if i < 0 {
		return bucketgate.Decision{}, false
	}
	elapsed := now.Sub(e.sent).Truncate(time.Millisecond)
	d := e.d
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
	e := denial{check: checkKey(q), d: d, sent: sent.Round(0), unasked: admitted}
	need := entryBytes(q.Identity, e)
	c.mu.Lock()
	defer c.mu.Unlock()
	list := c.entries[q.Identity]
	if i := index(list, e.check); i >= 0 {
		c.bytes += need - entryBytes(q.Identity, list[i])
		list[i] = e
		return
	}
	for c.n > 0 && (c.n >= c.size || c.bytes+need > DenyCacheMaxBytes) {
		for id, l := range c.entries { // map order: an arbitrary entry
			c.remove(id, l, 0)
			break
		}
	}
	c.entries[q.Identity] = append(c.entries[q.Identity], e) // the list may have gone
	c.n++
	c.bytes += need
}

// entryBytes is what the deny cache counts for entry e of identity: the bytes of its
// strings (the identity counted with each of its entries; the decision holds one of its
// own, its rule's name) and entryOverhead.
func entryBytes(identity string, e denial) int {
	return len(identity) + len(e.check) + len(e.d.Rule) + entryOverhead
}

// forget drops every denial cached for identity.
func (c *denyCache) forget(identity string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, e := range c.entries[identity] {
		c.bytes -= entryBytes(identity, e)
	}
	c.n -= len(c.entries[identity])
	delete(c.entries, identity)
}

// remove drops entry i of list, identity's entries. A list left with less than half
// its room is copied to one of its length, so that no list keeps the room of entries it
// lost, which the count no longer holds (entryOverhead counts room for a list's growth,
// up to twice its entries). c.mu must be held.
func (c *denyCache) remove(identity string, list []denial, i int) {
	c.n--
	c.bytes -= entryBytes(identity, list[i])
	if len(list) == 1 {
		delete(c.entries, identity)
		return
	}
	list = append(list[:i], list[i+1:]...)
	if len(list) < cap(list)/2 {
		list = slices.Clone(list)
	}
	c.entries[identity] = list
}

// index returns the index in list of the denial for check, or -1.
func index(list []denial, check string) int {
	for i := range list {
		if list[i].check == check {
			return i
		}
	}
	return -1
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
