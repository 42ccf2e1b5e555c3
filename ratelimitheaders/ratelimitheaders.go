// Package ratelimitheaders puts bucketgate's rate-limit headers on the responses of a
// backend behind API Gateway. An authorizer cannot add headers to a call it allows, so
// bucketgate's authorizer puts the decision in the authorizer context, and API Gateway
// hands that context to the integration: a Lambda proxy backend reads it from
// requestContext.authorizer and, with this package, sets the headers in one call.
//
//	resp := events.APIGatewayProxyResponse{StatusCode: 200, Body: body}
//	ratelimitheaders.SetProxyResponse(&resp, &req)
//
// The headers are the IETF draft's RateLimit and RateLimit-Policy
// (draft-ietf-httpapi-ratelimit-headers) and the widespread X-RateLimit-Limit,
// X-RateLimit-Remaining and X-RateLimit-Reset, the same on an allowed answer as on the
// 429 of a denied one (which also has Retry-After). The Key constants are the context's
// keys: this package is the contract between the authorizer and a backend.
package ratelimitheaders

import (
	"encoding/json"
	"math"
	"net/http"
	"strconv"
	"strings"

	"github.com/aws/aws-lambda-go/events"
)

// Keys of the authorizer context. Every answer that decided something (allowed,
// limited, or degraded when the limiter fails open) carries all of them, as strings or
// numbers; API Gateway passes them to the integration as $context.authorizer.<key> (in
// the event: requestContext.authorizer, or requestContext.authorizer.lambda for HTTP
// APIs), REST APIs as strings.
const (
	// KeyLimit: the binding rule's capacity, in tokens (number).
	KeyLimit = "limit"
	// KeyRemaining: whole tokens left in the tightest rule after the decision (number).
	KeyRemaining = "remaining"
	// KeyRetryAfter: seconds until the request could succeed, rounded up; 0 when
	// allowed (number). The Retry-After header value.
	KeyRetryAfter = "retryAfter"
	// KeyRetryAfterText: KeyRetryAfter in words for a message, such as the 429's body:
	// "1 second", "2 seconds" ("0 seconds" when allowed) (string).
	KeyRetryAfterText = "retryAfterText"
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

// Header names, as API Gateway and the local gateway send them.
const (
	// HeaderRateLimit is the binding rule's remaining tokens and window (KeyRateLimit).
	HeaderRateLimit = "RateLimit"
	// HeaderRateLimitPolicy is every rule's quota and window (KeyRateLimitPolicy).
	HeaderRateLimitPolicy = "RateLimit-Policy"
	// HeaderLimit is the binding rule's capacity (KeyLimit).
	HeaderLimit = "X-RateLimit-Limit"
	// HeaderRemaining is the tokens left in the tightest rule (KeyRemaining).
	HeaderRemaining = "X-RateLimit-Remaining"
	// HeaderReset is when every rule is full again, in Unix seconds (KeyReset).
	HeaderReset = "X-RateLimit-Reset"
	// HeaderRetryAfter is the seconds to wait before a retry will be accepted
	// (KeyRetryAfter), on a denial only.
	HeaderRetryAfter = "Retry-After"
)

// Headers returns the rate-limit headers that authorizer, an authorizer context as
// API Gateway passes it (values as strings or numbers), describes: RateLimit,
// RateLimit-Policy, X-RateLimit-Limit, X-RateLimit-Remaining and X-RateLimit-Reset, and
// Retry-After when the request was denied. It returns nil when the context holds no
// decision of bucketgate's: another authorizer's context, or a degraded one (the
// limiter failed open and decided nothing). A value that is not what its key holds
// (a number that is not a whole number >= 0, a string with control characters) leaves
// its header out.
func Headers(authorizer map[string]any) map[string]string {
	limit, ok := text(authorizer[KeyRateLimit])
	if !ok || limit == "" {
		return nil
	}
	h := map[string]string{HeaderRateLimit: limit}
	if v, ok := text(authorizer[KeyRateLimitPolicy]); ok && v != "" {
		h[HeaderRateLimitPolicy] = v
	}
	for header, key := range map[string]string{HeaderLimit: KeyLimit, HeaderRemaining: KeyRemaining, HeaderReset: KeyReset} {
		if v, ok := whole(authorizer[key]); ok {
			h[header] = v
		}
	}
	if v, ok := whole(authorizer[KeyRetryAfter]); ok && v != "0" {
		h[HeaderRetryAfter] = v
	}
	return h
}

// SetProxyResponse sets the rate-limit headers that req's authorizer context describes
// (see Headers) on resp, a Lambda proxy response in payload format 1.0: a REST API's,
// or an HTTP API's with payload 1.0. Each replaces any header of the same name, in any
// case, in Headers and MultiValueHeaders. Without a decision in the context it does
// nothing.
func SetProxyResponse(resp *events.APIGatewayProxyResponse, req *events.APIGatewayProxyRequest) {
	authorizer := req.RequestContext.Authorizer
	if lambda, ok := authorizer["lambda"].(map[string]any); ok { // HTTP APIs nest it
		authorizer = lambda
	}
	resp.Headers = set(resp.Headers, resp.MultiValueHeaders, Headers(authorizer))
}

// SetV2HTTPResponse sets the rate-limit headers that req's Lambda authorizer context
// describes (see Headers) on resp, an HTTP API's Lambda proxy response in payload
// format 2.0. Each replaces any header of the same name, in any case. Without a Lambda
// authorizer's decision in the context it does nothing.
func SetV2HTTPResponse(resp *events.APIGatewayV2HTTPResponse, req *events.APIGatewayV2HTTPRequest) {
	if req.RequestContext.Authorizer == nil {
		return
	}
	resp.Headers = set(resp.Headers, resp.MultiValueHeaders, Headers(req.RequestContext.Authorizer.Lambda))
}

// SetHeader sets the rate-limit headers that an authorizer context describes (see
// Headers) on h, for a backend that serves HTTP itself. Each replaces any header of the
// same name in any case, and is spelled as the Header constants are, as API Gateway
// sends it.
func SetHeader(h http.Header, authorizer map[string]any) {
	for name, v := range Headers(authorizer) {
		deleteFold(h, name)
		h[name] = []string{v}
	}
}

// set sets the headers h in a response's headers and returns them, made when nil; each
// replaces any header of the same name, in any case, there and in multi.
func set(headers map[string]string, multi map[string][]string, h map[string]string) map[string]string {
	if len(h) == 0 {
		return headers
	}
	if headers == nil {
		headers = make(map[string]string, len(h))
	}
	for name, v := range h {
		deleteFold(headers, name)
		deleteFold(multi, name)
		headers[name] = v
	}
	return headers
}

// deleteFold deletes every key of m equal to name in any case.
func deleteFold[V any](m map[string]V, name string) {
	for k := range m {
		if strings.EqualFold(k, name) {
			delete(m, k)
		}
	}
}

// text returns v when it is a string fit for a header value: no control characters.
func text(v any) (string, bool) {
	s, ok := v.(string)
	if !ok {
		return "", false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < ' ' || s[i] == 0x7f {
			return "", false
		}
	}
	return s, true
}

// whole returns v in decimal when it is a whole number >= 0: a JSON number as it
// decodes (float64 or json.Number), a Go integer, or the string of one (REST APIs pass
// the context as strings).
func whole(v any) (string, bool) {
	switch v := v.(type) {
	case float64:
		if v >= 0 && v < math.MaxInt64 && v == math.Trunc(v) { // float64(MaxInt64) is 2^63: past the end
			return strconv.FormatInt(int64(v), 10), true
		}
	case int64:
		if v >= 0 {
			return strconv.FormatInt(v, 10), true
		}
	case int:
		if v >= 0 {
			return strconv.Itoa(v), true
		}
	case json.Number:
		return whole(string(v))
	case string:
		if n, err := strconv.ParseUint(v, 10, 63); err == nil {
			return strconv.FormatUint(n, 10), true
		}
	}
	return "", false
}
