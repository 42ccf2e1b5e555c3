package main

import (
	"bytes"
	"context"
	"encoding/json"
	"maps"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/lambda"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/bucketgate/bucketgate"
	"github.com/bucketgate/bucketgate/internal/app"
	"github.com/bucketgate/bucketgate/internal/bucket"
	"github.com/bucketgate/bucketgate/internal/registry"
	"github.com/bucketgate/bucketgate/internal/settings"
	"github.com/bucketgate/bucketgate/internal/testkit/lambdatest"
	"github.com/bucketgate/bucketgate/internal/testkit/redistest"
)

// checkFunction is the name the test deployment gives the check function.
const checkFunction = "bucketgate-check-test"

// bucketsConfig refills so slowly (a token in 1000 s) that no test sees a refill.
const bucketsConfig = `defaultPlan: basic
plans:
  basic: [{name: burst, capacity: 5, refillPerSecond: 0.001}]
  gold: [{name: burst, capacity: 50, refillPerSecond: 0.001}, {name: daily, capacity: 1000, refill: 1000, per: day}]
`

// deployment is both functions as Lambda builds them, from the environment of a cli,
// the check function behind a loopback Lambda Invoke API that the CLI reaches through
// AWS_ENDPOINT_URL_LAMBDA.
type deployment struct {
	*cli
	lambda *lambdatest.Server
	check  recorder
	authz  authorizer
}

// deploy builds both functions on the Redis at redisAddr, the check function called
// function.
func deploy(t *testing.T, c *cli, redisAddr, function string) *deployment {
	t.Helper()
	d := &deployment{cli: c}
	d.env[settings.EnvRedisAddr] = redisAddr
	d.env[settings.EnvTimeoutMS] = "2000"
	d.env[settings.EnvLogLevel] = "debug" // every decision logged, for the search for the raw key
	getenv := func(k string) string { return d.env[k] }
	var err error
	if d.authz.h, _, err = app.Build(app.Authorizer, getenv, &d.authz.metrics, &d.authz.logs); err != nil {
		t.Fatal(err)
	}
	if d.check.h, _, err = app.Build(app.Check, getenv, &d.check.metrics, &d.check.logs); err != nil {
		t.Fatal(err)
	}
	d.lambda = lambdatest.Start(t, map[string]lambda.Handler{function: &d.check})
	t.Setenv("AWS_ENDPOINT_URL_LAMBDA", d.lambda.URL)
	return d
}

// deployedCLI returns a cli on the registry table of dynalite (keys init run) with the
// environment of a deployment: the document config inline (the default configuration
// where config is ""), the check function called checkFunction, registry reads cached
// for cachePeriod and given the longest timeout (a slow read would answer stale: a
// change not yet seen). deploy builds the functions from it.
func deployedCLI(t *testing.T, config string) *cli {
	t.Helper()
	c := newCLI(t)
	if config != "" {
		c.env[settings.EnvConfigInline] = config
	}
	c.env[envCheckFunction] = checkFunction
	c.env[settings.EnvRegistryCacheMS] = strconv.Itoa(int(cachePeriod / time.Millisecond))
	c.env[settings.EnvRegistryTimeoutMS] = strconv.FormatInt(settings.MaxRegistryTimeout.Milliseconds(), 10)
	c.ok("keys", "init")
	return c
}

// newDeployment deploys both functions on a real redis-server, from the environment of
// deployedCLI with bucketsConfig.
func newDeployment(t *testing.T) (*deployment, *redistest.Server) {
	t.Helper()
	srv := redistest.Start(t)
	return deploy(t, deployedCLI(t, bucketsConfig), srv.Addr, checkFunction), srv
}

// recorder is the check function, keeping every payload it was invoked with.
type recorder struct {
	h             lambda.Handler
	mu            sync.Mutex
	payloads      bytes.Buffer
	logs, metrics bytes.Buffer
}

func (r *recorder) Invoke(ctx context.Context, payload []byte) ([]byte, error) {
	r.mu.Lock()
	r.payloads.Write(append(payload, '\n'))
	r.mu.Unlock()
	return r.h.Invoke(ctx, payload)
}

// bucket runs a buckets command with --json and returns what it printed.
func (d *deployment) bucket(args ...string) bucketJSON {
	d.t.Helper()
	var b bucketJSON
	out := d.ok(append(append([]string{"buckets"}, args...), "--json")...)
	if err := json.Unmarshal([]byte(out), &b); err != nil {
		d.t.Fatalf("buckets %s --json printed %q: %v", strings.Join(args, " "), out, err)
	}
	return b
}

