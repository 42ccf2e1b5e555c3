package main

import (
	"bytes"
	"context"
	"encoding/json"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-lambda-go/lambda"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/bucketgate/bucketgate"
	"github.com/bucketgate/bucketgate/internal/app"
	"github.com/bucketgate/bucketgate/internal/registry"
	"github.com/bucketgate/bucketgate/internal/settings"
	"github.com/bucketgate/bucketgate/internal/testkit/redistest"
	"github.com/bucketgate/bucketgate/internal/testkit/samples"
)

// cachePeriod is the registry cache period of the end-to-end test: short, so that the
// test waits for it.
const cachePeriod = 300 * time.Millisecond

// authorizer is the authorizer as Lambda builds it, on a real Redis and the registry
// table of dynalite, with what it writes.
type authorizer struct {
	h             lambda.Handler
	logs, metrics bytes.Buffer
}

// decide sends the REST sample event with key in the API key header and returns the
// principal, the plan, the limit and the remaining tokens.
func (a *authorizer) decide(t *testing.T, key string) (principal, plan string, limit, remaining int64) {
	t.Helper()
	return a.decideFrom(t, key, "")
}

// decideFrom is decide from the source address sourceIP ("": the sample's), without an
// API key header when key is "".
func (a *authorizer) decideFrom(t *testing.T, key, sourceIP string) (principal, plan string, limit, remaining int64) {
	t.Helper()
	principal, ctx := a.context(t, key, sourceIP)
	num := func(k string) int64 { f, _ := ctx[k].(float64); return int64(f) }
	plan, _ = ctx["plan"].(string)
	return principal, plan, num("limit"), num("remaining")
}

// context is decideFrom's decision: the principal and the whole context.
func (a *authorizer) context(t *testing.T, key, sourceIP string) (principal string, ctx map[string]any) {
	t.Helper()
	var ev map[string]any
	if err := json.Unmarshal(samples.Read(t, "authorizer-rest.json"), &ev); err != nil {
		t.Fatal(err)
	}
	ev["headers"], ev["multiValueHeaders"] = map[string]string{}, nil
	if key != "" {
		ev["headers"] = map[string]string{settings.DefaultAPIKeyHeader: key}
	}
	if sourceIP != "" {
		ev["requestContext"].(map[string]any)["identity"].(map[string]any)["sourceIp"] = sourceIP
	}
	payload, _ := json.Marshal(ev)
	out, err := a.h.Invoke(context.Background(), payload)
	if err != nil {
		t.Fatalf("authorizer: %v", err)
	}
	var resp events.APIGatewayCustomAuthorizerResponse
	if err := json.Unmarshal(out, &resp); err != nil {
		t.Fatal(err)
	}
	return resp.PrincipalID, resp.Context
}

// A key made with the CLI is decided under its plan by the authorizer that Lambda runs;
// a plan change, an override and a revocation take effect within the cache period; a
// plan change keeps the key's buckets, never above the new capacity (on a real
// redis-server); and the raw key is nowhere but the CLI's stdout: not in the table,
// Redis, the logs or the metrics.
func TestKeysDecideTheAuthorizer(t *testing.T) {
	c := deployedCLI(t, "")
	c.env[settings.EnvMetricsFlushMS] = "0" // a metrics line per invocation: each step's are its own
	key := strings.TrimSpace(c.ok("keys", "create", "--plan", "pro"))
	id := "key:" + bucketgate.KeyDigest(key)
	srv := redistest.Start(t)
	a := &deploy(t, c, srv.Addr, checkFunction).authz
	for i := range 20 {
		principal, plan, limit, remaining := a.decide(t, key)
		if principal != id || plan != "pro" || limit != 100 || remaining < 80 || remaining > 99 { // 50/s refills between requests
			t.Fatalf("request %d: %s %s limit %d remaining %d; want %s on pro", i, principal, plan, limit, remaining, id)
		}
	}

	steps := []struct {
		args             []string
		principal, plan  string
		limit, remaining int64
		why              string
	}{
		{[]string{"keys", "set-plan", key, "free"}, id, "free", 10, 9, "about 80 tokens kept, clamped to free's 10, one spent"},
		{[]string{"keys", "override", key, "--rule", "burst:3:1"}, id, "free", 3, 2, "its own burst of 3"},
		{[]string{"keys", "revoke", key}, "ip:203.0.113.10", "free", 10, 9, "revoked: its source's bucket"},
	}
	for _, st := range steps {
		c.ok(st.args...)
		time.Sleep(cachePeriod) // every entry read before the change has expired
		principal, plan, limit, remaining := a.decide(t, key)
		if principal != st.principal || plan != st.plan || limit != st.limit || remaining != st.remaining {
			t.Fatalf("after %s: %s %s limit %d remaining %d; want %s %s %d %d (%s)", strings.Join(st.args[:2], " "),
				principal, plan, limit, remaining, st.principal, st.plan, st.limit, st.remaining, st.why)
		}
	}

	tokens, err := srv.Command(context.Background(), "HGET", "bg:{"+id+"}", "burst:tokens")
	if err != nil {
		t.Fatal(err)
	}
	if f, err := strconv.ParseFloat(tokens, 64); err != nil || f > 3 {
		t.Errorf("the key's burst holds %q tokens: want at most its capacity 3", tokens)
	}
	if !strings.Contains(a.metrics.String(), `"RegistryLookups":1`) || !strings.Contains(a.metrics.String(), `"Result":"miss"`) {
		t.Errorf("no RegistryLookups in the metrics:\n%s", &a.metrics)
	}
	everything := c.items() + a.logs.String() + a.metrics.String() + redisDump(t, srv)
	if strings.Contains(everything, key) {
		t.Fatalf("the raw key is in the table, Redis, the logs or the metrics:\n%s", everything)
	}
	if !strings.Contains(everything, bucketgate.KeyDigest(key)) {
		t.Fatalf("the key's digest is nowhere either: did anything run?\n%s", everything)
	}
}

