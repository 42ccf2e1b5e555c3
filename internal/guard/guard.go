// Package guard applies bucketgate's failure policy around the engine: when Redis times
// out, errors or answers something malformed, the request is denied with reason
// unavailable (fail closed, the default) or allowed with reason degraded (fail open),
// and the Result says why, for the FailClosed metric.
package guard

import (
	"context"
	"errors"
	"net"
	"time"

	"github.com/bucketgate/bucketgate/internal/bucket"
)

// FailureRetryAfter is the retry-after of a fail-closed denial: conservative, and long
// enough for the circuit breaker to probe Redis again.
const FailureRetryAfter = time.Second

// Failure is why Redis did not decide, as the FailClosed metric's Reason dimension
// spells it. The zero Failure means Redis decided.
type Failure string

// The failures of a Result.
const (
	FailureNone        Failure = ""
	FailureTimeout     Failure = "timeout"      // the deadline passed first
	FailureRedisError  Failure = "redis_error"  // connection refused, reset, or an error reply
	FailureBadResponse Failure = "bad_response" // an answer of the wrong shape
)

// Decider decides one request; *bucket.Limiter is one.
type Decider interface {
	Decide(ctx context.Context, q bucket.Request) (bucket.Decision, error)
}

// Options configure a Guard. The zero Options fail closed with no deadline of their own.
type Options struct {
	// Timeout is the deadline of one decision; zero leaves the caller's context alone.
	Timeout time.Duration
	// FailOpen allows requests (reason degraded) when Redis does not decide.
	FailOpen bool
	// Now reads the clock for latency; nil is time.Now.
	Now func() time.Time
}

// Guard is a Decider wrapped in the failure policy. It is safe for concurrent use.
type Guard struct {
	next Decider
	opts Options
}

// New returns a Guard around next.
func New(next Decider, opts Options) *Guard {
	if opts.Now == nil {
		opts.Now = time.Now
	}
	return &Guard{next: next, opts: opts}
}

// Result is a Decision with what it took to reach it.
type Result struct {
	bucket.Decision
	// Failure is why Redis did not decide; FailureNone when it did.
	Failure Failure
	// Err is the error behind Failure, for logs; nil when Redis decided.
	Err error
	// Latency is the time spent waiting for Redis; zero when Redis was not asked.
	Latency time.Duration
	// CacheHit reports that the deny cache answered without asking Redis.
	CacheHit bool
}

// Decide decides q by the failure policy. Its error is non-nil only for a request that
// can never be decided (it wraps bucket.ErrInvalid); every Redis failure is a Result.
func (g *Guard) Decide(ctx context.Context, q bucket.Request) (Result, error) {
	if g.opts.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, g.opts.Timeout)
		defer cancel()
	}
	start := g.opts.Now()
	d, err := g.next.Decide(ctx, q)
	latency := g.opts.Now().Sub(start)
	switch {
	case err == nil:
		return Result{Decision: d, Latency: latency}, nil
	case errors.Is(err, bucket.ErrInvalid):
		return Result{}, err
	}
	return g.fallback(q, Classify(err), err, latency), nil
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

// Classify names the failure behind a Decide error that is not bucket.ErrInvalid.
func Classify(err error) Failure {
	var netErr net.Error
	switch {
	case errors.Is(err, context.DeadlineExceeded), errors.As(err, &netErr) && netErr.Timeout():
		return FailureTimeout
	case errors.Is(err, bucket.ErrBadReply):
		return FailureBadResponse
	}
	return FailureRedisError
}
