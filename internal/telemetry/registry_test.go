package telemetry_test

import (
	"bytes"
	"encoding/json"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/bucketgate/bucketgate"
	"github.com/bucketgate/bucketgate/internal/guard"
	"github.com/bucketgate/bucketgate/internal/telemetry"
)

// Registry lookups ride on the decision lines, one result per line, with lines of their
// own for results beyond them (a read of the configuration is one); invalid items and
// configuration documents count on the first line, by Stack and Function only.
func TestRegistryMetrics(t *testing.T) {
	at := time.Unix(1_800_000_000, 0)
	tests := []struct {
		name    string
		observe func(inv *telemetry.Invocation)
		want    []string // per line: Outcome/Result/RegistryLookups/RegistryInvalidItems/ConfigInvalid
	}{
		{"a hit with its decision", func(inv *telemetry.Invocation) {
			inv.Observe(guard.Result{Decision: bucketgate.Decision{Allowed: true, Reason: bucketgate.ReasonOK}})
			inv.ObserveLookup("hit", false)
		}, []string{"allowed/hit/1/-/-"}},
		{"a lookup without a decision (refused)", func(inv *telemetry.Invocation) {
			inv.ObserveLookup("miss", true)
		}, []string{"-/miss/1/1/-"}},
		{"a batch", func(inv *telemetry.Invocation) {
			inv.Observe(guard.Result{Decision: bucketgate.Decision{Allowed: true, Reason: bucketgate.ReasonOK}})
			inv.ObserveLookup("hit", false)
			inv.ObserveLookup("miss", false)
			inv.ObserveLookup("hit", false)
			inv.ObserveLookup("error", false)
		}, []string{"allowed/hit/2/-/-", "-/miss/1/-/-", "-/error/1/-/-"}},
		{"no lookup", func(inv *telemetry.Invocation) {
			inv.Observe(guard.Result{Decision: bucketgate.Decision{Allowed: true, Reason: bucketgate.ReasonOK}})
		}, []string{"allowed/-/-/-/-"}},
		{"a read of the configuration, with a lookup", func(inv *telemetry.Invocation) {
			inv.ObserveConfig("miss", false)
			inv.Observe(guard.Result{Decision: bucketgate.Decision{Allowed: true, Reason: bucketgate.ReasonOK}})
			inv.ObserveLookup("hit", false)
		}, []string{"allowed/miss/1/-/-", "-/hit/1/-/-"}},
		{"a document that does not load, and an invalid item", func(inv *telemetry.Invocation) {
			inv.ObserveConfig("miss", true)
			inv.ObserveLookup("miss", true)
			inv.Observe(guard.Result{Decision: bucketgate.Decision{Allowed: true, Reason: bucketgate.ReasonOK}})
		}, []string{"allowed/miss/2/1/1"}},
		{"a failed read of the configuration", func(inv *telemetry.Invocation) {
			inv.ObserveConfig("error", false)
			inv.Observe(guard.Result{Decision: bucketgate.Decision{Allowed: true, Reason: bucketgate.ReasonOK}})
		}, []string{"allowed/error/1/-/-"}},
		{"nothing read", func(inv *telemetry.Invocation) {
			inv.ObserveConfig("", false)
		}, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var out bytes.Buffer
			var inv telemetry.Invocation
			tc.observe(&inv)
			if err := telemetry.NewEmitter(&out, "ns", "orders-prod", "authorizer").Emit(at, &inv); err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, line := range strings.Split(strings.TrimSpace(out.String()), "\n") {
				if line == "" {
					continue
				}
				var doc map[string]any
				if err := json.Unmarshal([]byte(line), &doc); err != nil {
					t.Fatal(err)
				}
				got = append(got, field(doc, telemetry.DimOutcome)+"/"+field(doc, telemetry.DimResult)+"/"+
					field(doc, telemetry.MetricRegistryLookups)+"/"+field(doc, telemetry.MetricRegistryInvalid)+"/"+field(doc, telemetry.MetricConfigInvalid))
				for _, m := range []string{telemetry.MetricRegistryInvalid, telemetry.MetricConfigInvalid} {
					if _, ok := doc[m]; ok && !strings.Contains(line, `"Dimensions":[["Stack","Function"]],"Metrics":[`) || ok && !strings.Contains(line, `{"Name":"`+m+`","Unit":"Count"}`) {
						t.Errorf("line %s: no %s directive by Stack and Function", line, m)
					}
				}
				if doc[telemetry.DimFunction] != "authorizer" || doc[telemetry.DimStack] != "orders-prod" || !strings.Contains(line, `"Timestamp":1800000000000`) {
					t.Errorf("line %s: want the function, the stack and the timestamp", line)
				}
				if _, ok := doc[telemetry.DimResult]; ok && !strings.Contains(line, `"Dimensions":[["Stack","Result"],["Stack","Function","Result"]],"Metrics":[{"Name":"RegistryLookups","Unit":"Count"}]`) {
					t.Errorf("line %s: no RegistryLookups directive by Result", line)
				}
			}
			if strings.Join(got, " ") != strings.Join(tc.want, " ") {
				t.Fatalf("lines %v, want %v\n%s", got, tc.want, &out)
			}
		})
	}
}

// field returns doc[name] as text, "-" when absent.
func field(doc map[string]any, name string) string {
	switch v := doc[name].(type) {
	case nil:
		return "-"
	case float64:
		return strconv.FormatFloat(v, 'f', -1, 64)
	case string:
		return v
	}
	return "?"
}
