package authorizer

import (
	"time"
)

// Keys of the authorizer context: every allowed, limited or degraded answer carries all
// of them, as strings or numbers only. The integration reads them as
// $context.authorizer.<key>; the REST API's gateway responses map them into the 429.
const (
	// KeyLimit: the binding rule's capacity, in tokens (number).
	KeyLimit = "limit"
	// KeyRemaining: whole tokens left in the tightest rule after the decision (number).
	KeyRemaining = "remaining"
	// KeyRetryAfter: seconds until the request could succeed, rounded up; 0 when
	// allowed (number). The Retry-After header value.
	KeyRetryAfter = "retryAfter"
	// KeyReset: when every rule is full again, in Unix seconds rounded up, from the
	// Redis clock (number).
	KeyReset = "reset"
	// KeyResetAt: the same instant as KeyReset in RFC 3339, UTC, such as
	// "2025-12-11T16:15:25Z" (string): the resetAt of the 429 body.
	KeyResetAt = "resetAt"
	// KeyRule: the binding rule's name (string).
	KeyRule = "rule"
	// KeyPlan: the plan decided against (string).
	KeyPlan = "plan"
	// KeyReason: ok, limited or degraded (string).
	KeyReason = "reason"
	// KeyRateLimit: the RateLimit header value; empty when degraded (string).
	KeyRateLimit = "rateLimit"
	// KeyRateLimitPolicy: the RateLimit-Policy header value (string).
	KeyRateLimitPolicy = "rateLimitPolicy"
)

// authContext returns the authorizer context of o.
func (h *Handler) authContext(o outcome) map[string]any {
	d := o.result.Decision
	at := d.At
	if at.IsZero() { // Redis did not decide (degraded): the local clock is all there is
		at = h.Now()
	}
	reset := ceilUnix(at.Add(d.ResetAfter))
	return map[string]any{
		KeyLimit:           d.Limit,
		KeyRemaining:       d.Remaining,
		KeyRetryAfter:      ceilSeconds(d.RetryAfter),
		KeyReset:           reset,
		KeyResetAt:         time.Unix(reset, 0).UTC().Format(time.RFC3339),
		KeyRule:            d.Rule,
		KeyPlan:            o.limits.Plan,
		KeyReason:          string(d.Reason),
		KeyRateLimit:       rateLimit(o.result),
		KeyRateLimitPolicy: rateLimitPolicy(o.limits.Rules),
	}
}

// ceilSeconds returns d in whole seconds, rounded up; 0 for d <= 0.
func ceilSeconds(d time.Duration) int64 {
	if d <= 0 {
		return 0
	}
	return int64((d + time.Second - 1) / time.Second)
}

// ceilUnix returns t in Unix seconds, rounded up.
func ceilUnix(t time.Time) int64 {
	if t.Nanosecond() > 0 {
		return t.Unix() + 1
	}
	return t.Unix()
}
