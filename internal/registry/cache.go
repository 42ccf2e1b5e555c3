package registry

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/bucketgate/bucketgate"
	"github.com/bucketgate/bucketgate/internal/config"
	"github.com/bucketgate/bucketgate/internal/guard"
	"github.com/bucketgate/bucketgate/internal/madekey"
	"github.com/bucketgate/bucketgate/internal/telemetry"
	"github.com/bucketgate/bucketgate/internal/textcut"
	"github.com/bucketgate/bucketgate/internal/wallclock"
)

// Cache defaults.
const (
	// DefaultStaleIfError is how long past its period an entry still answers while the
	// table fails, when Options.StaleIfError is zero.
	DefaultStaleIfError = 5 * time.Minute
	// RetryAfterFailure is how long a failed read of an identity holds before the next
	// read of it: meanwhile its lookups answer stale, or fail, at once.
	RetryAfterFailure = time.Second
)

// evictionSample is how many entries an insert into a full Cache looks at to choose the
// one to evict: the one read longest ago among them (an approximation of least recently
// read, as Redis's own eviction samples keys).
const evictionSample = 8

// Source reads records by the id of their item (ItemID of an identity); *Table is one.
type Source interface {
	// Get returns the record of the item id, found false when there is none. A
	// *RecordError is an item that cannot be used; any other error is the source's own
	// failure.
	Get(ctx context.Context, id string) (r Record, found bool, err error)
}

// Options configure a Cache.
type Options struct {
	// TTL is how long a read answers for its identity, found or not: a change in the
	// table takes effect within it. Zero reads on every lookup (the entries then only
	// serve stale-if-error).
	TTL time.Duration
	// Size bounds the entries, found or not; an insert into a full Cache evicts one.
	// At least 1.
	Size int
	// StaleIfError is how long past TTL an entry still answers when a read fails. Zero
	// is DefaultStaleIfError.
	StaleIfError time.Duration
	// Timeout is the deadline of one read; zero leaves the caller's context alone.
	Timeout time.Duration
	// Margin is how long before the deadline of a lookup's context (the invocation's) a
	// read ends at the latest, so that the handler can still answer by the failure
	// policy in time (guard.DefaultMargin in the functions). A read that the caller's
	// time, less Margin, cut short is the caller's giving up, no failure of the table.
	// Zero keeps no margin.
	Margin time.Duration
	// Now reads the clock for entries' ages and records' expiry, by its wall clock (see
	// wallclock); nil is time.Now.
	Now func() time.Time
	// Log receives an error line per invalid item read and a warning of a failed read,
	// at most once per ReadFailureLogEvery and cause (the others counted, and said
	// later: see Flush); nil discards them.
	Log *slog.Logger
}

// Cache is a registry that reads a Source and keeps the answers. It is safe for
// concurrent use; concurrent lookups of one identity share one read. It keeps each
// record's plan name and rules, and resolves them with the configuration each lookup
// brings: an entry resolved with one configuration document is resolved again, without
// a read, by the first lookup that brings another, so that no plan of an old document
// outlives a change of the document.
type Cache struct {
	src  Source
	opts Options

	mu      sync.Mutex
	entries map[string]cached
	unknown map[string]struct{} // the ids of entries that know no plan: evicted first
	reads   map[string]*read    // reads in flight, by identity
	// holds are the identities with no entry whose last read failed, with the time
	// until which no read of them is made (RetryAfterFailure): apart from the entries,
	// so that a made-up key's hold needs no room among the entries of registered keys
	// (which it must not evict while the table fails), and bounded as they are.
	holds map[string]time.Time
	// holdsEnd is when the last of the holds ends: from then on (or once the clock
	// went back from it, as pending tells), the first lookup lets go of them all, and
	// of their table, at once, rather than keep them, ended, after an outage until
	// other holds take their places.
	holdsEnd time.Time

	failures readFailures // the failed reads, logged at most once per ReadFailureLogEvery and cause
}

// cached is one identity's entry, by the id of its item (ItemID).
type cached struct {
	planName  string            // the record's plan; "": no usable record (none, revoked, unreadable), or a key of an account
	rules     []bucketgate.Rule // the record's own rules
	cfg       *config.Config    // the configuration plan was resolved with; nil: not yet
	plan      *config.Plan      // planName with rules, resolved with cfg; nil: not known
	expiresAt instant           // the record's expiry; zero: never
	readAt    instant           // when the read that filled it began; zero: no read succeeded yet
	retryAt   instant           // after a failed read: no read of it before then
	who       *who              // the record's owner, account, buckets; nil: none of them
}

