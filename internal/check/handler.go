// Package check is bucketgate's direct-invocation decision handler: services invoke it
// with one check ({"key", "plan" or "rules", "cost"}) or a batch ({"checks": [...]}) and
// get the decision back (package checkapi holds the contract, package checkclient a Go
// client). Package app builds it; command functions/check serves it in Lambda.
package check

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/aws/aws-lambda-go/lambda/messages"

	"github.com/bucketgate/bucketgate"
	"github.com/bucketgate/bucketgate/checkapi"
	"github.com/bucketgate/bucketgate/internal/bucket"
	"github.com/bucketgate/bucketgate/internal/eventbus"
	"github.com/bucketgate/bucketgate/internal/guard"
	"github.com/bucketgate/bucketgate/internal/identity"
	"github.com/bucketgate/bucketgate/internal/registry"
	"github.com/bucketgate/bucketgate/internal/telemetry"
)

// Guard decides requests under the failure policy, one or a batch in one round trip;
// *guard.Guard is one.
type Guard interface {
	Decide(ctx context.Context, q bucketgate.Request) (guard.Result, error)
	DecideBatch(ctx context.Context, qs []bucketgate.Request) ([]guard.Result, error)
	// Fallback answers by the failure policy when the registry failed, or Redis did
	// not give the secrets that verify an id.
	Fallback(q bucketgate.Request, f guard.Failure, err error) guard.Result
	// Usage reads Redis's clock, then an identity's usage of the UTC days that span
	// gives for it, both within one deadline.
	Usage(ctx context.Context, identity string, span func(now time.Time) (first, last time.Time, err error)) ([]bucketgate.DayUsage, error)
	// Signed reports whether id is a reservation's (or, lease true, a lease's) id the
	// limiter signed for identity: nil, an error wrapping bucketgate.ErrConflict, or
	// Redis's failure to give the secret.
	Signed(ctx context.Context, identity, id string, lease bool) error
}

// Metrics writes the metrics of one invocation; *telemetry.Emitter is one.
type Metrics interface {
	Emit(at time.Time, inv *telemetry.Invocation) error
}

// Handler is the check function: it implements lambda.Handler, so it reads the raw
// payload itself and every malformed one gets an error naming the field at fault.
type Handler struct {
	// Guard decides each check; its failure policy (fail closed or open) is the
	// authorizer's.
	Guard Guard
	// Config gives the plans (by name, and the default plan) and the registry that
	// says which plan a tenant (or an API key, on the operator's path) is on, for
	// checks with neither plan nor rules.
	Config Configuration
	// Identities groups IPv6 sources as the authorizer does: the operator's path takes
	// an "ip:" identity only as the authorizer spells it (its header is not read).
	Identities identity.Resolver
	// Metrics gets one Emit per invocation that decided something.
	Metrics Metrics
	// Log gets a debug line per decision (telemetry.LogDecision) and a warning per
	// failure.
	Log *slog.Logger
	// Now reads the clock for the metrics' timestamp.
	Now func() time.Time
	// UsageDays is how many UTC days of usage the engine keeps (USAGE_RETENTION_DAYS,
	// today included): a usage request may ask for those; 0 turns usage requests away.
	UsageDays int
	// NoAddressUsage says the engine counts no usage of source addresses
	// (USAGE_OF_ADDRESSES false): a usage request for an "ip:" identity is refused.
	NoAddressUsage bool
	// OperatorFunction, when set, makes this function service-facing: it refuses the
	// operator's operations (a reset, or any check naming one of the authorizer's
	// identities) as invalid requests that name this function, which serves them, and
	// counts each refusal (Decisions, Outcome refused). Empty serves every operation.
	OperatorFunction string
	// Events, optional, sends the events of the decisions that crossed a threshold
	// (EVENT_BUS_NAME), all of an invocation's at once; nil sends none.
	Events Events
}

// Events sends the events of an invocation, within its own deadline, counting what it
// could not send in the invocation; *eventbus.Sender is one.
type Events interface {
	Send(ctx context.Context, inv *telemetry.Invocation, events []eventbus.Event)
}

// MsgOperation is the message of the info line for every reset, and every request that
// names one of the authorizer's identities (the operator's path).
const MsgOperation = "bucket operation"