// want fails the test unless b is the bucket of id on plan with remaining tokens of
// limit in rule.
func (d *deployment) want(b bucketJSON, id, plan, rule string, limit, remaining int64) {
	d.t.Helper()
	if b.Identity != id || b.Plan != plan || b.Rule != rule || b.Limit != limit || b.Remaining != remaining {
		d.t.Fatalf("%+v: want %s on %s, rule %s with %d of %d left", b, id, plan, rule, remaining, limit)
	}
	if full := remaining == limit; full != (b.ResetAfterMS == 0) {
		d.t.Fatalf("%+v: resetAfterMs %d with %d of %d left", b, b.ResetAfterMS, remaining, limit)
	}
}

// The operator reaches the buckets of the authorizer's identities (an API key, an IPv4
// address, an IPv6 prefix) and of a tenant through the check function behind Lambda
// Invoke: show peeks without writing, refund gives tokens back, reset fills; the
// identity's own plan is the one the registry gives it. The raw key is never in a
// payload, a log line, a metric, Redis or the CLI's output.
func TestBucketsSession(t *testing.T) {
	d, srv := newDeployment(t)
	key := strings.TrimSpace(d.ok("keys", "create", "--plan", "gold"))
	id := "key:" + bucketgate.KeyDigest(key)
	for range 5 {
		d.authz.decide(t, key)
	}
	show := d.ok("buckets", "show", key)
	for _, want := range []string{"identity    " + id, "plan        gold", "rule        burst", "limit       50", "remaining   45", "resetAfter  1h23m"} {
		if !strings.Contains(show, want) {
			t.Fatalf("buckets show after 5 requests:\n%s\nwant a line %q", show, want)
		}
	}
	before := redisDump(t, srv)
	d.want(d.bucket("show", id), id, "gold", "burst", 50, 45)
	if after := redisDump(t, srv); after != before {
		t.Fatalf("show wrote to Redis:\nbefore %s\nafter  %s", before, after)
	}

	code, stdout, stderr := d.run("buckets", "refund", key, "--cost", "3")
	if code != exitOK || !strings.Contains(stdout, "remaining   48\n") || !strings.Contains(stderr, "gave 3 token(s) back to every rule of "+id) {
		t.Fatalf("refund --cost 3: exit %d\n%s\n%s", code, stdout, stderr)
	}
	d.want(d.bucket("show", "--plan", "basic", key), id, "basic", "burst", 5, 5)
	d.want(d.bucket("show", key, "--rule", "burst:48:1"), id, "", "burst", 48, 48)
	d.want(d.bucket("reset", key), id, "gold", "burst", 50, 50)
	// The rules' fields are gone; the day's usage (the authorizer's checks) stays.
	for _, field := range []string{"burst:tokens", "burst:ts", "daily:tokens", "daily:ts"} {
		if n, err := srv.Command(context.Background(), "HEXISTS", "bg:{"+id+"}", field); err != nil || n != "0" {
			t.Fatalf("HEXISTS bg:{%s} %s after reset = %s, %v: want the field gone", id, field, n, err)
		}
	}
	if n, err := srv.Command(context.Background(), "HLEN", "bg:{"+id+"}"); err != nil || n != "1" {
		t.Fatalf("HLEN bg:{%s} after reset = %s, %v: want the day's usage alone", id, n, err)
	}
	if _, _, _, remaining := d.authz.decide(t, key); remaining != 49 {
		t.Fatalf("the authorizer after the reset: %d left, want 49 of a full 50", remaining)
	}

	for range 4 {
		d.authz.decideFrom(t, "", "203.0.113.10")
	}
	ip := "ip:203.0.113.10"
	d.want(d.bucket("show", "203.0.113.10"), ip, "basic", "burst", 5, 1)
	d.want(d.bucket("refund", "--cost", "3", ip), ip, "basic", "burst", 5, 4)
	d.want(d.bucket("refund", "--cost", "3", ip), ip, "basic", "burst", 5, 5) // never above capacity
	d.authz.decideFrom(t, "", "203.0.113.10")
	d.want(d.bucket("reset", "::ffff:203.0.113.10"), ip, "basic", "burst", 5, 5)

	for range 2 {
		d.authz.decideFrom(t, "", "2001:db8:1:2::10")
	}
	d.want(d.bucket("show", "2001:db8:1:2:ffff::99"), "ip:2001:db8:1:2::/64", "basic", "burst", 5, 3)

	d.ok("keys", "create", "--tenant", "acme", "--plan", "gold")
	d.want(d.bucket("show", "tenant:acme"), "tenant:acme", "gold", "burst", 50, 50)

	if n := d.lambda.Invocations(checkFunction); n != 12 {
		t.Errorf("%d invocations of %s, want one per buckets command (12)", n, checkFunction)
	}
	payloads := d.check.payloads.String()
	if !strings.Contains(payloads, `"identity":"`+id+`"`) || !strings.Contains(payloads, `"identity":"ip:2001:db8:1:2::/64","cost":0`) ||
		!strings.Contains(payloads, `{"identity":"`+id+`","op":"refund","cost":3,"requestId":"`) || !strings.Contains(payloads, `"identity":"tenant:acme"`) {
		t.Errorf("the check function was invoked with:\n%s", payloads)
	}
	if logs := d.check.logs.String(); strings.Count(logs, `"msg":"bucket operation"`) != 12 || strings.Contains(logs, "acme") {
		t.Errorf("want an info line per request on the operator's path (12, the tenant's too), the tenant by its digest:\n%s", logs)
	}
	everything := payloads + d.check.logs.String() + d.check.metrics.String() + d.authz.logs.String() + d.authz.metrics.String() + redisDump(t, srv) + d.items()
	if strings.Contains(everything, key) || !strings.Contains(everything, bucketgate.KeyDigest(key)) {
		t.Fatalf("the raw key is in a payload, a log, a metric, Redis or the table, or its digest is nowhere:\n%s", everything)
	}
}