// who is what an entry keeps of its record besides the plan: its owner, and for a key of
// an account the account and the plan made with the account's; for an account (whose
// entry always has one when the table holds its item, usable or not) the identity whose
// buckets it spends. It is read and written with the Cache's mutex held.
type who struct {
	owner   string // the record's owner, at most MaxOwner bytes of it
	account string // a key's account; "": none
	buckets string // the Record.Buckets of an account, or of a key of an account
	revoked bool   // a key of an account, revoked: unknown, its account still whose buckets it spent
	// A key of an account: the plan it was last decided under (its own rules added to
	// the account's plan), made with from, the account's plan, as read at fromRead; a
	// change of either makes it again.
	member   *config.Plan
	from     *config.Plan
	fromRead instant
}

// MaxOwner is how many bytes of a record's owner an Entry carries (cut at a character
// boundary): enough to name a customer in an event, and an entry stays small whatever
// the item holds.
const MaxOwner = 128

// instant is a time of an entry in Unix nanoseconds, 0 for the zero Time: a third of a
// time.Time's size, so that an entry that keeps its record's plan name and rules (to
// resolve them again for a new document) is no larger than one that did not.
type instant int64

// at returns t as an instant.
func at(t time.Time) instant {
	if t.IsZero() {
		return 0
	}
	return instant(t.UnixNano())
}

// time returns i as a Time: the zero Time for 0.
func (i instant) time() time.Time {
	if i == 0 {
		return time.Time{}
	}
	return time.Unix(0, int64(i))
}

// read is a read in flight; done is closed when its answer is set.
type read struct {
	done  chan struct{}
	cfg   *config.Config // the configuration of the lookup that reads: its answer's plan
	entry Entry
	err   error
	// abandoned reports that the lookup that read gave up (its context ended) before
	// the source answered: its answer is that lookup's alone.
	abandoned bool
}

// NewCache returns a Cache reading src.
func NewCache(src Source, opts Options) *Cache {
	opts.Size = max(opts.Size, 1)
	if opts.StaleIfError <= 0 {
		opts.StaleIfError = DefaultStaleIfError
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Log == nil {
		opts.Log = slog.New(slog.DiscardHandler)
	}
	return &Cache{src: src, opts: opts, entries: make(map[string]cached), unknown: make(map[string]struct{}),
		reads: make(map[string]*read), holds: make(map[string]time.Time)}
}

// Len returns the number of entries (holds after failed reads apart).
func (c *Cache) Len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.entries)
}

// Lookup returns what the registry says about id, its plan resolved with cfg: from the
// cache within the period (ResultHit), else from one read of the source (ResultMiss).
// When the read fails, an entry at most StaleIfError past its period answers
// (ResultStale); with none, Lookup returns an error (ResultError), and so does every
// lookup of id for RetryAfterFailure, without a read. A lookup whose ctx ends first
// (or its deadline less Options.Margin passes) returns ctx's error (ResultAbandoned);
// that is no failure of the source: lookups sharing its read read again. An id the registry cannot hold (see Holds) is not known, at
// once: no read, no Result. A record whose plan or rules cfg refuses is logged once per
// read and per configuration, and answers no plan (Invalid). A lookup made once
// ReadFailureLogEvery has passed since a cause's last MsgReadFailed line logs the failed
// reads of that cause counted since, as Flush does.
//
// A key of an account is decided as its account: Lookup then looks the account up too
// (a second lookup, cached as the first: AccountResult) and answers the account's plan
// with the key's own rules added (config.Config.WithKeyRules) and the account's identity
// (Identity); no plan, but the account's Identity still, when the key or the account is
// revoked, expired or unusable (for a revoked or expired key whose account cannot be
// read, AccountErr instead). A key
// naming an account that the table does not hold, or own rules that cannot be added to
// the account's plan, is an invalid item, logged once per read.
func (c *Cache) Lookup(ctx context.Context, cfg *config.Config, id string) (Entry, error) {
	defer c.failures.say(ctx, c.opts.Log, c.opts.Now, false) // after its own read, whose line may say them
	if !Holds(id) {
		return Entry{}, nil
	}
	item := ItemID(id)
	e, err := c.lookup(ctx, cfg, item)
	if err != nil || e.who == nil {
		return e, err
	}
	if name, ok := strings.CutPrefix(item, AccountItemPrefix); ok {
		e.Account, e.Identity = name, accountIdentity(name, e.who)
		return e, nil
	}
	if e.who.account == "" {
		return e, nil
	}
	a, err := c.lookup(ctx, cfg, AccountItemPrefix+e.who.account)
	e.AccountResult, e.AccountInvalid = a.Result, a.Invalid
	if e.gone { // revoked or expired: unknown, but the buckets (and usage) it spent are its account's
		answer := Entry{Result: e.Result, AccountResult: a.Result, AccountInvalid: a.Invalid}
		switch {
		case err != nil:
			answer.AccountErr = fmt.Errorf("account %s: %w", madekey.Mask(e.who.account), err)
		case a.who != nil:
			answer.Account, answer.Identity = e.who.account, accountIdentity(e.who.account, a.who)
		}
		return answer, nil
	}
	if err != nil {
		return Entry{Result: e.Result, AccountResult: a.Result}, fmt.Errorf("account %s: %w", madekey.Mask(e.who.account), err)
	}
	return c.member(ctx, cfg, item, e, a), nil
}

