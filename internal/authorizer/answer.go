package authorizer

import (
	"cmp"
	"slices"
	"time"

	"github.com/bucketgate/bucketgate/internal/jsonout"
	"github.com/bucketgate/bucketgate/ratelimitheaders"
)

// IAM policy parts of a REST (and HTTP API payload 1.0) authorizer answer.
const (
	policyVersion = "2012-10-17"
	invokeAction  = "execute-api:Invoke"
	effectAllow   = "Allow"
	effectDeny    = "Deny"
)

// answerSize is room enough for a usual answer, so that writing it allocates once.
const answerSize = 1024

// appendAnswer appends the answer to ev as JSON: aws-lambda-go's
// APIGatewayCustomAuthorizerResponse (REST), APIGatewayV2CustomAuthorizerIAMPolicyResponse
// (HTTP API payload 1.0) or APIGatewayV2CustomAuthorizerSimpleResponse (payload 2.0), as
// encoding/json would write them, with the authorizer context of o.
func (h *Handler) appendAnswer(b []byte, ev event, o Outcome) []byte {
	allowed := o.Result.Allowed
	if ev.kind == kindHTTPV2 {
		b = append(jsonout.Bool(append(b, `{"isAuthorized":`...), allowed), `,"context":`...)
		return append(h.appendContext(b, o), '}')
	}
	effect := effectDeny
	if allowed {
		effect = effectAllow
	}
	b = jsonout.String(append(b, `{"principalId":`...), o.Identity.String())
	b = append(b, `,"policyDocument":{"Version":`...)
	b = jsonout.String(b, policyVersion)
	b = jsonout.String(append(b, `,"Statement":[{"Action":[`...), invokeAction)
	b = jsonout.String(append(b, `],"Effect":`...), effect)
	b = jsonout.String(append(b, `,"Resource":[`...), ev.arn)
	b = append(b, `]}]},"context":`...)
	return append(h.appendContext(b, o), '}')
}

// contextField is one member of the authorizer context: a number, or a string when
// isStr.
type contextField struct {
	key   string
	n     int64
	str   string
	isStr bool
}

// contextFields are the authorizer context of o: the rate-limit figures that the
// gateway responses and the headers read (ratelimitheaders names them), in the order of
// their names, as encoding/json writes a map. buf holds the reset time's text.
func (h *Handler) contextFields(o Outcome, buf []byte) [10]contextField {
	d := o.Result.Decision
	at := d.At
	if at.IsZero() { // Redis did not decide (degraded): the local clock is all there is
		at = h.Now()
	}
	reset := ceilUnix(at.Add(d.ResetAfter))
	fields := [...]contextField{
		{key: ratelimitheaders.KeyLimit, n: d.Limit},
		{key: ratelimitheaders.KeyRemaining, n: d.Remaining},
		{key: ratelimitheaders.KeyRetryAfter, n: ceilSeconds(d.RetryAfter)},
		{key: ratelimitheaders.KeyReset, n: reset},
		{key: ratelimitheaders.KeyResetAt, str: string(time.Unix(reset, 0).UTC().AppendFormat(buf[:0], time.RFC3339)), isStr: true},
		{key: ratelimitheaders.KeyRule, str: d.Rule, isStr: true},
		{key: ratelimitheaders.KeyPlan, str: o.Limits.Plan, isStr: true},
		{key: ratelimitheaders.KeyReason, str: string(d.Reason), isStr: true},
		{key: ratelimitheaders.KeyRateLimit, str: rateLimit(o.Result), isStr: true},
		{key: ratelimitheaders.KeyRateLimitPolicy, str: rateLimitPolicy(o.Limits.Rules), isStr: true},
	}
	slices.SortFunc(fields[:], func(x, y contextField) int { return cmp.Compare(x.key, y.key) })
	return fields
}

// appendContext appends the authorizer context of o (see contextFields) as JSON.
func (h *Handler) appendContext(b []byte, o Outcome) []byte {
	var resetAt [len(time.RFC3339) + 8]byte
	b = append(b, '{')
	for i, f := range h.contextFields(o, resetAt[:]) {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(jsonout.String(b, f.key), ':')
		if f.isStr {
			b = jsonout.String(b, f.str)
		} else {
			b = jsonout.Int(b, f.n)
		}
	}
	return append(b, '}')
}

// Context returns the authorizer context of o as API Gateway hands it on (numbers as
// int64): what the gateway responses and ratelimitheaders read.
func (h *Handler) Context(o Outcome) map[string]any {
	var resetAt [len(time.RFC3339) + 8]byte
	fields := h.contextFields(o, resetAt[:])
	m := make(map[string]any, len(fields))
	for _, f := range fields {
		if f.isStr {
			m[f.key] = f.str
		} else {
			m[f.key] = f.n
		}
	}
	return m
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
