package authorizer

import (
	"context"
	"errors"
	"fmt"
	"log/slog"

	"github.com/bucketgate/bucketgate"
	"github.com/bucketgate/bucketgate/internal/bucket"
	"github.com/bucketgate/bucketgate/internal/claims"
	"github.com/bucketgate/bucketgate/internal/eventbus"
	"github.com/bucketgate/bucketgate/internal/guard"
	"github.com/bucketgate/bucketgate/internal/registry"
	"github.com/bucketgate/bucketgate/internal/telemetry"
)

// Settle settles reservation, an id this authorizer issued (Outcome.Result.Reservation,
// on a route that reserves), at actual tokens (0 to bucketgate.MaxSettle; op
// bucketgate.OpSettle) or cancels it (op bucketgate.OpCancel, actual 0), or releases a
// lease it issued (Outcome.Result.Lease; op bucketgate.OpRelease, actual 0), with the id
// alone: its claims lead to the identity and the route's rules in the configuration in
// force, as the check function's settle by the reservation does. It writes one EMF line
// and a decision line, and sends the events of what the settle crossed (a quota's
// threshold), as the check function's settle does. Its error wraps bucketgate.ErrConflict for an id the limiter did
// not make, or whose lone key was revoked since, or whose account is no longer active (a
// key of an active account revoked or moved since is settled under that account's plan),
// or whose route is gone or has none of its rules left (the reservation stays charged at its estimate), bucketgate.ErrInvalid for bad input, and ErrUnavailable when Redis (or the
// registry) could not settle it: try again. A settle Redis or the registry could not
// decide is counted as a decision is (Decisions by Outcome, FailClosed by Reason). While
// Redis does not give the secrets that verify the id, its claims may be forged: one that
// leads to a conflict is ErrUnavailable too, and a Result Redis did not decide names no
// rule or limit, so that the answer to a forged id tells nothing of where it leads.
func (h *Handler) Settle(ctx context.Context, reservation string, op bucketgate.Op, actual int64) (guard.Result, error) {
	if op != bucketgate.OpSettle && op != bucketgate.OpCancel && op != bucketgate.OpRelease {
		return guard.Result{}, fmt.Errorf("%w: operation %v: want settle, cancel or release", bucketgate.ErrInvalid, op)
	}
	c, err := claims.Read(reservation)
	if err != nil {
		what := "reservation"
		if op == bucketgate.OpRelease {
			what = "lease"
		}
		return guard.Result{}, fmt.Errorf("%w: %s: %w", bucketgate.ErrConflict, what, err)
	}
	var inv telemetry.Invocation
	defer h.emit(ctx, &inv)
	v, refresh := h.Config.Current(ctx)
	refresh.Observe(&inv)
	attrs := []slog.Attr{slog.String(telemetry.AttrIdentity, c.Identity), slog.String(telemetry.AttrOp, op.String()), slog.Int64(telemetry.AttrCost, actual)}
	// The signature first: the claims of an id the limiter did not sign lead nowhere, no
	// registry read. (Redis not giving the secret, the lookup and the decision meet it:
	// under OneRead, the decision fails with that failure, asking that Redis nothing.
	// The claims of an id not verified so may be forged: their conflict is no answer,
	// and an answer Redis did not decide carries nothing they led to, below.)
	ctx = bucket.OneRead(ctx)
	unsigned := h.Guard.Signed(ctx, c.Identity, reservation, op == bucketgate.OpRelease)
	if errors.Is(unsigned, bucketgate.ErrConflict) {
		h.Log.LogAttrs(ctx, slog.LevelWarn, "settle refused", append(attrs, slog.String(telemetry.AttrError, unsigned.Error()))...)
		return guard.Result{}, unsigned
	}
	l, who, err := claims.Resolve(ctx, v, c, op)
	who.Observe(&inv)
	q := bucketgate.Request{Identity: c.Identity, Rules: l.Rules, Op: op, Cost: actual, ID: reservation}
	var r guard.Result
	switch {
	case errors.Is(err, bucketgate.ErrConflict) && unsigned == nil:
		h.Log.LogAttrs(ctx, slog.LevelWarn, "settle refused", append(attrs, slog.String(telemetry.AttrError, err.Error()))...)
		return guard.Result{}, err
	case err != nil: // the registry could not say: the failure policy answers, as for a decision
		r = h.Guard.Fallback(q, registry.FailureOf(err), err)
	default:
		if r, err = h.Guard.Decide(ctx, q); err != nil {
			h.Log.LogAttrs(ctx, slog.LevelWarn, "settle refused", append(attrs, slog.String(telemetry.AttrError, err.Error()))...)
			return guard.Result{}, err
		}
	}
	if unsigned != nil && r.Failure != guard.FailureNone { // the same whatever the claims name
		q.Rules, l.Plan = nil, ""
		r = h.Guard.Fallback(q, guard.Classify(unsigned), unsigned)
	}
	inv.Observe(r)
	telemetry.LogDecision(ctx, h.Log, r, append(attrs, slog.String(telemetry.AttrPlan, l.Plan))...)
	if h.Events != nil && len(r.Crossings) > 0 { // the script reports a crossing to this settle alone
		h.Events.Send(ctx, &inv, eventbus.Crossed(r.Decision, eventbus.Who{Identity: c.Identity, Account: who.Account, Owner: who.Owner, Plan: l.Plan}))
	}
	if r.Failure != guard.FailureNone || r.Reason == bucketgate.ReasonDegraded || r.Reason == bucketgate.ReasonUnavailable {
		what := "the reservation is not settled"
		if op == bucketgate.OpRelease {
			what = "the lease is not released"
		}
		return r, fmt.Errorf("%w (%s): %s", ErrUnavailable, r.Failure, what)
	}
	return r, nil
}
