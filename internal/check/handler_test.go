package check

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/alicebob/miniredis/v2"

	"github.com/bucketgate/bucketgate"
	"github.com/bucketgate/bucketgate/checkapi"
	"github.com/bucketgate/bucketgate/internal/bucket"
	"github.com/bucketgate/bucketgate/internal/config"
	"github.com/bucketgate/bucketgate/internal/guard"
	"github.com/bucketgate/bucketgate/internal/telemetry"
	"github.com/bucketgate/bucketgate/internal/testkit/samples"
)

// responseFields are the members of every response, exactly (docs/check.md).
var responseFields = []string{"allowed", "reason", "limit", "remaining", "retryAfterMs", "resetAfterMs", "rule", "plan"}

// fieldNames returns the sorted member names of a JSON object.
func fieldNames(t *testing.T, raw []byte) []string {
	t.Helper()
	var m map[string]json.RawMessage
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatalf("%s: %v", raw, err)
	}
	return slices.Sorted(maps.Keys(m))
}

func TestResponseFieldNames(t *testing.T) {
	want := slices.Sorted(slices.Values(responseFields))
	_, client := startMiniredis(t)
	f := newFixture(t, client, nil, guard.Options{})
	if got := fieldNames(t, f.invokeOK(t, samples.Read(t, "check-single.json"))); !slices.Equal(got, want) {
		t.Errorf("single response fields %v, want %v", got, want)
	}
	out := f.invokeOK(t, samples.Read(t, "check-batch.json"))
	if got := fieldNames(t, out); !slices.Equal(got, []string{"results"}) {
		t.Fatalf("batch response fields %v, want [results]", got)
	}
	var batch struct{ Results []json.RawMessage }
	if err := json.Unmarshal(out, &batch); err != nil {
		t.Fatal(err)
	}
	for i, r := range batch.Results {
		if got := fieldNames(t, r); !slices.Equal(got, want) {
			t.Errorf("results[%d] fields %v, want %v", i, got, want)
		}
	}
}

func TestPeekWritesNothing(t *testing.T) {
	mr, client := startMiniredis(t)
	f := newFixture(t, client, nil, guard.Options{})
	key := bucket.Key(identityPrefix + "tenant-42")
	peek := samples.Read(t, "check-peek.json")

	assertJSONEqual(t, f.invokeOK(t, peek), `{"allowed":true,"reason":"ok","limit":100,"remaining":100,"retryAfterMs":0,"resetAfterMs":0,"rule":"burst","plan":"pro","rules":[{"name":"burst","limit":100,"remaining":100,"resetAfterMs":0}]}`)
	if mr.Exists(key) {
		t.Fatalf("a peek on a new bucket wrote %s", key)
	}

	for range 3 {
		f.invokeOK(t, samples.Read(t, "check-single.json"))
	}
	before, ttl := hash(t, mr, key), mr.TTL(key)
	assertJSONEqual(t, f.invokeOK(t, peek), `{"allowed":true,"reason":"ok","limit":100,"remaining":97,"retryAfterMs":0,"resetAfterMs":60,"rule":"burst","plan":"pro","rules":[{"name":"burst","limit":100,"remaining":97,"resetAfterMs":60}]}`)
	if after := hash(t, mr, key); !maps.Equal(before, after) || mr.TTL(key) != ttl {
		t.Fatalf("a peek changed %s: %v (ttl %v) became %v (ttl %v)", key, before, ttl, after, mr.TTL(key))
	}
}

// hash reads the Redis hash at key.
func hash(t *testing.T, mr *miniredis.Miniredis, key string) map[string]string {
	t.Helper()
	fields, err := mr.HKeys(key)
	if err != nil {
		t.Fatalf("HKEYS %s: %v", key, err)
	}
	m := map[string]string{}
	for _, f := range fields {
		m[f] = mr.HGet(key, f)
	}
	return m
}

