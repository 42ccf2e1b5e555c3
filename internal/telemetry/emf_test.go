package telemetry_test

import (
	"bytes"
	"encoding/json"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/bucketgate/bucketgate"
	"github.com/bucketgate/bucketgate/internal/guard"
	"github.com/bucketgate/bucketgate/internal/telemetry"
)

// emfLine is one EMF line, parsed.
type emfLine struct {
	members    map[string]any
	directives []struct {
		Namespace  string
		Dimensions [][]string
		Metrics    []struct{ Name, Unit string }
	}
}

func parseEMF(t *testing.T, line string) emfLine {
	t.Helper()
	var l emfLine
	if err := json.Unmarshal([]byte(line), &l.members); err != nil {
		t.Fatalf("EMF line %q: %v", line, err)
	}
	var aws struct {
		AWS struct {
			CloudWatchMetrics json.RawMessage
		} `json:"_aws"`
	}
	if err := json.Unmarshal([]byte(line), &aws); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(aws.AWS.CloudWatchMetrics, &l.directives); err != nil {
		t.Fatal(err)
	}
	delete(l.members, "_aws")
	return l
}

// Every dimension set of every metric holds Stack, and the line carries its value; a
// decision's metrics are those it has: DenyCacheHits only for denials from the deny
// cache, RedisLatency only when Redis was asked, FailClosed only when it failed closed,
// FailOpen (by the same reasons) only when it failed open: what DegradedAlarm counts, and why.
func TestEmitDecisionLines(t *testing.T) {
	ms := time.Millisecond
	tests := []struct {
		name    string
		result  guard.Result
		metrics []string // by directive, dimension: metric names
		members map[string]any
	}{
		{"allowed", guard.Result{Decision: bucketgate.Decision{Allowed: true, Reason: bucketgate.ReasonOK}, Latency: ms},
			[]string{"Outcome: Decisions RedisLatency"},
			map[string]any{"Outcome": "allowed", "Decisions": 1.0, "RedisLatency": []any{1.0}}},
		{"limited by Redis", guard.Result{Decision: bucketgate.Decision{Reason: bucketgate.ReasonLimited}, Latency: 2 * ms},
			[]string{"Outcome: Decisions RedisLatency"},
			map[string]any{"Outcome": "limited", "Decisions": 1.0, "RedisLatency": []any{2.0}}},
		{"limited by the deny cache", guard.Result{Decision: bucketgate.Decision{Reason: bucketgate.ReasonLimited}, CacheHit: true},
			[]string{"Outcome: Decisions DenyCacheHits"},
			map[string]any{"Outcome": "limited", "Decisions": 1.0, "DenyCacheHits": 1.0}},
		{"failed closed", guard.Result{Decision: bucketgate.Decision{Reason: bucketgate.ReasonUnavailable}, Failure: guard.FailureTimeout, Latency: 50 * ms},
			[]string{"Outcome: Decisions RedisLatency", "Reason: FailClosed"},
			map[string]any{"Outcome": "unavailable", "Decisions": 1.0, "RedisLatency": []any{50.0}, "Reason": "timeout", "FailClosed": 1.0}},
		{"failed closed on a Redis error", guard.Result{Decision: bucketgate.Decision{Reason: bucketgate.ReasonUnavailable}, Failure: guard.FailureRedisError, Latency: 3 * ms},
			[]string{"Outcome: Decisions RedisLatency", "Reason: FailClosed"},
			map[string]any{"Outcome": "unavailable", "Decisions": 1.0, "RedisLatency": []any{3.0}, "Reason": "redis_error", "FailClosed": 1.0}},
		{"failed closed on a bad response", guard.Result{Decision: bucketgate.Decision{Reason: bucketgate.ReasonUnavailable}, Failure: guard.FailureBadResponse, Latency: 4 * ms},
			[]string{"Outcome: Decisions RedisLatency", "Reason: FailClosed"},
			map[string]any{"Outcome": "unavailable", "Decisions": 1.0, "RedisLatency": []any{4.0}, "Reason": "bad_response", "FailClosed": 1.0}},
		{"failed open", guard.Result{Decision: bucketgate.Decision{Allowed: true, Reason: bucketgate.ReasonDegraded}, Failure: guard.FailureTimeout, Latency: 50 * ms},
			[]string{"Outcome: Decisions RedisLatency", "Reason: FailOpen"},
			map[string]any{"Outcome": "degraded", "Decisions": 1.0, "RedisLatency": []any{50.0}, "Reason": "timeout", "FailOpen": 1.0}},
		{"failed open on a Redis error", guard.Result{Decision: bucketgate.Decision{Allowed: true, Reason: bucketgate.ReasonDegraded}, Failure: guard.FailureRedisError, Latency: 3 * ms},
			[]string{"Outcome: Decisions RedisLatency", "Reason: FailOpen"},
			map[string]any{"Outcome": "degraded", "Decisions": 1.0, "RedisLatency": []any{3.0}, "Reason": "redis_error", "FailOpen": 1.0}},
		{"failed open on a bad response", guard.Result{Decision: bucketgate.Decision{Allowed: true, Reason: bucketgate.ReasonDegraded}, Failure: guard.FailureBadResponse, Latency: 4 * ms},
			[]string{"Outcome: Decisions RedisLatency", "Reason: FailOpen"},
			map[string]any{"Outcome": "degraded", "Decisions": 1.0, "RedisLatency": []any{4.0}, "Reason": "bad_response", "FailOpen": 1.0}},
		{"failed open on the registry, Redis not asked", guard.Result{Decision: bucketgate.Decision{Allowed: true, Reason: bucketgate.ReasonDegraded}, Failure: guard.FailureRegistryError},
			[]string{"Outcome: Decisions", "Reason: FailOpen"},
			map[string]any{"Outcome": "degraded", "Decisions": 1.0, "Reason": "registry_error", "FailOpen": 1.0}},
		{"failed open with the circuit open, Redis not asked", guard.Result{Decision: bucketgate.Decision{Allowed: true, Reason: bucketgate.ReasonDegraded}, Failure: guard.FailureRedisError, CircuitOpen: true},
			[]string{"Outcome: Decisions", "Reason: FailOpen"},
			map[string]any{"Outcome": "degraded", "Decisions": 1.0, "Reason": "redis_error", "FailOpen": 1.0}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var out bytes.Buffer
			var inv telemetry.Invocation
			inv.Observe(tc.result)
			if err := telemetry.NewEmitter(&out, "ns", "orders-prod", "authorizer").Emit(time.UnixMilli(1), &inv); err != nil {
				t.Fatal(err)
			}
			l := parseEMF(t, out.String())
			var got []string
			for _, d := range l.directives {
				dim := d.Dimensions[0][1]
				want := [][]string{{telemetry.DimStack, dim}, {telemetry.DimStack, telemetry.DimFunction, dim}}
				if d.Namespace != "ns" || !slices.EqualFunc(d.Dimensions, want, slices.Equal[[]string]) {
					t.Errorf("directive %+v: want namespace ns and dimensions %v", d, want)
				}
				names := []string{dim + ":"}
				for _, m := range d.Metrics {
					names = append(names, m.Name)
				}
				got = append(got, strings.Join(names, " "))
			}
			want := maps.Clone(tc.members)
			want["Stack"], want["Function"] = "orders-prod", "authorizer"
			if !slices.Equal(got, tc.metrics) || !jsonEqual(t, l.members, want) {
				t.Errorf("metrics %q members %v\nwant %q %v", got, l.members, tc.metrics, want)
			}
		})
	}
}

