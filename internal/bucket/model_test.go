package bucket_test

import (
	"testing"
	"time"

	"github.com/bucketgate/bucketgate"
	"github.com/bucketgate/bucketgate/internal/bucket"
)

// TestModelFreePlanScenario runs the free-plan scenario on the model alone, time passed in.
func TestModelFreePlanScenario(t *testing.T) {
	m := bucket.NewModel()
	q := bucketgate.Request{Identity: "tenant-1", Rules: free, Cost: 1}
	run := func(at time.Time, n int, allowed bool) {
		t.Helper()
		for i := range n {
			if d := m.Decide(at, q); d.Allowed != allowed {
				t.Fatalf("at %v request %d: %+v, want allowed %v", at, i+1, d, allowed)
			}
		}
	}
	run(epoch, 10, true)
	run(epoch, 1, false)
	run(epoch.Add(5*time.Second), 5, true)
	run(epoch.Add(5*time.Second), 1, false)
	if exp, _ := m.ExpiresAt("tenant-1"); !exp.Equal(epoch.Add(15*time.Second + bucket.ExpiryMargin)) {
		t.Errorf("expires at %v", exp)
	}
	// A clock behind the last write refills nothing and takes nothing back.
	if d := m.Decide(epoch, bucketgate.Request{Identity: "tenant-1", Rules: free}); d.Remaining != 0 || d.RetryAfter != 0 {
		t.Errorf("peek behind the clock: %+v", d)
	}
}
