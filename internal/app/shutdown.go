package app

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"time"

	"github.com/aws/aws-lambda-go/lambda"

	"github.com/bucketgate/bucketgate/internal/telemetry"
)

// shutdownWait is how long, at most, a function waits at SIGTERM for the invocation
// that still runs before it writes the metrics and exits: Lambda gives the runtime
// 500 ms from SIGTERM to SIGKILL when it registered an internal extension (as
// lambda.WithEnableSIGTERM does), and the write is left the rest.
const shutdownWait = 400 * time.Millisecond

// atShutdown returns what a function does when Lambda ends its instance and sends it
// SIGTERM: when idle (scaling in, a new version, hours of service), or when an
// invocation timed out, which Lambda's documentation says resets the instance as a
// shutdown does, the runtime first, while the invocation still runs. It waits up to
// wait for the invocations that running counts (one that timed out: its context has
// ended, so it returns soon), so that their metrics are written with the others,
// logging that it waits (MsgShutdownWaits) and those that outlived the wait
// (MsgShutdownLeft); then it writes the metrics that wait in e (METRICS_FLUSH_MS's
// sums), has say log the failures its once-a-minute lines have not said yet (events not
// sent, registry reads failed: parts.sayUnlogged), and exits with status 0, since
// nothing else is left to do and the process would otherwise idle until SIGKILL. An
// invocation that starts once it has begun decides nothing (see counted).
func atShutdown(running *invocations, wait time.Duration, e *telemetry.Emitter, say func(context.Context), log *slog.Logger, exit func(code int)) func() {
	flush := flusher(e, log)
	return func() {
		running.writing.Lock()
		defer running.writing.Unlock() // exit returns in tests alone
		if n, ended := running.shut(); n > 0 {
			log.Info(MsgShutdownWaits, slog.Int(AttrInvocations, n))
			if left := running.wait(ended, wait); left > 0 {
				log.Warn(MsgShutdownLeft, slog.Int(AttrInvocations, left))
			}
		}
		flush()
		say(context.Background())
		exit(0)
	}
}

// invocations counts the invocations of a handler that run (see counted), for the
// shutdown to wait for, and holds an invocation that ends while the shutdown writes
// until it has exited: its answer to the runtime, which a reset instance's Runtime API
// may refuse (aws-lambda-go then ends the process), comes after the write. Its zero
// value counts none.
type invocations struct {
	mu      sync.Mutex
	running int
	ended   chan struct{} // closed when the last invocation running ends
	closing bool          // the shutdown has begun: no invocation starts
	writing sync.Mutex    // held by the shutdown until it exits
}

// start counts an invocation that starts, and reports false, counting none, once the
// shutdown has begun.
func (r *invocations) start() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closing {
		return false
	}
	if r.running == 0 {
		r.ended = make(chan struct{})
	}
	r.running++
	return true
}

// end counts an invocation that ends.
func (r *invocations) end() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.running--; r.running == 0 {
		close(r.ended)
	}
}

// now returns how many invocations run, and a channel closed when they have ended.
func (r *invocations) now() (running int, ended <-chan struct{}) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.running, r.ended
}

// shut begins the shutdown, after which no invocation starts, and returns now's.
func (r *invocations) shut() (running int, ended <-chan struct{}) {
	r.mu.Lock()
	r.closing = true
	r.mu.Unlock()
	return r.now()
}

// wait waits until ended (now's) is closed, for at most bound, and returns how many
// invocations still run.
func (r *invocations) wait(ended <-chan struct{}, bound time.Duration) (left int) {
	t := time.NewTimer(bound)
	defer t.Stop()
	select {
	case <-ended:
	case <-t.C:
	}
	n, _ := r.now()
	return n
}

// counted is a Lambda handler that counts its invocations of Handler in running,
// logging to log.
type counted struct {
	lambda.Handler
	running *invocations
	log     *slog.Logger
}

// errShutdown is the error of an invocation that started once the shutdown had begun.
var errShutdown = errors.New("the function is shutting down (SIGTERM came before this invocation): nothing was decided")

// Invoke is Handler's Invoke, counted while it runs, returning (or panicking) after a
// shutdown that began meanwhile has written what waits. Once the shutdown has begun,
// an invocation (which Lambda never hands over after SIGTERM; a Runtime API might) is
// not decided: its answer would come after the exit, never, and its decision perhaps
// after the metrics were written, counted nowhere. It logs MsgShutdownRefused and
// answers errShutdown once the shutdown has exited, that is in tests alone.
func (h counted) Invoke(ctx context.Context, payload []byte) ([]byte, error) {
	defer func() {
		h.running.writing.Lock() //nolint:staticcheck // an empty critical section: waits for the shutdown's write
		h.running.writing.Unlock()
	}()
	if !h.running.start() {
		h.log.Warn(MsgShutdownRefused)
		return nil, errShutdown
	}
	defer h.running.end()
	return h.Handler.Invoke(ctx, payload)
}
