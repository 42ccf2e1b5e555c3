// Package detach gives what must be done whole a context that its caller's going away
// does not end.
package detach

import "context"

// Context returns ctx with its values and its deadline but not its cancellation, for
// what must be done whole even when the caller hung up meanwhile (a client whose
// request's context is canceled then): a decision, which Redis may have made already.
// Call its CancelFunc when done.
func Context(ctx context.Context) (context.Context, context.CancelFunc) {
	detached := context.WithoutCancel(ctx)
	if deadline, ok := ctx.Deadline(); ok {
		return context.WithDeadline(detached, deadline)
	}
	return detached, func() {}
}
