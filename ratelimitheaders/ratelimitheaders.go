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
// 429 of a denied one (which also has Retry-After), and X-RateLimit-Degraded: true when
// the limiter failed open and decided nothing. Whenever the context holds bucketgate's
// decision, every header of those names (any X-RateLimit-* too) that the response
// already had is replaced or removed, so that what a client or backend wrote never
// passes for the limiter's. The Key constants are the context's keys: this package is
// the contract between the authorizer and a backend.
package ratelimitheaders

import (
	"encoding/json"
	"math"
	"net/http"
	"strconv"

	"github.com/aws/aws-lambda-go/events"
)

// Keys of the authorizer context. Every answer that decided something (allowed,
// limited, or degraded when the limiter fails open) carries all of them, as strings or
// numbers; API Gateway passes them to the integration as $context.authorizer.<key> (in
// the event: requestContext.authorizer, or requestContext.authorizer.lambda for HTTP
// APIs), REST APIs as strings.
const (
	// KeyLimit holds the binding rule's capacity, in tokens, or a concurrency rule's most
	// requests in flight (number).
	KeyLimit = "limit"
	// KeyRemaining holds the whole tokens left in the tightest rule after the decision,
	// or a concurrency rule's leases left (number).
	KeyRemaining = "remaining"
	// KeyRetryAfter holds the seconds until the request could succeed, rounded up; 0
	// when allowed (number). The Retry-After header value.
	KeyRetryAfter = "retryAfter"
	// KeyRetryAfterText holds KeyRetryAfter in words for a message, such as the 429's
	// body: "1 second", "2 seconds" ("0 seconds" when allowed) (string).
	KeyRetryAfterText = "retryAfterText"
	// KeyReset holds when the binding rule (KeyRule) is full again, in Unix seconds
	// rounded up, from the Redis clock (number): a quota's window's end, a bucket's
	// time until full (told from its whole tokens when it holds the request's cost:
	// later by less than one token's refill), a concurrency rule's lease's expiry. Not
	// when every rule is: beside a monthly quota, a daily quota's 429 and admissions
	// reset at midnight.
	KeyReset = "reset"
	// KeyResetAt holds the same instant as KeyReset in RFC 3339, UTC, such as
	// "2025-12-11T16:15:25Z" (string): the resetAt of the 429 body.
	KeyResetAt = "resetAt"
	// KeyRule holds the binding rule's name (string).
	KeyRule = "rule"
	// KeyPlan holds the name of the plan decided against (string).
	KeyPlan = "plan"
	// KeyReason holds ok, limited or degraded (string). Every context of bucketgate's
	// has it.
	KeyReason = "reason"
	// KeyDegraded holds true when the limiter failed open and decided nothing, else
	// false (boolean; REST APIs pass it as the string "true" or "false"). The
	// X-RateLimit-Degraded header value.
	KeyDegraded = "degraded"
	// KeyRateLimit holds the RateLimit header value; empty when degraded (string).
	KeyRateLimit = "rateLimit"
	// KeyRateLimitPolicy holds the RateLimit-Policy header value (string).
	KeyRateLimitPolicy = "rateLimitPolicy"
	// KeyReservation holds the id of the reservation the request holds, on a route that
	// reserves an estimate (the configuration's reserve), for the backend to settle at
	// the actual cost; empty when it holds none (string). The HeaderReservation request
	// header value.
	KeyReservation = "reservation"
	// KeyLease holds the id of the lease the request holds, on a route with a
	// concurrency rule, for the backend to release; empty when it holds none (string).
	// The HeaderLease request header value.
	KeyLease = "lease"
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
	// HeaderReset is when the binding rule is full again, in Unix seconds (KeyReset).
	HeaderReset = "X-RateLimit-Reset"
	// HeaderRetryAfter is the seconds to wait before a retry will be accepted
	// (KeyRetryAfter), on a denial only.
	HeaderRetryAfter = "Retry-After"
	// HeaderDegraded is "true" on an answer the limiter allowed without deciding, as
	// it fails open (KeyDegraded); absent otherwise.
	HeaderDegraded = "X-RateLimit-Degraded"
	// HeaderReservation is the request header that carries the request's reservation
	// id (KeyReservation) to the backend: the templates map it from the authorizer
	// context, the middleware sets it. Reservation reads it.
	HeaderReservation = "X-RateLimit-Reservation"
	// HeaderLease is the request header that carries the request's lease id (KeyLease)
	// to the backend, as HeaderReservation does its reservation.
	HeaderLease = "X-RateLimit-Lease"
)

// ExposeHeaders is the value of the CORS header Access-Control-Expose-Headers that
// lets a browser's script read every rate-limit header of an answer: a browser hides
// the ones a cross-origin response does not name there, Retry-After included. A CORS
// handler in front of the limiter, or API Gateway's CORS configuration and gateway
// responses, set it on every answer, the limiter's 429 and 503 as well as the
// backend's.
const ExposeHeaders = HeaderRateLimit + ", " + HeaderRateLimitPolicy + ", " + HeaderLimit + ", " +
	HeaderRemaining + ", " + HeaderReset + ", " + HeaderRetryAfter + ", " + HeaderDegraded

// prefixXRateLimit starts the name of every X-RateLimit-* header: all are the limiter's.
const prefixXRateLimit = "X-RateLimit-"

// Owned reports whether a header called name (any case, '_' for '-': see SameName) is
// one the limiter's answer owns: RateLimit, RateLimit-Policy and every X-RateLimit-*.
// Setting the headers of a decision replaces or removes them all.
func Owned(name string) bool {
	return SameName(name, HeaderRateLimit) || SameName(name, HeaderRateLimitPolicy) ||
		len(name) >= len(prefixXRateLimit) && SameName(name[:len(prefixXRateLimit)], prefixXRateLimit)
}

