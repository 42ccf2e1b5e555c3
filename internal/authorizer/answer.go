package authorizer

import (
	"cmp"
	"slices"
	"time"

	"github.com/bucketgate/bucketgate/internal/bucket"
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
func (h *Handler) appendAnswer(b []byte, ev event, o outcome) []byte {
	allowed := o.result.Allowed
	if ev.kind == kindHTTPV2 {
		b = append(jsonout.Bool(append(b, `{"isAuthorized":`...), allowed), `,"context":`...)
		return append(h.appendContext(b, o), '}')
	}
	effect := effectDeny
	if allowed {
		effect = effectAllow
	}
	b = jsonout.String(append(b, `{"principalId":`...), o.id.String())
	b = append(b, `,"policyDocument":{"Version":`...)
	b = jsonout.String(b, policyVersion)
	b = jsonout.String(append(b, `,"Statement":[{"Action":[`...), invokeAction)
	b = jsonout.String(append(b, `],"Effect":`...), effect)
	b = jsonout.String(append(b, `,"Resource":[`...), ev.arn)
	b = append(b, `]}]},"context":`...)
	return append(h.appendContext(b, o), '}')
}

// contextField is one member of the authorizer context: a number, a string when
// isStr, the number followed by unit as a string when unit is set ("1 second"), or a
// boolean when isBool.
type contextField struct {
	key    string
	n      int64
	str    string
	isStr  bool
	unit   string
	b      bool
	isBool bool
}

// appendContext appends the authorizer context of o: the rate-limit figures that the
// gateway responses and the headers read (ratelimitheaders names them), in the order of
// their names, as encoding/json writes a map.
func (h *Handler) appendContext(b []byte, o outcome) []byte {
	d := o.result.Decision
	at := d.At
	if at.IsZero() { // Redis did not decide (degraded): the local clock is all there is
		at = h.Now()
	}
	reset := ceilUnix(at.Add(d.ResetAfter))
	retryAfter := ceilSeconds(d.RetryAfter)
	var resetAt [len(time.RFC3339) + 8]byte
	fields := [...]contextField{
		{key: ratelimitheaders.KeyLimit, n: d.Limit},
		{key: ratelimitheaders.KeyRemaining, n: d.Remaining},
		{key: ratelimitheaders.KeyRetryAfter, n: retryAfter},
		{key: ratelimitheaders.KeyRetryAfterText, n: retryAfter, unit: seconds(retryAfter)},
		{key: ratelimitheaders.KeyReset, n: reset},
		{key: ratelimitheaders.KeyResetAt, str: string(time.Unix(reset, 0).UTC().AppendFormat(resetAt[:0], time.RFC3339)), isStr: true},
		{key: ratelimitheaders.KeyRule, str: d.Rule, isStr: true},
		{key: ratelimitheaders.KeyPlan, str: o.limits.Plan, isStr: true},
		{key: ratelimitheaders.KeyReason, str: string(d.Reason), isStr: true},
		{key: ratelimitheaders.KeyDegraded, b: d.Reason == bucket.ReasonDegraded, isBool: true},
		{key: ratelimitheaders.KeyRateLimit, str: rateLimit(o.result), isStr: true},
		{key: ratelimitheaders.KeyRateLimitPolicy, str: rateLimitPolicy(o.limits.Rules), isStr: true},
	}
	slices.SortFunc(fields[:], func(x, y contextField) int { return cmp.Compare(x.key, y.key) })
	b = append(b, '{')
	for i, f := range fields {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(jsonout.String(b, f.key), ':')
		switch {
		case f.unit != "":
			b = append(append(jsonout.Int(append(b, '"'), f.n), f.unit...), '"')
		case f.isStr:
			b = jsonout.String(b, f.str)
		case f.isBool:
			b = jsonout.Bool(b, f.b)
		default:
			b = jsonout.Int(b, f.n)
		}
	}
	return append(b, '}')
}

// seconds returns the unit that follows n seconds in words: " second" after 1, else
// " seconds".
func seconds(n int64) string {
	if n == 1 {
		return " second"
	}
	return " seconds"
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