// Bad input is an error naming the problem, on stderr with a non-zero exit (2 for the
// command line), and nothing is written; what the CLI can tell alone is not sent.
func TestBucketsBadInput(t *testing.T) {
	d, srv := newDeployment(t)
	key := strings.TrimSpace(d.ok("keys", "create", "--plan", "gold"))
	d.authz.decide(t, key)
	d.authz.decideFrom(t, "", "203.0.113.10")
	before := redisDump(t, srv)
	tests := []struct {
		name string
		code int
		want string
		args []string
		sent bool // the check function refuses it
	}{
		{"no command", exitUsage, "buckets: name a command: refund, reset, show", []string{"buckets"}, false},
		{"unknown command", exitUsage, `buckets: unknown command "drain"`, []string{"buckets", "drain", key}, false},
		{"no identity", exitUsage, "want 1 argument(s), got 0", []string{"buckets", "show"}, false},
		{"two identities", exitUsage, "want 1 argument(s), got 2", []string{"buckets", "show", key, "203.0.113.10"}, false},
		{"unknown identity kind", exitUsage, "unknown kind before ':'", []string{"buckets", "reset", "user:bob"}, false},
		{"key: with a raw key", exitUsage, "key: wants the key's digest", []string{"buckets", "reset", "key:" + key}, false},
		{"mistyped address", exitUsage, "looks like an IP address but is not one", []string{"buckets", "reset", "203.0.113.256"}, false},
		{"IPv6 prefix of another length", exitUsage, "the authorizer groups IPv6 sources by /64", []string{"buckets", "reset", "2001:db8::/48"}, false},
		{"empty tenant", exitUsage, "tenant: with no tenant key", []string{"buckets", "reset", "tenant:"}, false},
		{"refund without a cost", exitUsage, "buckets refund: --cost is required", []string{"buckets", "refund", key}, false},
		{"refund of 0", exitUsage, "--cost 0: want a whole number of tokens, 1 or more", []string{"buckets", "refund", "--cost", "0", key}, false},
		{"negative refund", exitUsage, "--cost -2: want a whole number of tokens, 1 or more", []string{"buckets", "refund", "--cost=-2", key}, false},
		{"fractional refund", exitUsage, `invalid value "1.5" for flag -cost: "1.5": want a whole decimal number`, []string{"buckets", "refund", "--cost", "1.5", key}, false},
		// Read as Go reads a number, 010 was 8 tokens, and 0x10 16.
		{"zero-padded refund", exitUsage, `invalid value "010" for flag -cost: "010": want a whole decimal number`, []string{"buckets", "refund", "--cost", "010", key}, false},
		{"hex refund", exitUsage, `invalid value "0x10" for flag -cost: "0x10": want a whole decimal number`, []string{"buckets", "refund", "--cost", "0x10", key}, false},
		{"refund with two costs", exitUsage, `invalid value "5" for flag -cost: given twice`, []string{"buckets", "refund", "--cost", "1", key, "--cost", "5"}, false},
		{"reset with a cost", exitUsage, "buckets reset: takes no --cost", []string{"buckets", "reset", key, "--cost", "1"}, false},
		{"show with a cost", exitUsage, "flag provided but not defined: -cost", []string{"buckets", "show", key, "--cost", "1"}, false},
		{"plan and rules", exitUsage, "--plan or --rule, not both", []string{"buckets", "reset", "--plan", "gold", "--rule", "burst:5:1", key}, false},
		{"bad rule", exitUsage, `"burst:5": want NAME:CAPACITY:RATE`, []string{"buckets", "reset", "--rule", "burst:5", key}, false},
		{"unknown plan", exitError, `bucketgate-check-test refused the request, nothing was changed: plan: unknown plan "platinum" (configured: basic, gold)`,
			[]string{"buckets", "reset", "--plan", "platinum", key}, true},
		{"refund above capacity", exitError, "cost: 6 exceeds capacity 5 of rule burst", []string{"buckets", "refund", "--cost", "6", "203.0.113.10"}, true},
		{"refund above the key's plan's capacity", exitError, "cost: 51 exceeds capacity 50 of rule burst", []string{"buckets", "refund", "--cost", "51", key}, true},
		{"unknown function", exitError, "no function nope in region us-east-1: check the region (AWS_REGION or the profile's), name the deployed stack with --stack or BUCKETGATE_STACK, or set CHECK_FUNCTION or --function", []string{"buckets", "reset", "--function", "nope", key}, false},
	}
	sent := d.lambda.Invocations(checkFunction)
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			d.t = t
			d.fails(tc.code, tc.want, tc.args...)
			if tc.sent {
				sent++
			}
			if n := d.lambda.Invocations(checkFunction); n != sent {
				t.Fatalf("%d invocations, want %d", n, sent)
			}
		})
	}
	d.t = t
	if after := redisDump(t, srv); after != before {
		t.Fatalf("bad input wrote to Redis:\nbefore %s\nafter  %s", before, after)
	}
	for _, tc := range tests {
		if _, _, stderr := d.run(tc.args...); strings.Contains(stderr, key) {
			t.Fatalf("%s: stderr quotes the raw key: %s", tc.name, stderr)
		}
	}

	d.env[envCheckFunction] = "elsewhere"
	d.fails(exitError, "no function elsewhere in region us-east-1: check the region (AWS_REGION or the profile's), name the deployed stack with --stack", "buckets", "show", key)
	d.want(d.bucket("show", "--function", checkFunction, key), "key:"+bucketgate.KeyDigest(key), "gold", "burst", 50, 49)

	// A bucket that Redis holds as what is not bucketgate's state fails closed as a Redis
	// that did not answer does: the CLI cannot tell which, and does not guess a timeout.
	if _, err := srv.Command(t.Context(), "SET", bucket.Key("ip:198.51.100.7"), "not a bucket"); err != nil {
		t.Fatal(err)
	}
	d.fails(exitError, "Redis did not decide (reason unavailable: it did not answer in time, holds what is not bucketgate's state, or the registry could not be read; the function's log line names the failure): the bucket could not be read",
		"buckets", "show", "--function", checkFunction, "198.51.100.7")

	srv.Close() // Redis gone: the function fails closed, and the CLI says what is unknown
	d.fails(exitError, "Redis did not decide (reason unavailable: it did not answer in time, holds what is not bucketgate's state, or the registry could not be read; the function's log line names the failure): the refund may or may not have happened",
		"buckets", "refund", "--function", checkFunction, "--cost", "1", key)
}

