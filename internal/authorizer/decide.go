package authorizer

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/bucketgate/bucketgate"
	"github.com/bucketgate/bucketgate/internal/claims"
	"github.com/bucketgate/bucketgate/internal/config"
	"github.com/bucketgate/bucketgate/internal/detach"
	"github.com/bucketgate/bucketgate/internal/eventbus"
	"github.com/bucketgate/bucketgate/internal/guard"
	"github.com/bucketgate/bucketgate/internal/identity"
	"github.com/bucketgate/bucketgate/internal/registry"
	"github.com/bucketgate/bucketgate/internal/telemetry"
	"github.com/bucketgate/bucketgate/internal/textcut"
)

// Log attribute keys of the authorizer's own lines (the decision's are telemetry's).
const (
	attrRequestID = "apiRequestId"
	attrSourceIP  = "sourceIp"
	// attrUnknownKey, on the line of a request limited by its source IP although it
	// carried an API key the registry does not know (or, failing open, could not look
	// up): that key's identity (a digest), or conflictingKeys.
	attrUnknownKey = "unknownKey"
	// attrRegistryError, on the line of a request limited by its source IP because
	// the registry could not look its key up (failing open): the registry's error.
	attrRegistryError = "registryError"
	// attrKey, on the line of a request decided as its key's account: the key's
	// identity (a digest); the identity is the account's.
	attrKey = "key"
	// attrAccount, on the line of a request of a key of an account: the account's name.
	attrAccount = "account"
)

// conflictingKeys is attrUnknownKey's value for an API key header given twice with
// different values.
const conflictingKeys = "conflicting values"

// maxLoggedSourceIP bounds how much of an unusable source IP a log line quotes.
const maxLoggedSourceIP = 64

// Call is what one request asks the authorizer, whatever brought it: an API Gateway
// event of any payload version, or an HTTP request to a service (package middleware).
type Call struct {
	// Keys are the copies of the API key header the request carried.
	Keys identity.KeyCopies
	// SourceIP is the request's source address, as the caller's network saw it.
	SourceIP string
	// Method and Path are the request's, for the configuration's routes.
	Method, Path string
	// RequestID identifies the request in the logs; empty for none.
	RequestID string
}

// Outcome is a decided Call that the caller should hear about: allowed, limited or
// degraded (an unavailable limiter, or a refused identity, is an error instead).
type Outcome struct {
	// Identity is whose buckets the request spent.
	Identity bucketgate.Identity
	// Limits are the plan, rules and cost it was decided against.
	Limits config.Limits
	// Result is the decision.
	Result guard.Result
}

// Authorize resolves c's identity and limits and decides it, writing one EMF line and
// its log lines. Its error is ErrUnauthorized for a refused identity, wraps
// ErrUnavailable when Redis or the registry could not decide and the limiter fails
// closed, or reports a request that can never be decided. ctx's deadline bounds it, its
// cancellation does not stop it: a decision once asked is made whole, counted and its
// events sent, even when the caller hung up meanwhile (a client of the middleware), as
// Redis may have taken its tokens already.
func (h *Handler) Authorize(ctx context.Context, c Call) (Outcome, error) {
	ctx, cancel := detach.Context(ctx)
	defer cancel()
	var inv telemetry.Invocation
	defer h.emit(ctx, &inv)
	v, refresh := h.Config.Current(ctx)
	refresh.Observe(&inv)
	caller := h.Identities.ResolveCopies(c.Keys, c.SourceIP)
	attrs := []slog.Attr{slog.String(attrRequestID, c.RequestID)}
	if caller.IP.Value == identity.UnknownAddr {
		h.Log.LogAttrs(ctx, slog.LevelWarn, "source IP is not an IP address: limited under the shared unknown identity",
			append(attrs, slog.String(attrSourceIP, textcut.To(c.SourceIP, maxLoggedSourceIP)))...)
	}
	id, plan, entry, attrs, lookupErr := h.who(ctx, v, caller, &inv, attrs)
	attrs = append([]slog.Attr{slog.String(telemetry.AttrIdentity, id.String())}, attrs...)
	var limits config.Limits // none when there is no configuration: lookupErr says why
	switch {
	case plan != nil:
		limits = v.Config.Limits(plan, c.Method, c.Path)
	case lookupErr == nil:
		inv.ObserveRefused()
		h.Log.LogAttrs(ctx, slog.LevelDebug, "identity refused", attrs...)
		return Outcome{}, ErrUnauthorized
	}
	q := request(id, caller.Key, limits)
	attrs = append(attrs, slog.String(telemetry.AttrPlan, limits.Plan), slog.Int64(telemetry.AttrCost, q.Cost))
	if q.Op == bucketgate.OpReserve {
		attrs = append(attrs, slog.String(telemetry.AttrOp, q.Op.String()))
	}
	var (
		r   guard.Result
		err error
	)
	if lookupErr != nil {
		r = h.Guard.Fallback(q, registry.FailureOf(lookupErr), lookupErr)
	} else if r, err = h.Guard.Decide(ctx, q); err != nil {
		h.Log.LogAttrs(ctx, slog.LevelError, "request cannot be decided", append(attrs, slog.String(telemetry.AttrError, err.Error()))...)
		return Outcome{}, fmt.Errorf("decide: %w", err)
	}
	inv.Observe(r)
	telemetry.ObserveShadow(ctx, h.Log, &inv, q, r, "", attrs...)
	telemetry.LogDecision(ctx, h.Log, r, attrs...)
	if h.Events != nil && len(r.Crossings) > 0 { // only on the invocation that crossed; the decision stands
		h.Events.Send(ctx, &inv, eventbus.Crossed(r.Decision, eventbus.Who{Identity: q.Identity, Account: entry.Account, Owner: entry.Owner, Plan: limits.Plan}))
	}
	if r.Reason == bucketgate.ReasonUnavailable {
		return Outcome{}, fmt.Errorf("%w (%s)", ErrUnavailable, r.Failure)
	}
	return Outcome{Identity: id, Limits: limits, Result: r}, nil
}