// member answers e, the lookup of a key of an account (the item id), with a, the lookup
// of the account: the account's plan with the key's own rules, made once per read of
// either and configuration, and logged once so when the key cannot be used.
func (c *Cache) member(ctx context.Context, cfg *config.Config, id string, e, a Entry) Entry {
	name := e.who.account
	answer := Entry{Result: e.Result, Invalid: e.Invalid, AccountResult: a.Result, AccountInvalid: a.Invalid, Account: name}
	c.mu.Lock()
	w := e.who
	stale := w.from != a.Plan || w.fromRead != a.readAt
	var bad *RecordError
	switch {
	case !stale:
	case a.who == nil: // the table holds no item of the account
		w.member = nil
		bad = &RecordError{ID: id, Attribute: attrAccount, Err: fmt.Errorf("account %s is not in the registry", madekey.Mask(name))}
	case a.Plan == nil: // revoked, expired or unusable: its keys are unknown
		w.member = nil
	default:
		var err error
		if w.member, err = withKeyRules(cfg, a.Plan, id, w.buckets, name, e.rules); err != nil {
			errors.As(err, &bad)
		}
	}
	w.from, w.fromRead = a.Plan, a.readAt
	answer.Plan = w.member
	c.mu.Unlock()
	answer.Invalid = c.logInvalid(ctx, bad) || answer.Invalid
	if a.who != nil { // usable or not, its account's buckets are the ones it spends
		answer.Identity = accountIdentity(name, a.who)
	}
	if answer.Plan != nil {
		answer.Owner = a.Owner
	}
	return answer
}

// accountIdentity returns the identity whose buckets the account called name spends, as
// its entry's w says: its own, or the one it was made from (Record.Buckets).
func accountIdentity(name string, w *who) bucketgate.Identity {
	if digest, ok := strings.CutPrefix(w.buckets, bucketgate.KeyPrefix); ok {
		return bucketgate.Identity{Kind: bucketgate.KindKey, Value: digest}
	}
	return bucketgate.Identity{Kind: bucketgate.KindAccount, Value: name}
}

// lookup answers the lookup of the item id, the item's own record alone.
func (c *Cache) lookup(ctx context.Context, cfg *config.Config, id string) (Entry, error) {
	for {
		now := c.opts.Now().Round(0) // the wall clock (see wallclock)
		c.mu.Lock()
		if len(c.holds) > 0 && !wallclock.Pending(now, c.holdsEnd, RetryAfterFailure) {
			c.holds, c.holdsEnd = make(map[string]time.Time), time.Time{}
		}
		e, ok := c.entries[id]
		switch {
		case ok && e.readAt != 0 && wallclock.Young(now, e.readAt.time(), c.opts.TTL):
			e, bad := c.resolve(id, e, cfg)
			c.mu.Unlock()
			answer := e.entry(now, ResultHit)
			answer.Invalid = c.logInvalid(ctx, bad)
			return answer, nil
		case ok && wallclock.Pending(now, e.retryAt.time(), RetryAfterFailure):
			e, bad := c.resolve(id, e, cfg)
			c.mu.Unlock()
			answer, err := c.fallback(e, now, errRecentFailure)
			answer.Invalid = c.logInvalid(ctx, bad) && err == nil
			return answer, err
		case !ok && wallclock.Pending(now, c.holds[id], RetryAfterFailure):
			c.mu.Unlock()
			return Entry{Result: ResultError}, errRecentFailure
		}
		if r, ok := c.reads[id]; ok {
			c.mu.Unlock()
			e, err := r.wait(ctx)
			// Another configuration's read: once it is in, the entry is resolved with cfg.
			if err == errAbandoned || r.cfg != cfg && ctx.Err() == nil {
				continue
			}
			return e, err
		}
		r := &read{done: make(chan struct{}), cfg: cfg}
		c.reads[id] = r
		c.mu.Unlock()
		return c.fill(ctx, id, now, r)
	}
}

