package benchreport

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"
)

// burstOnly is a DecideFunc that allows the first burst requests of every identity.
func burstOnly(burst int) DecideFunc {
	var mu sync.Mutex
	seen := map[string]int{}
	return func(_ context.Context, identity string) (bool, error) {
		mu.Lock()
		defer mu.Unlock()
		seen[identity]++
		return seen[identity] <= burst, nil
	}
}

func TestWorkloadRun(t *testing.T) {
	w := Workload{Identities: 50, Rounds: 20, Workers: 4}
	o, err := w.Run(context.Background(), "id-", burstOnly(10))
	if err != nil {
		t.Fatal(err)
	}
	if o.Total != 1000 || o.Allowed != 500 || o.AllowedShare() != 0.5 {
		t.Errorf("outcome %+v, want 1000 decided, 500 allowed", o)
	}
	boom := errors.New("boom")
	_, err = w.Run(context.Background(), "id-", func(context.Context, string) (bool, error) { return false, boom })
	if !errors.Is(err, boom) {
		t.Errorf("err = %v, want it to wrap the decider's", err)
	}
}

func TestRunFlood(t *testing.T) {
	plan := FloodPlan{Rule: burstRule, Offered: 200, Duration: 200 * time.Millisecond, Bin: 50 * time.Millisecond}
	f, err := RunFlood(context.Background(), burstOnly(5), "flooder", plan)
	if err != nil {
		t.Fatal(err)
	}
	if f.Offered != 40 || f.Admitted != 5 || len(f.Bins) != 4 {
		t.Fatalf("offered %d admitted %d in %d bins, want 40, 5, 4", f.Offered, f.Admitted, len(f.Bins))
	}
	if f.Bins[0].Admitted != 5 || f.Bins[0].Offered != 10 || f.Bins[3].Admitted != 0 {
		t.Errorf("bins %+v: want the burst in the first", f.Bins)
	}
}
