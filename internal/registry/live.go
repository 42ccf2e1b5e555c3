package registry

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/bucketgate/bucketgate/internal/config"
	"github.com/bucketgate/bucketgate/internal/telemetry"
	"github.com/bucketgate/bucketgate/internal/textcut"
	"github.com/bucketgate/bucketgate/internal/wallclock"
)

// ConfigSource reads the configuration items of a registry table; *Table is one.
type ConfigSource interface {
	// GetConfig returns the configuration item id (ConfigID or a VersionID), found
	// false when there is none. A *RecordError is an item that cannot be read (with
	// what could be read of it); any other error is the source's own failure.
	GetConfig(ctx context.Context, id string) (s StoredConfig, found bool, err error)
}

// MaxFallbackReads is how many copies of earlier versions an instance with no document
// of the table in force reads, newest first, when the item ConfigID does not load.
const MaxFallbackReads = 5

// MinInitTimeout is the least time Load gives one read: at init the client opens its
// first connection.
const MinInitTimeout = time.Second

// LiveOptions configure a Live.
type LiveOptions struct {
	// TTL is how long a read of the configuration item answers: Current reads it again
	// once TTL has passed since the last read (REGISTRY_CACHE_MS). Zero reads it at
	// every Current.
	TTL time.Duration
	// Timeout is the deadline of one read; zero leaves the caller's context alone. Load
	// gives each read at least MinInitTimeout.
	Timeout time.Duration
	// Margin, as Options.Margin: a read of Current ends that long before the deadline of
	// the caller's context (the invocation's) at the latest, and one cut short so is the
	// caller's giving up, no failure of the table. Zero leaves the deadline alone.
	Margin time.Duration
	// Now reads the clock, by its wall clock (see wallclock); nil is time.Now.
	Now func() time.Time
	// Log receives an error line per document read that does not load, a warning per
	// failed read and an info line per change of the document in force; nil discards
	// them.
	Log *slog.Logger
}

// View is what one invocation is decided by: a configuration document and the registry
// that resolves identities' plans with it, which change together.
type View struct {
	// Config is the configuration in force; nil when the instance has none (Err says
	// why): it could not read the table since it started.
	Config *config.Config
	// Version is the version of the table's document in force; 0 for the
	// environment's (RATE_LIMIT_CONFIG, RATE_LIMIT_CONFIG_FILE or the built-in one).
	Version int64
	// Err is why Config is nil.
	Err error

	cache *Cache // nil: Config's keys and tenants are the registry
}

// Lookup returns what the registry says about id, resolved with v.Config: the Cache of
// the registry table, or the document's keys and tenants. With no Config it returns
// v.Err (ResultError).
func (v View) Lookup(ctx context.Context, id string) (Entry, error) {
	switch {
	case v.Config == nil:
		return Entry{Result: ResultError}, v.Err
	case v.cache == nil:
		return NewDocument(v.Config).Lookup(ctx, id)
	}
	return v.cache.Lookup(ctx, v.Config, id)
}

// Refresh says what a call of Current read, for the metrics: nothing (Result empty), the
// configuration item (ResultMiss), or nothing because the read failed (ResultError: the
// document in force stays). Invalid counts the documents read that do not load, the
// item ConfigID's and the copies', each logged at error: the ConfigInvalid metric.
type Refresh struct {
	Result  Result
	Invalid int
	// Misses and Errors count the other reads r reports, beside Result's of the item
	// ConfigID: the copies of earlier versions (VersionID) read when it did not load,
	// on an instance with no document of the table in force, and the read at init that
	// the first Current reports with its own. Misses answered (found or not), Errors
	// failed.
	Misses, Errors int
}

// Observe counts in inv what r read: RegistryLookups by Result (the item ConfigID's,
// and Misses and Errors), and ConfigInvalid.
func (r Refresh) Observe(inv *telemetry.Invocation) {
	inv.ObserveConfig(string(r.Result), false)
	for range r.Invalid {
		inv.ObserveConfig("", true)
	}
	for range r.Misses {
		inv.ObserveLookup(string(ResultMiss), false)
	}
	for range r.Errors {
		inv.ObserveLookup(string(ResultError), false)
	}
}

