package telemetry_test

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/bucketgate/bucketgate/internal/telemetry"
)

// Events not sent are EventsFailed by Reason, a line per reason, beside the decision's;
// none is written when every event was sent.
func TestEventsFailed(t *testing.T) {
	var out bytes.Buffer
	var inv telemetry.Invocation
	inv.Observe(allowed(time.Millisecond))
	inv.ObserveEventsFailed(telemetry.EventsTimeout, 2)
	inv.ObserveEventsFailed(telemetry.EventsRejected, 1)
	inv.ObserveEventsFailed(telemetry.EventsTimeout, 1)
	inv.ObserveEventsFailed(telemetry.EventsError, 0) // all sent
	if err := telemetry.NewEmitter(&out, "ns", "orders-prod", "authorizer").Emit(time.UnixMilli(1), &inv); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != 3 {
		t.Fatalf("%d lines, want the decision's and one per reason:\n%s", len(lines), &out)
	}
	for i, want := range []map[string]any{
		{"Reason": "timeout", "EventsFailed": 3.0},
		{"Reason": "rejected", "EventsFailed": 1.0},
	} {
		l := parseEMF(t, lines[i+1])
		want["Function"], want["Stack"] = "authorizer", "orders-prod"
		if !jsonEqual(t, l.members, want) || len(l.directives) != 1 || l.directives[0].Metrics[0].Name != telemetry.MetricEventsFailed ||
			!strings.Contains(lines[i+1], `"Dimensions":[["Stack","Reason"],["Stack","Function","Reason"]]`) {
			t.Errorf("line %s, want %v by Stack and Reason", lines[i+1], want)
		}
	}
}
