package middleware_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/aws/aws-lambda-go/lambda"

	"github.com/bucketgate/bucketgate/internal/app"
	"github.com/bucketgate/bucketgate/internal/testkit/redistest"
	"github.com/bucketgate/bucketgate/internal/testkit/samples"
	"github.com/bucketgate/bucketgate/middleware"
)

// tenTokens is a configuration whose default plan holds 10 tokens and refills one a
// day: the eleventh request of a caller is denied however slowly the test runs.
const tenTokens = "defaultPlan: free\nplans: {free: [{name: burst, capacity: 10, refill: 1, per: day}]}"

// env reads the settings from kv alone.
func env(kv map[string]string) func(string) string { return func(k string) string { return kv[k] } }

// One caller's 10 free tokens are one bucket, whether the request comes through API
// Gateway (the authorizer's handler) or through the middleware: on one real
// redis-server, 5 through each are allowed and the 11th is denied by either.
func TestBucketsSharedWithTheAuthorizer(t *testing.T) {
	srv := redistest.Start(t)
	auth, limiter := authorizerAndLimiter(t, srv.Addr, tenTokens)
	service := httptest.NewServer(limiter.Handler(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, "ok") })))
	defer service.Close()

	// The authorizer's event comes from the address the service sees: loopback.
	event := gatewayEvent(t, "/orders/42", "127.0.0.1")
	viaGateway := func() (allowed bool, remaining string) {
		out, err := auth.Invoke(context.Background(), event)
		if err != nil {
			t.Fatal(err)
		}
		var a struct {
			PolicyDocument struct{ Statement []struct{ Effect string } }
			Context        map[string]any
		}
		if err := json.Unmarshal(out, &a); err != nil {
			t.Fatal(err)
		}
		return a.PolicyDocument.Statement[0].Effect == "Allow", jsonNumber(a.Context["remaining"])
	}
	viaService := func() (allowed bool, remaining string) {
		resp, err := http.Get(service.URL + "/orders/42")
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK, resp.Header.Get("X-RateLimit-Remaining")
	}
	for i := range 10 {
		via, decide := "the gateway", viaGateway
		if i%2 == 1 {
			via, decide = "the service", viaService
		}
		if allowed, remaining := decide(); !allowed || remaining != jsonNumber(float64(9-i)) {
			t.Fatalf("request %d through %s: allowed %v with %s remaining, want allowed with %d", i+1, via, allowed, remaining, 9-i)
		}
	}
	if allowed, _ := viaService(); allowed {
		t.Fatal("the 11th request through the service was allowed")
	}
	if allowed, _ := viaGateway(); allowed {
		t.Fatal("the 11th request through the gateway was allowed")
	}
}

// authorizerAndLimiter returns the authorizer's Lambda handler and a Limiter (closed
// when t ends), both on the Redis at addr with the configuration document doc.
func authorizerAndLimiter(t *testing.T, addr, doc string) (lambda.Handler, *middleware.Limiter) {
	t.Helper()
	vars := map[string]string{"REDIS_ADDR": addr, "RATE_LIMIT_CONFIG": doc, "REDIS_TIMEOUT_MS": "2000"}
	auth, _, err := app.Build(app.Authorizer, env(vars), io.Discard, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	limiter, err := middleware.New(middleware.Options{Getenv: env(vars), Metrics: io.Discard, LogOutput: io.Discard})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(limiter.Close)
	return auth, limiter
}

// gatewayEvent returns the sample REST API authorizer event of a GET of path from the
// source address source.
func gatewayEvent(t *testing.T, path, source string) []byte {
	t.Helper()
	var ev map[string]any
	if err := json.Unmarshal(samples.Read(t, "authorizer-rest.json"), &ev); err != nil {
		t.Fatal(err)
	}
	ev["path"] = path
	ev["requestContext"].(map[string]any)["identity"].(map[string]any)["sourceIp"] = source
	event, err := json.Marshal(ev)
	if err != nil {
		t.Fatal(err)
	}
	return event
}

// jsonNumber writes a decoded JSON number as a header carries it.
func jsonNumber(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}
