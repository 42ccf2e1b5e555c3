package telemetry_test

import (
	"bytes"
	"testing"
	"time"

	"github.com/bucketgate/bucketgate/internal/telemetry"
)

// A refused request writes Decisions with Outcome refused, by Stack and by Stack and
// Function, and nothing else: no latency, no FailClosed.
func TestEmitRefused(t *testing.T) {
	var out bytes.Buffer
	var inv telemetry.Invocation
	inv.ObserveRefused()
	inv.ObserveRefused()
	if err := telemetry.NewEmitter(&out, "ns", "orders-prod", "authorizer").Emit(time.UnixMilli(1), &inv); err != nil {
		t.Fatal(err)
	}
	l := parseEMF(t, out.String())
	want := map[string]any{"Outcome": telemetry.OutcomeRefused, "Decisions": 2.0, "Function": "authorizer", "Stack": "orders-prod"}
	if len(l.members) != len(want) {
		t.Errorf("members %v, want %v", l.members, want)
	}
	for k, v := range want {
		if l.members[k] != v {
			t.Errorf("%s = %v, want %v (line %s)", k, l.members[k], v, out.String())
		}
	}
	if len(l.directives) != 1 || len(l.directives[0].Metrics) != 1 || l.directives[0].Metrics[0].Name != telemetry.MetricDecisions ||
		len(l.directives[0].Dimensions) != 2 {
		t.Errorf("directives %+v: want Decisions by [Stack Outcome] and [Stack Function Outcome]", l.directives)
	}
}