// fill reads id as of now for r, the read in flight of id, and answers it.
func (c *Cache) fill(ctx context.Context, id string, now time.Time, r *read) (Entry, error) {
	fresh, invalid, err := c.read(ctx, id, now)
	var bad *RecordError
	c.mu.Lock()
	delete(c.reads, id)
	var gaveUp *gaveUpError
	switch {
	case err == nil:
		fresh.readAt = at(now)
		fresh, bad = c.resolve(id, fresh, r.cfg)
		c.store(id, fresh)
		delete(c.holds, id)
		r.entry = fresh.entry(now, ResultMiss)
		r.entry.Invalid = invalid || bad != nil
	case errors.As(err, &gaveUp): // the caller gave up, not the source: nothing learned
		r.entry, r.err, r.abandoned = Entry{Result: ResultAbandoned}, gaveUp, true
	default:
		e, ok := c.entries[id] // what was there, if anything, stays: stale-if-error
		if ok {
			e.retryAt = at(now.Add(RetryAfterFailure))
			c.entries[id] = e
			e, bad = c.resolve(id, e, r.cfg)
		} else {
			c.hold(id, now.Add(RetryAfterFailure))
		}
		r.entry, r.err = c.fallback(e, now, err)
		r.entry.Invalid = bad != nil && r.err == nil
	}
	c.mu.Unlock()
	c.logInvalid(ctx, bad)
	close(r.done)
	return r.entry, r.err
}

// resolve returns e with its record's plan resolved with cfg, stored under id when that
// changed it, and the error that made the record unusable when this resolution found
// one: a record is resolved once per configuration. The caller holds c.mu.
func (c *Cache) resolve(id string, e cached, cfg *config.Config) (cached, *RecordError) {
	if e.planName == "" || e.cfg == cfg {
		return e, nil
	}
	var err error
	e.cfg = cfg
	e.plan, err = Record{ID: id, Plan: e.planName, Rules: e.rules}.Resolve(cfg)
	if e.plan != nil {
		e.planName = e.plan.Name // the document's copy: the record's is no longer held
	}
	if _, ok := c.entries[id]; ok {
		c.store(id, e)
	}
	bad := (*RecordError)(nil)
	errors.As(err, &bad)
	return e, bad
}

// release lets go of every configuration but cfg, the one in force from now on: an
// entry resolved with another forgets its plan, to be resolved again, without a read,
// by its next lookup (as it would be anyway), so that entries not looked up since a
// change hold no earlier document in memory. Live calls it at each change. It lets go
// of c.mu after every releaseBatch entries, so that a lookup meanwhile waits for a
// batch, not for a walk of the whole cache (a second for REGISTRY_CACHE_SIZE's
// 1,000,000): an entry stored or resolved again meanwhile is resolved with the
// configuration of its lookup, as after the walk.
func (c *Cache) release(cfg *config.Config) {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for id, e := range c.entries { // entries stored or removed between batches: as Go's range of a map changed in it
		if n++; n%releaseBatch == 0 {
			c.mu.Unlock()
			c.mu.Lock()
		}
		if e.who != nil && e.who.from != nil { // a key of an account: its plan, made with its account's
			e.who.member, e.who.from = nil, nil
		}
		if e.cfg != nil && e.cfg != cfg {
			e.cfg, e.plan = nil, nil // in place: it stays among the entries that know a plan
			c.entries[id] = e
		}
	}
}

// releaseBatch is how many entries release walks with the Cache's mutex held.
const releaseBatch = 1000

// logInvalid logs bad, a record that cannot be used, at error, and reports whether
// there was one: its id with every API key bucketgate made that it holds masked
// (madekey.Mask), as a hand-written item's may.
func (c *Cache) logInvalid(ctx context.Context, bad *RecordError) bool {
	if bad == nil {
		return false
	}
	c.opts.Log.LogAttrs(ctx, slog.LevelError, MsgInvalidItem, slog.String(AttrItem, madekey.Mask(bucketgate.LogForm(bad.ID))),
		slog.String(AttrAttribute, bad.Attribute), slog.String(telemetry.AttrError, bad.Err.Error()))
	return true
}