// request is what the authorizer asks the engine for a request of identity id (that
// carried the API key whose identity is key, if any) under limits (config.Limits.Request:
// a check of the route's cost or, on a route that reserves, a reserve of its estimate;
// what it holds, for the route's ttl). When it holds something (a reservation, or a
// lease of a concurrency rule), its ids carry the claims a settle or release by the id
// alone follows back to id and limits.
func request(id, key bucketgate.Identity, limits config.Limits) bucketgate.Request {
	q := limits.Request(id.String())
	if q.Holds() {
		q.Claims = claims.Of(id, key, limits).String()
	}
	return q
}

// who returns whose buckets the caller spends and under which plan of v, and attrs
// with what the log lines should add: a registered API key's own, on its plan with its
// rules, or for a key of an account the account's, on the account's plan with the key's
// own rules added (the lines then name the key and the account); else the source's, on the default plan, for a request without a key or (when
// unknownKeys is ip) with a key the registry does not know. A nil plan with no error
// means refused. When the registry could not answer, a limiter that fails closed gets
// the key's identity and the registry's error: the request is then answered by the
// failure policy (503). One that fails open limits the request as its source on the
// default plan, under unknownKeys ip and refuse alike: Redis can still decide, and a key
// that cannot be looked up must buy no way past every limit (unlimited, degraded), nor
// turn a table outage into 401s for every registered key (refused). When v has no
// configuration (the table unread since the instance started), nothing can be limited:
// the key's (or the source's) identity, no plan and v's error, for the failure policy.
func (h *Handler) who(ctx context.Context, v registry.View, c identity.Caller, inv *telemetry.Invocation, attrs []slog.Attr) (bucketgate.Identity, *config.Plan, registry.Entry, []slog.Attr, error) {
	switch {
	case v.Config == nil && c.Key != bucketgate.Identity{} && !c.Conflict:
		return c.Key, nil, registry.Entry{}, attrs, v.Err
	case v.Config == nil:
		return c.IP, nil, registry.Entry{}, attrs, v.Err
	case c.Conflict:
		attrs = append(attrs, slog.String(attrUnknownKey, conflictingKeys))
	case c.Key == bucketgate.Identity{}:
		if v.Config.RefuseAnonymous() {
			return c.IP, nil, registry.Entry{}, attrs, nil
		}
		return c.IP, v.Config.DefaultPlan(), registry.Entry{}, attrs, nil
	default:
		e, err := v.Lookup(ctx, c.Key.String())
		e.Observe(inv)
		switch {
		case err != nil && h.Guard.FailOpen(): // the line names the key (unknownKey): its error need not
			attrs = append(attrs, slog.String(attrUnknownKey, c.Key.String()), slog.String(attrRegistryError, "registry lookup: "+err.Error()))
			return c.IP, v.Config.DefaultPlan(), registry.Entry{}, attrs, nil
		case err != nil: // the line names the key (its identity): its error need not
			return c.Key, v.Config.DefaultPlan(), registry.Entry{}, attrs, fmt.Errorf("registry lookup: %w", err)
		case e.Plan != nil && e.Identity != bucketgate.Identity{}: // a key of an account: the account's buckets
			return e.Identity, e.Plan, e, append(attrs, slog.String(attrKey, c.Key.String()), slog.String(attrAccount, e.Account)), nil
		case e.Plan != nil:
			return c.Key, e.Plan, e, attrs, nil
		}
		attrs = append(attrs, slog.String(attrUnknownKey, c.Key.String()))
	}
	if v.Config.RefuseUnknownKeys() {
		return c.IP, nil, registry.Entry{}, attrs, nil
	}
	return c.IP, v.Config.DefaultPlan(), registry.Entry{}, attrs, nil
}

// emit writes the invocation's metrics: one EMF line for its one decision, with the
// registry's lookup, if any, and one per shadow rule that would have denied it.
func (h *Handler) emit(ctx context.Context, inv *telemetry.Invocation) {
	if err := h.Metrics.Emit(h.Now(), inv); err != nil {
		h.Log.LogAttrs(ctx, slog.LevelWarn, "metrics not written", slog.String(telemetry.AttrError, err.Error()))
	}
}
