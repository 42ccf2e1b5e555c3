package stress

import (
	"testing"
	"time"

	"github.com/bucketgate/bucketgate"
	"github.com/bucketgate/bucketgate/internal/bucket"
)

// modelRecords decides a sequence of (shape, cost, time) requests of identity 0 of
// scenario 1 with the reference model, as Redis would, and returns their Records.
func modelRecords(steps []struct {
	shape, cost uint8
	at          int64
}) []Record {
	m := bucket.NewModel()
	s := testScenarios[1]
	var out []Record
	for _, st := range steps {
		d := m.Decide(time.UnixMicro(st.at), bucketgate.Request{Identity: IdentityName("test", s.Name, 0), Rules: s.Shapes[st.shape], Cost: int64(st.cost)})
		r := Record{Scenario: 1, Shape: st.shape, Cost: st.cost, At: st.at, Start: st.at, End: st.at, Remaining: int32(d.Remaining), RetryAfter: d.RetryAfter.Milliseconds(), Outcome: uint8(OutcomeLimited)}
		if d.Allowed {
			r.Outcome, r.Flags = uint8(OutcomeOK), flagAllowed
		}
		out = append(out, r)
	}
	return out
}

// replaySteps drains the burst, is denied, and refills.
var replaySteps = []struct {
	shape, cost uint8
	at          int64
}{
	{0, 1, 1_000}, {1, 1, 2_000}, {0, 1, 3_000}, {1, 1, 4_000}, {0, 0, 5_000}, {0, 1, 2*second + 5_000}, {1, 1, 2*second + 6_000},
}

func TestReplayAgrees(t *testing.T) {
	recs := modelRecords(replaySteps)
	got := replay("test", testScenarios, recs, nil)
	if got.Verified != int64(len(recs)) || got.Disagreements != 0 || got.Unverifiable != 0 {
		t.Fatalf("%+v, want all %d verified", got, len(recs))
	}
}

func TestReplayFindsADisagreement(t *testing.T) {
	recs := modelRecords(replaySteps)
	recs[3].Flags ^= flagAllowed // Redis "allowed" what the model denied
	recs[3].Outcome = uint8(OutcomeOK)
	got := replay("test", testScenarios, recs, nil)
	// The disagreement, then nothing the model can vouch for.
	if got.Verified != 3 || got.Disagreements != 1 || got.Unverifiable != int64(len(recs)-4) || len(got.Examples) != 1 {
		t.Fatalf("%+v", got)
	}
}

func TestReplayAfterAnUnknownOutcome(t *testing.T) {
	recs := modelRecords(replaySteps)
	timeout := Record{Scenario: 1, Shape: 0, Cost: 1, Start: 3_500, End: 3_600, Outcome: uint8(OutcomeUnavailable), Failure: failureCode("timeout"), RetryAfter: 1000}
	circuit := timeout
	circuit.Start, circuit.Flags = 2_500, flagCircuitOpen
	with := append([]Record{circuit, timeout}, recs...)
	got := replay("test", testScenarios, with, nil)
	// The breaker's answer never reached Redis; the timeout may have.
	if got.Verified != 3 || got.Unverifiable != int64(len(recs)-3) || got.Disagreements != 0 {
		t.Fatalf("%+v", got)
	}
	// A restart empties Redis: the model starts over, and the Redis decisions after it
	// (of a fresh bucket) are verified again.
	restarted := append([]Record{circuit, timeout}, recs[:4]...)
	restarted = append(restarted, modelRecords(replaySteps[4:])...)
	got = replay("test", testScenarios, restarted, []reset{{at: 4_500, emptied: true}})
	if got.Verified != int64(len(recs)-1) || got.Unverifiable != 1 || got.Disagreements != 0 {
		t.Fatalf("after a restart: %+v", got)
	}
}

// TestReplayTie: two decisions of one microsecond replay in the order of their records,
// which may not be Redis's: a disagreement there is unverifiable, not a failure.
func TestReplayTie(t *testing.T) {
	recs := modelRecords([]struct {
		shape, cost uint8
		at          int64
	}{{0, 2, 1_000}, {0, 2, 1_000}, {0, 1, 2_000}})
	recs[0], recs[1] = recs[1], recs[0] // the denial recorded first
	got := replay("test", testScenarios, recs, nil)
	if got.Disagreements != 0 || got.Unverifiable != 3 || got.Verified != 0 {
		t.Fatalf("%+v, want 3 unverifiable", got)
	}
}
