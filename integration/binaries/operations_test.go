package binaries_test

import (
	"context"
	"encoding/json"
	"errors"
	"maps"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/bucketgate/bucketgate/checkapi"
	"github.com/bucketgate/bucketgate/internal/testkit/redistest"
	"github.com/bucketgate/bucketgate/internal/testkit/runtimeapi"
	"github.com/bucketgate/bucketgate/internal/testkit/samples"
)

// slowFree is a free plan whose bucket of 3 refills at 3 per hour: the wall clock cannot
// refill it during a test.
const slowFree = "defaultPlan: free\nplans: {free: [{name: burst, capacity: 3, refill: 3, per: hour}]}"

// binaries starts the authorizer and the check function on one real redis-server with
// configuration cfg, as two Lambda functions of one deployment, each writing its metrics
// a line per invocation (METRICS_FLUSH_MS 0), so that a test reads each one's.
func binaries(t *testing.T, cfg string) (authorizer, check *function, redis *redistest.Server) {
	t.Helper()
	redis = redistest.Start(t)
	authorizer, check = binariesOn(t, redis, cfg, nil)
	return authorizer, check, redis
}

// binariesOn is binaries on the server redis, with env added to the functions'.
func binariesOn(t *testing.T, redis *redistest.Server, cfg string, env map[string]string) (authorizer, check *function) {
	t.Helper()
	all := map[string]string{"REDIS_ADDR": redis.Addr, "REDIS_TIMEOUT_MS": decisionTimeout, "RATE_LIMIT_CONFIG": cfg, "METRICS_FLUSH_MS": "0"}
	maps.Copy(all, env)
	return startFunction(t, bootstrap(t, "AuthorizerFunction"), all), startFunction(t, bootstrap(t, "CheckFunction"), all)
}

// authorize sends the REST sample event (source 203.0.113.10) and reports whether the
// authorizer allowed it, with its context.
func authorize(t *testing.T, f *function) (bool, map[string]any) {
	t.Helper()
	out, err := f.invoke(t, samples.Read(t, "authorizer-rest.json"))
	var a events.APIGatewayCustomAuthorizerResponse
	if err != nil || json.Unmarshal(out, &a) != nil || len(a.PolicyDocument.Statement) != 1 {
		t.Fatalf("authorizer: %s, %v", out, err)
	}
	return a.PolicyDocument.Statement[0].Effect == "Allow", a.Context
}

// checkOK invokes the check function with payload and returns its answer.
func checkOK(t *testing.T, f *function, payload string) checkapi.Response {
	t.Helper()
	out, err := f.invoke(t, []byte(payload))
	var r checkapi.Response
	if err != nil || json.Unmarshal(out, &r) != nil {
		t.Fatalf("check %s: %s, %v", payload, out, err)
	}
	return r
}

