package checkclient

import (
	"testing"
	"time"
)

// The wait before a retry doubles from about 100 ms and stops growing at 5 s, whatever
// the number of retries a Client was given (WithFunctionRetries): no wait of centuries,
// no shift past a Duration's bits.
func TestPauseLength(t *testing.T) {
	tests := []struct {
		name   string
		retry  int
		lo, hi time.Duration
	}{
		{"first", 0, 50 * time.Millisecond, 100 * time.Millisecond},
		{"second", 1, 100 * time.Millisecond, 200 * time.Millisecond},
		{"sixth", 5, 1600 * time.Millisecond, 3200 * time.Millisecond},
		{"seventh, at the cap", 6, maxPause / 2, maxPause},
		{"a shift past 64 bits", 70, maxPause / 2, maxPause},
		{"the most retries", int(^uint(0) >> 1), maxPause / 2, maxPause},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			for range 100 {
				if d := pauseLength(tc.retry); d < tc.lo || d > tc.hi {
					t.Fatalf("pauseLength(%d) = %v, want %v to %v", tc.retry, d, tc.lo, tc.hi)
				}
			}
		})
	}
}
