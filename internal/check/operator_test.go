package check

import (
	"strings"
	"testing"

	"github.com/bucketgate/bucketgate"
	"github.com/bucketgate/bucketgate/checkapi"
	"github.com/bucketgate/bucketgate/internal/guard"
	"github.com/bucketgate/bucketgate/internal/telemetry"
)

// operatorFunction is the operator function the service-facing handler of the tests names.
const operatorFunction = "bucketgate-test-operator"

// A service-facing check function (OperatorFunction set) refuses every operator's
// operation, a reset or any check naming one of the authorizer's identities, alone or
// anywhere in a batch: an invalid request naming the field and the function to invoke
// instead, nothing written to Redis, a warning, and Decisions with Outcome refused. It
// serves what services do: checks, peeks and refunds of their own keys. Without
// OperatorFunction every operation is served (TestOperationsRealRedis).
func TestServiceFacingRefusesOperatorOperations(t *testing.T) {
	digest := bucketgate.KeyDigest("an-api-key")
	tenant := `{"key":"tenant-7","rules":[` + slowRule + `]`
	tests := []struct {
		name    string
		payload string
		field   string // the field the refusal names; "" for a payload that is served
	}{
		{"a check", tenant + `}`, ""},
		{"a peek", tenant + `,"cost":0}`, ""},
		{"a refund", tenant + `,"op":"refund","cost":1}`, ""},
		{"a batch of a service's checks", `{"checks":[` + tenant + `},` + tenant + `,"op":"refund","cost":1}]}`, ""},
		{"a reset of a tenant", tenant + `,"op":"reset"}`, "op: reset"},
		{"a check of an API key's buckets", `{"identity":"key:` + digest + `","plan":"free"}`, "identity:"},
		{"a peek at a source's buckets", `{"identity":"ip:203.0.113.9","plan":"free","cost":0}`, "identity:"},
		{"a refund to an API key", `{"identity":"key:` + digest + `","plan":"free","op":"refund","cost":1}`, "identity:"},
		{"a peek at an account's buckets", `{"identity":"acct:acme","cost":0}`, "identity:"},
		{"a reset in a batch", `{"checks":[` + tenant + `},` + tenant + `,"op":"reset"}]}`, "checks[1].op: reset"},
		{"an API key in a batch", `{"checks":[{"identity":"ip:203.0.113.9","plan":"free"},` + tenant + `}]}`, "checks[0].identity:"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			mr, client := startMiniredis(t)
			f := newFixture(t, client, nil, guard.Options{})
			f.h.OperatorFunction = operatorFunction
			out, err := f.invoke([]byte(tc.payload))
			if tc.field == "" {
				if err != nil {
					t.Fatalf("a service's operation refused: %v", err)
				}
				if strings.Contains(f.metrics.String(), telemetry.OutcomeRefused) {
					t.Errorf("metrics %s: a served request counted as refused", f.metrics)
				}
				return
			}
			ive := functionError(t, err)
			if ive.Type != checkapi.ErrorTypeInvalidRequest || !strings.HasPrefix(ive.Message, tc.field) ||
				!strings.Contains(ive.Message, "operator's operation") || !strings.Contains(ive.Message, "invoke "+operatorFunction) {
				t.Errorf("error %+v (answer %s): want an %s starting %q and naming %s", ive, out, checkapi.ErrorTypeInvalidRequest, tc.field, operatorFunction)
			}
			if keys := mr.Keys(); len(keys) != 0 {
				t.Errorf("a refused payload wrote %v", keys)
			}
			lines := emfLines(t, f.metrics)
			if len(lines) != 1 || lines[0][telemetry.DimOutcome] != telemetry.OutcomeRefused || lines[0][telemetry.MetricDecisions] != 1.0 {
				t.Errorf("metrics %v: want one line, Decisions 1 refused", lines)
			}
			if logs := f.logs.String(); !strings.Contains(logs, `"level":"WARN","msg":"`+MsgOperatorRefused+`"`) {
				t.Errorf("no warning %q:\n%s", MsgOperatorRefused, logs)
			}
		})
	}
}
