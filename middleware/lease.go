package middleware

import (
	"context"
	"sync"
	"sync/atomic"

	"github.com/bucketgate/bucketgate"
)

// heldLease is the lease of a request that Handler passes to the next handler: released
// once Release has returned it, or found that it cannot (a conflict), so that Handler
// does not try again when next returns.
type heldLease struct {
	id       string
	released atomic.Bool
}

// release returns held's lease, for a request no longer in flight, with ctx's values (not
// its cancellation); a failure leaves it to free itself at its ttl.
func (l *Limiter) release(ctx context.Context, held *heldLease) {
	_, _ = l.authorizer.Settle(context.WithoutCancel(ctx), held.id, bucketgate.OpRelease, 0)
	held.released.Store(true)
}

// inFlight are the leases of the requests that next serves, which Close returns, and
// the calls on Redis (decisions, settles, releases) that Close waits for.
type inFlight struct {
	mu      sync.Mutex
	idle    sync.Cond // signaled when calls drops to 0
	held    map[*heldLease]struct{}
	calls   int  // the calls begun and not ended
	closing bool // Close has begun: no call begins, no lease is added
}

// newInFlight returns an empty inFlight.
func newInFlight() *inFlight {
	f := &inFlight{held: make(map[*heldLease]struct{})}
	f.idle.L = &f.mu
	return f
}

// begin begins a call on Redis, and reports false, beginning none, once Close has
// begun; a call begun ends with end.
func (f *inFlight) begin() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closing {
		return false
	}
	f.calls++
	return true
}

// end ends a call that begin began.
func (f *inFlight) end() {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.calls--; f.calls == 0 {
		f.idle.Broadcast()
	}
}

// add adds held, the lease of a decision begun and not ended.
func (f *inFlight) add(held *heldLease) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.held[held] = struct{}{}
}

// remove removes held, whose request is no longer in flight.
func (f *inFlight) remove(held *heldLease) {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.held, held)
}

// close begins no more calls, waits for those begun to end, and returns the leases in
// flight that no Release returned.
func (f *inFlight) close() []*heldLease {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.closing = true
	for f.calls > 0 {
		f.idle.Wait()
	}
	var all []*heldLease
	for held := range f.held {
		if !held.released.Load() {
			all = append(all, held)
		}
	}
	clear(f.held)
	return all
}

// held is what a Limiter's Handler handed a request to settle or release: its
// reservation id and its lease (nil when it holds none). It travels in the request's
// context under the Limiter's own heldKey, so that another Limiter's Handler inside
// this one, which replaces the request's HeaderReservation and HeaderLease with its
// own, hides neither from this Limiter's Settle, Cancel and Release.
type held struct {
	reservation string
	lease       *heldLease
}

// heldKey is the context key of the *held of the Limiter l.
type heldKey struct{ l *Limiter }