// Live is the configuration an execution environment decides by: with a registry
// table, the table's document (the item ConfigID), read at init by Load and then again
// by Current at most once per TTL; the environment's document while the table holds
// none. A document that does not load is never applied: the document in force stays.
// An instance that has no document of the table in force yet (it started without one,
// or on the environment's) and finds one that does not load falls back to the newest
// copy of an earlier version that does (at most MaxFallbackReads reads); it never uses
// the environment's document while the table holds one that loads.
//
// Current never waits for another call's read: while one refreshes, the others get the
// view in force. Lambda freezes an environment between invocations, so the read is made
// by the invocation that finds the document older than TTL, within that invocation,
// never by a goroutine left running. It is safe for concurrent use.
type Live struct {
	src   ConfigSource   // nil: the configuration never changes
	cache *Cache         // the registry table's cache; nil: the document's keys and tenants
	env   *config.Config // the environment's document
	opts  LiveOptions

	state      atomic.Pointer[liveState]
	refreshing atomic.Bool
	// unreported holds what Load read until the first Current reports it.
	unreported atomic.Pointer[Refresh]
}

// liveState is a Live's state: replaced whole, never changed.
type liveState struct {
	view View
	// document is the table's document in force, as stored; "" when the environment's
	// is in force, or none.
	document string
	readAt   time.Time // when the last read that answered began; zero: none yet
	retryAt  time.Time // after a failed read: no read before then
	// bad is the last document read that did not load, and badErr why, so that a
	// document read again each period is not parsed again.
	bad    string
	badErr error
}

// Flush logs the registry table's failed reads not logged yet (Cache.Flush), if its
// cache reads one: what an instance that ends would otherwise never say.
func (l *Live) Flush(ctx context.Context) {
	if l.cache != nil {
		l.cache.Flush(ctx)
	}
}

// NewStatic returns a Live whose configuration is cfg, always: with cache as the
// registry, or cfg's keys and tenants when cache is nil. It reads nothing.
func NewStatic(cfg *config.Config, cache *Cache) *Live {
	l := &Live{cache: cache, env: cfg}
	l.state.Store(&liveState{view: View{Config: cfg, cache: cache}})
	return l
}

// ErrNoDocumentLoads is wrapped by the Err of a view with no Config because the table
// holds a configuration document and neither it nor any copy read loads: unlike a table
// that could not be read, every read meets it again until the document is fixed.
var ErrNoDocumentLoads = errors.New("no configuration document of the registry table loads")

// errNotRead is the Err of a Live's view before its first read.
var errNotRead = errors.New("configuration: the registry table was not read yet")

// NewLive returns a Live that reads its configuration from src, with cache as the
// registry, and env (the environment's document) while src holds none. It reads
// nothing until Load or Current.
func NewLive(src ConfigSource, cache *Cache, env *config.Config, opts LiveOptions) *Live {
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Log == nil {
		opts.Log = slog.New(slog.DiscardHandler)
	}
	l := &Live{src: src, cache: cache, env: env, opts: opts}
	l.state.Store(&liveState{view: View{Err: errNotRead, cache: cache}})
	return l
}

// Load reads the configuration at init. Its error is the refusal to start: the table
// holds a document, and neither it nor any of the copies read loads. When the table
// cannot be read, Load returns nil: until a read answers, Current's view has no
// Config, and every decision follows the failure policy.
func (l *Live) Load(ctx context.Context) error {
	if l.src == nil {
		return nil
	}
	s, r := l.refresh(ctx, l.state.Load(), l.opts.Now().Round(0), max(l.opts.Timeout, MinInitTimeout))
	l.unreported.Store(&r)
	if s.view.Config == nil && r.Result != ResultError {
		return s.view.Err
	}
	return nil
}

// Current returns the view in force, after reading the table's configuration item
// when the last read is TTL old (and no read failed in the last RetryAfterFailure) and
// no other call is reading it. The read is bounded by LiveOptions.Timeout and by ctx's
// deadline less Margin; a caller whose time runs out during it learns nothing from it.
func (l *Live) Current(ctx context.Context) (View, Refresh) {
	s := l.state.Load()
	if l.src == nil {
		return s.view, Refresh{}
	}
	var r Refresh
	if l.unreported.Load() != nil {
		if p := l.unreported.Swap(nil); p != nil {
			r = *p
		}
	}
	now := l.opts.Now().Round(0) // the wall clock (see wallclock)
	if wallclock.Young(now, s.readAt, l.opts.TTL) || wallclock.Pending(now, s.retryAt, RetryAfterFailure) || !l.refreshing.CompareAndSwap(false, true) {
		return s.view, r
	}
	defer l.refreshing.Store(false)
	s, read := l.refresh(ctx, s, now, l.opts.Timeout)
	if read.Result != "" { // with init's, if not reported yet
		read.Invalid += r.Invalid
		read.Misses, read.Errors = read.Misses+r.Misses, read.Errors+r.Errors
		switch r.Result {
		case ResultMiss:
			read.Misses++
		case ResultError:
			read.Errors++
		}
		r = read
	}
	return s.view, r
}

