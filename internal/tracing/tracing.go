// Package tracing puts each Redis decision in an AWS X-Ray subsegment when the
// invocation is traced and sampled, and stays silent when it is not: no document, no
// daemon traffic, no log line.
//
// It sends the subsegment itself, as an independent subsegment document over UDP to the
// X-Ray daemon (the one Lambda runs next to a traced function), instead of linking the
// SDK's xray package and what that package drags in (aws-sdk-go v1, gRPC, fasthttp);
// only the SDK's light header package is used.
package tracing

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"strings"
	"time"

	"github.com/bucketgate/bucketgate"
	"github.com/bucketgate/bucketgate/internal/telemetry"
)

// Log messages of the package.
const (
	// MsgBadDaemonAddress is logged, by whoever parses the daemon address, when it is
	// not one: subsegments are off.
	MsgBadDaemonAddress = "xray: bad daemon address, subsegments off"
	MsgNotSent          = "xray: subsegment not sent"
)

// Options configure a Limiter. The zero Options send nothing.
type Options struct {
	// Daemon is the X-Ray daemon's UDP address (see ParseDaemonAddress); nil turns
	// subsegments off.
	Daemon *net.UDPAddr
	// Now reads the clock for the subsegment's start and end; nil is time.Now.
	Now func() time.Time
	// Log gets, at debug, why a subsegment could not be sent; nil is no log.
	Log *slog.Logger
}

// limiter is the engine a Limiter traces: *bucket.Limiter is one.
type limiter interface {
	Decide(ctx context.Context, q bucketgate.Request) (bucketgate.Decision, error)
	DecideBatch(ctx context.Context, qs []bucketgate.Request) ([]bucketgate.Decision, []error)
	Usage(ctx context.Context, identity string, first, last time.Time) ([]bucketgate.DayUsage, error)
	Time(ctx context.Context, identity string) (time.Time, error)
	Signed(ctx context.Context, identity, id string, lease bool) error
}

// Limiter wraps the engine in an X-Ray subsegment per decision. It is safe for
// concurrent use if the wrapped engine is.
type Limiter struct {
	next   limiter
	now    func() time.Time
	log    *slog.Logger
	daemon *daemon // nil: subsegments off
}

// New returns next traced with o. Wrap the Redis-facing engine (the *bucket.Limiter),
// inside the guard, so that the subsegment times the Redis call alone.
func New(next limiter, o Options) *Limiter {
	l := &Limiter{next: next, now: o.Now, log: o.Log}
	if l.now == nil {
		l.now = time.Now
	}
	if l.log == nil {
		l.log = slog.New(slog.DiscardHandler)
	}
	if o.Daemon != nil {
		l.daemon = &daemon{addr: o.Daemon}
	}
	return l
}

// ParseDaemonAddress reads the X-Ray daemon's address as Lambda gives it: "host:port",
// or "udp:host:port tcp:host:port" in either order. Subsegments go to the UDP address.
func ParseDaemonAddress(s string) (*net.UDPAddr, error) {
	fields := strings.Fields(s)
	var udp string
	switch len(fields) {
	case 1:
		udp = fields[0]
	case 2:
		for _, f := range fields {
			if addr, ok := strings.CutPrefix(f, "udp:"); ok {
				udp = addr
			} else if !strings.HasPrefix(f, "tcp:") {
				return nil, fmt.Errorf("daemon address %q: want host:port or udp:host:port tcp:host:port", s)
			}
		}
	}
	if udp == "" {
		return nil, fmt.Errorf("daemon address %q: want host:port or udp:host:port tcp:host:port", s)
	}
	addr, err := net.ResolveUDPAddr("udp", udp)
	if err != nil {
		return nil, fmt.Errorf("daemon address %q: %w", s, err)
	}
	return addr, nil
}

// Decide decides q with the wrapped engine and returns its results unchanged. When ctx
// is traced, it then sends a subsegment around the call to the daemon without waiting;
// a subsegment that cannot be sent is dropped and logged at debug.
func (l *Limiter) Decide(ctx context.Context, q bucketgate.Request) (bucketgate.Decision, error) {
	tr, ok := traceOf(ctx)
	if !ok || l.daemon == nil {
		return l.next.Decide(ctx, q)
	}
	start := l.now()
	dec, err := l.next.Decide(ctx, q)
	if serr := l.emit(tr, start, l.now(), dec, err); serr != nil {
		l.log.LogAttrs(ctx, slog.LevelDebug, MsgNotSent, slog.String(telemetry.AttrError, serr.Error()))
	}
	return dec, err
}

// DecideBatch decides qs with the wrapped engine and returns its results unchanged.
// When ctx is traced, it then sends one subsegment around the batch's round trip,
// annotated with its size and flagged as Decide flags the first request that failed.
func (l *Limiter) DecideBatch(ctx context.Context, qs []bucketgate.Request) ([]bucketgate.Decision, []error) {
	tr, ok := traceOf(ctx)
	if !ok || l.daemon == nil {
		return l.next.DecideBatch(ctx, qs)
	}
	start := l.now()
	ds, errs := l.next.DecideBatch(ctx, qs)
	s := newBatchSubsegment(tr, start, l.now(), len(qs), errs)
	if serr := l.send(s); serr != nil {
		l.log.LogAttrs(ctx, slog.LevelDebug, MsgNotSent, slog.String(telemetry.AttrError, serr.Error()))
	}
	return ds, errs
}

// Usage reads identity's usage with the wrapped engine and returns its results
// unchanged. When ctx is traced, it then sends a subsegment around the read, flagged as
// Decide flags an error.
func (l *Limiter) Usage(ctx context.Context, identity string, first, last time.Time) ([]bucketgate.DayUsage, error) {
	tr, ok := traceOf(ctx)
	if !ok || l.daemon == nil {
		return l.next.Usage(ctx, identity, first, last)
	}
	start := l.now()
	days, err := l.next.Usage(ctx, identity, first, last)
	s := newRedisSubsegment(tr, start, l.now())
	s.Error, s.Fault = errors.Is(err, bucketgate.ErrInvalid), err != nil && !errors.Is(err, bucketgate.ErrInvalid)
	if serr := l.send(s); serr != nil {
		l.log.LogAttrs(ctx, slog.LevelDebug, MsgNotSent, slog.String(telemetry.AttrError, serr.Error()))
	}
	return days, err
}

// Time reads Redis's clock with the wrapped engine, untraced: a read of a report's.
func (l *Limiter) Time(ctx context.Context, identity string) (time.Time, error) {
	return l.next.Time(ctx, identity)
}

// Signed verifies id with the wrapped engine, untraced: at most a read of the secret.
func (l *Limiter) Signed(ctx context.Context, identity, id string, lease bool) error {
	return l.next.Signed(ctx, identity, id, lease)
}

// emit sends the subsegment of one decision, which ran from start to end in trace tr
// and returned dec and err.
func (l *Limiter) emit(tr trace, start, end time.Time, dec bucketgate.Decision, err error) error {
	return l.send(newSubsegment(tr, start, end, dec, err))
}

// send sends s to the daemon.
func (l *Limiter) send(s subsegment) error {
	doc, err := s.encode()
	if err != nil {
		return err
	}
	return l.daemon.send(doc)
}
