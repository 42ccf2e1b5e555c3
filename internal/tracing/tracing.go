// Package tracing puts each Redis decision in an AWS X-Ray subsegment when the
// invocation is traced and sampled, and stays silent when it is not: no document, no
// daemon traffic, no log line.
//
// It sends the subsegment itself, as an independent subsegment document over UDP to the
// X-Ray daemon (the one Lambda runs next to a traced function), instead of linking the
// SDK's xray package and what that package drags in (aws-sdk-go v1, gRPC, fasthttp);
// only the SDK's light header and daemoncfg packages are used.
package tracing

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"time"

	"github.com/aws/aws-xray-sdk-go/daemoncfg"

	"github.com/bucketgate/bucketgate/internal/bucket"
	"github.com/bucketgate/bucketgate/internal/guard"
	"github.com/bucketgate/bucketgate/internal/telemetry"
)

// EnvDaemonAddress names the environment variable holding the X-Ray daemon's address
// ("host:port", or "udp:host:port tcp:host:port"); Lambda sets it for traced functions.
// Unset means 127.0.0.1:2000.
const EnvDaemonAddress = "AWS_XRAY_DAEMON_ADDRESS"

// Log messages of the package.
const (
	MsgBadDaemonAddress = "xray: bad daemon address, subsegments off"
	MsgNotSent          = "xray: subsegment not sent"
)

// Options configure a Decider. The zero Options send to the daemon named by
// EnvDaemonAddress, read time.Now and log to the logger given to SetLogger, if any.
type Options struct {
	// Daemon is the X-Ray daemon's UDP address; nil means EnvDaemonAddress, else
	// 127.0.0.1:2000.
	Daemon *net.UDPAddr
	// Now reads the clock for the subsegment's start and end; nil is time.Now.
	Now func() time.Time
	// Log gets, at debug, why a subsegment could not be sent, and at warn a bad
	// EnvDaemonAddress; nil is the logger given to SetLogger, else no log.
	Log *slog.Logger
}

// Decider wraps a guard.Decider in an X-Ray subsegment per decision. It is safe for
// concurrent use if the wrapped Decider is.
type Decider struct {
	next   guard.Decider
	now    func() time.Time
	log    *slog.Logger
	daemon *daemon // nil: subsegments off
}

// Wrap returns next traced with the zero Options. Wrap the Redis-facing Decider (the
// *bucket.Limiter), inside the guard, so that the subsegment times the Redis call alone.
func Wrap(next guard.Decider) *Decider { return New(next, Options{}) }

// New returns next traced with o. A bad EnvDaemonAddress turns subsegments off, with a
// warning in o.Log; decisions are never affected.
func New(next guard.Decider, o Options) *Decider {
	d := &Decider{next: next, now: o.Now, log: o.Log}
	if d.now == nil {
		d.now = time.Now
	}
	if d.log == nil {
		d.log = defaultLog()
	}
	addr, err := daemonAddr(o.Daemon)
	if err != nil {
		d.log.LogAttrs(context.Background(), slog.LevelWarn, MsgBadDaemonAddress, slog.String(telemetry.AttrError, err.Error()))
		return d
	}
	d.daemon = &daemon{addr: addr}
	return d
}

// daemonAddr is addr, else the UDP address of EnvDaemonAddress, else the default.
func daemonAddr(addr *net.UDPAddr) (*net.UDPAddr, error) {
	if addr != nil {
		return addr, nil
	}
	ends, err := daemoncfg.GetDaemonEndpointsFromEnv()
	if err != nil {
		return nil, fmt.Errorf("%s: %w", EnvDaemonAddress, err)
	}
	if ends == nil {
		ends = daemoncfg.GetDefaultDaemonEndpoints()
	}
	return ends.UDPAddr, nil
}

// Decide decides q with the wrapped Decider and returns its results unchanged. When ctx
// is traced, it then sends a subsegment around the call to the daemon without waiting;
// a subsegment that cannot be sent is dropped and logged at debug.
func (d *Decider) Decide(ctx context.Context, q bucket.Request) (bucket.Decision, error) {
	tr, ok := traceOf(ctx)
	if !ok || d.daemon == nil {
		return d.next.Decide(ctx, q)
	}
	start := d.now()
	dec, err := d.next.Decide(ctx, q)
	if serr := d.emit(tr, start, d.now(), dec, err); serr != nil {
		d.log.LogAttrs(ctx, slog.LevelDebug, MsgNotSent, slog.String(telemetry.AttrError, serr.Error()))
	}
	return dec, err
}

// emit sends the subsegment of one decision, which ran from start to end in trace tr
// and returned dec and err.
func (d *Decider) emit(tr trace, start, end time.Time, dec bucket.Decision, err error) error {
	doc, merr := newSubsegment(tr, start, end, dec, err).encode()
	if merr != nil {
		return merr
	}
	return d.daemon.send(doc)
}
