package guard

import (
	"errors"
	"sync"
	"time"

	"github.com/bucketgate/bucketgate/internal/bucket"
	"github.com/bucketgate/bucketgate/internal/wallclock"
)

// ErrCircuitOpen is wrapped by the Err of a Result the circuit breaker answered without
// asking Redis; it also wraps the failure that opened the circuit.
var ErrCircuitOpen = errors.New("circuit open: Redis is failing, not asked")

// breaker is a circuit breaker over consecutive failures. Closed, every request goes to
// Redis. After threshold consecutive failures it opens: requests are answered at once,
// except one probe per interval, which goes to Redis; the first success closes it.
// Requests in flight together when one of them fails meet the same fault: the failure
// of a request sent before the last counted failure was recorded does not count again,
// so that one stall met by many concurrent requests is one failure, as it is on a Lambda
// instance, which serves one request at a time. Time is passed in; the interval is told
// by the wall clock: Go's monotonic clock may stand still while a Lambda environment is
// frozen between invocations, and would keep the circuit open (no probe) after a freeze
// that outlasted it. A clock that went back since the probe was scheduled lets one go.
// It is safe for concurrent use.
type breaker struct {
	threshold int
	interval  time.Duration

	mu        sync.Mutex
	failures  int       // consecutive failures; >= threshold means open
	failedAt  time.Time // when the last failure counted was recorded
	nextProbe time.Time // when open: the earliest time the next probe may go (wall clock)
	last      Failure   // the last failure, reported while open
	lastErr   error
}

// allow reports whether a request at now may go to Redis; when it may not, it returns
// the failure that keeps the circuit open. A nil breaker allows every request.
func (b *breaker) allow(now time.Time) (ok bool, last Failure, lastErr error) {
	if b == nil {
		return true, FailureNone, nil
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.failures < b.threshold {
		return true, FailureNone, nil
	}
	if now = now.Round(0); !wallclock.Pending(now, b.nextProbe, b.interval) {
		b.nextProbe = now.Add(b.interval)
		return true, FailureNone, nil
	}
	return false, b.last, b.lastErr
}

// opened reports whether b is open, and the error of the failure that keeps it so,
// without letting a probe go: for a call that can do without Redis, which leaves the
// probes to the decisions. A nil breaker is never open.
func (b *breaker) opened() (bool, error) {
	if b == nil {
		return false, nil
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.failures >= b.threshold, b.lastErr
}

// record notes how a request sent to Redis at start ended at now: err is nil when Redis
// answered. A nil breaker notes nothing.
func (b *breaker) record(start, now time.Time, err error) {
	if b == nil {
		return
	}
	err = failure(err)
	b.mu.Lock()
	defer b.mu.Unlock()
	if err == nil {
		b.failures = 0
		return
	}
	if start.Before(b.failedAt) {
		return // in flight when the last failure was counted: the same fault
	}
	b.failures++
	b.failedAt, b.last, b.lastErr = now, Classify(err), err
	if b.failures == b.threshold {
		b.nextProbe = now.Round(0).Add(b.interval)
	}
}

// circuit is the circuits a request passes, either of them nil when there is none: the
// whole cluster's (none against a standalone server), then its own.
type circuit struct{ cluster, own *breaker }

// allow reports whether a request at now may go to Redis: when both of c's circuits
// let it; when they do not, it returns the failure that keeps one open.
func (c circuit) allow(now time.Time) (ok bool, last Failure, lastErr error) {
	if ok, last, lastErr = c.cluster.allow(now); !ok {
		return ok, last, lastErr
	}
	return c.own.allow(now)
}

// opened reports whether either of c's circuits is open, and the error of the failure
// that keeps it so (see breaker.opened).
func (c circuit) opened() (bool, error) {
	if open, err := c.cluster.opened(); open {
		return open, err
	}
	return c.own.opened()
}

// failure returns err, the outcome of a call to Redis, as the breaker counts it: nil
// when Redis answered, which an answer about one identity's stored state
// (bucket.ErrBadState) is: Redis itself is well.
func failure(err error) error {
	if errors.Is(err, bucket.ErrBadState) {
		return nil
	}
	return err
}