// refresh reads the configuration item as of now, with timeout per read, and returns
// the state that follows s, stored.
func (l *Live) refresh(ctx context.Context, s *liveState, now time.Time, timeout time.Duration) (*liveState, Refresh) {
	item, found, err := l.get(ctx, ConfigID, timeout)
	bad := (*RecordError)(nil)
	if errors.As(err, &bad) {
		err = nil
	}
	var gaveUp *gaveUpError
	next := *s
	next.readAt, next.retryAt = now, time.Time{}
	switch {
	case errors.As(err, &gaveUp): // the caller's time ran out, not the table
		return s, Refresh{}
	case err != nil:
		l.opts.Log.LogAttrs(ctx, slog.LevelWarn, MsgConfigReadFailed, slog.String(telemetry.AttrError, err.Error()))
		next.readAt, next.retryAt = s.readAt, now.Add(RetryAfterFailure)
		if next.view.Config == nil {
			next.view.Err = fmt.Errorf("configuration: the registry table could not be read: %w", err)
		}
		l.state.Store(&next)
		return &next, Refresh{Result: ResultError}
	case !found:
		if s.document != "" || s.view.Config == nil {
			l.opts.Log.LogAttrs(ctx, slog.LevelInfo, MsgConfigApplied, slog.Int64(AttrVersion, 0),
				slog.String(AttrSource, "the environment's: the registry table holds no item "+ConfigID))
			LogCaveats(ctx, l.opts.Log, l.env, 0)
		}
		next.view, next.document = View{Config: l.env, cache: l.cache}, ""
		l.put(s, &next)
		return &next, Refresh{Result: ResultMiss}
	case bad == nil && item.Document == s.document && item.Version == s.view.Version:
		l.state.Store(&next) // unchanged
		return &next, Refresh{Result: ResultMiss}
	}
	cfg, loadErr := l.load(item, bad, &next)
	if loadErr == nil {
		l.apply(ctx, &next, item, cfg, "the registry table's item "+ConfigID)
		l.put(s, &next)
		return &next, Refresh{Result: ResultMiss}
	}
	l.opts.Log.LogAttrs(ctx, slog.LevelError, MsgConfigInvalid, slog.Int64(AttrVersion, item.Version),
		slog.String(AttrItem, ConfigID), slog.String(telemetry.AttrError, loadErr.Error()))
	r := Refresh{Result: ResultMiss, Invalid: 1}
	if s.document == "" { // no document of the table in force: the newest copy that loads
		if older, cfg, ok := l.fallback(ctx, item.Version, timeout, &r); ok {
			l.apply(ctx, &next, older, cfg, "the copy "+older.ID+": the item "+ConfigID+" does not load")
		} else if s.view.Config == nil {
			next.view.Err = fmt.Errorf("%w (%s and up to %d earlier versions read): %w",
				ErrNoDocumentLoads, ConfigID, MaxFallbackReads, loadErr)
		}
	}
	l.put(s, &next)
	return &next, r
}

// load loads item, read with the error bad (nil when it could be read), remembering in
// next a document that does not load, so that the same one is not parsed again.
func (l *Live) load(item StoredConfig, bad *RecordError, next *liveState) (*config.Config, error) {
	if bad != nil {
		return nil, fmt.Errorf("configuration version %s: %w", versionText(item.Version), bad)
	}
	if item.Document == next.bad && next.badErr != nil {
		return nil, next.badErr
	}
	cfg, err := item.Load()
	if err != nil {
		err = clip(err)
		next.bad, next.badErr = item.Document, err
	}
	return cfg, err
}

// MaxErrorText is the most bytes of a stored document's load error a Live keeps and
// logs: the error quotes the value at fault, which a hand-written item (bucketgate config
// put refuses one) may make as long as the document, and the line is logged at every
// read, on every instance.
const MaxErrorText = 1024

// clippedError is an error whose text is cut to MaxErrorText bytes.
type clippedError struct {
	text string
	err  error
}

func (e *clippedError) Error() string { return e.text }
func (e *clippedError) Unwrap() error { return e.err }

// clip returns err, its text cut to MaxErrorText bytes (saying how many it left out)
// when longer; errors.Is and As see through it.
func clip(err error) error {
	text := err.Error()
	if len(text) <= MaxErrorText {
		return err
	}
	kept := textcut.To(text, MaxErrorText-40)
	return &clippedError{text: fmt.Sprintf("%s... (%d bytes more)", kept, len(text)-len(kept)), err: err}
}