// errRecentFailure is the error of a lookup that did not read because a read of the
// same identity failed less than RetryAfterFailure ago.
var errRecentFailure = errors.New("registry: a read of this identity failed less than a second ago")

// fallback answers a lookup whose read failed with err: stale when e is young enough,
// else an error.
func (c *Cache) fallback(e cached, now time.Time, err error) (Entry, error) {
	if e.readAt != 0 && wallclock.Young(now, e.readAt.time(), c.opts.TTL+c.opts.StaleIfError) {
		return e.entry(now, ResultStale), nil
	}
	return Entry{Result: ResultError}, err
}

// errAbandoned is wait's error for a read whose caller gave up: look up again.
var errAbandoned = errors.New("registry: the lookup reading this identity gave up")

// wait waits for r's answer. A waiter never read: a miss it shares is a hit for it.
func (r *read) wait(ctx context.Context) (Entry, error) {
	select {
	case <-r.done:
	case <-ctx.Done():
		return Entry{Result: ResultAbandoned}, &gaveUpError{err: ctx.Err()}
	}
	if r.abandoned {
		return Entry{}, errAbandoned
	}
	e := r.entry
	if e.Result == ResultMiss {
		e.Result, e.Invalid = ResultHit, false
	}
	return e, r.err
}

// gaveUpError is read's error, and Lookup's, when the caller's time ran out first (its
// context ended, or its deadline less Margin passed): no failure of the source.
type gaveUpError struct{ err error }

// FailureOf returns the failure reason (FailClosed's or FailOpen's) of a decision that a lookup failing with err
// (Lookup's, wrapped or not) leaves to the failure policy: guard.FailureTimeout when the
// caller's time ran out before the source answered (ResultAbandoned: no failure of the
// table), else guard.FailureRegistryError.
func FailureOf(err error) guard.Failure {
	if gaveUp := (*gaveUpError)(nil); errors.As(err, &gaveUp) {
		return guard.FailureTimeout
	}
	return guard.FailureRegistryError
}

func (e *gaveUpError) Error() string { return e.err.Error() }
func (e *gaveUpError) Unwrap() error { return e.err }

// read reads id from the source as of now, by the earlier of Timeout from now and the
// caller's deadline less Margin, its plan not yet resolved. An item that cannot be read
// is logged and known as no one (invalid true); err is the source's own failure, or a
// *gaveUpError.
func (c *Cache) read(caller context.Context, id string, now time.Time) (e cached, invalid bool, err error) {
	ctx, budget := caller, false
	var end time.Time
	if c.opts.Timeout > 0 {
		end = time.Now().Add(c.opts.Timeout)
	}
	if deadline, ok := caller.Deadline(); ok && c.opts.Margin > 0 && (end.IsZero() || deadline.Add(-c.opts.Margin).Before(end)) {
		end, budget = deadline.Add(-c.opts.Margin), true
	}
	if !end.IsZero() {
		var cancel context.CancelFunc
		ctx, cancel = context.WithDeadline(ctx, end)
		defer cancel()
	}
	rec, found, err := c.src.Get(ctx, id)
	var bad *RecordError
	invalid = errors.As(err, &bad)
	if found && (err == nil || invalid) && strings.HasPrefix(id, AccountItemPrefix) {
		e.who = &who{} // an account that is there, usable or not: its keys are unknown, not invalid
	}
	switch {
	case err == nil && found && rec.Status != StatusRevoked:
		e.planName, e.rules, e.expiresAt = rec.Plan, rec.Rules, at(rec.ExpiresAt)
		if rec.Account != "" {
			e.planName = "" // the account's plan decides
		}
		if rec.Owner != "" || rec.Account != "" || e.who != nil {
			e.who = &who{owner: textcut.To(rec.Owner, MaxOwner), account: rec.Account, buckets: rec.Buckets}
		}
	case err == nil && found && rec.Account != "": // unknown, but whose buckets it spent is its account's
		e.who = &who{account: rec.Account, revoked: true}
	case err == nil && found && e.who != nil: // a revoked account: its keys unknown, its buckets still the ones they spent
		e.who.buckets = rec.Buckets
	}
	switch {
	case invalid:
		return cached{who: e.who}, c.logInvalid(ctx, bad), nil
	case err != nil && (caller.Err() != nil || budget && ctx.Err() != nil): // the caller's time ran out
		return cached{}, false, &gaveUpError{err: err}
	case err != nil:
		c.failures.log(ctx, c.opts.Log, c.opts.Now, id, err)
		return cached{}, false, err
	}
	return e, false, nil
}