// A refund that names no plan is decided under the identity's plan, the default one for
// a tenant the registry does not know: it must not lower what a check under a larger
// plan left (the script adds to the stored count, never caps it down).
func TestBucketsRefundNeverLowers(t *testing.T) {
	d, _ := newDeployment(t)
	if _, err := d.check.Invoke(context.Background(), []byte(`{"key":"acme","plan":"gold","cost":10}`)); err != nil {
		t.Fatal(err)
	}
	d.want(d.bucket("show", "--plan", "gold", "tenant:acme"), "tenant:acme", "gold", "burst", 50, 40)
	d.want(d.bucket("refund", "--cost", "1", "tenant:acme"), "tenant:acme", "basic", "burst", 5, 5)
	d.want(d.bucket("show", "--plan", "gold", "tenant:acme"), "tenant:acme", "gold", "burst", 50, 40)
	d.want(d.bucket("refund", "--cost", "1", "--plan", "gold", "tenant:acme"), "tenant:acme", "gold", "burst", 50, 41)
}

// buckets show lists a concurrency rule (--rule NAME:N:concurrent) with its leases left
// and when the last one in flight ends.
func TestBucketsShowConcurrency(t *testing.T) {
	d, _ := newDeployment(t)
	rules := []string{"--rule", "streams:2:concurrent", "--rule", "burst:10:1"}
	b := d.bucket(append([]string{"show", "tenant:acme"}, rules...)...)
	if len(b.Rules) != 2 || !b.Rules[0].Concurrency || b.Rules[0].Limit != 2 || b.Rules[0].Remaining != 2 || b.Rules[0].ResetAfterMS != 0 {
		t.Fatalf("show before any lease: %+v", b.Rules)
	}
	if _, err := d.check.Invoke(context.Background(), []byte(`{"identity":"tenant:acme","rules":[{"name":"streams","concurrency":2},{"name":"burst","capacity":10,"refillPerSecond":1}],"ttlMs":60000}`)); err != nil {
		t.Fatal(err)
	}
	show := d.ok(append([]string{"buckets", "show", "tenant:acme"}, rules...)...)
	if !strings.Contains(show, "streams  concurrency  2      1          1 in flight, the last ends in ") {
		t.Fatalf("buckets show with a lease in flight:\n%s", show)
	}
}