// redisDump returns every key of srv with its value (Server.Dump), but the records of
// requestIds.
func redisDump(t *testing.T, srv *redistest.Server) string {
	t.Helper()
	dump, err := srv.Dump(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	for _, line := range strings.SplitAfter(dump, "\n") {
		if !strings.Contains(line, "}:h:") { // the record of a requestId (checkclient sends one with every write), not state
			b.WriteString(line)
		}
	}
	return b.String()
}

// A tenant registered with the CLI is on its registry plan in the check function, for
// checks that name neither a plan nor rules.
func TestTenantsDecideTheCheckFunction(t *testing.T) {
	mr, _ := redistest.Mini(t)
	c := deployedCLI(t, "")
	c.ok("keys", "create", "--tenant", "acme", "--plan", "enterprise", "--rule", "daily:5000:5000/day")
	h := &deploy(t, c, mr.Addr(), checkFunction).check
	for _, tc := range []struct{ payload, want string }{
		{`{"key": "acme"}`, `"limit":500,"remaining":499,"retryAfterMs":0,"resetAfterMs":17280,"rule":"burst","plan":"enterprise"`},
		{`{"key": "acme", "plan": "free"}`, `"plan":"free"`},
		{`{"key": "other"}`, `"limit":10,"remaining":9,"retryAfterMs":0,"resetAfterMs":1000,"rule":"burst","plan":"free"`},
	} {
		out, err := h.Invoke(context.Background(), []byte(tc.payload))
		if err != nil || !strings.Contains(string(out), tc.want) {
			t.Errorf("%s: %s, %v; want %s", tc.payload, out, err, tc.want)
		}
	}
}

// A tenant's own rules are checked and applied as the check function decides a tenant,
// whose checks no route applies to: a route's cost above a tenant's own capacity refuses
// nothing, and a rule named like a route's is the tenant's, added to its checks, where it
// replaced a rule the tenant never meets.
func TestTenantsOwnRulesApartFromRoutes(t *testing.T) {
	mr, _ := redistest.Mini(t)
	c := deployedCLI(t, "defaultPlan: free\nplans:\n  free: [{name: burst, capacity: 20, refillPerSecond: 1}]\n"+
		"  pro: [{name: burst, capacity: 100, refillPerSecond: 50}]\n"+
		"routes:\n  - {method: POST, path: /exports, cost: 20, rules: [{name: exports, capacity: 40, refill: 40, per: hour}]}\n")
	c.ok("keys", "create", "--tenant", "small", "--plan", "pro", "--rule", "burst:5:1")
	c.ok("keys", "create", "--tenant", "exporter", "--plan", "pro", "--rule", "exports:3:1")
	h := &deploy(t, c, mr.Addr(), checkFunction).check
	for _, tc := range []struct{ payload, want string }{
		{`{"key": "small"}`, `"limit":5,"remaining":4,"retryAfterMs":0,"resetAfterMs":1000,"rule":"burst","plan":"pro"`},
		{`{"key": "exporter"}`, `"limit":3,"remaining":2,"retryAfterMs":0,"resetAfterMs":1000,"rule":"exports","plan":"pro"`},
	} {
		out, err := h.Invoke(context.Background(), []byte(tc.payload))
		if err != nil || !strings.Contains(string(out), tc.want) {
			t.Errorf("%s: %s, %v; want %s", tc.payload, out, err, tc.want)
		}
	}
}

// Both functions, as Lambda builds them, follow the table's document: a put and a
// rollback take effect within the cache period, with no redeploy, for an API key's plan
// (authorizer) and a tenant's and a named plan (check). A document written by hand that
// does not load is kept out: the last good one decides, ConfigInvalid counts it, a
// fresh instance starts on the newest copy that loads, and one with none refuses to
// start.
func TestConfigDecidesTheFunctions(t *testing.T) {
	mr, _ := redistest.Mini(t)
	c := deployedCLI(t, "")
	c.env[settings.EnvMetricsFlushMS] = "0" // a metrics line per invocation: each step's are its own
	c.ok("config", "put", file(t, "gold.yaml", goldDoc))
	key := strings.TrimSpace(c.ok("keys", "create", "--plan", "pro"))
	c.ok("keys", "create", "--tenant", "acme", "--plan", "gold")
	d := deploy(t, c, mr.Addr(), checkFunction)
	getenv := func(k string) string { return c.env[k] }
	a := &d.authz
	check := func(payload string) string {
		t.Helper()
		out, err := d.check.Invoke(context.Background(), []byte(payload))
		if err != nil {
			return err.Error()
		}
		return string(out)
	}
	steps := []struct {
		name          string
		args          []string // the CLI's command before the step
		keyLimit      int64    // the API key's, on pro
		tenant, named string   // in the check function's answers: the tenant's, and a check naming gold
	}{
		{"version 1", nil, 100, `"limit":300,"remaining":299`, `"limit":300`},
		{"put: gold retired, pro 150", []string{"config", "put", file(t, "no-gold.yaml", noGoldDoc), "--force"}, 150, `"limit":10,"remaining":9,"retryAfterMs":0,"resetAfterMs":1000,"rule":"burst","plan":"free"`, `unknown plan \"gold\"`},
		{"rollback to version 1", []string{"config", "rollback", "1"}, 100, `"limit":300,"remaining":299`, `"limit":300`},
	}
	for _, st := range steps {
		if st.args != nil {
			c.ok(st.args...)
			time.Sleep(cachePeriod)
		}
		mr.FlushAll()
		if _, plan, limit, _ := a.decide(t, key); plan != "pro" || limit != st.keyLimit {
			t.Fatalf("%s: the key on %s with limit %d, want pro with %d", st.name, plan, limit, st.keyLimit)
		}
		if got := check(`{"key": "acme"}`); !strings.Contains(got, st.tenant) {
			t.Fatalf("%s: the tenant: %s, want %s", st.name, got, st.tenant)
		}
		if got := check(`{"key": "other", "plan": "gold"}`); !strings.Contains(got, st.named) {
			t.Fatalf("%s: a check naming gold: %s, want %s", st.name, got, st.named)
		}
	}

	bad := registry.StoredConfig{ID: registry.ConfigID, Document: goldDoc + "routs: []\n", Version: 4}
	c.put(bad.Item())
	time.Sleep(cachePeriod)
	a.metrics.Reset()
	if _, _, limit, _ := a.decide(t, key); limit != 100 {
		t.Fatalf("a hand-written version 4 that does not load: limit %d, want version 3's 100", limit)
	}
	if !strings.Contains(a.metrics.String(), `"ConfigInvalid":1`) || !strings.Contains(a.logs.String(), `"version":4`) {
		t.Fatalf("no ConfigInvalid counted, or no error naming version 4:\n%s\n%s", &a.metrics, &a.logs)
	}
	var fresh authorizer
	var err error
	if fresh.h, _, err = app.Build(app.Authorizer, getenv, &fresh.metrics, &fresh.logs); err != nil {
		t.Fatalf("a fresh instance with version 3's copy to fall back on: %v", err)
	}
	if _, _, limit, _ := fresh.decide(t, key); limit != 100 || !strings.Contains(fresh.logs.String(), `"source":"the copy config#3: the item config does not load"`) {
		t.Fatalf("a fresh instance: limit %d, logs:\n%s\nwant version 3, the copy, in force", limit, &fresh.logs)
	}

	other := newCLI(t)
	other.env[settings.EnvRedisAddr] = mr.Addr()
	other.ok("keys", "init")
	if _, err := other.db.PutItem(context.Background(), &dynamodb.PutItemInput{TableName: aws.String(table), Item: bad.Item()}); err != nil {
		t.Fatal(err)
	}
	_, _, err = app.Build(app.Check, func(k string) string { return other.env[k] }, &bytes.Buffer{}, &bytes.Buffer{})
	if err == nil || !strings.Contains(err.Error(), "REGISTRY_TABLE=bucketgate-keys: no configuration document of the registry table loads") ||
		!strings.Contains(err.Error(), "version 4 (config): rate-limit configuration: routs") {
		t.Fatalf("a fresh instance with no document that loads: %v, want it to refuse to start, naming the version and the field", err)
	}
}
