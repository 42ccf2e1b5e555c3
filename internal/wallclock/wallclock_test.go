package wallclock_test

import (
	"testing"
	"time"

	"github.com/bucketgate/bucketgate/internal/wallclock"
)

// TestYoungAndPending: a time after now (a clock that went back) is neither young nor
// a wait pending, nor is a wait due further off than its duration.
func TestYoungAndPending(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	const d = time.Minute
	tests := []struct {
		name           string
		at             time.Time // since for Young, until for Pending
		young, pending bool
	}{
		{"now", now, true, false},
		{"just under d before", now.Add(-d + time.Nanosecond), true, false},
		{"d before", now.Add(-d), false, false},
		{"a second after (the clock went back)", now.Add(time.Second), false, true},
		{"d after", now.Add(d), false, true},
		{"more than d after (went back further)", now.Add(d + time.Nanosecond), false, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := wallclock.Young(now, tt.at, d); got != tt.young {
				t.Errorf("Young: %v, want %v", got, tt.young)
			}
			if got := wallclock.Pending(now, tt.at, d); got != tt.pending {
				t.Errorf("Pending: %v, want %v", got, tt.pending)
			}
		})
	}
}