// The buckets commands and usage say when the API key they are given is one the
// functions take as unknown (not in the table, revoked, expired): its requests spend
// their source address's buckets, and the key's own, which the command shows, nothing
// spends. They showed them as the caller's, and a refund of them gave nothing back to
// the caller.
func TestBucketsNoteAKeyTheFunctionsDoNotKnow(t *testing.T) {
	d, _ := newDeployment(t)
	active := strings.TrimSpace(d.ok("keys", "create", "--plan", "gold"))
	revoked := strings.TrimSpace(d.ok("keys", "create", "--plan", "gold"))
	d.ok("keys", "revoke", revoked)
	expired := strings.TrimSpace(d.ok("keys", "create", "--plan", "gold"))
	d.ok("keys", "expire", expired, "2020-01-01")
	d.ok("accounts", "create", "gone", "--plan", "gold")
	ofRevoked := strings.TrimSpace(d.ok("keys", "create", "--account", "gone"))
	d.ok("accounts", "revoke", "gone")
	d.ok("accounts", "create", "past", "--plan", "gold")
	ofExpired := strings.TrimSpace(d.ok("keys", "create", "--account", "past"))
	d.ok("accounts", "expire", "past", "2020-01-01")
	d.ok("accounts", "create", "deleted", "--plan", "gold")
	ofDeleted := strings.TrimSpace(d.ok("keys", "create", "--account", "deleted"))
	d.ok("accounts", "create", "paused", "--plan", "gold")
	ofPaused := strings.TrimSpace(d.ok("keys", "create", "--account", "paused"))
	paused := map[string]types.AttributeValue{registry.KeyAttribute: &types.AttributeValueMemberS{Value: "account:paused"},
		"plan": &types.AttributeValueMemberS{Value: "gold"}, "status": &types.AttributeValueMemberS{Value: "paused"}}
	const invalid = "bg-key-of-an-invalid-item"
	pausedKey := maps.Clone(paused)
	pausedKey[registry.KeyAttribute] = &types.AttributeValueMemberS{Value: keyID(invalid)}
	for _, item := range []map[string]types.AttributeValue{paused, pausedKey} {
		if _, err := d.db.PutItem(context.Background(), &dynamodb.PutItemInput{TableName: aws.String(table), Item: item}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := d.db.DeleteItem(context.Background(), &dynamodb.DeleteItemInput{TableName: aws.String(table),
		Key: map[string]types.AttributeValue{registry.KeyAttribute: &types.AttributeValueMemberS{Value: "account:deleted"}}}); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, key string
		args      []string
		note      string // in stderr; "" for none
	}{
		{"active", active, []string{"buckets", "show"}, ""},
		{"not in the table", "bg-never-registered", []string{"buckets", "show"}, "is not in table " + d.env[settings.EnvRegistryTable]},
		{"revoked", revoked, []string{"buckets", "refund", "--cost", "1"}, "is revoked in table"},
		{"expired", expired, []string{"buckets", "reset"}, "expired at 2020-01-01T00:00:00Z in table"},
		{"an invalid item", invalid, []string{"buckets", "show"}, "has an item in table " + table + " that is invalid"},
		{"usage of one not in the table", "bg-never-registered", []string{"usage"}, "is not in table"},
		{"from stdin", "-", []string{"buckets", "show"}, "is not in table"},
		{"of a revoked account", ofRevoked, []string{"buckets", "show"}, "is a key of account gone, which is revoked in table"},
		{"usage of one of an expired account", ofExpired, []string{"usage"}, "is a key of account past, which expired at 2020-01-01T00:00:00Z in table"},
		{"of an account not in the table", ofDeleted, []string{"buckets", "show"}, "is a key of account deleted, which is not in table"},
		{"of an account whose item is invalid", ofPaused, []string{"usage"}, "is a key of account paused, whose item in table " + table + " is invalid"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			d.stdin = "bg-from-stdin-never-registered\n"
			code, stdout, stderr := d.run(append(tc.args, tc.key)...)
			if code != exitOK || stdout == "" {
				t.Fatalf("%v %s: exit %d\n%s%s", tc.args, tc.key, code, stdout, stderr)
			}
			id := bucketgate.KeyDigest(strings.TrimSuffix(d.stdin, "\n"))
			if tc.key != "-" {
				id = bucketgate.KeyDigest(tc.key)
			}
			note := "note: key:" + id + " "
			switch got := strings.Contains(stderr, note); {
			case tc.note == "" && got:
				t.Errorf("%v of an active key: %s", tc.args, stderr)
			case tc.note != "" && (!got || !strings.Contains(stderr, tc.note) || !strings.Contains(stderr, "source address")):
				t.Errorf("%v %s: stderr %q, want a note that it %s and is limited as its source address", tc.args, tc.key, stderr, tc.note)
			}
		})
	}
	// An account the functions do not hold as active, named acct:NAME, is noted as its
	// keys are: a mistyped name showed the default plan's full buckets, and reset them,
	// as if they were the customer's.
	d.ok("accounts", "create", "live", "--plan", "gold")
	for _, tc := range []struct {
		name, account string
		args          []string
		note          string // in stderr; "" for none
	}{
		{"an active account", "live", []string{"buckets", "show"}, ""},
		{"an account not in the table", "livee", []string{"buckets", "reset"}, "is not in table " + table},
		{"usage of a revoked account", "gone", []string{"usage"}, "is revoked in table " + table},
		{"an expired account", "past", []string{"buckets", "show"}, "expired at 2020-01-01T00:00:00Z in table " + table},
		{"an account whose item is invalid", "paused", []string{"buckets", "show"}, "whose item in table " + table + " is invalid"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, stdout, stderr := d.run(append(tc.args, "acct:"+tc.account)...)
			if code != exitOK || stdout == "" {
				t.Fatalf("%v acct:%s: exit %d\n%s%s", tc.args, tc.account, code, stdout, stderr)
			}
			switch got := strings.Contains(stderr, "note: acct:"+tc.account+" "); {
			case tc.note == "" && got:
				t.Errorf("%v of an active account: %s", tc.args, stderr)
			case tc.note != "" && (!got || !strings.Contains(stderr, tc.note) || !strings.Contains(stderr, "source address")):
				t.Errorf("%v acct:%s: stderr %q, want a note that it %s and its keys are limited as their source address", tc.args, tc.account, stderr, tc.note)
			}
		})
	}
}

