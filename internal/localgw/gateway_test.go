package localgw

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
)

// answerFunc is an authorizer that answers every event with fn, for the answers the
// real authorizer never gives (its own tests and cmd/bucketgate-local's run the real one).
type answerFunc func(ev events.APIGatewayCustomAuthorizerRequestTypeRequest) ([]byte, error)

func (f answerFunc) Invoke(_ context.Context, payload []byte) ([]byte, error) {
	var ev events.APIGatewayCustomAuthorizerRequestTypeRequest
	if err := json.Unmarshal(payload, &ev); err != nil {
		return nil, err
	}
	return f(ev)
}

const testPrefix = "arn:aws:execute-api:us-east-1:123456789012:api/local"

// policyAnswer is an authorizer answer with one statement of effect for resource.
func policyAnswer(effect, resource string, context map[string]any) []byte {
	b, _ := json.Marshal(events.APIGatewayCustomAuthorizerResponse{ // plain values: cannot fail
		PrincipalID: "ip:192.0.2.1",
		PolicyDocument: events.APIGatewayCustomAuthorizerPolicy{Version: "2012-10-17", Statement: []events.IAMPolicyStatement{
			{Action: []string{"execute-api:Invoke"}, Effect: effect, Resource: []string{resource}},
		}},
		Context: context,
	})
	return b
}

func TestGatewayAnswers(t *testing.T) {
	rs, err := LoadResponses("../../template.yaml")
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name   string
		answer func(ev events.APIGatewayCustomAuthorizerRequestTypeRequest) ([]byte, error)
		want   int
	}{
		{"allow for the method ARN", func(ev events.APIGatewayCustomAuthorizerRequestTypeRequest) ([]byte, error) {
			return policyAnswer("Allow", ev.MethodArn, nil), nil
		}, http.StatusOK},
		{"allow by wildcard", func(events.APIGatewayCustomAuthorizerRequestTypeRequest) ([]byte, error) {
			return policyAnswer("Allow", testPrefix+"/*", nil), nil
		}, http.StatusOK},
		{"allow for another method", func(events.APIGatewayCustomAuthorizerRequestTypeRequest) ([]byte, error) {
			return policyAnswer("Allow", testPrefix+"/POST/*", nil), nil
		}, http.StatusTooManyRequests},
		{"deny", func(ev events.APIGatewayCustomAuthorizerRequestTypeRequest) ([]byte, error) {
			return policyAnswer("Deny", ev.MethodArn, map[string]any{"retryAfter": 3}), nil
		}, http.StatusTooManyRequests},
		{"Unauthorized", func(events.APIGatewayCustomAuthorizerRequestTypeRequest) ([]byte, error) {
			return nil, errors.New("Unauthorized")
		}, http.StatusUnauthorized},
		{"any other error", func(events.APIGatewayCustomAuthorizerRequestTypeRequest) ([]byte, error) {
			return nil, errors.New("unauthorized") // not the exact message
		}, http.StatusServiceUnavailable},
		{"not JSON", func(events.APIGatewayCustomAuthorizerRequestTypeRequest) ([]byte, error) {
			return []byte(`allow`), nil
		}, http.StatusServiceUnavailable},
		{"no principal", func(events.APIGatewayCustomAuthorizerRequestTypeRequest) ([]byte, error) {
			return []byte(`{"policyDocument":{"Statement":[]}}`), nil
		}, http.StatusServiceUnavailable},
		{"nested context value", func(ev events.APIGatewayCustomAuthorizerRequestTypeRequest) ([]byte, error) {
			return policyAnswer("Allow", ev.MethodArn, map[string]any{"limits": map[string]any{"burst": 10}}), nil
		}, http.StatusServiceUnavailable},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			g := &Gateway{Authorizer: answerFunc(tc.answer), Backend: SampleBackend(), Responses: rs, MethodARNPrefix: testPrefix}
			w := httptest.NewRecorder()
			g.ServeHTTP(w, httptest.NewRequest(http.MethodGet, "/scores", nil))
			if w.Code != tc.want {
				t.Fatalf("status %d, want %d; body %s", w.Code, tc.want, w.Body)
			}
			if tc.want == http.StatusOK && w.Body.String() != `{"ok":true,"path":"/scores"}` {
				t.Errorf("backend body %s", w.Body)
			}
		})
	}
}