// Invoke answers one invocation: a checkapi.Response for one check, a
// checkapi.BatchResult for a batch, decided in one round trip to Redis. An invalid
// payload is a function error of type checkapi.ErrorTypeInvalidRequest naming the field
// at fault; then nothing is decided, so nothing is written to Redis.
func (h *Handler) Invoke(ctx context.Context, payload []byte) ([]byte, error) {
	var inv telemetry.Invocation
	defer h.emit(ctx, &inv)
	v, refresh := h.Config.Current(ctx)
	refresh.Observe(&inv)
	var plans Plans = v.Config
	if v.Config == nil {
		plans = unconfigured{}
	}
	checks, batch, err := parse(payload, plans, h.Identities)
	if err != nil {
		h.Log.LogAttrs(ctx, slog.LevelWarn, "invalid request", slog.String(telemetry.AttrError, err.Error()))
		return nil, invalidRequest(err)
	}
	if err := h.operatorOnly(checks, batch); err != nil {
		inv.ObserveRefused()
		h.Log.LogAttrs(ctx, slog.LevelWarn, MsgOperatorRefused, slog.String(telemetry.AttrError, err.Error()))
		return nil, invalidRequest(err)
	}
	var results []guard.Result
	if !batch && checks[0].req.Op == bucketgate.OpUsage {
		return h.usage(ctx, h.whoseUsage(ctx, v, checks[0], &inv))
	}
	if v.Config == nil {
		unresolved(checks, v.Err)
	}
	if err := h.resolveTenants(ctx, v, checks, batch, &inv); err != nil {
		h.Log.LogAttrs(ctx, slog.LevelWarn, "invalid request", slog.String(telemetry.AttrError, err.Error()))
		return nil, invalidRequest(err)
	}
	if err := repeated(checks); err != nil {
		h.Log.LogAttrs(ctx, slog.LevelWarn, "invalid request", slog.String(telemetry.AttrError, err.Error()))
		return nil, invalidRequest(err)
	}
	ctx = bucket.OneRead(ctx) // a failure to get the secrets is not met again by the ids' checks or the decisions
	err = resolveBearers(ctx, h.Guard, v, checks, batch, &inv)
	if err == nil {
		results, err = h.decide(ctx, checks, batch)
	}
	responses := h.answer(ctx, checks, results, &inv) // the checks decided, though Redis refused another
	if err != nil && batch {
		err = standing(err, results)
	}
	if errors.Is(err, bucketgate.ErrConflict) { // a reservation or requestId refused
		h.Log.LogAttrs(ctx, slog.LevelWarn, "conflict", slog.String(telemetry.AttrError, err.Error()))
		return nil, messages.InvokeResponse_Error{Message: err.Error(), Type: checkapi.ErrorTypeConflict}
	}
	if err != nil { // Redis refused a request that parse accepted: engine and parse disagree
		h.Log.LogAttrs(ctx, slog.LevelError, "engine refused a validated request", slog.String(telemetry.AttrError, err.Error()))
		return nil, invalidRequest(err)
	}
	if !batch {
		return json.Marshal(responses[0])
	}
	return json.Marshal(checkapi.BatchResult{Results: responses})
}

// answer counts, logs and sends the events of every check of checks that results
// decided (a check left undecided has the zero Result), and returns their responses. A
// bearer's id that could not be verified (unsigned), which Redis did not decide, is
// answered as that failure by the failure policy, with no plan, rule or limit: those
// of its claims, which may be forged.
func (h *Handler) answer(ctx context.Context, checks []check, results []guard.Result, inv *telemetry.Invocation) []checkapi.Response {
	responses := make([]checkapi.Response, len(checks))
	var events []eventbus.Event
	for i, c := range checks {
		if i >= len(results) || results[i].Reason == "" {
			continue
		}
		r := results[i]
		if c.unsigned != nil && r.Failure != guard.FailureNone { // nothing the unverified claims led to
			q := c.req
			q.Rules, c.plan = nil, ""
			r = h.Guard.Fallback(q, guard.Classify(c.unsigned), c.unsigned)
		}
		inv.Observe(r)
		attrs := []slog.Attr{slog.String(telemetry.AttrIdentity, c.logged), slog.String(telemetry.AttrPlan, c.plan),
			slog.Int64(telemetry.AttrCost, c.req.Cost), slog.String(telemetry.AttrOp, c.req.Op.String())}
		telemetry.LogDecision(ctx, h.Log, r, attrs...)
		if c.explicit || c.req.Op == bucketgate.OpReset { // an operator's doing: kept at info
			h.Log.LogAttrs(ctx, slog.LevelInfo, MsgOperation, append(attrs, slog.String(telemetry.AttrReason, string(r.Reason)))...)
		}
		metricRule := "" // a plan's rule names are the configuration's, few and known
		if c.inline {
			metricRule = telemetry.InlineRule
		}
		telemetry.ObserveShadow(ctx, h.Log, inv, c.req, r, metricRule, attrs...)
		responses[i] = response(c, r)
		if h.Events != nil {
			events = append(events, eventbus.Crossed(r.Decision, eventbus.Who{Identity: c.req.Identity, Account: c.account, Owner: c.owner, Plan: c.plan})...)
		}
	}
	if len(events) > 0 { // only on the invocation that crossed; the decisions stand
		h.Events.Send(ctx, inv, events)
	}
	return responses
}

