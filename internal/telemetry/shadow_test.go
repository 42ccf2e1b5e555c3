package telemetry_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/bucketgate/bucketgate"
	"github.com/bucketgate/bucketgate/internal/guard"
	"github.com/bucketgate/bucketgate/internal/telemetry"
)

// TestObserveShadow: every shadow rule a decision names in ShadowLimited is counted,
// by rule, and logged at info; the EMF line is the ShadowLimited metric with the Rule
// dimension (never the identity).
func TestObserveShadow(t *testing.T) {
	q := bucketgate.Request{Identity: "key:0f0f", Rules: []bucketgate.Rule{
		{Name: "burst", Capacity: 10, RefillPerSecond: 1},
		{Name: "trial", Capacity: 5, RefillPerSecond: 1, Shadow: true},
		{Name: "strict", Capacity: 2, RefillPerSecond: 1, Shadow: true},
	}, Cost: 1}
	var logs, metrics bytes.Buffer
	log := slog.New(slog.NewJSONHandler(&logs, nil)) // info
	var inv telemetry.Invocation
	attrs := []slog.Attr{slog.String(telemetry.AttrIdentity, q.Identity)}
	for _, limited := range []bucketgate.RuleSet{1<<1 | 1<<2, 1 << 2, 0} {
		r := guard.Result{Decision: bucketgate.Decision{Allowed: true, Reason: bucketgate.ReasonOK, ShadowLimited: limited}}
		inv.Observe(r)
		telemetry.ObserveShadow(context.Background(), log, &inv, q, r, "", attrs...)
	}
	if n := strings.Count(logs.String(), telemetry.MsgShadowLimited); n != 3 || !strings.Contains(logs.String(), `"identity":"key:0f0f","rule":"strict","limit":2`) {
		t.Fatalf("%d info lines, want 3 naming identity, rule and limit:\n%s", n, &logs)
	}
	at := time.UnixMilli(1_800_000_000_000)
	if err := telemetry.NewEmitter(&metrics, "ns", "orders-prod", "check").Emit(at, &inv); err != nil {
		t.Fatal(err)
	}
	emf := metrics.String()
	var shadow []map[string]any
	sc := bufio.NewScanner(&metrics)
	for sc.Scan() {
		var m map[string]any
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			t.Fatal(err)
		}
		if _, ok := m[telemetry.MetricShadowLimited]; ok {
			delete(m, "_aws")
			shadow = append(shadow, m)
		}
	}
	want := []map[string]any{
		{"Function": "check", "Rule": "trial", "ShadowLimited": 1.0, "Stack": "orders-prod"},
		{"Function": "check", "Rule": "strict", "ShadowLimited": 2.0, "Stack": "orders-prod"},
	}
	if !reflect.DeepEqual(shadow, want) {
		t.Fatalf("ShadowLimited lines %v, want %v", shadow, want)
	}
	if !strings.Contains(emf, `"Dimensions":[["Stack","Rule"],["Stack","Function","Rule"]],"Metrics":[{"Name":"ShadowLimited","Unit":"Count"}]`) {
		t.Fatalf("no ShadowLimited directive in:\n%s", emf)
	}
}

// TestObserveShadowLimit: a shadow denial's line gives the rule's limit, whatever kind of
// rule: a quota's is its limit (it has no capacity, and the line said 0).
func TestObserveShadowLimit(t *testing.T) {
	for _, tc := range []struct {
		name string
		rule bucketgate.Rule
		want string
	}{
		{"bucket", bucketgate.Rule{Name: "trial", Capacity: 5, RefillPerSecond: 1, Shadow: true}, `"rule":"trial","limit":5}`},
		{"quota", bucketgate.Rule{Name: "daily", Limit: 1000, Period: bucketgate.PeriodDay, Shadow: true}, `"rule":"daily","limit":1000}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			q := bucketgate.Request{Identity: "tenant:0f0f", Rules: []bucketgate.Rule{tc.rule}, Cost: 1}
			var logs bytes.Buffer
			r := guard.Result{Decision: bucketgate.Decision{Allowed: true, Reason: bucketgate.ReasonOK, ShadowLimited: 1}}
			telemetry.ObserveShadow(context.Background(), slog.New(slog.NewJSONHandler(&logs, nil)), &telemetry.Invocation{}, q, r, "")
			if !strings.Contains(logs.String(), tc.want) {
				t.Fatalf("log %s: want %s", &logs, tc.want)
			}
		})
	}
}
