package authorizer

import (
	"cmp"
	"slices"
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/bucketgate/bucketgate"
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

// maxResource is the longest Resource, in characters, that API Gateway takes in an
// authorizer's policy (its developer guide, "Output from an API Gateway Lambda
// authorizer"); a method ARN, which names the request's path, may be up to 1600 bytes.
const maxResource = 512

// policyResource returns the Resource of the policy answering a request for arn: arn,
// or when arn is longer than maxResource bytes (a long request path), its longest
// prefix of whole characters that leaves room for a '*' after it, and the '*': a
// Resource that API Gateway takes and that still matches arn, and the same method on the
// same stage only.
func policyResource(arn string) string {
	if len(arn) <= maxResource {
		return arn
	}
	cut := maxResource - 1
	for cut > 0 && !utf8.RuneStart(arn[cut]) {
		cut--
	}
	return arn[:cut] + "*"
}

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
	b = jsonout.String(append(b, `,"Resource":[`...), policyResource(ev.arn))
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

// contextFields are the authorizer context of o: the rate-limit figures that the
// gateway responses and the headers read (ratelimitheaders names them), and the
// reservation a backend settles and the lease it releases (each empty when the request
// holds none), always present so that a template's mapping of them always has a value;
// in the order of their names, as encoding/json writes a map. buf holds the reset
// time's text.
func (h *Handler) contextFields(o Outcome, buf []byte) [14]contextField {
	res := o.Result
	res.ResetAfter = resetAfter(o)
	d := res.Decision
	at := d.At
	if at.IsZero() { // Redis did not decide (degraded): the local clock is all there is
		at = h.Now()
	}
	// The figures are whole milliseconds counted from Redis's time: from at's millisecond,
	// they reach a quota's window's end (a whole second) exactly, not up to a millisecond
	// past it, which would round the reset up a second.
	reset := ceilUnix(at.Truncate(time.Millisecond).Add(d.ResetAfter))
	retryAfter := ceilSeconds(d.RetryAfter)
	fields := [...]contextField{
		{key: ratelimitheaders.KeyLimit, n: d.Limit},
		{key: ratelimitheaders.KeyRemaining, n: d.Remaining},
		{key: ratelimitheaders.KeyRetryAfter, n: retryAfter},
		{key: ratelimitheaders.KeyRetryAfterText, n: retryAfter, unit: seconds(retryAfter)},
		{key: ratelimitheaders.KeyReset, n: reset},
		{key: ratelimitheaders.KeyResetAt, str: string(time.Unix(reset, 0).UTC().AppendFormat(buf[:0], time.RFC3339)), isStr: true},
		{key: ratelimitheaders.KeyRule, str: d.Rule, isStr: true},
		{key: ratelimitheaders.KeyPlan, str: o.Limits.Plan, isStr: true},
		{key: ratelimitheaders.KeyReason, str: string(d.Reason), isStr: true},
		{key: ratelimitheaders.KeyDegraded, b: d.Reason == bucketgate.ReasonDegraded, isBool: true},
		{key: ratelimitheaders.KeyRateLimit, str: rateLimit(res), isStr: true},
		{key: ratelimitheaders.KeyRateLimitPolicy, str: rateLimitPolicy(o.Limits.Rules, at), isStr: true},
		{key: ratelimitheaders.KeyReservation, str: d.Reservation, isStr: true},
		{key: ratelimitheaders.KeyLease, str: d.Lease, isStr: true},
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

// Context returns the authorizer context of o as API Gateway hands it on (numbers as
// int64): what the gateway responses and ratelimitheaders read.
func (h *Handler) Context(o Outcome) map[string]any {
	var resetAt [len(time.RFC3339) + 8]byte
	fields := h.contextFields(o, resetAt[:])
	m := make(map[string]any, len(fields))
	for _, f := range fields {
		switch {
		case f.unit != "":
			m[f.key] = strconv.FormatInt(f.n, 10) + f.unit
		case f.isStr:
			m[f.key] = f.str
		case f.isBool:
			m[f.key] = f.b
		default:
			m[f.key] = f.n
		}
	}
	return m
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
