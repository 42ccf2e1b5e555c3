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

// inFlight are the leases of the requests that next serves, which Close returns.
type inFlight struct {
	mu    sync.Mutex
	held  map[*heldLease]struct{}
	taken bool // Close took them: no more are added
}

// add adds held, and reports false once Close has taken the leases.
func (f *inFlight) add(held *heldLease) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.taken {
		return false
	}
	f.held[held] = struct{}{}
	return true
}

// remove removes held, whose request is no longer in flight.
func (f *inFlight) remove(held *heldLease) {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.held, held)
}

// take returns the leases in flight that no Release returned, and adds no more.
func (f *inFlight) take() []*heldLease {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.taken = true
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
