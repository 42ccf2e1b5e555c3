// Package guard applies bucketgate's failure policy around the engine: when Redis times
// out, errors or answers something malformed, the request is denied with reason
// unavailable (fail closed, the default) or allowed with reason degraded (fail open),
// and the Result says why, for the FailClosed and FailOpen metrics.
//
// Two optional parts spare Redis and the caller: a circuit breaker that answers at once
// while Redis is known to be failing and probes it again at least once per
// ProbeInterval (in a cluster, a circuit per range of hash slots, so that while one
// master fails the identities of the others are still decided), and a bounded deny cache that answers a repeated check with a denial
// until the wait Redis gave (the retry-after of a denial, or the time until an admission's
// tokens are back), DenyCacheMaxAge at most. The breaker counts failures of Redis itself
// (timeouts, connection errors, error replies), never an answer about one identity's
// stored state (bucket.ErrBadState): that request fails alone, as bad_response; nor a
// caller that stopped waiting (its context canceled), whose request fails as a timeout;
// nor the timeout of a call whose caller's deadline (less Margin) left it less than
// Timeout: the caller's time ran out, not Redis's. A batch
// (DecideBatch) goes to Redis in one round trip under the same policy and one deadline,
// which ends Margin before the invocation's. Time is passed in (Options.Now), but for
// the deadlines of contexts, which are real time.
package guard

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/bucketgate/bucketgate"
	"github.com/bucketgate/bucketgate/internal/bucket"
)

// FailureRetryAfter is the retry-after of a fail-closed denial: conservative, and long
// enough for the circuit breaker to probe Redis again.
const FailureRetryAfter = time.Second

// Circuit breaker defaults.
const (
	// DefaultFailuresToOpen is how many consecutive failures open the circuit in
	// production: one slow reply does not, an outage does at once.
	DefaultFailuresToOpen = 3
	// DefaultProbeInterval is how long an open circuit answers alone before it lets one
	// request probe Redis: service resumes within this long of Redis coming back (a failover that
	// first fails the probe on a stale slot map takes two).
	DefaultProbeInterval = 500 * time.Millisecond
	// CircuitSlots is how many consecutive cluster hash slots share a circuit when Redis
	// runs as a cluster (Options.Cluster): 16 circuits over the 16,384 slots. A master
	// serves whole ranges of slots, so a circuit mostly answers for one master's identities.
	CircuitSlots = 1024
	// ClusterFailuresToOpen is how many times FailuresToOpen failures in a row, whatever
	// their slots, open the circuit of the whole cluster, which a request passes before
	// its range's: an outage of every master gives them at once, one master down almost
	// never (its ranges open first and stop sending it requests). Open, it probes the
	// cluster once per ProbeInterval instead of once per range.
	ClusterFailuresToOpen = 4
)

// limiter is the engine a Guard wraps: *bucket.Limiter, traced or not.
type limiter interface {
	Decide(ctx context.Context, q bucketgate.Request) (bucketgate.Decision, error)
	DecideBatch(ctx context.Context, qs []bucketgate.Request) ([]bucketgate.Decision, []error)
	Usage(ctx context.Context, identity string, first, last time.Time) ([]bucketgate.DayUsage, error)
	Time(ctx context.Context, identity string) (time.Time, error)
	Signed(ctx context.Context, identity, id string, lease bool) error
}

// DefaultMargin is the Margin of the functions: time enough to answer the invocation
// after Redis did, or did not, answer.
const DefaultMargin = 20 * time.Millisecond

