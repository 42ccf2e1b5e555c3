package benchreport

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/bucketgate/bucketgate"
	"github.com/bucketgate/bucketgate/checkapi"
	"github.com/bucketgate/bucketgate/internal/testkit/redistest"
)

// TestMeasureBatch: a small run through the delaying proxy on a real server gives a
// figure per invocation, every answer checked, of checks and of settles.
func TestMeasureBatch(t *testing.T) {
	srv := redistest.Start(t)
	for _, settle := range []bool{false, true} {
		plan := BatchPlan{Latency: time.Millisecond, Checks: 5, Reps: 2, Settle: settle}
		run, err := MeasureBatch(context.Background(), srv.Addr, plan)
		if err != nil {
			t.Fatalf("settle %v: %v", settle, err)
		}
		if len(run.One) != plan.Reps || len(run.Batch) != plan.Reps || run.OneMedian() <= 0 || run.BatchMedian() <= 0 {
			t.Fatalf("settle %v: run %+v: want %d figures of each, all positive", settle, run, plan.Reps)
		}
	}
}

// TestInOrder: an answer is accepted only when every check is ok and answered at its
// own index.
func TestInOrder(t *testing.T) {
	ok := func(i int) checkapi.Response {
		return checkapi.Response{Allowed: true, Reason: checkapi.ReasonOK, Limit: int64(bucketgate.MaxCapacity - i), Remaining: int64(bucketgate.MaxCapacity - i - 1), Rule: fmt.Sprintf("burst-%d", i)}
	}
	batchOf := func(rs ...checkapi.Response) []byte {
		out, err := json.Marshal(checkapi.BatchResult{Results: rs})
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	single := func(r checkapi.Response) []byte {
		out, err := json.Marshal(r)
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	limited := ok(1)
	limited.Allowed, limited.Reason = false, checkapi.ReasonLimited
	tests := []struct {
		name    string
		out     []byte
		batch   bool
		wantErr string // empty: accepted
	}{
		{name: "batch in order", out: batchOf(ok(0), ok(1), ok(2)), batch: true},
		{name: "single check 0", out: single(ok(0))},
		{name: "batch swapped", out: batchOf(ok(0), ok(2), ok(1)), batch: true, wantErr: "answer 1 is on rule burst-2 of limit 999999998, want burst-1 of limit 999999999: answers out of order"},
		{name: "batch shifted", out: batchOf(ok(1), ok(2), ok(0)), batch: true, wantErr: "answer 0 is on rule burst-1"},
		{name: "batch short", out: batchOf(ok(0), ok(1)), batch: true, wantErr: "2 results for 3 checks"},
		{name: "batch not ok", out: batchOf(ok(0), limited, ok(2)), batch: true, wantErr: "check 1 answered"},
		{name: "single of another check", out: single(ok(1)), wantErr: "answers out of order"},
		{name: "not JSON", out: []byte(`{"results":`), batch: true, wantErr: "batch: answer"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := inOrder(tc.out, tc.batch, 3)
			if tc.wantErr == "" && err != nil || tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)) {
				t.Fatalf("inOrder(%s) = %v, want %q", tc.out, err, tc.wantErr)
			}
		})
	}
}