// The buckets commands and usage of a key of an account name the account, whose buckets
// and usage they show, refund and reset, and say so on stderr: they labelled the
// account's as the key's own (key:<digest>), and usage --csv, which has no identity
// column, gave a script billing key by key the account's total once per key.
func TestBucketsOfAKeyOfAnAccountNameTheAccount(t *testing.T) {
	d, _ := newDeployment(t)
	d.ok("accounts", "create", "acme", "--plan", "gold")
	key := strings.TrimSpace(d.ok("keys", "create", "--account", "acme"))
	id := keyID(key)
	d.authz.decide(t, key)
	d.want(d.bucket("show", key), "acct:acme", "gold", "burst", 50, 49)
	note := "note: the buckets of " + id + " are those of acct:acme"
	tests := []struct {
		name   string
		args   []string
		stdout string // in stdout
		stderr []string
	}{
		{"show", []string{"buckets", "show", key}, "identity    acct:acme\n", []string{note}},
		{"refund", []string{"buckets", "refund", "--cost", "1", key}, "identity    acct:acme\n", []string{note, "every rule of acct:acme"}},
		{"reset", []string{"buckets", "reset", id}, "identity    acct:acme\n", []string{note, "reset acct:acme"}},
		{"usage --csv", []string{"usage", "--csv", key}, "date,allowed,limited,cost\n", []string{"note: the usage of " + id + " is that of acct:acme"}},
		{"the account itself", []string{"buckets", "show", "acct:acme"}, "identity    acct:acme\n", nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			code, stdout, stderr := d.run(tc.args...)
			if code != exitOK || !strings.Contains(stdout, tc.stdout) {
				t.Fatalf("%v: exit %d, stdout %q, want %q in it\n%s", tc.args, code, stdout, tc.stdout, stderr)
			}
			for _, want := range tc.stderr {
				if !strings.Contains(stderr, want) {
					t.Errorf("%v: stderr %q, want %q", tc.args, stderr, want)
				}
			}
			if tc.stderr == nil && strings.Contains(stderr, "note:") {
				t.Errorf("%v: stderr %q, want no note", tc.args, stderr)
			}
		})
	}
}