// Options configure a Guard. The zero Options fail closed with no deadline of their own,
// no circuit breaker and no deny cache.
type Options struct {
	// Timeout is the deadline of one decision, or of one whole batch; zero
	// leaves the caller's context alone.
	Timeout time.Duration
	// Margin is how long before the deadline of the caller's context (the invocation's)
	// Redis must have answered, so that the answer can still be sent: a decision has
	// until then at most, and one that cannot start before then fails at once with
	// FailureTimeout, Redis not asked. Zero keeps no margin.
	Margin time.Duration
	// FailOpen allows requests (reason degraded) when Redis does not decide.
	FailOpen bool
	// Now reads the clock for latency, the circuit breaker and the deny cache (these two
	// by its wall clock, which a Lambda freeze does not stop); nil is time.Now.
	Now func() time.Time
	// FailuresToOpen is how many consecutive failures open the circuit breaker; zero
	// means no breaker. Requests in flight together when one of them fails count as one
	// failure: one stall met by many concurrent requests does not open it alone.
	FailuresToOpen int
	// Cluster reports, when asked for a request, whether Redis runs as a cluster: then
	// the breaker keeps one circuit per range of CircuitSlots hash slots, so that while
	// one master fails, the identities of the other masters are still decided, and one
	// for the whole cluster (ClusterFailuresToOpen). Nil, or false (a standalone server,
	// or no connection yet), is one circuit for every request.
	Cluster func() bool
	// ProbeInterval is how long an open circuit answers alone before one request
	// probes Redis; zero is DefaultProbeInterval.
	ProbeInterval time.Duration
	// DenyCacheSize bounds the deny cache, in entries; zero means no cache. Its entries
	// also hold at most DenyCacheMaxBytes. The cache times entries by Now: Redis's
	// clock and Now must advance together (real time).
	DenyCacheSize int
	// AskFirstDenial makes the deny cache send to Redis the first repeat of a check
	// that an admission left short (which it would deny from that admission's wait),
	// so that Redis decides, counts and reports (its crossings: a Rate Limited event)
	// the first denial after each such admission; the repeats after it are the cache's
	// as ever. The functions set it with events (EVENT_BUS_NAME).
	AskFirstDenial bool
	// Explain adds to the error of a request Redis did not decide what to check, such
	// as the settings behind credentials Redis refused (redisconn.Conn.Explain); nil
	// leaves errors as they are.
	Explain func(error) error
}

// Guard is the engine wrapped in the failure policy. It is safe for concurrent use.
type Guard struct {
	next     limiter
	opts     Options
	circuits []breaker  // one per range of CircuitSlots slots (a standalone server: the first); nil without a breaker
	cluster  breaker    // the whole cluster's circuit, against a cluster
	cache    *denyCache // nil without a deny cache
}

// New returns a Guard around next, the engine (a *bucket.Limiter, traced or not).
func New(next limiter, opts Options) *Guard {
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.ProbeInterval <= 0 {
		opts.ProbeInterval = DefaultProbeInterval
	}
	g := &Guard{next: next, opts: opts}
	if opts.FailuresToOpen > 0 {
		g.circuits = make([]breaker, bucket.Slots/CircuitSlots)
		for i := range g.circuits {
			g.circuits[i] = breaker{threshold: opts.FailuresToOpen, interval: opts.ProbeInterval}
		}
		g.cluster = breaker{threshold: ClusterFailuresToOpen * opts.FailuresToOpen, interval: opts.ProbeInterval}
	}
	if opts.DenyCacheSize > 0 {
		g.cache = newDenyCache(opts.DenyCacheSize, opts.AskFirstDenial)
	}
	return g
}

// Result is a Decision with what it took to reach it.
type Result struct {
	bucketgate.Decision
	// Failure is why Redis did not decide; FailureNone when it did. While the circuit
	// is open it is the failure that opened it.
	Failure Failure
	// Err is the error behind Failure, for logs; nil when Redis decided.
	Err error
	// Latency is the time spent waiting for Redis; zero when Redis was not asked.
	Latency time.Duration
	// CacheHit reports that the deny cache answered without asking Redis: the Decision
	// is the denial Redis gave an identical request earlier (or that followed from an
	// admission it gave), its RetryAfter and ResetAfter shortened by the time since
	// and its At moved on by as much (by the local clock), so that At + ResetAfter is the
	// moment Redis gave.
	CacheHit bool
	// CircuitOpen reports that the circuit breaker answered by the failure policy
	// without asking Redis, because Redis has been failing.
	CircuitOpen bool
}

