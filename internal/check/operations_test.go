package check

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/bucketgate/bucketgate"
	"github.com/bucketgate/bucketgate/checkapi"
	"github.com/bucketgate/bucketgate/internal/bucket"
	"github.com/bucketgate/bucketgate/internal/config"
	"github.com/bucketgate/bucketgate/internal/guard"
	"github.com/bucketgate/bucketgate/internal/identity"
	"github.com/bucketgate/bucketgate/internal/registry"
	"github.com/bucketgate/bucketgate/internal/settings"
	"github.com/bucketgate/bucketgate/internal/telemetry"
	"github.com/bucketgate/bucketgate/internal/testkit/redistest"
	"github.com/bucketgate/bucketgate/internal/testkit/registrytest"
	"github.com/bucketgate/bucketgate/internal/testkit/samples"
)

// trialRule is a shadow rule of 2 tokens that refills too slowly to matter in a test.
const trialRule = `{"name":"trial","capacity":2,"refillPerSecond":0.001,"shadow":true}`

// TestOperationsRealRedis: refunds and resets, single and in a batch, through the
// handler on a real server: each answers the buckets after it; a refund never goes
// above capacity; a reset removes the state, and the key with it.
func TestOperationsRealRedis(t *testing.T) {
	srv := redistest.Start(t)
	client := redistest.Client(t, srv.Addr)
	f := newFixture(t, client, nil, guard.Options{})
	key := bucket.Key(identityPrefix + "tenant-7")
	slow := `{"key":"tenant-7","rules":[` + slowRule + `]`
	steps := []struct {
		payload   string
		remaining int64
	}{
		{slow + `,"cost":7}`, 3},
		{slow + `,"op":"refund","cost":2}`, 5},
		{slow + `,"op":"refund","cost":10}`, 10},
		{slow + `,"cost":4}`, 6},
		{slow + `,"op":"check","cost":1}`, 5},
		{slow + `,"op":"reset"}`, 10},
	}
	for _, s := range steps {
		r := decodeResponse(t, f.invokeOK(t, []byte(s.payload)))
		if !r.Allowed || r.Reason != checkapi.ReasonOK || r.Remaining != s.remaining || r.Rule != "slow" || r.Limit != 10 {
			t.Fatalf("%s: %+v, want allowed with %d left", s.payload, r, s.remaining)
		}
	}
	if n, err := client.Do(context.Background(), client.B().Exists().Key(key).Build()).AsInt64(); err != nil || n != 0 {
		t.Fatalf("EXISTS %s after the reset = %d, %v: want the key gone", key, n, err)
	}

	var batch checkapi.BatchResult
	out := f.invokeOK(t, []byte(`{"checks":[`+slow+`,"cost":5},`+slow+`,"op":"refund","cost":5},`+slow+`,"cost":10},`+
		slow+`,"op":"reset"},`+slow+`,"cost":0},`+slow+`,"cost":1}]}`))
	if err := json.Unmarshal(out, &batch); err != nil {
		t.Fatal(err)
	}
	want := []int64{5, 10, 0, 10, 10, 9}
	for i, r := range batch.Results {
		if !r.Allowed || r.Remaining != want[i] {
			t.Fatalf("results[%d] = %+v, want allowed with %d left (all: %s)", i, r, want[i], out)
		}
	}

	// The operator's path: the authorizer's buckets of an API key, by its digest.
	digest := bucketgate.KeyDigest("an-api-key")
	apiKey := `{"identity":"key:` + digest + `","plan":"free"`
	if r := decodeResponse(t, f.invokeOK(t, []byte(apiKey+`,"cost":10}`))); !r.Allowed || r.Remaining != 0 || r.Plan != "free" {
		t.Fatalf("spending the key's bucket: %+v", r)
	}
	if r := decodeResponse(t, f.invokeOK(t, []byte(apiKey+`,"op":"refund","cost":4}`))); r.Remaining != 4 {
		t.Fatalf("refund of the key's bucket: %+v", r)
	}
	if n, err := client.Do(context.Background(), client.B().Exists().Key(bucket.Key("key:"+digest)).Build()).AsInt64(); err != nil || n != 1 {
		t.Fatalf("the key's bucket is not the authorizer's: EXISTS bg:{key:%s} = %d, %v", digest, n, err)
	}
	if r := decodeResponse(t, f.invokeOK(t, []byte(apiKey+`,"op":"reset"}`))); r.Remaining != 10 {
		t.Fatalf("reset of the key's bucket: %+v", r)
	}
	if logs := f.logs.String(); strings.Count(logs, `"msg":"`+MsgOperation+`"`) != 5 || !strings.Contains(logs, `"op":"reset"`) {
		t.Errorf("want an info line per reset (2) and per request on the operator's path (3):\n%s", logs)
	}
}

