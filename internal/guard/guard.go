// Package guard applies bucketgate's failure policy around the engine: when Redis times
// out, errors or answers something malformed, the request is denied with reason
// unavailable (fail closed, the default) or allowed with reason degraded (fail open),
// and the Result says why, for the FailClosed metric.
//
// Two optional parts spare Redis and the caller: a circuit breaker that answers at once
// while Redis is known to be failing and probes it again at least once per
// ProbeInterval, and a bounded deny cache that answers a repeated request with a denial
// until the wait Redis gave (the retry-after of a denial, or the time until an admission's
// tokens are back). Time is passed in (Options.Now).
package guard

import (
	"context"
	"errors"
	"fmt"
	"time"

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
)

// limiter is the engine a Guard wraps: *bucket.Limiter, traced or not.
type limiter interface {
	Decide(ctx context.Context, q bucket.Request) (bucket.Decision, error)
}

// Options configure a Guard. The zero Options fail closed with no deadline of their own,
// no circuit breaker and no deny cache.
type Options struct {
	// Timeout is the deadline of one decision; zero leaves the caller's context alone.
	Timeout time.Duration
	// FailOpen allows requests (reason degraded) when Redis does not decide.
	FailOpen bool
	// Now reads the clock for latency, the circuit breaker and the deny cache; nil is
	// time.Now.
	Now func() time.Time
	// FailuresToOpen is how many consecutive failures open the circuit breaker; zero
	// means no breaker.
	FailuresToOpen int
	// ProbeInterval is how long an open circuit answers alone before one request
	// probes Redis; zero is DefaultProbeInterval.
	ProbeInterval time.Duration
	// DenyCacheSize bounds the deny cache, in entries; zero means no cache. The cache
	// times entries by Now: Redis's clock and Now must advance together (real time).
	DenyCacheSize int
}

// Guard is the engine wrapped in the failure policy. It is safe for concurrent use.
type Guard struct {
	next    limiter
	opts    Options
	breaker *breaker   // nil without a breaker
	cache   *denyCache // nil without a deny cache
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
		g.breaker = &breaker{threshold: opts.FailuresToOpen, interval: opts.ProbeInterval}
	}
	if opts.DenyCacheSize > 0 {
		g.cache = newDenyCache(opts.DenyCacheSize)
	}
	return g
}

// Result is a Decision with what it took to reach it.
type Result struct {
	bucket.Decision
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

// Decide decides q by the failure policy. Its error is non-nil only for a request that
// can never be decided (it wraps bucket.ErrInvalid); every Redis failure is a Result.
func (g *Guard) Decide(ctx context.Context, q bucket.Request) (Result, error) {
	start := g.opts.Now()
	if g.cache != nil {
		// A cached denial was given to this very request (same identity, rules, cost),
		// so the request is valid.
		if d, ok := g.cache.get(q, start); ok {
			return Result{Decision: d, CacheHit: true}, nil
		}
	}
	if g.breaker != nil {
		if ok, f, err := g.breaker.allow(start); !ok {
			if err := q.Validate(); err != nil {
				return Result{}, err
			}
			r := g.fallback(q, f, fmt.Errorf("%w: last failure: %w", ErrCircuitOpen, err), 0)
			r.CircuitOpen = true
			return r, nil
		}
	}
	if g.opts.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, g.opts.Timeout)
		defer cancel()
	}
	d, err := g.next.Decide(ctx, q)
	end := g.opts.Now()
	latency := end.Sub(start)
	switch {
	case err == nil:
		g.record(end, FailureNone, nil)
		if g.cache != nil {
			g.cache.put(q, d, start)
		}
		return Result{Decision: d, Latency: latency}, nil
	case errors.Is(err, bucket.ErrInvalid):
		return Result{}, err
	}
	f := Classify(err)
	g.record(end, f, err)
	return g.fallback(q, f, err, latency), nil
}

// record tells the breaker, if any, how a request to Redis went.
func (g *Guard) record(now time.Time, f Failure, err error) {
	if g.breaker != nil {
		g.breaker.record(now, f, err)
	}
}

// Fallback returns the Result of q when something the decision needs before Redis
// failed with f and err (FailureRegistryError): denied with reason unavailable, or
// allowed with reason degraded, by the failure policy. Redis is not asked and the
// circuit breaker not told.
func (g *Guard) Fallback(q bucket.Request, f Failure, err error) Result {
	return g.fallback(q, f, err, 0)
}

// fallback is the Result of a request Redis did not decide.
func (g *Guard) fallback(q bucket.Request, f Failure, err error, latency time.Duration) Result {
	d := bucket.Decision{Reason: bucket.ReasonUnavailable, RetryAfter: FailureRetryAfter}
	if g.opts.FailOpen {
		d = bucket.Decision{Allowed: true, Reason: bucket.ReasonDegraded}
	}
	if len(q.Rules) > 0 {
		d.Rule, d.Limit = q.Rules[0].Name, q.Rules[0].Capacity
	}
	return Result{Decision: d, Failure: f, Err: err, Latency: latency}
}