// Decide decides q by the failure policy: a batch of one (see DecideBatch). Its error
// is non-nil only for a request that can never be decided (it wraps
// bucketgate.ErrInvalid); every Redis failure is a Result.
func (g *Guard) Decide(ctx context.Context, q bucketgate.Request) (Result, error) {
	var r [1]Result
	if err := g.decide(ctx, []bucketgate.Request{q}, r[:]); err != nil {
		return Result{}, err.Err
	}
	return r[0], nil
}

// BatchError is the error of a batch with a request that can never be decided, or that
// Redis refused (bucketgate.ErrConflict among them).
type BatchError struct {
	// Index is the request's index in the batch.
	Index int
	// Err wraps bucketgate.ErrInvalid.
	Err error
}

// Error names the request and what is wrong with it.
func (e *BatchError) Error() string { return fmt.Sprintf("request %d: %v", e.Index, e.Err) }

// Unwrap returns Err.
func (e *BatchError) Unwrap() error { return e.Err }

// DecideBatch decides qs by the failure policy in one round trip to Redis (see
// bucket.Limiter.DecideBatch): results[i] answers qs[i] as Decide would, and a later
// request sees what an earlier one wrote. The deny cache answers the checks it can (but
// none after a refund or reset of its identity in the batch), the circuit breaker
// answers every request whose circuit is open, and so does the failure policy, without
// telling the breaker, every request on a Redis that did not give the reservations'
// secrets to an earlier call of ctx's request (bucket.OneRead, bucket.FailedRead: its
// circuit, or every request against a standalone server; ErrFailedInRequest), so that
// the request waits for Redis once and counts one failure. The rest share one deadline: those
// Redis did not answer in time fail with FailureTimeout, never sent again. Its error is a
// *BatchError when a request can never be decided, or Redis refused one (a conflict):
// then the other requests' Results are those they were answered, the zero Result for a
// request left undecided. A request found invalid before anything was sent leaves every
// request undecided; one Redis refused leaves the others decided (a batch is not
// atomic), as the deny cache and the circuit breaker learn.
func (g *Guard) DecideBatch(ctx context.Context, qs []bucketgate.Request) ([]Result, error) {
	results := make([]Result, len(qs))
	if err := g.decide(ctx, qs, results); err != nil {
		return results, err
	}
	return results, nil
}

