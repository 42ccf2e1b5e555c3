package check

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/bucketgate/bucketgate"
	"github.com/bucketgate/bucketgate/checkapi"
	"github.com/bucketgate/bucketgate/internal/bucket"
	"github.com/bucketgate/bucketgate/internal/config"
	"github.com/bucketgate/bucketgate/internal/guard"
	"github.com/bucketgate/bucketgate/internal/telemetry"
	"github.com/bucketgate/bucketgate/internal/testkit/redistest"
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