func TestPlanResolution(t *testing.T) {
	cfg, err := config.Parse([]byte(`
defaultPlan: free
plans:
  free: [{name: burst, capacity: 10, refillPerSecond: 1}]
  pro: [{name: burst, capacity: 100, refillPerSecond: 50}]
tenants:
  tenant-42: pro
`))
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, payload         string
		wantPlan, wantRule    string
		wantLimit, wantRemain int64
	}{
		{"mapped tenant", `{"key":"tenant-42"}`, "pro", "burst", 100, 99},
		{"unmapped key: default plan", `{"key":"tenant-7"}`, "free", "burst", 10, 9},
		{"plan overrides the mapping", `{"key":"tenant-42","plan":"free"}`, "free", "burst", 10, 9},
		{"inline rules: no plan", `{"key":"tenant-42","rules":[{"name":"hourly","capacity":3600,"refillPerSecond":1}]}`, "", "hourly", 3600, 3599},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, client := startMiniredis(t)
			f := newFixture(t, client, cfg, guard.Options{})
			var res checkapi.Response
			if err := json.Unmarshal(f.invokeOK(t, []byte(tc.payload)), &res); err != nil {
				t.Fatal(err)
			}
			if res.Plan != tc.wantPlan || res.Rule != tc.wantRule || res.Limit != tc.wantLimit || res.Remaining != tc.wantRemain || !res.Allowed {
				t.Fatalf("got %+v, want plan %q rule %q limit %d remaining %d allowed", res, tc.wantPlan, tc.wantRule, tc.wantLimit, tc.wantRemain)
			}
		})
	}
}

// emfLines decodes the EMF lines of one or more invocations.
func emfLines(t *testing.T, out *bytes.Buffer) []map[string]any {
	t.Helper()
	var lines []map[string]any
	sc := bufio.NewScanner(bytes.NewReader(out.Bytes()))
	for sc.Scan() {
		var m map[string]any
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			t.Fatalf("metrics line %s: %v", sc.Bytes(), err)
		}
		lines = append(lines, m)
	}
	return lines
}

func TestTelemetryAndLogs(t *testing.T) {
	_, client := startMiniredis(t)
	f := newFixture(t, client, nil, guard.Options{})

	f.invokeOK(t, samples.Read(t, "check-single.json"))
	lines := emfLines(t, f.metrics)
	if len(lines) != 1 || lines[0][telemetry.DimOutcome] != telemetry.OutcomeAllowed || lines[0][telemetry.MetricDecisions] != 1.0 || lines[0][telemetry.DimFunction] != testFunction {
		t.Fatalf("single check metrics %v: want one line, 1 allowed decision of function %s", lines, testFunction)
	}

	f.metrics.Reset()
	f.invokeOK(t, samples.Read(t, "check-batch.json")) // 3 allowed, 1 limited
	decisions := map[any]float64{}
	for _, l := range emfLines(t, f.metrics) {
		decisions[l[telemetry.DimOutcome]] += l[telemetry.MetricDecisions].(float64)
	}
	if want := map[any]float64{telemetry.OutcomeAllowed: 3, telemetry.OutcomeLimited: 1}; !maps.Equal(decisions, want) {
		t.Fatalf("batch metrics count %v, want %v", decisions, want)
	}

	logs := f.logs.String()
	if n := strings.Count(logs, `"msg":"decision"`); n != 5 {
		t.Errorf("%d decision log lines for 5 decisions:\n%s", n, logs)
	}
	if strings.Contains(logs, "tenant-42") || !strings.Contains(logs, bucketgate.KeyDigest("tenant-42")) {
		t.Errorf("logs must carry the key's digest, never the key:\n%s", logs)
	}
}

// refusingGuard decides like next, but refuses the request at index refuse of a batch as
// the engine refuses an invalid request.
type refusingGuard struct {
	Guard
	refuse int
}

func (d *refusingGuard) DecideBatch(ctx context.Context, qs []bucketgate.Request) ([]guard.Result, error) {
	if d.refuse < len(qs) {
		return nil, &guard.BatchError{Index: d.refuse, Err: fmt.Errorf("%w: redis refused the request: bucketgate: test", bucketgate.ErrInvalid)}
	}
	return d.Guard.DecideBatch(ctx, qs)
}

func TestEngineRefusal(t *testing.T) {
	_, client := startMiniredis(t)
	f := newFixture(t, client, nil, guard.Options{})
	f.h.Guard = &refusingGuard{Guard: f.h.Guard, refuse: 1}
	_, err := f.invoke(samples.Read(t, "check-batch.json"))
	ive := functionError(t, err)
	if ive.Type != checkapi.ErrorTypeInvalidRequest || !strings.HasPrefix(ive.Message, "checks[1]: invalid: redis refused") {
		t.Fatalf("error %+v: want an %s naming checks[1]", ive, checkapi.ErrorTypeInvalidRequest)
	}
	if lines := emfLines(t, f.metrics); len(lines) != 0 {
		t.Fatalf("metrics %v: want none, as no check was answered", lines)
	}
}