// decide decides qs into results (as long), the one path of Decide and DecideBatch. A
// batch of several is validated whole before anything is decided, so that an invalid
// request leaves every other undecided; a batch of one is validated where it is answered
// without the engine (the engine refuses it before any write), so that a single
// decision costs what it did before batches. One request asked is the engine's Decide,
// several its DecideBatch.
func (g *Guard) decide(ctx context.Context, qs []bucketgate.Request, results []Result) *BatchError {
	validated := len(qs) > 1
	if validated {
		for i, q := range qs {
			if err := q.Validate(); err != nil {
				return &BatchError{Index: i, Err: err}
			}
		}
	}
	start := g.opts.Now()
	var (
		askedBuf [1]int
		asked    = askedBuf[:0] // the index in qs of each request for Redis
		viaBuf   [1]circuit
		via      = viaBuf[:0]    // the circuits of each request asked, when there is a breaker
		given    map[string]bool // identities given tokens back earlier in the batch
	)
	if len(qs) > 1 {
		asked, via = make([]int, 0, len(qs)), make([]circuit, 0, len(qs))
	}
	failed := g.failedRead(ctx)
	for i, q := range qs {
		if !takesOnly(q) {
			if i < len(qs)-1 { // a later check of the batch must not be answered by the cache
				if given == nil {
					given = map[string]bool{}
				}
				given[q.Identity] = true
			}
		} else if d, ok := g.cached(q, start); ok && !given[q.Identity] {
			// A cached denial was given to this very request (same identity, rules,
			// cost), so the request is valid.
			results[i] = Result{Decision: d, CacheHit: true}
			continue
		}
		if err := failed.of(q); err != nil {
			if !validated {
				if err := q.Validate(); err != nil {
					return &BatchError{Index: i, Err: err}
				}
			}
			results[i] = g.fallback(q, Classify(err), fmt.Errorf("%w: %w", ErrFailedInRequest, err), 0)
			continue
		}
		if g.circuits != nil {
			c := g.circuit(q.Identity)
			if ok, f, err := c.allow(start); !ok {
				if !validated {
					if err := q.Validate(); err != nil {
						return &BatchError{Index: i, Err: err}
					}
				}
				results[i] = g.open(q, f, err)
				continue
			}
			via = append(via, c)
		}
		asked = append(asked, i)
	}
	if len(asked) == 0 {
		return nil
	}
	caller := ctx
	ctx, cancel, short, err := g.callContext(ctx)
	if err != nil {
		for _, i := range asked {
			if !validated {
				if err := qs[i].Validate(); err != nil {
					return &BatchError{Index: i, Err: err}
				}
			}
			results[i] = g.fallback(qs[i], FailureTimeout, err, 0)
		}
		return nil
	}
	defer cancel()
	var (
		d1   [1]bucketgate.Decision
		e1   [1]error
		ds   = d1[:]
		errs = e1[:]
	)
	if len(asked) == 1 {
		ds[0], errs[0] = g.next.Decide(ctx, qs[asked[0]])
	} else {
		ask := make([]bucketgate.Request, len(asked))
		for k, i := range asked {
			ask[k] = qs[i]
		}
		ds, errs = g.next.DecideBatch(ctx, ask)
	}
	end := g.opts.Now()
	// A caller that stopped waiting (its context canceled: a client that hung up) says
	// nothing about Redis: its failures are not the breaker's to count. Nor does a
	// timeout of a call the caller left less than Timeout (short): the caller's time ran
	// out, not Redis's.
	gone := errors.Is(caller.Err(), context.Canceled)
	// Each circuit asked is told once: of a success when Redis decided any of its
	// requests, else of a failure. A request has two circuits at most, a batch
	// circuitCount.
	var toldBuf [2]told // a request's two circuits
	tell := toldBuf[:0]
	if len(asked) > 1 {
		tell = make([]told, 0, circuitCount)
	}
	var refused *BatchError // the first request Redis refused; the others stand
	for k, i := range asked {
		err := errs[k]
		if errors.Is(err, bucketgate.ErrInvalid) {
			if refused == nil {
				refused = &BatchError{Index: i, Err: err}
			}
			continue
		}
		if f := failure(err); len(via) > 0 && counted(f, gone, short) && !bucket.NotAsked(err) {
			c := via[k]
			if slot, ok := bucket.NoSecretSlot(err); ok { // a failure of the secret's master, not the identity's
				c = g.circuitOf(slot)
			}
			for _, b := range [...]*breaker{c.cluster, c.own} {
				if b != nil {
					tell = tellOnce(tell, b, f)
				}
			}
		}
		results[i] = g.result(qs[i], ds[k], err, start, end.Sub(start))
	}
	for _, t := range tell {
		t.b.record(start, end, t.err)
	}
	return refused
}

// ErrFailedInRequest is wrapped by the Err of a Result answered by the failure policy
// without asking Redis because a call of the same request (bucket.OneRead: a settle's
// or a release's check of its id, Signed) could not get the reservations' secrets from
// the Redis that the request's keys are on: the request waits for Redis once, and the
// breaker counts that failure once. The Err wraps that failure too.
var ErrFailedInRequest = errors.New("not asked: Redis failed an earlier call of the same request")

