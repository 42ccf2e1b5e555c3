package authorizer

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/bucketgate/bucketgate/internal/bucket"
	"github.com/bucketgate/bucketgate/internal/config"
	"github.com/bucketgate/bucketgate/internal/guard"
	"github.com/bucketgate/bucketgate/internal/identity"
	"github.com/bucketgate/bucketgate/internal/telemetry"
)

// Log attribute keys of the authorizer's own lines (the decision's are telemetry's).
const (
	attrRequestID = "apiRequestId"
	attrSourceIP  = "sourceIp"
)

// maxLoggedSourceIP bounds how much of an unusable source IP a log line quotes.
const maxLoggedSourceIP = 64

// call is what one authorizer event asks, whatever its payload version.
type call struct {
	headers   map[string]string
	sourceIP  string
	method    string
	path      string
	requestID string // API Gateway's request id, for the logs
}

// outcome is a decided call that API Gateway should hear about: allowed, limited or
// degraded (an unavailable limiter is an error instead).
type outcome struct {
	id     identity.Identity
	limits config.Limits
	result guard.Result
}

// decide resolves c's identity and limits and decides it. Its error is ErrUnauthorized
// for a refused identity, wraps ErrUnavailable when Redis could not decide and the
// limiter fails closed, or reports a request that can never be decided.
func (h *Handler) decide(ctx context.Context, c call) (outcome, error) {
	id := h.Identities.Resolve(c.headers, c.sourceIP)
	attrs := []slog.Attr{slog.String(telemetry.AttrIdentity, id.String()), slog.String(attrRequestID, c.requestID)}
	if id.Kind == identity.KindIP && id.Value == identity.UnknownAddr {
		h.Log.LogAttrs(ctx, slog.LevelWarn, "source IP is not an IP address: limited under the shared unknown identity",
			append(attrs, slog.String(attrSourceIP, truncate(c.sourceIP, maxLoggedSourceIP)))...)
	}
	plan, err := h.plan(id)
	if err != nil {
		h.Log.LogAttrs(ctx, slog.LevelDebug, "identity refused", attrs...)
		return outcome{}, err
	}
	limits := h.Plans.Limits(plan, c.method, c.path)
	attrs = append(attrs, slog.String(telemetry.AttrPlan, limits.Plan), slog.Int64(telemetry.AttrCost, limits.Cost))
	q := bucket.Request{Identity: id.String(), Rules: limits.Rules, Cost: limits.Cost}
	r, err := h.Guard.Decide(ctx, q)
	if err != nil {
		h.Log.LogAttrs(ctx, slog.LevelError, "request cannot be decided", append(attrs, slog.String(telemetry.AttrError, err.Error()))...)
		return outcome{}, fmt.Errorf("decide: %w", err)
	}
	h.observe(ctx, q, r, attrs)
	telemetry.LogDecision(ctx, h.Log, r, attrs...)
	if r.Reason == bucket.ReasonUnavailable {
		return outcome{}, fmt.Errorf("%w (%s)", ErrUnavailable, r.Failure)
	}
	return outcome{id: id, limits: limits, result: r}, nil
}

// plan returns the plan of id, or ErrUnauthorized when the configuration refuses it.
func (h *Handler) plan(id identity.Identity) (*config.Plan, error) {
	if id.Kind != identity.KindKey {
		if h.Plans.RefuseAnonymous() {
			return nil, ErrUnauthorized
		}
		return h.Plans.DefaultPlan(), nil
	}
	p, known := h.Plans.PlanForKey(id.Value)
	if !known && h.Plans.RefuseUnknownKeys() {
		return nil, ErrUnauthorized
	}
	return p, nil
}

// observe writes the invocation's metrics: one EMF line for its one decision of q, and
// one per shadow rule that would have denied it (logged at info with attrs).
func (h *Handler) observe(ctx context.Context, q bucket.Request, r guard.Result, attrs []slog.Attr) {
	var inv telemetry.Invocation
	inv.Observe(r)
	telemetry.ObserveShadow(ctx, h.Log, &inv, q, r, attrs...)
	if err := h.Metrics.Emit(h.Now(), &inv); err != nil {
		h.Log.LogAttrs(ctx, slog.LevelWarn, "metrics not written", slog.String(telemetry.AttrError, err.Error()))
	}
}

// truncate returns at most n bytes of s.
func truncate(s string, n int) string {
	if len(s) > n {
		return s[:n]
	}
	return s
}
