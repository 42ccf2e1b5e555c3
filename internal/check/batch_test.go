package check

import (
	"encoding/json"
	"maps"
	"strings"
	"testing"

	"github.com/bucketgate/bucketgate"
	"github.com/bucketgate/bucketgate/checkapi"
	"github.com/bucketgate/bucketgate/internal/guard"
	"github.com/bucketgate/bucketgate/internal/registry"
	"github.com/bucketgate/bucketgate/internal/telemetry"
	"github.com/bucketgate/bucketgate/internal/testkit/redistest"
	"github.com/bucketgate/bucketgate/internal/testkit/registrytest"
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

// Two checks of one batch with the same buckets and requestId are one request: the second
// was answered the first's decision, replayed, allowed with nothing taken (a caller that
// gave a job's id to each of its checks was admitted twice for one charge), or, with
// another cost, a conflict after the first was decided. The batch is refused whole,
// naming both, and nothing is written; the same requestId for other buckets is no
// repeat. Two keys of one account spend its buckets, and remember its requestIds: on
// the operator's path, they are the same buckets.
func TestBatchRepeatsARequestID(t *testing.T) {
	one, two, other := bucketgate.KeyDigest("one"), bucketgate.KeyDigest("two"), bucketgate.KeyDigest("other")
	accounts := registrytest.New(
		registry.Record{ID: "account:acme", Plan: "pro"},
		registry.Record{ID: "account:umbrella", Plan: "pro"},
		registry.Record{ID: "key:" + one, Account: "acme"},
		registry.Record{ID: "key:" + two, Account: "acme"},
		registry.Record{ID: "key:" + other, Account: "umbrella"},
	)
	tests := []struct {
		name    string
		payload string
		want    string // the error, or "" for an answer
	}{
		{"same key", `{"checks":[{"key":"a","requestId":"job-1"},{"key":"a","requestId":"job-1"}]}`,
			"checks[1].requestId: checks[0]'s, for the same buckets: one requestId is one request, so checks[1] would be answered checks[0]'s decision (replayed, nothing taken): give each check its own"},
		{"a key and its identity", `{"checks":[{"key":"a","requestId":"r","cost":2},{"key":"b"},{"identity":"tenant:a","requestId":"r","op":"refund"}]}`,
			"checks[2].requestId: checks[0]'s, for the same buckets"},
		{"two keys of one account", `{"checks":[{"identity":"key:` + one + `","requestId":"job-1"},{"identity":"key:` + two + `","requestId":"job-1"}]}`,
			"checks[1].requestId: checks[0]'s, for the same buckets"},
		{"a key and its account", `{"checks":[{"identity":"acct:acme","requestId":"r"},{"identity":"key:` + two + `","plan":"free","requestId":"r"}]}`,
			"checks[1].requestId: checks[0]'s, for the same buckets"},
		{"keys of other accounts", `{"checks":[{"identity":"key:` + one + `","requestId":"job-1"},{"identity":"key:` + other + `","requestId":"job-1"}]}`, ""},
		{"other keys", `{"checks":[{"key":"a","requestId":"job-1"},{"key":"b","requestId":"job-1"}]}`, ""},
		{"other requestIds", `{"checks":[{"key":"a","requestId":"job-1"},{"key":"a","requestId":"job-2"}]}`, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			mr, client := startMiniredis(t)
			f := newFixture(t, client, nil, guard.Options{})
			f.withRegistry(accounts)
			out, err := f.invoke([]byte(tc.payload))
			if tc.want == "" {
				if err != nil {
					t.Fatalf("error %v, want an answer", err)
				}
				var got checkapi.BatchResult
				if err := json.Unmarshal(out, &got); err != nil {
					t.Fatalf("%s: %v", out, err)
				}
				for i, r := range got.Results {
					if r.Replayed || !r.Allowed {
						t.Errorf("results[%d] %+v: want an admission of its own, not replayed", i, r)
					}
				}
				return
			}
			ive := functionError(t, err)
			if ive.Type != checkapi.ErrorTypeInvalidRequest || !strings.HasPrefix(ive.Message, tc.want) {
				t.Errorf("%s %q\nwant %s %q", ive.Type, ive.Message, checkapi.ErrorTypeInvalidRequest, tc.want)
			}
			if keys := mr.Keys(); len(keys) != 0 {
				t.Errorf("an invalid batch wrote %v", keys)
			}
		})
	}
}
