package ratelimitheaders_test

import (
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/aws/aws-lambda-go/events"

	"github.com/bucketgate/bucketgate/internal/testkit/samples"
	"github.com/bucketgate/bucketgate/ratelimitheaders"
)

// allowed is the context of an allowed call as the authorizer sets it (numbers as
// numbers): the free plan's third request.
var allowed = map[string]any{
	ratelimitheaders.KeyLimit: 10.0, ratelimitheaders.KeyRemaining: 7.0, ratelimitheaders.KeyRetryAfter: 0.0,
	ratelimitheaders.KeyReset: 1795324229.0, ratelimitheaders.KeyResetAt: "2026-11-22T05:10:29Z",
	ratelimitheaders.KeyRule: "burst", ratelimitheaders.KeyPlan: "free", ratelimitheaders.KeyReason: "ok",
	ratelimitheaders.KeyRateLimit: `"burst";r=7;t=3`, ratelimitheaders.KeyRateLimitPolicy: `"burst";q=10;w=10`,
}

// allowedHeaders are the headers allowed describes.
var allowedHeaders = map[string]string{
	"RateLimit": `"burst";r=7;t=3`, "RateLimit-Policy": `"burst";q=10;w=10`,
	"X-RateLimit-Limit": "10", "X-RateLimit-Remaining": "7", "X-RateLimit-Reset": "1795324229",
}

// stringified returns ctx as a REST API passes it to the integration: every value a
// string.
func stringified(ctx map[string]any) map[string]any {
	out := map[string]any{}
	for k, v := range ctx {
		if f, ok := v.(float64); ok {
			v = fmt.Sprint(int64(f))
		}
		out[k] = v
	}
	return out
}

// readEvent decodes aws-lambda-go's sample event called name into v.
func readEvent(t *testing.T, name string, v any) {
	t.Helper()
	if err := json.Unmarshal(samples.ReadLambdaEvent(t, name), v); err != nil {
		t.Fatal(err)
	}
}

// A REST API's Lambda proxy event (aws-lambda-go's apigw-request.json) with the
// authorizer's context added, as API Gateway adds it beside the principal id, in
// strings: the response gets the headers, replacing a backend's own of the same name in
// any case, in Headers and in MultiValueHeaders.
func TestSetProxyResponse(t *testing.T) {
	var req events.APIGatewayProxyRequest
	readEvent(t, "apigw-request.json", &req)
	if len(req.RequestContext.Authorizer) == 0 {
		t.Fatal("the sample has no authorizer context to add to: is it the right file?")
	}
	maps.Copy(req.RequestContext.Authorizer, stringified(allowed))
	resp := events.APIGatewayProxyResponse{
		StatusCode:        200,
		Headers:           map[string]string{"Content-Type": "application/json", "x-ratelimit-limit": "999"},
		MultiValueHeaders: map[string][]string{"X-RATELIMIT-REMAINING": {"1", "2"}, "Set-Cookie": {"a=1"}},
	}
	ratelimitheaders.SetProxyResponse(&resp, &req)
	want := maps.Clone(allowedHeaders)
	want["Content-Type"] = "application/json"
	if !maps.Equal(resp.Headers, want) {
		t.Errorf("headers %v, want %v", resp.Headers, want)
	}
	if len(resp.MultiValueHeaders) != 1 || resp.MultiValueHeaders["Set-Cookie"][0] != "a=1" {
		t.Errorf("multi-value headers %v: want only Set-Cookie left", resp.MultiValueHeaders)
	}
}

// An HTTP API's Lambda proxy event in payload 2.0 (aws-lambda-go's
// apigw-v2-request-lambda-authorizer.json) with the context added under
// requestContext.authorizer.lambda, numbers as numbers; and payload 1.0 of an HTTP API,
// where the context is nested the same way.
func TestSetV2HTTPResponse(t *testing.T) {
	var req events.APIGatewayV2HTTPRequest
	readEvent(t, "apigw-v2-request-lambda-authorizer.json", &req)
	if req.RequestContext.Authorizer == nil || req.RequestContext.Authorizer.Lambda == nil {
		t.Fatal("the sample has no Lambda authorizer context to add to: is it the right file?")
	}
	maps.Copy(req.RequestContext.Authorizer.Lambda, allowed)
	var resp events.APIGatewayV2HTTPResponse // no headers yet
	ratelimitheaders.SetV2HTTPResponse(&resp, &req)
	if !maps.Equal(resp.Headers, allowedHeaders) {
		t.Errorf("headers %v, want %v", resp.Headers, allowedHeaders)
	}

	var v1 events.APIGatewayProxyRequest
	readEvent(t, "apigw-request.json", &v1)
	v1.RequestContext.Authorizer = map[string]any{"lambda": maps.Clone(allowed)}
	var resp1 events.APIGatewayProxyResponse
	ratelimitheaders.SetProxyResponse(&resp1, &v1)
	if !maps.Equal(resp1.Headers, allowedHeaders) {
		t.Errorf("payload 1.0 of an HTTP API: headers %v, want %v", resp1.Headers, allowedHeaders)
	}
}