// jsonEqual reports whether a and b encode to the same JSON.
func jsonEqual(t *testing.T, a, b any) bool {
	t.Helper()
	x, err := json.Marshal(a)
	if err != nil {
		t.Fatal(err)
	}
	y, err := json.Marshal(b)
	if err != nil {
		t.Fatal(err)
	}
	return bytes.Equal(x, y)
}

// The Stack dimension costs every line its bytes; leaving out a zero DenyCacheHits pays
// for them on the common line, an allowed decision with a registry hit: it stays within
// the bytes it had before the dimension (535 with a 10-byte stack name). Bytes are
// CloudWatch Logs ingestion, paid per request.
func TestEmitLineBytes(t *testing.T) {
	var out bytes.Buffer
	var inv telemetry.Invocation
	inv.Observe(guard.Result{Decision: bucketgate.Decision{Allowed: true, Reason: bucketgate.ReasonOK}, Latency: 1234567 * time.Nanosecond})
	inv.ObserveLookup("hit", false)
	if err := telemetry.NewEmitter(&out, "bucketgate", "bucketgate", "authorizer").Emit(time.UnixMilli(1795633672639), &inv); err != nil {
		t.Fatal(err)
	}
	if n := out.Len(); n > 536 {
		t.Errorf("%d bytes, want at most 536 (535 and the newline):\n%s", n, &out)
	}
}
