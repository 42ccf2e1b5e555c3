package telemetry

import (
	"cmp"
	"context"
	"io"
	"log/slog"
	"slices"

	"github.com/bucketgate/bucketgate"
	"github.com/bucketgate/bucketgate/internal/guard"
)

// NewLogger returns a logger writing JSON lines to w (in Lambda, stderr: CloudWatch
// Logs keeps them next to the EMF lines on stdout) at level and above.
func NewLogger(w io.Writer, level slog.Leveler) *slog.Logger {
	return slog.New(slog.NewJSONHandler(w, &slog.HandlerOptions{Level: level}))
}

// Log message and attribute keys of a decision line, the same in both functions. The
// identity is the bucket identity with any key as its digest: never a raw key.
const (
	MsgDecision    = "decision"
	AttrIdentity   = "identity"
	AttrPlan       = "plan"
	AttrCost       = "cost"
	AttrOp         = "op"
	AttrAllowed    = "allowed"
	AttrReason     = "reason"
	AttrRule       = "rule"
	AttrLimit      = "limit"
	AttrRemaining  = "remaining"
	AttrRetryAfter = "retryAfterMs"
	AttrLatency    = "redisLatencyMs"
	AttrCacheHit   = "denyCacheHit"
	AttrFailure    = "failure"
	AttrError      = "error"
)

// MsgShadowLimited is the message of the info line for each shadow rule that would
// have denied an allowed request.
const MsgShadowLimited = "shadow rule would have limited"

// LogDecision writes one line for r to l: at debug when Redis allowed it, at info when
// it was limited (so that a log level of info still feeds the top limited identities),
// at warn when Redis did not decide (the failure and its error are in the line). attrs, such as the identity's
// digest form and the plan, are added first; never pass a raw key.
func LogDecision(ctx context.Context, l *slog.Logger, r guard.Result, attrs ...slog.Attr) {
	level := slog.LevelDebug
	switch {
	case r.Failure != guard.FailureNone:
		level = slog.LevelWarn
	case !r.Allowed:
		level = slog.LevelInfo
	}
	if !l.Enabled(ctx, level) {
		return
	}
	all := append(slices.Clip(attrs),
		slog.Bool(AttrAllowed, r.Allowed),
		slog.String(AttrReason, string(r.Reason)),
		slog.String(AttrRule, r.Rule),
		slog.Int64(AttrLimit, r.Limit),
		slog.Int64(AttrRemaining, r.Remaining),
		slog.Int64(AttrRetryAfter, r.RetryAfter.Milliseconds()),
		slog.Float64(AttrLatency, durationToMillis(r.Latency)),
		slog.Bool(AttrCacheHit, r.CacheHit),
	)
	if r.Failure != guard.FailureNone {
		all = append(all, slog.String(AttrFailure, string(r.Failure)))
	}
	if r.Err != nil {
		all = append(all, slog.String(AttrError, r.Err.Error()))
	}
	l.LogAttrs(ctx, level, MsgDecision, all...)
}

// InlineRule is the Rule dimension under which ObserveShadow counts the shadow rules of
// a check function's inline rules: their names are the caller's, so the metric never
// holds them (the log line does), and its dimensions stay few.
const InlineRule = "(inline)"

// ObserveShadow counts in inv, and logs at info in l, every shadow rule of q that would
// have denied it (r.ShadowLimited): the ShadowLimited metric by rule (under metricRule
// instead when it is not empty, such as InlineRule), and one line per rule with attrs
// first (the identity's digest form and the plan; never a raw key), then the rule and
// its limit (a bucket's capacity, a quota's limit). A decision Replayed (a retry of an
// idempotent request) was counted and logged when Redis first made it: it is neither
// again, as it crosses nothing again.
func ObserveShadow(ctx context.Context, l *slog.Logger, inv *Invocation, q bucketgate.Request, r guard.Result, metricRule string, attrs ...slog.Attr) {
	if r.ShadowLimited == 0 || r.Replayed {
		return
	}
	for i, rule := range q.Rules {
		if !r.ShadowLimited.Has(i) {
			continue
		}
		inv.ObserveShadowLimited(cmp.Or(metricRule, rule.Name))
		if l.Enabled(ctx, slog.LevelInfo) {
			l.LogAttrs(ctx, slog.LevelInfo, MsgShadowLimited, append(slices.Clip(attrs),
				slog.String(AttrRule, rule.Name), slog.Int64(AttrLimit, rule.Max()))...)
		}
	}
}