// The event is a REST API payload 1.0 REQUEST event for a {proxy+} resource, as API
// Gateway sends it: method ARN, path, headers (Host too), query, source IP, request id.
func TestGatewayEvent(t *testing.T) {
	var seen []events.APIGatewayCustomAuthorizerRequestTypeRequest
	g := &Gateway{
		Authorizer: answerFunc(func(ev events.APIGatewayCustomAuthorizerRequestTypeRequest) ([]byte, error) {
			seen = append(seen, ev)
			return policyAnswer("Allow", ev.MethodArn, nil), nil
		}),
		Backend: SampleBackend(), Responses: Responses{}, MethodARNPrefix: testPrefix,
	}
	for range 2 {
		r := httptest.NewRequest(http.MethodPost, "http://localhost:8080/orders/42?page=2&page=3", nil)
		r.RemoteAddr = "198.51.100.7:51234"
		r.Header.Set("X-API-Key", "k")
		g.ServeHTTP(httptest.NewRecorder(), r)
	}
	ev := seen[0]
	checks := []struct{ name, got, want string }{
		{"type", ev.Type, "REQUEST"},
		{"methodArn", ev.MethodArn, testPrefix + "/POST/orders/42"},
		{"path", ev.Path, "/orders/42"},
		{"httpMethod", ev.HTTPMethod, http.MethodPost},
		{"resource", ev.Resource, "/{proxy+}"},
		{"proxy", ev.PathParameters["proxy"], "orders/42"},
		{"header", ev.Headers["X-Api-Key"], "k"},
		{"host", ev.Headers["Host"], "localhost:8080"},
		{"query", ev.QueryStringParameters["page"], "2"},
		{"source IP", ev.RequestContext.Identity.SourceIP, "198.51.100.7"},
		{"request id", ev.RequestContext.RequestID, "local-1"},
		{"next request id", seen[1].RequestContext.RequestID, "local-2"},
	}
	for _, c := range checks {
		if c.got != c.want {
			t.Errorf("%s %q, want %q", c.name, c.got, c.want)
		}
	}
	if got := ev.MultiValueQueryStringParameters["page"]; len(got) != 2 {
		t.Errorf("multi-value query %v", got)
	}
}

// invocation is what an invocation's context held when it began.
type invocation struct {
	deadline time.Time
	err      error
}

// contextOf is an authorizer that keeps what the context of each invocation held when
// it began, and allows.
type contextOf struct{ got []invocation }

func (c *contextOf) Invoke(ctx context.Context, payload []byte) ([]byte, error) {
	deadline, _ := ctx.Deadline()
	c.got = append(c.got, invocation{deadline, ctx.Err()})
	var ev events.APIGatewayCustomAuthorizerRequestTypeRequest
	if err := json.Unmarshal(payload, &ev); err != nil {
		return nil, err
	}
	return policyAnswer("Allow", ev.MethodArn, nil), nil
}

// The authorizer runs with the context Lambda gives an invocation, whatever the
// request's: a deadline the functions' Timeout after it started, and no cancellation
// from a client that hung up.
func TestGatewayInvokesAsLambda(t *testing.T) {
	tests := []struct {
		name string
		ctx  func() context.Context
	}{
		{"a client still there", context.Background},
		{"a client gone", func() context.Context {
			ctx, cancel := context.WithCancel(context.Background())
			cancel()
			return ctx
		}},
		{"a request past its own deadline", func() context.Context {
			ctx, cancel := context.WithDeadline(context.Background(), time.Now().Add(-time.Second))
			t.Cleanup(cancel)
			return ctx
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			authorizer := &contextOf{}
			g := &Gateway{Authorizer: authorizer, Backend: SampleBackend(), Responses: Responses{}, MethodARNPrefix: testPrefix}
			before := time.Now()
			r := httptest.NewRequestWithContext(tc.ctx(), http.MethodGet, "http://localhost:8080/orders", nil)
			g.ServeHTTP(httptest.NewRecorder(), r)
			if len(authorizer.got) != 1 {
				t.Fatalf("%d invocations, want 1", len(authorizer.got))
			}
			got := authorizer.got[0]
			if got.deadline.Before(before.Add(FunctionTimeout)) || got.deadline.After(time.Now().Add(FunctionTimeout)) {
				t.Errorf("the authorizer's deadline %v: want the functions' Timeout (%v) after it started", got.deadline, FunctionTimeout)
			}
			if got.err != nil {
				t.Errorf("the authorizer's context: %v as it began, want neither cancelled nor past its deadline", got.err)
			}
		})
	}
}

// A service that sends 103 Early Hints before its answer still gets the rate-limit
// headers on that answer: the proxy clears the header after a 1xx, so they go on the
// final header, not on the hint.
func TestRateLimitHeadersAfterEarlyHints(t *testing.T) {
	service := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Link", "</app.css>; rel=preload")
		w.WriteHeader(http.StatusEarlyHints)
		w.WriteHeader(http.StatusCreated)
	}))
	defer service.Close()
	backend, err := ProxyBackend(service.URL, Response{}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	g := httptest.NewServer(&Gateway{
		Authorizer: answerFunc(func(ev events.APIGatewayCustomAuthorizerRequestTypeRequest) ([]byte, error) {
			return policyAnswer("Allow", ev.MethodArn, map[string]any{"rateLimit": `"burst";r=9;t=1`, "limit": 10, "remaining": 9, "reset": 1}), nil
		}),
		Backend: backend, Responses: Responses{}, MethodARNPrefix: testPrefix,
	})
	defer g.Close()
	resp, err := http.Get(g.URL + "/scores")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusCreated || resp.Header.Get("X-RateLimit-Limit") != "10" || resp.Header.Get("X-RateLimit-Remaining") != "9" {
		t.Fatalf("%d with %v: want the service's 201 with X-RateLimit-Limit 10, X-RateLimit-Remaining 9", resp.StatusCode, resp.Header)
	}
}