// Events without bucketgate's decision leave the response as it is: no authorizer, an
// IAM or JWT authorizer, another Lambda authorizer's context.
func TestNoDecisionNoHeaders(t *testing.T) {
	for _, name := range []string{"apigw-v2-request-no-authorizer.json", "apigw-v2-request-iam.json", "apigw-v2-request-jwt-authorizer.json", "apigw-v2-request-lambda-authorizer.json"} {
		var req events.APIGatewayV2HTTPRequest
		readEvent(t, name, &req)
		resp := events.APIGatewayV2HTTPResponse{Headers: map[string]string{"Content-Type": "text/plain"}}
		ratelimitheaders.SetV2HTTPResponse(&resp, &req)
		if len(resp.Headers) != 1 {
			t.Errorf("%s: headers %v, want the backend's only", name, resp.Headers)
		}
	}
}

// A decision with no figures still owns the rate-limit headers: the backend's own
// (RateLimit, RateLimit-Policy, any X-RateLimit-*, in any case, single or multi-value)
// are removed, with '_' for '-' too (a CGI, WSGI or Rack backend reads X_RateLimit_Remaining
// as X-RateLimit-Remaining), and a degraded one says so with X-RateLimit-Degraded: true beside its
// policy; one whose rules are all shadow sets none.
func TestDecisionWithoutFigures(t *testing.T) {
	degraded := maps.Clone(allowed)
	degraded[ratelimitheaders.KeyRateLimit], degraded[ratelimitheaders.KeyReason], degraded[ratelimitheaders.KeyDegraded] = "", "degraded", true
	shadow := maps.Clone(allowed)
	shadow[ratelimitheaders.KeyRateLimit], shadow[ratelimitheaders.KeyRateLimitPolicy], shadow[ratelimitheaders.KeyRule] = "", "", ""
	backend := func() (map[string]string, map[string][]string) {
		return map[string]string{"Content-Type": "text/plain", "x-ratelimit-remaining": "999", "RateLimit": "mine", "X-RateLimit-Tier": "gold"},
			map[string][]string{"ratelimit-policy": {"a", "b"}, "X-RateLimit-Degraded": {"no"}}
	}
	tests := []struct {
		name string
		ctx  map[string]any
		want map[string]string
	}{
		{"degraded", degraded, map[string]string{"Content-Type": "text/plain", "X-RateLimit-Degraded": "true", "RateLimit-Policy": `"burst";q=10;w=10`}},
		{"degraded, as strings", stringified(degraded), map[string]string{"Content-Type": "text/plain", "X-RateLimit-Degraded": "true", "RateLimit-Policy": `"burst";q=10;w=10`}},
		{"every rule shadow", shadow, map[string]string{"Content-Type": "text/plain"}},
	}
	for _, tc := range tests {
		var req events.APIGatewayProxyRequest
		readEvent(t, "apigw-request.json", &req) // its own authorizer's principalId, clientId, clientName
		maps.Copy(req.RequestContext.Authorizer, tc.ctx)
		resp := events.APIGatewayProxyResponse{}
		resp.Headers, resp.MultiValueHeaders = backend()
		ratelimitheaders.SetProxyResponse(&resp, &req)
		if !maps.Equal(resp.Headers, tc.want) || len(resp.MultiValueHeaders) != 0 {
			t.Errorf("%s: headers %v %v, want %v", tc.name, resp.Headers, resp.MultiValueHeaders, tc.want)
		}
		h := http.Header{"Content-Type": {"text/plain"}, "Ratelimit": {"forged"}, "X-Ratelimit-Remaining": {"999"}, "X-Ratelimit-Anything": {"x"},
			"X_RateLimit_Remaining": {"999"}, "Ratelimit_Policy": {"forged"}, "x-ratelimit_degraded": {"false"}}
		ratelimitheaders.SetHeader(h, tc.ctx)
		got := map[string]string{}
		for name, vs := range h {
			got[name] = strings.Join(vs, ",")
		}
		if !maps.Equal(got, tc.want) {
			t.Errorf("%s: SetHeader %v, want %v", tc.name, got, tc.want)
		}
	}
}