// A lone key that keys roll made an account of, once its overlap ended, names the
// account's buckets: the account spends the key's own, key:<digest>, which its new key
// spends. The commands showed them on the default plan (1 of free's burst of 10, not
// 49 of gold's 50) and noted that nothing spends them, while the account's keys did.
func TestBucketsOfARolledLoneKey(t *testing.T) {
	d, _ := newDeployment(t)
	lone := strings.TrimSpace(d.ok("keys", "create", "--plan", "gold"))
	id := keyID(lone)
	d.authz.decide(t, lone)
	next := strings.TrimSpace(d.ok("keys", "roll", "--overlap", "0", lone))
	for _, tc := range []struct{ name, key string }{
		{"the old key, expired", lone},
		{"the new key", next},
		{"the account", "acct:key-" + bucketgate.KeyDigest(lone)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, stdout, stderr := d.run("buckets", "show", "--json", tc.key)
			var b bucketJSON
			if code != exitOK || json.Unmarshal([]byte(stdout), &b) != nil {
				t.Fatalf("buckets show %s: exit %d %q %q", tc.name, code, stdout, stderr)
			}
			if b.Identity != id || b.Plan != "gold" || b.Limit != 50 || b.Remaining != 49 {
				t.Errorf("buckets show %s: %+v, want %s's on gold, 49 of 50 left", tc.name, b, id)
			}
			if strings.Contains(stderr, "nothing spends") || tc.key == lone && (!strings.Contains(stderr, "note: "+id+" expired at ") || !strings.Contains(stderr, ", spends its buckets")) {
				t.Errorf("buckets show %s: stderr %q, want no note that nothing spends the account's buckets, and one that the account spends the old key's", tc.name, stderr)
			}
		})
	}
}

// A table the buckets commands and usage cannot read (AWS refuses the read, as it does
// an operator without DynamoDB access) leaves the key's status unknown: they say in one
// line on stderr what they could not check, and still print the answer, exit 0. They
// said nothing, as if the key were active.
func TestBucketsSayWhatTheyCouldNotCheck(t *testing.T) {
	d, _ := newDeployment(t)
	lone := strings.TrimSpace(d.ok("keys", "create", "--plan", "gold"))
	d.ok("accounts", "create", "acme", "--plan", "gold")
	member := strings.TrimSpace(d.ok("keys", "create", "--account", "acme"))
	calls := newRecorder(t, map[string]string{"dynamodb": os.Getenv("AWS_ENDPOINT_URL_DYNAMODB")})
	t.Setenv("AWS_ENDPOINT_URL_DYNAMODB", calls.URL)
	anyRead := func(action string, _ []byte) bool { return action == "dynamodb:GetItem" }
	accountRead := func(action string, body []byte) bool {
		return action == "dynamodb:GetItem" && bytes.Contains(body, []byte(`"S":"`+registry.AccountItemPrefix))
	}
	tests := []struct {
		name    string
		refuse  func(string, []byte) bool
		args    []string
		checked string // what the line says could not be checked
	}{
		{"buckets show of a key", anyRead, []string{"buckets", "show", lone}, "key:" + bucketgate.KeyDigest(lone) + " is active"},
		{"usage of a key", anyRead, []string{"usage", lone}, "key:" + bucketgate.KeyDigest(lone) + " is active"},
		{"buckets reset of an account", anyRead, []string{"buckets", "reset", "acct:acme"}, "acct:acme is active"},
		{"the account of a key", accountRead, []string{"buckets", "show", member}, "account acme of key:" + bucketgate.KeyDigest(member) + " is active"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			calls.refuseWhen(tc.refuse)
			defer calls.refuseWhen(nil)
			code, stdout, stderr := d.run(tc.args...)
			want := "note: could not check that " + tc.checked + " in table " + table
			lines := strings.Split(strings.TrimSuffix(stderr, "\n"), "\n")
			if code != exitOK || stdout == "" || !slices.ContainsFunc(lines, func(l string) bool {
				return strings.HasPrefix(l, want) && strings.Contains(l, "refused by the test")
			}) {
				t.Fatalf("bucketgate %s: exit %d, stdout %q, stderr %q: want exit 0, the answer, and a line %q... naming AWS's refusal", strings.Join(tc.args, " "), code, stdout, stderr, want)
			}
		})
	}
}