// standing adds to err, the error of a batch of which Redis refused a check, the checks
// decided all the same (a batch is not atomic): their answers go with the error, and
// what they took or gave back stands.
func standing(err error, results []guard.Result) error {
	var decided []string
	for i, r := range results {
		if r.Reason != "" {
			decided = append(decided, index(fieldChecks, i))
		}
	}
	switch len(decided) {
	case 0:
		return err
	case 1:
		return fmt.Errorf("%w (%s was decided all the same: a batch is not atomic, and what it took or gave back stands)", err, decided[0])
	}
	return fmt.Errorf("%w (%s and %s were decided all the same: a batch is not atomic, and what they took or gave back stands)",
		err, strings.Join(decided[:len(decided)-1], ", "), decided[len(decided)-1])
}

// decide decides checks: one by itself, a batch in one round trip; a check whose
// identity the registry could not look up, by the failure policy. Its error names the
// check the engine refused, in a batch by its index.
func (h *Handler) decide(ctx context.Context, checks []check, batch bool) ([]guard.Result, error) {
	results := make([]guard.Result, len(checks))
	qs := make([]bucketgate.Request, 0, len(checks))
	asked := make([]int, 0, len(checks)) // the index in checks of each request in qs
	for i, c := range checks {
		if c.lookupErr != nil {
			results[i] = h.Guard.Fallback(c.req, registry.FailureOf(c.lookupErr), c.lookupErr)
			continue
		}
		qs, asked = append(qs, c.req), append(asked, i)
	}
	switch {
	case len(qs) == 0:
		return results, nil
	case !batch:
		r, err := h.Guard.Decide(ctx, qs[0])
		results[asked[0]] = r
		return results, err
	}
	rs, err := h.Guard.DecideBatch(ctx, qs)
	if len(rs) == len(qs) {
		for k, i := range asked {
			results[i] = rs[k]
		}
	}
	if be := (*guard.BatchError)(nil); errors.As(err, &be) {
		return results, fmt.Errorf("%s: %w", index(fieldChecks, asked[be.Index]), be.Err)
	}
	return results, err
}

// response is the answer to check c decided as r: for a peek Redis decided, with the
// state of every rule; for a release Redis decided, whether it released.
func response(c check, r guard.Result) checkapi.Response {
	res := checkapi.Response{
		Allowed:      r.Allowed,
		Reason:       r.Reason,
		Limit:        r.Limit,
		Remaining:    r.Remaining,
		RetryAfterMS: r.RetryAfter.Milliseconds(),
		ResetAfterMS: r.ResetAfter.Milliseconds(),
		Rule:         r.Rule,
		Plan:         c.plan,
		Reservation:  r.Reservation,
		Replayed:     r.Replayed,
		Settled:      r.Settled,
		Lease:        r.Lease,
	}
	if c.explicit && c.lookupErr == nil { // the operator's path: whose buckets these are, when the registry said
		res.Identity = c.req.Identity
	}
	if c.req.Op == bucketgate.OpRelease && r.Failure == guard.FailureNone { // else nothing is known of the lease
		res.Released = &r.Released
	}
	if !r.Expires.IsZero() {
		res.ExpiresAt = r.Expires.UTC().Format("2006-01-02T15:04:05.000Z07:00")
	}
	if len(r.Rules) != len(c.req.Rules) {
		return res
	}
	res.Rules = make([]checkapi.RuleStatus, len(r.Rules))
	for i, rule := range c.req.Rules {
		st := r.Rules[i]
		res.Rules[i] = checkapi.RuleStatus{Name: rule.Name, Period: rule.Period, Limit: rule.Max(), Remaining: st.Remaining,
			ResetAfterMS: st.ResetAfter.Milliseconds(), Shadow: rule.Shadow, Concurrency: rule.IsConcurrency()}
		if rule.IsQuota() { // the window ends on a whole second; the wait was rounded up to the millisecond
			res.Rules[i].WindowEnd = r.At.Add(st.ResetAfter).Truncate(time.Second).UTC().Format(time.RFC3339)
		}
	}
	return res
}

// invalidRequest is the function error of an invalid request: the Lambda runtime
// reports its Message as errorMessage and its Type as errorType.
func invalidRequest(err error) error {
	return messages.InvokeResponse_Error{Message: err.Error(), Type: checkapi.ErrorTypeInvalidRequest}
}

func (h *Handler) emit(ctx context.Context, inv *telemetry.Invocation) {
	if err := h.Metrics.Emit(h.Now(), inv); err != nil {
		h.Log.LogAttrs(ctx, slog.LevelWarn, "metrics not written", slog.String(telemetry.AttrError, err.Error()))
	}
}