// Headers writes what each value holds, and leaves out a value that is not what its key
// holds; Retry-After only on a denial.
func TestHeaders(t *testing.T) {
	limited := maps.Clone(allowed)
	limited[ratelimitheaders.KeyRemaining], limited[ratelimitheaders.KeyRetryAfter] = 0.0, 1.0
	limited[ratelimitheaders.KeyRateLimit] = `"burst";r=0;t=1`
	tests := []struct {
		name string
		ctx  map[string]any
		want map[string]string
	}{
		{"allowed", allowed, allowedHeaders},
		{"allowed, as strings", stringified(allowed), allowedHeaders},
		{"limited", limited, map[string]string{"RateLimit": `"burst";r=0;t=1`, "RateLimit-Policy": `"burst";q=10;w=10`,
			"X-RateLimit-Limit": "10", "X-RateLimit-Remaining": "0", "X-RateLimit-Reset": "1795324229", "Retry-After": "1"}},
		{"Go and json.Number values", map[string]any{"rateLimit": `"b";r=1;t=1`, "limit": 5, "remaining": int64(1), "reset": json.Number("17")},
			map[string]string{"RateLimit": `"b";r=1;t=1`, "X-RateLimit-Limit": "5", "X-RateLimit-Remaining": "1", "X-RateLimit-Reset": "17"}},
		{"values that are not what their keys hold", map[string]any{"rateLimit": `"b";r=1;t=1`, "rateLimitPolicy": "a\r\nSet-Cookie: x", "limit": -1.0,
			"remaining": 1.5, "reset": "soon", "retryAfter": true}, map[string]string{"RateLimit": `"b";r=1;t=1`}},
		{"numbers past int64", map[string]any{"rateLimit": `"b";r=1;t=1`, "limit": float64(math.MaxInt64), "remaining": 1e300,
			"reset": "9223372036854775808"}, map[string]string{"RateLimit": `"b";r=1;t=1`}},
		{"no decision", map[string]any{"principalId": "admin"}, nil},
		{"nil", nil, nil},
	}
	for _, tt := range tests {
		if got := ratelimitheaders.Headers(tt.ctx); !maps.Equal(got, tt.want) {
			t.Errorf("%s: %v, want %v", tt.name, got, tt.want)
		}
	}
	h := http.Header{"Ratelimit": {"stale"}, "Content-Type": {"text/plain"}}
	ratelimitheaders.SetHeader(h, limited)
	if got := h["RateLimit"]; len(h) != 7 || len(got) != 1 || got[0] != `"burst";r=0;t=1` {
		t.Errorf("SetHeader: %v", h)
	}
}

// ExposeHeaders names every header an allowed, a limited and a degraded decision set, and
// nothing else: a browser's script reads exactly the rate-limit headers.
func TestExposeHeaders(t *testing.T) {
	limited := maps.Clone(allowed)
	limited[ratelimitheaders.KeyRemaining], limited[ratelimitheaders.KeyRetryAfter] = 0.0, 1.0
	degraded := maps.Clone(allowed)
	degraded[ratelimitheaders.KeyRateLimit], degraded[ratelimitheaders.KeyDegraded] = "", true
	set := map[string]bool{}
	for _, ctx := range []map[string]any{allowed, limited, degraded} {
		for name := range ratelimitheaders.Headers(ctx) {
			set[name] = true
		}
	}
	exposed := map[string]bool{}
	for _, name := range strings.Split(ratelimitheaders.ExposeHeaders, ", ") {
		exposed[name] = true
	}
	if !maps.Equal(exposed, set) {
		t.Errorf("ExposeHeaders %q, want the headers decisions set: %v", ratelimitheaders.ExposeHeaders, slices.Sorted(maps.Keys(set)))
	}
}