// The operator's path through both binaries: the check function resets and refunds
// the authorizer's bucket of a source address, and the authorizer sees it (after its
// deny cache's second at most).
func TestOperationsAcrossBinaries(t *testing.T) {
	authorizer, check, _ := binaries(t, slowFree)
	for range 3 {
		if ok, _ := authorize(t, authorizer); !ok {
			t.Fatal("the burst of 3 was denied")
		}
	}
	if ok, _ := authorize(t, authorizer); ok {
		t.Fatal("the 4th request was allowed")
	}
	source := `{"identity":"ip:203.0.113.10"`
	if r := checkOK(t, check, source+`,"cost":0}`); r.Remaining != 0 || r.Plan != "free" || r.Limit != 3 {
		t.Fatalf("show: %+v, want the authorizer's spent bucket on the default plan", r)
	}
	if r := checkOK(t, check, source+`,"op":"reset"}`); !r.Allowed || r.Remaining != 3 {
		t.Fatalf("reset: %+v", r)
	}
	deadline := time.Now().Add(invokeTimeout)
	for {
		ok, ctx := authorize(t, authorizer)
		if ok {
			if ctx["remaining"] != 2.0 {
				t.Fatalf("after the reset: %v, want 2 left", ctx)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the authorizer kept denying after the reset")
		}
		time.Sleep(100 * time.Millisecond) // its deny cache keeps a denial for a second at most
	}
	if r := checkOK(t, check, source+`,"op":"refund","cost":1}`); r.Remaining != 3 {
		t.Fatalf("refund: %+v, want 3 left", r)
	}
	if ok, ctx := authorize(t, authorizer); !ok || ctx["remaining"] != 2.0 {
		t.Fatalf("after the refund: %v, want allowed with 2 left", ctx)
	}
	check.stop()
	if logs := check.stderr.String(); strings.Count(logs, `"msg":"bucket operation"`) != 3 || !strings.Contains(logs, `"identity":"ip:203.0.113.10"`) {
		t.Errorf("want an info line per operation on the operator's path:\n%s", logs)
	}
}

// Shadow rules through the check binary: allowed by the enforced rule, described by it
// alone; the shadow denial is the ShadowLimited metric on stdout (an inline rule counts
// under Rule "(inline)") and an info line on stderr with the rule's name and the key's
// digest, never the key.
func TestShadowRulesCheckBinary(t *testing.T) {
	_, check, _ := binaries(t, slowFree)
	payload := `{"key":"tenant-shadow","rules":[{"name":"burst","capacity":10,"refillPerSecond":0.001},` +
		`{"name":"trial","capacity":1,"refillPerSecond":0.001,"shadow":true}]}`
	for i, want := range []int64{9, 8} {
		if r := checkOK(t, check, payload); !r.Allowed || r.Rule != "burst" || r.Remaining != want {
			t.Fatalf("check %d: %+v", i+1, r)
		}
	}
	check.stop()
	if n := strings.Count(check.stdout.String(), `"Function":"check","Rule":"(inline)","ShadowLimited":1`); n != 1 {
		t.Errorf("%d ShadowLimited lines, want 1:\n%s", n, check.stdout)
	}
	if logs := check.stderr.String(); !strings.Contains(logs, "shadow rule would have limited") || !strings.Contains(logs, `"rule":"trial"`) || strings.Contains(logs, "tenant-shadow") {
		t.Errorf("want an info line with the key's digest only:\n%s", logs)
	}
}

// One identity's bad state through both binaries: its requests fail by the failure
// policy (503 for the authorizer, unavailable for the check) as often as they are sent,
// and every other identity keeps being decided: the limiter never closes for them.
func TestBadStateBinaries(t *testing.T) {
	authorizer, check, redis := binaries(t, slowFree)
	ctx := context.Background()
	for _, cmd := range [][]string{
		{"HSET", "bg:{ip:203.0.113.10}", "burst:tokens", "nan", "burst:ts", "1"},
		{"SET", "bg:{tenant:victim}", "not a hash"},
	} {
		if _, err := redis.Command(ctx, cmd...); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 5 {
		_, err := authorizer.invoke(t, samples.Read(t, "authorizer-rest.json"))
		var fe *runtimeapi.FunctionError
		if !errors.As(err, &fe) || !strings.HasPrefix(fe.Message, "rate limiter unavailable (bad_response)") {
			t.Fatalf("authorizer, victim, request %d: %v, want rate limiter unavailable (bad_response)", i+1, err)
		}
		out, err := authorizer.invoke(t, samples.Read(t, "authorizer-http.json"))
		var simple events.APIGatewayV2CustomAuthorizerSimpleResponse
		if err != nil || json.Unmarshal(out, &simple) != nil || !simple.IsAuthorized && i < 3 {
			t.Fatalf("authorizer, another source, request %d: %s, %v", i+1, out, err)
		}
		if r := checkOK(t, check, `{"key":"victim","plan":"free"}`); r.Reason != checkapi.ReasonUnavailable {
			t.Fatalf("check, victim, request %d: %+v, want unavailable", i+1, r)
		}
		if r := checkOK(t, check, `{"key":"bystander","plan":"free","cost":0}`); r.Reason != checkapi.ReasonOK {
			t.Fatalf("check, another tenant, request %d: %+v, want ok", i+1, r)
		}
	}
	check.stop()
	if !strings.Contains(check.stderr.String(), "stored state is not bucketgate's") {
		t.Errorf("the check's logs do not say why:\n%s", check.stderr)
	}
}

// Shadow rules through the authorizer binary, marked in the configuration: the plan's
// shadow rule never denies and is not in the context or the RateLimit-Policy; its
// would-be denial is the ShadowLimited metric and an info line naming the identity.
func TestShadowRulesAuthorizerBinary(t *testing.T) {
	authorizer, _, _ := binaries(t, "defaultPlan: free\nplans: {free: [{name: burst, capacity: 3, refill: 3, per: hour},"+
		" {name: trial, capacity: 1, refill: 1, per: hour, shadow: true}]}")
	for i := range 3 {
		ok, ctx := authorize(t, authorizer)
		if !ok || ctx["rule"] != "burst" || ctx["remaining"] != float64(2-i) || ctx["rateLimitPolicy"] != `"burst";q=3;w=3600` {
			t.Fatalf("request %d: allowed %v, context %v; want allowed, describing burst alone", i+1, ok, ctx)
		}
	}
	authorizer.stop()
	if n := strings.Count(authorizer.stdout.String(), `"Function":"authorizer","Rule":"trial","ShadowLimited":1`); n != 2 {
		t.Errorf("%d ShadowLimited lines, want 2 (requests 2 and 3):\n%s", n, authorizer.stdout)
	}
	if n := strings.Count(authorizer.stderr.String(), `"msg":"shadow rule would have limited","identity":"ip:203.0.113.10"`); n != 2 {
		t.Errorf("%d info lines of shadow denials naming the identity, want 2:\n%s", n, authorizer.stderr)
	}
}
