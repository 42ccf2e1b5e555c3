package ratelimitheaders_test

import (
	"context"
	"fmt"
	"maps"
	"slices"

	"github.com/aws/aws-lambda-go/events"

	"github.com/bucketgate/bucketgate/ratelimitheaders"
)

// A Lambda proxy backend behind bucketgate's authorizer answers with the rate-limit
// headers of the call it serves, in one call.
func ExampleSetProxyResponse() {
	handler := func(_ context.Context, req events.APIGatewayProxyRequest) (events.APIGatewayProxyResponse, error) {
		resp := events.APIGatewayProxyResponse{StatusCode: 200, Body: `{"ok":true}`,
			Headers: map[string]string{"Content-Type": "application/json"}}
		ratelimitheaders.SetProxyResponse(&resp, &req)
		return resp, nil
	}

	// The event of an allowed call, as a REST API passes it: the authorizer's context
	// beside its principal id, every value a string.
	req := events.APIGatewayProxyRequest{HTTPMethod: "GET", Path: "/scores"}
	req.RequestContext.Authorizer = map[string]any{
		"principalId": "key:8254c329a92850f6d539dd376f4816ee",
		"limit":       "10", "remaining": "9", "retryAfter": "0", "reset": "1795324226",
		"rateLimit": `"burst";r=9;t=1`, "rateLimitPolicy": `"burst";q=10;w=10`,
		"resetAt": "2026-11-22T05:10:26Z", "rule": "burst", "plan": "free", "reason": "ok",
	}
	resp, _ := handler(context.Background(), req)
	for _, name := range slices.Sorted(maps.Keys(resp.Headers)) {
		fmt.Printf("%s: %s\n", name, resp.Headers[name])
	}
	// Output:
	// Content-Type: application/json
	// RateLimit: "burst";r=9;t=1
	// RateLimit-Policy: "burst";q=10;w=10
	// X-RateLimit-Limit: 10
	// X-RateLimit-Remaining: 9
	// X-RateLimit-Reset: 1795324226
}

// An HTTP API's Lambda proxy backend (payload 2.0) reads the context from
// requestContext.authorizer.lambda, where numbers stay numbers.
func ExampleSetV2HTTPResponse() {
	var req events.APIGatewayV2HTTPRequest
	req.RequestContext.Authorizer = &events.APIGatewayV2HTTPRequestContextAuthorizerDescription{Lambda: map[string]any{
		"limit": 10.0, "remaining": 8.0, "retryAfter": 0.0, "reset": 1795324227.0,
		"rateLimit": `"burst";r=8;t=2`, "rateLimitPolicy": `"burst";q=10;w=10`,
	}}
	resp := events.APIGatewayV2HTTPResponse{StatusCode: 200, Body: "ok"}
	ratelimitheaders.SetV2HTTPResponse(&resp, &req)
	fmt.Println(resp.Headers["X-RateLimit-Remaining"], resp.Headers["RateLimit"])
	// Output: 8 "burst";r=8;t=2
}
