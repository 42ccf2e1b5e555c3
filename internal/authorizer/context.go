package authorizer

import (
	"time"

	"github.com/bucketgate/bucketgate/ratelimitheaders"
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
		ratelimitheaders.KeyLimit:           d.Limit,
		ratelimitheaders.KeyRemaining:       d.Remaining,
		ratelimitheaders.KeyRetryAfter:      ceilSeconds(d.RetryAfter),
		ratelimitheaders.KeyReset:           reset,
		ratelimitheaders.KeyResetAt:         time.Unix(reset, 0).UTC().Format(time.RFC3339),
		ratelimitheaders.KeyRule:            d.Rule,
		ratelimitheaders.KeyPlan:            o.limits.Plan,
		ratelimitheaders.KeyReason:          string(d.Reason),
		ratelimitheaders.KeyRateLimit:       rateLimit(o.result),
		ratelimitheaders.KeyRateLimitPolicy: rateLimitPolicy(o.limits.Rules),
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