// SameName reports whether the header names a and b are one header to a backend: equal
// in any letter case, with '_' and '-' alike. CGI, WSGI and Rack (and Go's net/http/cgi)
// hand a backend X_API_Key and X-API-Key as the one variable HTTP_X_API_KEY, so a
// client's X_RateLimit_Lease passes there for the limiter's X-RateLimit-Lease.
func SameName(a, b string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := 0; i < len(a); i++ {
		if fold(a[i]) != fold(b[i]) {
			return false
		}
	}
	return true
}

// fold returns c in upper case, and '_' as '-': the byte a backend reads c as in a
// header name.
func fold(c byte) byte {
	switch {
	case 'a' <= c && c <= 'z':
		return c - 'a' + 'A'
	case c == '_':
		return '-'
	}
	return c
}

// Headers returns the rate-limit headers that authorizer, an authorizer context as
// API Gateway passes it (values as strings, numbers or booleans), describes: RateLimit,
// RateLimit-Policy, X-RateLimit-Limit, X-RateLimit-Remaining and X-RateLimit-Reset, and
// Retry-After when the request was denied. A decision with no figures has fewer: a
// degraded one (the limiter failed open and decided nothing) X-RateLimit-Degraded and
// RateLimit-Policy; one whose rules are all shadow none at all. It returns nil when the
// context holds no decision of bucketgate's (neither KeyReason nor KeyRateLimit):
// another authorizer's. A
// value that is not what its key holds (a number that is not a whole number >= 0, a
// string with control characters) leaves its header out.
func Headers(authorizer map[string]any) map[string]string {
	if !decided(authorizer) {
		return nil
	}
	h := map[string]string{}
	if v, ok := text(authorizer[KeyRateLimitPolicy]); ok && v != "" {
		h[HeaderRateLimitPolicy] = v
	}
	if degraded(authorizer) {
		h[HeaderDegraded] = "true"
	}
	limit, ok := text(authorizer[KeyRateLimit])
	if !ok || limit == "" { // no figures: degraded, or every rule shadow
		return h
	}
	h[HeaderRateLimit] = limit
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
// or an HTTP API's with payload 1.0. With a decision of bucketgate's in the context,
// every header the limiter owns (see Owned) is removed first from Headers and
// MultiValueHeaders, in any case; without one it does nothing.
func SetProxyResponse(resp *events.APIGatewayProxyResponse, req *events.APIGatewayProxyRequest) {
	authorizer := req.RequestContext.Authorizer
	if lambda, ok := authorizer["lambda"].(map[string]any); ok { // HTTP APIs nest it
		authorizer = lambda
	}
	resp.Headers = set(resp.Headers, resp.MultiValueHeaders, authorizer)
}

// SetV2HTTPResponse sets the rate-limit headers that req's Lambda authorizer context
// describes (see Headers) on resp, an HTTP API's Lambda proxy response in payload
// format 2.0, as SetProxyResponse does. Without a Lambda authorizer's decision in the
// context it does nothing.
func SetV2HTTPResponse(resp *events.APIGatewayV2HTTPResponse, req *events.APIGatewayV2HTTPRequest) {
	if req.RequestContext.Authorizer == nil {
		return
	}
	resp.Headers = set(resp.Headers, resp.MultiValueHeaders, req.RequestContext.Authorizer.Lambda)
}

// SetHeader sets the rate-limit headers that an authorizer context describes (see
// Headers) on h, for a backend that serves HTTP itself (or a gateway toward one).
// With a decision of bucketgate's in the context, every header the limiter owns (see
// Owned) is removed first, in any case; the ones set are spelled as the Header
// constants are, as API Gateway sends them. Without one it does nothing. h is written to,
// as http.Header.Set writes: it must not be nil (a request built by hand may have none:
// give it one first).
func SetHeader(h http.Header, authorizer map[string]any) {
	if !decided(authorizer) {
		return
	}
	deleteOwned(h)
	for name, v := range Headers(authorizer) {
		h[name] = []string{v}
	}
}

// set sets the headers authorizer describes in a response's headers and returns them,
// made when needed, after removing every header the limiter owns there and in multi.
func set(headers map[string]string, multi map[string][]string, authorizer map[string]any) map[string]string {
	if !decided(authorizer) {
		return headers
	}
	deleteOwned(headers)
	deleteOwned(multi)
	h := Headers(authorizer)
	if headers == nil && len(h) > 0 {
		headers = make(map[string]string, len(h))
	}
	for name, v := range h {
		headers[name] = v
	}
	return headers
}

// deleteOwned deletes every key of m that names a header the limiter owns.
func deleteOwned[V any](m map[string]V) {
	for k := range m {
		if Owned(k) {
			delete(m, k)
		}
	}
}

// decided reports whether authorizer, an authorizer context, holds a decision of
// bucketgate's: it has KeyReason or KeyRateLimit.
func decided(authorizer map[string]any) bool {
	_, reason := text(authorizer[KeyReason])
	_, limit := text(authorizer[KeyRateLimit])
	return reason || limit
}

// degraded reports whether authorizer is a degraded decision: KeyDegraded true (a
// boolean, or the string REST APIs make of it), or, from an authorizer older than the
// key, KeyReason degraded.
func degraded(authorizer map[string]any) bool {
	switch v := authorizer[KeyDegraded].(type) {
	case bool:
		return v
	case string:
		return v == "true"
	}
	return authorizer[KeyReason] == "degraded"
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
