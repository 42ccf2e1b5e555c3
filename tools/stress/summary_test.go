package stress

import (
	"testing"

	"github.com/bucketgate/bucketgate/internal/guard"
)

// TestRunFailures: a run fails on what only the engine can cause, and not on what a
// stalled machine or the run's own fault explains.
func TestRunFailures(t *testing.T) {
	tests := []struct {
		name      string
		faulted   bool
		errorless bool
		decided   int64
		closed    map[guard.Failure]int64
		fails     bool
	}{
		{"every decision by Redis", false, false, 1000, nil, false},
		{"timeouts of a stalled machine", false, false, 990, map[guard.Failure]int64{guard.FailureTimeout: 10}, false},
		{"Redis errors during a fault", true, false, 900, map[guard.Failure]int64{guard.FailureRedisError: 100}, false},
		// A script that errors on every call fails every request closed: nothing
		// allowed, nothing to over-admit, nothing for the model to disagree with.
		{"Redis errors without a fault", false, false, 900, map[guard.Failure]int64{guard.FailureRedisError: 100}, true},
		// An engine that did not load its script again after SCRIPT FLUSH: NOSCRIPT
		// errors until the flushing stops, then recovery as after any fault.
		{"Redis errors during a fault that causes none (SCRIPT FLUSH)", true, true, 900, map[guard.Failure]int64{guard.FailureRedisError: 100}, true},
		{"timeouts during a fault that causes no error", true, true, 990, map[guard.Failure]int64{guard.FailureTimeout: 10}, false},
		{"no decision by Redis", true, false, 0, map[guard.Failure]int64{guard.FailureTimeout: 1000}, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			closed := tc.closed
			if closed == nil {
				closed = map[guard.Failure]int64{}
			}
			s := Summary{Runs: []*RunResult{{Name: "run", Faulted: tc.faulted, Errorless: tc.errorless, Decisions: 1000, Decided: tc.decided, FailClosed: closed}}}
			if got := s.Failures(); (len(got) > 0) != tc.fails {
				t.Fatalf("failures %q, want failed %v", got, tc.fails)
			}
		})
	}
}