// Log messages and attribute keys of the Cache.
const (
	MsgInvalidItem = "registry item invalid: its identity counts as unknown"
	MsgReadFailed  = "registry read failed" // at most once per ReadFailureLogEvery and cause
	AttrItem       = "item"                 // the item's id: an identity, a key (an API key's, a tenant's) as its digest
	AttrAttribute  = "attribute"            // the attribute at fault
	AttrFailed     = "failed"               // 1: the line's own read (its item) failed; 0: a line that says failedUnlogged alone
	AttrUnlogged   = "failedUnlogged"       // the reads of the cause that failed since its last line, not logged
)

// Flush logs at once, whatever ReadFailureLogEvery, the failed reads of each cause
// counted since its last line and not logged yet (AttrUnlogged), in a line of each
// cause with AttrFailed 0: what an instance that ends (at SIGTERM) would otherwise never
// say. A Lookup says them too, once ReadFailureLogEvery has passed since the cause's
// last line.
func (c *Cache) Flush(ctx context.Context) {
	c.failures.say(ctx, c.opts.Log, c.opts.Now, true)
}

// store puts e, a read that succeeded, under id, evicting an entry first when id is new
// and the cache is full. Only reads that succeeded make entries (a failed read of an
// identity with none is a hold), so made-up keys never push out, while the table fails,
// an entry that can still answer stale. The caller holds c.mu.
func (c *Cache) store(id string, e cached) {
	if _, ok := c.entries[id]; !ok && len(c.entries) >= c.opts.Size {
		c.evict()
	}
	c.entries[id] = e
	if e.plan == nil && (e.who == nil || e.who.account == "" || e.who.revoked) { // a key of an account is known: its plan is its account's
		c.unknown[id] = struct{}{}
	} else {
		delete(c.unknown, id)
	}
}

// evict removes the entry read longest ago among a few (Go's map order is random) of
// those that know no plan, or when there are none, of all: made-up keys take one
// another's place before a key the table knows. The caller holds c.mu.
func (c *Cache) evict() {
	var (
		victim string
		oldest instant
		n      int
	)
	sample := func(id string) bool {
		if e := c.entries[id]; n == 0 || e.readAt < oldest {
			victim, oldest = id, e.readAt
		}
		n++
		return n < evictionSample
	}
	ids := c.unknown
	if len(ids) == 0 {
		for id := range c.entries {
			if !sample(id) {
				break
			}
		}
	} else {
		for id := range ids {
			if !sample(id) {
				break
			}
		}
	}
	if n > 0 {
		delete(c.entries, victim)
		delete(c.unknown, victim)
	}
}

// hold records that no read of id, which has no entry, is made before until. At most
// Options.Size holds are kept: a new one takes the place of a hold that has ended, or
// of the one that ends first, among a few. The caller holds c.mu.
func (c *Cache) hold(id string, until time.Time) {
	if _, ok := c.holds[id]; !ok && len(c.holds) >= c.opts.Size {
		var (
			victim string
			first  time.Time
			n      int
		)
		for other, end := range c.holds { // Go's map order is random
			if n == 0 || end.Before(first) {
				victim, first = other, end
			}
			if n++; n == evictionSample {
				break
			}
		}
		delete(c.holds, victim)
	}
	c.holds[id] = until
	if until.After(c.holdsEnd) {
		c.holdsEnd = until
	}
}

// entry is what e says at now, answered as r: no plan once the record has expired.
// Its who and rules are the record's, for the lookup of a key's account; readAt is
// e's.
func (e cached) entry(now time.Time, r Result) Entry {
	if e.expiresAt != 0 && !now.Before(e.expiresAt.time()) || e.who != nil && e.who.revoked {
		if e.who != nil { // an account there, unusable; a key of an account, unknown, still its account's
			return Entry{Result: r, who: e.who, readAt: e.readAt, gone: true}
		}
		return Entry{Result: r}
	}
	answer := Entry{Plan: e.plan, Result: r, who: e.who, rules: e.rules, readAt: e.readAt}
	if e.who != nil {
		answer.Owner = e.who.owner
	}
	return answer
}