// requestFailure is the failure of Redis that a call of a request met getting the
// secrets (bucket.FailedRead), and where: err is nil when there was none.
type requestFailure struct {
	err  error
	slot int  // the slot of the key Redis did not answer for
	all  bool // a standalone server, or no connection yet (or no key named): every key's
}

// failedRead returns the failure of Redis that a call of ctx's request met getting the
// secrets: none for an answer about stored state (bucket.ErrBadState, a key of another
// type), which is no failure of Redis.
func (g *Guard) failedRead(ctx context.Context) requestFailure {
	err := bucket.FailedRead(ctx)
	if failure(err) == nil {
		return requestFailure{}
	}
	slot, ok := bucket.NoSecretSlot(err)
	return requestFailure{err: err, slot: slot, all: !ok || g.opts.Cluster == nil || !g.opts.Cluster()}
}

// of returns f's failure when q's keys are on the Redis that failed (the same circuit:
// see Options.Cluster), else nil.
func (f requestFailure) of(q bucketgate.Request) error {
	if f.err == nil || !f.all && f.slot/CircuitSlots != bucket.Slot(q.Identity)/CircuitSlots {
		return nil
	}
	return f.err
}

// counted reports whether f, the outcome of a call to Redis as the breaker counts it
// (failure), is told to the breaker: a success always; a failure unless the caller
// stopped waiting (gone), or the call timed out when the caller's deadline left it less
// than Timeout (short).
func counted(f error, gone, short bool) bool {
	return f == nil || !gone && !(short && Classify(f) == FailureTimeout)
}

// circuitCount is how many circuits there are: one per range of CircuitSlots slots,
// and the whole cluster's.
const circuitCount = bucket.Slots/CircuitSlots + 1

// told is what one circuit is told of a batch: nil for a success.
type told struct {
	b   *breaker
	err error
}

// tellOnce adds to tell that b's request ended with err (nil: Redis decided it): a
// success stands over every failure of the same circuit, a later failure over an
// earlier one.
func tellOnce(tell []told, b *breaker, err error) []told {
	for i := range tell {
		if tell[i].b == b {
			if tell[i].err != nil {
				tell[i].err = err
			}
			return tell
		}
	}
	return append(tell, told{b, err})
}

// circuit returns the circuits that answer for identity; none without a breaker.
func (g *Guard) circuit(identity string) circuit { return g.circuitOf(bucket.Slot(identity)) }

// circuitOf returns the circuits that answer for the keys of slot; none without a
// breaker.
func (g *Guard) circuitOf(slot int) circuit {
	switch {
	case g.circuits == nil:
		return circuit{}
	case g.opts.Cluster == nil || !g.opts.Cluster():
		return circuit{own: &g.circuits[0]}
	}
	return circuit{cluster: &g.cluster, own: &g.circuits[slot/CircuitSlots]}
}

// takesOnly reports whether q only ever takes tokens, or nothing: a check, or a reserve
// (to Redis, the check of its estimate). The deny cache may answer one (see cached) and
// learns from its decision; any other operation may give tokens back (a refund, a
// reset, a settle, a cancel, a release), so its identity's cached denials are forgotten.
func takesOnly(q bucketgate.Request) bool {
	return q.Op == bucketgate.OpCheck || q.Op == bucketgate.OpReserve
}

// cached returns the deny cache's answer to q, if it has one: a denial of a check or a
// reserve of the same identity, rules and cost (a reserve is denied as the check of its
// estimate is). A request with a RequestID has none: only Redis holds its first
// decision, which a retry of it must answer again (an admission replayed, not a denial
// that another check's wait implies).
func (g *Guard) cached(q bucketgate.Request, now time.Time) (bucketgate.Decision, bool) {
	if g.cache == nil || !takesOnly(q) || q.RequestID != "" {
		return bucketgate.Decision{}, false
	}
	return g.cache.get(q, now)
}

// open is the Result of q while the circuit is open after failure f with error err.
func (g *Guard) open(q bucketgate.Request, f Failure, err error) Result {
	r := g.fallback(q, f, fmt.Errorf("%w: last failure: %w", ErrCircuitOpen, err), 0)
	r.CircuitOpen = true
	return r
}

