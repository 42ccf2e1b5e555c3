package telemetry

import (
	"context"
	"io"
	"log/slog"
	"slices"

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

// LogDecision writes one line for r to l: at debug when Redis decided, at warn when it
// did not (the failure and its error are in the line). attrs, such as the identity's
// digest form and the plan, are added first; never pass a raw key.
func LogDecision(ctx context.Context, l *slog.Logger, r guard.Result, attrs ...slog.Attr) {
	level := slog.LevelDebug
	if r.Failure != guard.FailureNone {
		level = slog.LevelWarn
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