// tenant:<digest> names a registered tenant whose key has that digest, or else a tenant
// whose key is those digits: only the table tells which, and so whose buckets (or usage)
// to ask for. A table that cannot be read then stops the command, exit 1 and the function
// not invoked, with a line saying why the table was needed and how to do without it (the
// tenant's key itself); it said only that the table could not be used, as if a key's
// note were an error.
func TestTenantDigestNeedsTheTable(t *testing.T) {
	d, _ := newDeployment(t)
	d.ok("keys", "create", "--plan", "gold", "--tenant", "acme")
	digest := strings.TrimPrefix(bucketgate.LogForm("tenant:acme"), bucketgate.TenantPrefix)
	calls := newRecorder(t, map[string]string{"dynamodb": os.Getenv("AWS_ENDPOINT_URL_DYNAMODB")})
	t.Setenv("AWS_ENDPOINT_URL_DYNAMODB", calls.URL)
	calls.refuseWhen(func(action string, _ []byte) bool { return strings.HasPrefix(action, "dynamodb:") })
	want := "tenant:" + digest + ": only table " + table + " tells which tenant it names (a registered tenant whose key has this digest, or else a tenant whose key is these digits), and it could not be read: give the tenant's key itself (tenant:KEY), which needs no table: "
	for _, tc := range []struct {
		name string
		args []string
	}{
		{"buckets show", []string{"buckets", "show", "tenant:" + digest}},
		{"usage", []string{"usage", "tenant:" + digest}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			invoked := d.lambda.Invocations(checkFunction)
			code, stdout, stderr := d.run(tc.args...)
			if code != exitError || stdout != "" || !strings.HasPrefix(stderr, "bucketgate: "+want) || !strings.Contains(stderr, "refused by the test") {
				t.Fatalf("bucketgate %s: exit %d, stdout %q, stderr %q: want exit 1 and %q... naming AWS's refusal", strings.Join(tc.args, " "), code, stdout, stderr, want)
			}
			if n := d.lambda.Invocations(checkFunction); n != invoked {
				t.Fatalf("invoked the function %d times without knowing whose buckets", n-invoked)
			}
		})
	}
	calls.refuseWhen(nil)
	d.want(d.bucket("show", "tenant:"+digest), "tenant:acme", "gold", "burst", 50, 50) // the table read, the registered tenant's
}

// An API key bucketgate made is no check function tenant's key (the function refuses it
// as a key): tenant:bg_... on the command line is taken as tenant:<its digest>, the tenant
// a service names by the key's digest, with a note saying so, and the key itself goes in
// no request, to Lambda or to DynamoDB, nor into Redis, the table or the logs. It went
// as it was, to rest in Redis (bg:{tenant:bg_...}) on the function of an earlier release.
func TestTenantMadeKeyDigested(t *testing.T) {
	d, srv := newDeployment(t)
	key := "bg_" + strings.Repeat("Q", 43)
	digest := bucketgate.KeyDigest(key)
	d.ok("keys", "create", "--plan", "gold", "--tenant", digest)
	calls := newRecorder(t, map[string]string{"dynamodb": os.Getenv("AWS_ENDPOINT_URL_DYNAMODB"), "lambda": d.lambda.URL})
	t.Setenv("AWS_ENDPOINT_URL_DYNAMODB", calls.URL)
	t.Setenv("AWS_ENDPOINT_URL_LAMBDA", calls.URL)
	var (
		mu   sync.Mutex
		sent []string // the actions of the requests that carried the key
	)
	calls.refuseWhen(func(action string, body []byte) bool {
		mu.Lock()
		defer mu.Unlock()
		if bytes.Contains(body, []byte(key)) {
			sent = append(sent, action)
		}
		return false
	})
	note := "note: tenant:bg_... is an API key bucketgate made, which no tenant's key is (the check function refuses it): taken as tenant:" + digest + ", the tenant named by the key's digest (the API key itself is key:" + digest + ")\n"
	for _, tc := range []struct {
		name string
		args []string
	}{
		{"buckets show", []string{"buckets", "show", "tenant:" + key}},
		{"buckets reset", []string{"buckets", "reset", "tenant:" + key}},
		{"usage", []string{"usage", "tenant:" + key}},
		{"keys show", []string{"keys", "show", "tenant:" + key}},
		{"keys set-plan", []string{"keys", "set-plan", "tenant:" + key, "basic"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, stdout, stderr := d.run(tc.args...)
			if code != exitOK || !strings.Contains(stdout+stderr, "tenant:"+digest) || !strings.HasPrefix(stderr, note) || strings.Contains(stdout, key) {
				t.Fatalf("bucketgate %s: exit %d, stdout %q, stderr %q: want exit 0, tenant:%s's answer, and first on stderr %q", strings.Join(tc.args, " "), code, stdout, stderr, digest, note)
			}
		})
	}
	mu.Lock()
	defer mu.Unlock()
	if len(sent) != 0 {
		t.Errorf("the key went in requests %v", sent)
	}
	if everything := d.check.logs.String() + redisDump(t, srv) + d.items(); strings.Contains(everything, key) {
		t.Errorf("the key is in the function's logs, Redis or the table:\n%s", everything)
	}
}