// callContext returns the context of one call to Redis: ctx with the guard's Timeout,
// ending no later than Margin before ctx's own deadline (real time, as a context's
// deadline is). short reports that ctx's deadline ends it before Timeout would: a
// timeout of the call is then the caller's lack of time. Its error wraps
// context.DeadlineExceeded when that leaves no time.
func (g *Guard) callContext(ctx context.Context) (context.Context, context.CancelFunc, bool, error) {
	timeout, short := g.opts.Timeout, false
	if deadline, ok := ctx.Deadline(); ok {
		left := time.Until(deadline) - g.opts.Margin
		short = timeout > 0 && left < timeout
		if g.opts.Margin > 0 {
			if left <= 0 {
				return ctx, nil, true, fmt.Errorf("%w: less than %v left before the invocation's deadline", context.DeadlineExceeded, g.opts.Margin)
			}
			if timeout <= 0 || left < timeout {
				timeout = left
			}
		}
	}
	if timeout <= 0 {
		return ctx, func() {}, short, nil
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	return ctx, cancel, short, nil
}

// result is the Result of q, which Redis was asked at start and answered with d or err
// (not bucketgate.ErrInvalid) after latency; it keeps the deny cache up to date. An
// operation that may give tokens back forgets its identity's denials whether Redis
// answered or not: one not answered in time may have been done all the same. A
// reserve's admission caches no denial of its repeat (though it left fewer tokens than
// its estimate): its settle gives most of them back, often through another instance (the
// check function settles what the authorizer reserved), within the second such a
// denial would be served, whose wait would be the whole estimate's.
func (g *Guard) result(q bucketgate.Request, d bucketgate.Decision, err error, start time.Time, latency time.Duration) Result {
	if g.cache != nil && !takesOnly(q) {
		g.cache.forget(q.Identity)
	}
	if err != nil {
		return g.fallback(q, Classify(err), err, latency)
	}
	if g.cache != nil && takesOnly(q) && !(q.Op == bucketgate.OpReserve && d.Allowed) {
		g.cache.put(q, d, start)
	}
	return Result{Decision: d, Latency: latency}
}

// Usage reads Redis's clock, then identity's usage of every UTC day from first's to
// last's, the days span gives for that time (see bucket.Limiter.Usage), then the clock
// again, all within the one deadline a decision has. When the day moved on meanwhile, the
// new day's first write may have removed the first day read (then past the days kept),
// so the days span gives for the new time are read instead: span's error for it, or
// theirs. span's error is Usage's, Redis's usage not read. It is a report, not a
// decision: Redis's failure is its error, whatever the failure policy, and the deny
// cache and the circuit breaker are neither asked nor told.
func (g *Guard) Usage(ctx context.Context, identity string, span func(now time.Time) (first, last time.Time, err error)) ([]bucketgate.DayUsage, error) {
	ctx, cancel, _, err := g.callContext(ctx)
	if err != nil {
		return nil, err
	}
	defer cancel()
	now, err := g.next.Time(ctx, identity)
	if err != nil {
		return nil, err
	}
	first, last, err := span(now)
	if err != nil {
		return nil, err
	}
	days, err := g.next.Usage(ctx, identity, first, last)
	if err != nil {
		return nil, err
	}
	after, err := g.next.Time(ctx, identity)
	switch {
	case err != nil:
		return nil, err
	case !bucketgate.UTCDay(after).After(bucketgate.UTCDay(now)):
		return days, nil
	}
	if first, last, err = span(after); err != nil { // within a deadline, the day changes once at most
		return nil, err
	}
	return g.next.Usage(ctx, identity, first, last)
}

// Signed returns nil when id, a reservation's id (or, lease true, a lease's), is one the
// limiter signed for identity (see bucket.Limiter.Signed), within the one deadline a
// decision has; an error wrapping bucketgate.ErrConflict when it is not, or Redis's
// failure to give the secret. While the circuit of either key of the secrets
// (bucket.SecretSlot's, bucket.SecretsKeptSlot's) is open, Redis is not asked: id is
// verified under the secrets the limiter holds, and when they do not tell (an instance
// that has not read them yet, or whose secrets refuse an id that a secret it has not
// read may sign: bucket.RefusedRecheck), the error wraps ErrCircuitOpen at once, as a
// decision's does, instead of waiting for a Redis that is failing. Its failures to
// read them are told to the breaker as a decision's are (in the circuit of the key
// Redis did not answer for), so that an instance that has not read them stops asking a
// failing Redis at each settle; not the failure of a read it did not make
// (bucket.NotAsked), nor ever a success, which the secrets held may have given without
// Redis, and the probes are left to decisions. It decides nothing: the deny cache is
// not asked.
func (g *Guard) Signed(ctx context.Context, identity, id string, lease bool) error {
	open, last := g.circuitOf(bucket.SecretSlot).opened()
	if !open {
		open, last = g.circuitOf(bucket.SecretsKeptSlot).opened()
	}
	if open {
		held, cancel := context.WithCancel(ctx)
		cancel() // a context done: the limiter asks Redis nothing
		err := g.next.Signed(held, identity, id, lease)
		if err != nil && !errors.Is(err, bucketgate.ErrConflict) {
			return fmt.Errorf("%w: last failure: %w; %w", ErrCircuitOpen, last, err)
		}
		return err
	}
	start := g.opts.Now()
	call, cancel, short, err := g.callContext(ctx)
	if err != nil {
		return err
	}
	defer cancel()
	err = g.next.Signed(call, identity, id, lease)
	if f := failure(err); f != nil && !errors.Is(err, bucketgate.ErrConflict) && !bucket.NotAsked(err) && counted(f, errors.Is(ctx.Err(), context.Canceled), short) {
		slot, ok := bucket.NoSecretSlot(err)
		if !ok { // not connected: the secret's master is as far as any
			slot = bucket.SecretSlot
		}
		c, end := g.circuitOf(slot), g.opts.Now()
		c.cluster.record(start, end, f)
		c.own.record(start, end, f)
	}
	return err
}

// FailOpen reports whether g allows, degraded, the requests Redis does not decide
// (Options.FailOpen).
func (g *Guard) FailOpen() bool { return g.opts.FailOpen }

// Fallback returns the Result of q when something the decision needs before Redis
// failed with f and err (FailureRegistryError): denied with reason unavailable, or
// allowed with reason degraded, by the failure policy. Redis is not asked and the
// circuit breaker not told.
func (g *Guard) Fallback(q bucketgate.Request, f Failure, err error) Result {
	return g.fallback(q, f, err, 0)
}

// fallback is the Result of a request Redis did not decide: it describes the first
// enforced rule, if any. A request whose rules are all shadow is allowed (degraded)
// whatever the policy: a shadow rule never denies, so there is nothing to fail closed
// on. One with no rules yet (its plan unknown) fails by the policy.
func (g *Guard) fallback(q bucketgate.Request, f Failure, err error, latency time.Duration) Result {
	d := bucketgate.Decision{Reason: bucketgate.ReasonUnavailable, RetryAfter: FailureRetryAfter}
	allShadow := len(q.Rules) > 0 && !slices.ContainsFunc(q.Rules, func(r bucketgate.Rule) bool { return !r.Shadow })
	if g.opts.FailOpen || allShadow {
		d = bucketgate.Decision{Allowed: true, Reason: bucketgate.ReasonDegraded}
	}
	for _, r := range q.Rules {
		if !r.Shadow {
			d.Rule, d.Limit = r.Name, r.Max()
			break
		}
	}
	if g.opts.Explain != nil {
		err = g.opts.Explain(err)
	}
	return Result{Decision: d, Failure: f, Err: err, Latency: latency}
}