// apply puts cfg, loaded from item, in force in next, logging the change.
func (l *Live) apply(ctx context.Context, next *liveState, item StoredConfig, cfg *config.Config, source string) {
	l.opts.Log.LogAttrs(ctx, slog.LevelInfo, MsgConfigApplied, slog.Int64(AttrVersion, item.Version), slog.String(AttrSource, source))
	LogCaveats(ctx, l.opts.Log, cfg, item.Version)
	next.view, next.document = View{Config: cfg, Version: item.Version, cache: l.cache}, item.Document
}

// put puts next, the state that follows s, in force, and when its configuration is
// another, has the cache let go of every configuration but it: after the state, so
// that the lookups made meanwhile (the cache lets them through as it goes) resolve
// their entries with the configuration now in force, not the one let go of.
func (l *Live) put(s, next *liveState) {
	l.state.Store(next)
	if l.cache != nil && next.view.Config != nil && next.view.Config != s.view.Config {
		l.cache.release(next.view.Config)
	}
}

// fallback reads the copies of version from and before, newest first, at most
// MaxFallbackReads of them, counting them in r, and returns the first whose document
// loads. A version it does not know (0) reads none; the caller's time running out
// ends the reads.
func (l *Live) fallback(ctx context.Context, from int64, timeout time.Duration, r *Refresh) (StoredConfig, *config.Config, bool) {
	for v := from; v >= 1 && v > from-MaxFallbackReads; v-- {
		item, found, err := l.get(ctx, VersionID(v), timeout)
		bad := (*RecordError)(nil)
		var gaveUp *gaveUpError
		switch {
		case errors.As(err, &gaveUp):
			return StoredConfig{}, nil, false
		case err != nil && !errors.As(err, &bad):
			r.Errors++
			l.opts.Log.LogAttrs(ctx, slog.LevelWarn, MsgConfigReadFailed, slog.String(AttrItem, VersionID(v)), slog.String(telemetry.AttrError, err.Error()))
			continue
		}
		if r.Misses++; !found {
			continue
		}
		cfg, err := l.load(item, bad, &liveState{})
		if err == nil {
			return item, cfg, true
		}
		r.Invalid++
		l.opts.Log.LogAttrs(ctx, slog.LevelError, MsgConfigInvalid, slog.Int64(AttrVersion, v),
			slog.String(AttrItem, VersionID(v)), slog.String(telemetry.AttrError, err.Error()))
	}
	return StoredConfig{}, nil, false
}

// get reads the configuration item id by the earlier of timeout from now (zero: none)
// and the caller's deadline less Margin. A read the caller's time cut short fails with
// a *gaveUpError.
func (l *Live) get(caller context.Context, id string, timeout time.Duration) (StoredConfig, bool, error) {
	ctx, budget := caller, false
	var end time.Time
	if timeout > 0 {
		end = time.Now().Add(timeout)
	}
	if deadline, ok := caller.Deadline(); ok && l.opts.Margin > 0 && (end.IsZero() || deadline.Add(-l.opts.Margin).Before(end)) {
		end, budget = deadline.Add(-l.opts.Margin), true
	}
	if !end.IsZero() {
		var cancel context.CancelFunc
		ctx, cancel = context.WithDeadline(ctx, end)
		defer cancel()
	}
	s, found, err := l.src.GetConfig(ctx, id)
	if bad := (*RecordError)(nil); err != nil && !errors.As(err, &bad) && (caller.Err() != nil || budget && ctx.Err() != nil) {
		return s, found, &gaveUpError{err: err}
	}
	return s, found, err
}

// versionText is a version for a message: its number, or "unknown" for 0.
func versionText(v int64) string {
	if v == 0 {
		return "unknown"
	}
	return fmt.Sprint(v)
}

// LogCaveats logs each of cfg's caveats (config.Config.Caveats) at warn, MsgConfigCaveat
// with the document's version (0 for the environment's) and the caveat in AttrCaveat.
func LogCaveats(ctx context.Context, log *slog.Logger, cfg *config.Config, version int64) {
	for _, c := range cfg.Caveats() {
		log.LogAttrs(ctx, slog.LevelWarn, MsgConfigCaveat, slog.Int64(AttrVersion, version), slog.String(AttrCaveat, c))
	}
}

// Log messages and attribute keys of a Live.
const (
	MsgConfigInvalid    = "configuration document in the registry table does not load: not applied"
	MsgConfigReadFailed = "registry read of the configuration failed: the document in force stays"
	MsgConfigApplied    = "configuration document in force"
	MsgConfigCaveat     = "configuration document in force: valid, but likely not what is meant"
	AttrCaveat          = "caveat"  // what in the document is likely not what is meant, and what to set
	AttrVersion         = "version" // the version of the table's document; 0 for the environment's
	AttrSource          = "source"  // where the document in force comes from
)