// TestShadowRulesThroughTheHandler: a shadow rule never denies and is not described in
// the response; its would-be denials are counted (ShadowLimited, an inline rule under
// telemetry.InlineRule so that callers' names never become dimensions) and logged at
// info with the identity's digest and the rule's name; with shadow rules alone the
// check is allowed and describes no rule.
func TestShadowRulesThroughTheHandler(t *testing.T) {
	srv := redistest.Start(t)
	f := newFixture(t, redistest.Client(t, srv.Addr), nil, guard.Options{})
	both := []byte(`{"key":"tenant-42","rules":[` + trialRule + `,` + slowRule + `]}`)
	for i, wantRemaining := range []int64{9, 8, 7} {
		r := decodeResponse(t, f.invokeOK(t, both))
		if !r.Allowed || r.Rule != "slow" || r.Limit != 10 || r.Remaining != wantRemaining {
			t.Fatalf("check %d: %+v, want allowed by slow with %d left", i+1, r, wantRemaining)
		}
	}
	lines := emfLines(t, f.metrics)
	shadow := 0
	for _, l := range lines {
		if n, ok := l[telemetry.MetricShadowLimited]; ok {
			shadow++
			if n != 1.0 || l[telemetry.DimRule] != telemetry.InlineRule || l[telemetry.DimFunction] != testFunction {
				t.Errorf("ShadowLimited line %v: want 1 for rule %s", l, telemetry.InlineRule)
			}
		}
	}
	logs := f.logs.String()
	if shadow != 1 || strings.Count(logs, telemetry.MsgShadowLimited) != 1 || !strings.Contains(logs, bucketgate.KeyDigest("tenant-42")) ||
		!strings.Contains(logs, `"rule":"trial"`) || strings.Contains(logs, `"tenant-42"`) {
		t.Fatalf("%d ShadowLimited lines in %v; logs:\n%s\nwant one, and one info line with the key's digest", shadow, lines, logs)
	}

	alone := []byte(`{"key":"tenant-42","rules":[` + trialRule + `]}`)
	assertJSONEqual(t, f.invokeOK(t, alone), `{"allowed":true,"reason":"ok","limit":0,"remaining":0,"retryAfterMs":0,"resetAfterMs":0,"rule":"","plan":""}`)
}

// TestKeysStayDistinct: keys that decode to different strings never share a bucket (the
// escaped pair and the character it encodes are one string, hence one key); keys that
// JSON decoding could not keep apart are refused, through the handler.
func TestKeysStayDistinct(t *testing.T) {
	_, client := startMiniredis(t)
	f := newFixture(t, client, nil, guard.Options{})
	keys := []string{`\ufffd`, "\ufffd", `\ud83d\ude00`, "😀", `a\u0000`, `a`, `\u00e9`, "e\u0301"}
	same := map[string]string{"\ufffd": `\ufffd`, "😀": `\ud83d\ude00`}
	for _, k := range keys {
		r := decodeResponse(t, f.invokeOK(t, []byte(`{"key":"`+k+`","plan":"free","cost":0}`)))
		want := int64(10)
		if _, ok := same[k]; ok {
			want = 0 // the other spelling drained it
		}
		if r.Remaining != want {
			t.Fatalf("key %s: %d left, want %d: another key's bucket", k, r.Remaining, want)
		}
		f.invokeOK(t, []byte(`{"key":"`+k+`","plan":"free","cost":10}`))
	}
	for _, k := range []string{`\ud800`, `\udc00`, "\xff", "\xfe", `\ud800\ud800`} {
		if _, err := f.invoke([]byte(`{"key":"` + k + `","plan":"free"}`)); err == nil || !strings.Contains(err.Error(), "U+FFFD") {
			t.Errorf("key %q: %v, want a refusal naming U+FFFD", k, err)
		}
	}
}

