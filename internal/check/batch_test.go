package check

import (
	"maps"
	"strings"
	"testing"

	"github.com/bucketgate/bucketgate/checkapi"
	"github.com/bucketgate/bucketgate/internal/guard"
	"github.com/bucketgate/bucketgate/internal/telemetry"
	"github.com/bucketgate/bucketgate/internal/testkit/redistest"
)

// A batch of which Redis refuses one check (a requestId used first for another request)
// is a ConflictError naming it, but Redis decided the others, in the same round trip: the
// error says so, their decisions are counted and logged, and a refund among them clears
// its identity's cached denials as it does in any batch.
func TestBatchConflictDecidesTheOthers(t *testing.T) {
	srv := redistest.Start(t)
	f := newFixture(t, redistest.Client(t, srv.Addr), nil, guard.Options{DenyCacheSize: 100})
	slow := `"rules":[` + slowRule + `]`
	f.invokeOK(t, []byte(`{"key":"a",`+slow+`,"requestId":"r1"}`))
	f.invokeOK(t, []byte(`{"key":"d",`+slow+`,"cost":10}`))
	if r := decodeResponse(t, f.invokeOK(t, []byte(`{"key":"d",`+slow+`}`))); r.Reason != checkapi.ReasonLimited {
		t.Fatalf("d drained: %+v, want limited (and cached)", r)
	}
	f.metrics.Reset()
	f.logs.Reset()

	_, err := f.invoke([]byte(`{"checks":[{"key":"b",` + slow + `,"cost":5},{"key":"a",` + slow + `,"cost":2,"requestId":"r1"},{"key":"d",` + slow + `,"op":"refund"}]}`))
	ce := functionError(t, err)
	if ce.Type != checkapi.ErrorTypeConflict || !strings.HasPrefix(ce.Message, "checks[1]: conflict: ") ||
		!strings.Contains(ce.Message, "checks[0] and checks[2] were decided") {
		t.Fatalf("error %+v: want a %s naming checks[1], saying checks[0] and checks[2] were decided", ce, checkapi.ErrorTypeConflict)
	}
	decisions := map[any]float64{}
	for _, l := range emfLines(t, f.metrics) {
		decisions[l[telemetry.DimOutcome]] += l[telemetry.MetricDecisions].(float64)
	}
	if want := map[any]float64{telemetry.OutcomeAllowed: 2}; !maps.Equal(decisions, want) {
		t.Errorf("metrics count %v, want %v: the two checks Redis decided", decisions, want)
	}
	if n := strings.Count(f.logs.String(), `"msg":"decision"`); n != 2 {
		t.Errorf("%d decision lines, want 2:\n%s", n, f.logs)
	}
	if r := decodeResponse(t, f.invokeOK(t, []byte(`{"key":"b",`+slow+`,"cost":0}`))); r.Remaining != 5 {
		t.Errorf("b after the batch: %+v, want 5 left: its check was decided", r)
	}
	if r := decodeResponse(t, f.invokeOK(t, []byte(`{"key":"d",`+slow+`}`))); !r.Allowed {
		t.Errorf("d after its refund: %+v, want allowed, not the denial cached before the refund", r)
	}
}