// TestOperatorIdentityPlans: an identity named without plan or rules is on the plan the
// authorizer would give it: a registered key on its registry plan, a source address on
// the default plan.
func TestOperatorIdentityPlans(t *testing.T) {
	cfg, err := config.ReadFile(samples.Path("authorizer-config.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	_, client := startMiniredis(t)
	f := newFixture(t, client, cfg, guard.Options{})
	tests := []struct{ identity, plan string }{
		{"key:" + bucketgate.KeyDigest("bg-sample-pro-key"), "pro"},
		{"key:" + bucketgate.KeyDigest("a key nobody registered"), "free"},
		{"ip:203.0.113.10", "free"},
		{"ip:2001:db8:1:2::/64", "free"},
	}
	for _, tc := range tests {
		r := decodeResponse(t, f.invokeOK(t, []byte(`{"identity":"`+tc.identity+`","cost":0}`)))
		if r.Plan != tc.plan || !r.Allowed {
			t.Errorf("%s: %+v, want plan %s", tc.identity, r, tc.plan)
		}
	}
}

// withIPv6Prefix makes f's handler group IPv6 sources by bits, as an authorizer with
// IPV6_PREFIX_LENGTH=bits does.
func (f *fixture) withIPv6Prefix(t *testing.T, bits int) {
	t.Helper()
	r, err := identity.NewResolver(settings.DefaultAPIKeyHeader, bits)
	if err != nil {
		t.Fatal(err)
	}
	f.h.Identities = r
}

// TestOperatorSourcesAsTheAuthorizerSpellsThem: an "ip:" identity is taken only as the
// authorizer writes the source, under its IPv6 grouping (IPV6_PREFIX_LENGTH): any
// other spelling would reach a bucket the authorizer never spends, so it is refused,
// naming the spelling to use, and nothing is written.
func TestOperatorSourcesAsTheAuthorizerSpellsThem(t *testing.T) {
	tests := []struct {
		bits     int
		identity string
		want     string // the error's text after the identity; "" for accepted
	}{
		{64, "ip:192.0.2.1", ""},
		{64, "ip:2001:db8::/64", ""},
		{64, "ip:unknown", ""},
		{64, "ip:2001:db8::1", "want ip:2001:db8::/64, as the authorizer spells this source (it groups IPv6 sources by /64, IPV6_PREFIX_LENGTH)"},
		{64, "ip:2001:db8::/48", "want an address or a /64 prefix: the authorizer groups IPv6 sources by /64 (IPV6_PREFIX_LENGTH), and a /48 holds many of its identities"},
		{64, "ip:2001:db8::/96", "want ip:2001:db8::/64, as the authorizer spells this source"},
		{64, "ip:192.0.2.0/24", "want ip:<address>: the authorizer counts IPv4 sources one by one"},
		{64, "ip:::ffff:192.0.2.1", "want ip:192.0.2.1, as the authorizer spells this source"},
		{64, "ip:fe80::1%eth0", "want ip:fe80::/64, as the authorizer spells this source"},
		{48, "ip:2001:db8::/48", ""},
		{48, "ip:2001:db8::/64", "want ip:2001:db8::/48, as the authorizer spells this source (it groups IPv6 sources by /48, IPV6_PREFIX_LENGTH)"},
		{128, "ip:2001:db8::1", ""},
		{128, "ip:2001:db8::/64", "want an address or a /128 prefix"},
		{128, "ip:2001:db8::1/128", "want ip:2001:db8::1, as the authorizer spells this source"},
		{128, "ip:fe80::1%eth0", "want ip:fe80::1, as the authorizer spells this source"}, // its zone is dropped: never in the authorizer's
		{128, "ip:fe80::1%eth0/128", "want ip:fe80::1, as the authorizer spells this source"},
	}
	for _, tc := range tests {
		t.Run(fmt.Sprintf("/%d %s", tc.bits, tc.identity), func(t *testing.T) {
			mr, client := startMiniredis(t)
			f := newFixture(t, client, nil, guard.Options{})
			f.withIPv6Prefix(t, tc.bits)
			out, err := f.invoke([]byte(`{"identity":"` + tc.identity + `","op":"reset"}`))
			if tc.want == "" {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				if r := decodeResponse(t, out); r.Reason != checkapi.ReasonOK {
					t.Fatalf("%+v", r)
				}
				return
			}
			ive := functionError(t, err)
			if want := fmt.Sprintf("identity: %q: %s", tc.identity, tc.want); !strings.HasPrefix(ive.Message, want) {
				t.Fatalf("error %q\nwant it to start %q", ive.Message, want)
			}
			if keys := mr.Keys(); len(keys) != 0 {
				t.Fatalf("a refused identity wrote %v", keys)
			}
		})
	}
}

// TestOperatorAddressesAreNoRegistryIdentities: only keys and tenants are in the
// registry. An address named without plan or rules is on the default plan, whatever an
// item written under its id says, with no read of the table: so with the table down,
// its buckets are still shown, refunded and reset; a key's are not.
func TestOperatorAddressesAreNoRegistryIdentities(t *testing.T) {
	_, client := startMiniredis(t)
	f := newFixture(t, client, nil, guard.Options{})
	src := registrytest.New(registry.Record{ID: "ip:203.0.113.10", Plan: "enterprise"})
	f.withRegistry(src)
	if r := decodeResponse(t, f.invokeOK(t, []byte(`{"identity":"ip:203.0.113.10","cost":0}`))); r.Plan != "free" || r.Limit != 10 {
		t.Fatalf("%+v: want the default plan, whatever the item under the address's id says", r)
	}
	src.Fail(errors.New("dynamodb: unreachable"))
	for _, payload := range []string{
		`{"identity":"ip:203.0.113.10","op":"reset"}`,
		`{"identity":"ip:203.0.113.10","op":"refund","cost":2}`,
		`{"identity":"ip:2001:db8::/64","cost":0}`,
	} {
		if r := decodeResponse(t, f.invokeOK(t, []byte(payload))); r.Reason != checkapi.ReasonOK || r.Plan != "free" {
			t.Errorf("%s with the table down: %+v, want it done on the default plan", payload, r)
		}
	}
	if src.Reads() != 0 {
		t.Errorf("%d reads of the table for addresses, want none", src.Reads())
	}
	digest := "key:" + bucketgate.KeyDigest("some key")
	if r := decodeResponse(t, f.invokeOK(t, []byte(`{"identity":"`+digest+`","op":"reset"}`))); r.Reason != checkapi.ReasonUnavailable {
		t.Errorf("a key's reset with the table down: %+v, want unavailable", r)
	}
	if strings.Contains(f.metrics.String(), `"Result":"miss"`) {
		t.Errorf("lookups counted for addresses: %s", f.metrics)
	}
}

// TestOperatorTenantIdentity: the operator's path reaches a tenant's buckets as
// "tenant:<key>" (the CLI's spelling), on its registry plan, logged at info like every
// request on that path, the key as its digest only.
func TestOperatorTenantIdentity(t *testing.T) {
	_, client := startMiniredis(t)
	f := newFixture(t, client, nil, guard.Options{})
	f.withRegistry(registrytest.New(registry.Record{ID: "tenant:acme-secret-name", Plan: "pro"}))
	f.invokeOK(t, []byte(`{"key":"acme-secret-name","cost":5}`))
	for _, payload := range []string{
		`{"identity":"tenant:acme-secret-name","cost":0}`,
		`{"identity":"tenant:acme-secret-name","op":"refund","cost":2}`,
	} {
		if r := decodeResponse(t, f.invokeOK(t, []byte(payload))); r.Plan != "pro" || r.Limit != 100 {
			t.Fatalf("%s: %+v, want the tenant's pro buckets", payload, r)
		}
	}
	if r := decodeResponse(t, f.invokeOK(t, []byte(`{"key":"acme-secret-name","cost":0}`))); r.Remaining != 97 {
		t.Fatalf("%+v: want the tenant's own bucket, 5 taken and 2 given back", r)
	}
	logs := f.logs.String()
	if n := strings.Count(logs, `"msg":"`+MsgOperation+`"`); n != 2 || !strings.Contains(logs, `"identity":"tenant:`+bucketgate.KeyDigest("acme-secret-name")+`"`) {
		t.Fatalf("%d info lines for 2 operator requests, or no digest:\n%s", n, logs)
	}
	if strings.Contains(logs, "acme-secret-name") {
		t.Fatalf("a tenant's key in the logs:\n%s", logs)
	}
}

// TestCostAboveAShadowCapacity: a cost, or a refund, above a shadow rule's capacity is
// no invalid request (a limit tried in shadow would have refused a live caller's
// requests): the check is allowed by its enforced rules, a shadow denial of the shadow
// rule (counted, its bucket untouched), and a refund fills the shadow rule at most.
func TestCostAboveAShadowCapacity(t *testing.T) {
	srv := redistest.Start(t)
	f := newFixture(t, redistest.Client(t, srv.Addr), nil, guard.Options{})
	rules := `"rules":[` + trialRule + `,` + slowRule + `]`
	steps := []struct {
		name, payload string
		want          string
		shadowDenied  float64
	}{
		{"cost above the shadow capacity", `{"key":"tenant-5",` + rules + `,"cost":5}`,
			`{"allowed":true,"reason":"ok","limit":10,"remaining":5,"retryAfterMs":0,"resetAfterMs":5000000,"rule":"slow","plan":""}`, 1},
		{"refund above it", `{"key":"tenant-5",` + rules + `,"op":"refund","cost":5}`,
			`{"allowed":true,"reason":"ok","limit":10,"remaining":10,"retryAfterMs":0,"resetAfterMs":0,"rule":"slow","plan":""}`, 0},
		{"shadow rules alone", `{"key":"tenant-5","rules":[` + trialRule + `],"cost":3}`,
			`{"allowed":true,"reason":"ok","limit":0,"remaining":0,"retryAfterMs":0,"resetAfterMs":0,"rule":"","plan":""}`, 1},
		{"the shadow bucket untouched", `{"key":"tenant-5","rules":[` + trialRule + `],"cost":2}`,
			`{"allowed":true,"reason":"ok","limit":0,"remaining":0,"retryAfterMs":0,"resetAfterMs":0,"rule":"","plan":""}`, 0},
	}
	for _, s := range steps {
		t.Run(s.name, func(t *testing.T) {
			f.metrics.Reset()
			assertJSONEqual(t, f.invokeOK(t, []byte(s.payload)), s.want)
			denied := 0.0
			for _, l := range emfLines(t, f.metrics) {
				if n, ok := l[telemetry.MetricShadowLimited].(float64); ok {
					denied += n
				}
			}
			if denied != s.shadowDenied {
				t.Fatalf("ShadowLimited %v, want %v", denied, s.shadowDenied)
			}
		})
	}
}

// TestAllShadowNeverDenied: a shadow rule never denies, Redis down or not: a check whose
// rules are all shadow, which Redis could not decide, is allowed (degraded) when failing
// closed, and counts FailOpen, no FailClosed; one with an enforced rule beside them fails closed,
// describing that rule. (It was denied, unavailable: trying a limit in shadow turned a
// Redis outage into denials.)
func TestAllShadowNeverDenied(t *testing.T) {
	srv := redistest.Start(t)
	f := newFixture(t, redistest.Client(t, srv.Addr), nil, guard.Options{})
	f.invokeOK(t, []byte(`{"key":"warm","rules":[`+slowRule+`]}`)) // connected, script loaded
	srv.Stop()
	tests := []struct {
		name     string
		payload  string
		want     string
		failures int // FailClosed count
		open     int // FailOpen count
	}{
		{"all shadow", `{"key":"tenant-42","rules":[` + trialRule + `]}`,
			`{"allowed":true,"reason":"degraded","limit":0,"remaining":0,"retryAfterMs":0,"resetAfterMs":0,"rule":"","plan":""}`, 0, 1},
		{"all shadow in a batch", `{"checks":[{"key":"tenant-42","rules":[` + trialRule + `]},{"key":"tenant-42","rules":[` + trialRule + `],"op":"refund"}]}`,
			`{"results":[{"allowed":true,"reason":"degraded","limit":0,"remaining":0,"retryAfterMs":0,"resetAfterMs":0,"rule":"","plan":""},
			{"allowed":true,"reason":"degraded","limit":0,"remaining":0,"retryAfterMs":0,"resetAfterMs":0,"rule":"","plan":""}]}`, 0, 2},
		{"shadow beside an enforced rule", `{"key":"tenant-42","rules":[` + trialRule + `,` + slowRule + `]}`,
			`{"allowed":false,"reason":"unavailable","limit":10,"remaining":0,"retryAfterMs":1000,"resetAfterMs":0,"rule":"slow","plan":""}`, 1, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f.metrics.Reset()
			assertJSONEqual(t, f.invokeOK(t, []byte(tc.payload)), tc.want)
			failures, open := 0.0, 0.0
			for _, l := range emfLines(t, f.metrics) {
				if n, ok := l[telemetry.MetricFailClosed].(float64); ok {
					failures += n
				}
				if n, ok := l[telemetry.MetricFailOpen].(float64); ok {
					open += n
				}
			}
			if failures != float64(tc.failures) || open != float64(tc.open) {
				t.Errorf("FailClosed %v, FailOpen %v, want %d and %d", failures, open, tc.failures, tc.open)
			}
		})
	}
}

// TestShadowDenialOfARetryCountedOnce: a retry of an idempotent check (its requestId
// again) answers the first decision, and its shadow denial was counted and logged with
// it: the retry counts and logs none, as it crosses nothing; a new requestId is a new
// request, counted.
func TestShadowDenialOfARetryCountedOnce(t *testing.T) {
	srv := redistest.Start(t)
	f := newFixture(t, redistest.Client(t, srv.Addr), nil, guard.Options{})
	rules := `"rules":[` + trialRule + `,` + slowRule + `],"cost":3`
	steps := []struct {
		name, payload string
		shadowDenied  float64
	}{
		{"first", `{"key":"tenant-6",` + rules + `,"requestId":"call-1"}`, 1},
		{"its retry", `{"key":"tenant-6",` + rules + `,"requestId":"call-1"}`, 0},
		{"another request", `{"key":"tenant-6",` + rules + `,"requestId":"call-2"}`, 1},
	}
	for _, s := range steps {
		t.Run(s.name, func(t *testing.T) {
			f.metrics.Reset()
			f.logs.Reset()
			if r := decodeResponse(t, f.invokeOK(t, []byte(s.payload))); !r.Allowed || r.Rule != "slow" {
				t.Fatalf("%+v, want allowed by slow", r)
			}
			denied := 0.0
			for _, l := range emfLines(t, f.metrics) {
				if n, ok := l[telemetry.MetricShadowLimited].(float64); ok {
					denied += n
				}
			}
			if lines := strings.Count(f.logs.String(), telemetry.MsgShadowLimited); denied != s.shadowDenied || float64(lines) != s.shadowDenied {
				t.Fatalf("ShadowLimited %v and %d lines, want %v of each:\n%s", denied, lines, s.shadowDenied, f.logs)
			}
		})
	}
}
