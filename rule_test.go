package bucketgate_test

import (
	"math"
	"testing"
	"time"

	"github.com/bucketgate/bucketgate"
)

func TestFillTime(t *testing.T) {
	tests := []struct {
		name string
		rule bucketgate.Rule
		want time.Duration
	}{
		{"a bucket", bucketgate.Rule{Capacity: 10, RefillPerSecond: 2}, 5 * time.Second},
		{"a quota has none", bucketgate.Rule{Limit: 100, Period: bucketgate.PeriodMonth}, 0},
		{"a concurrency rule has none", bucketgate.Rule{Concurrency: 4}, 0},
		{"no refill: never full", bucketgate.Rule{Capacity: 10}, math.MaxInt64},
		{"the zero Rule: never full", bucketgate.Rule{}, math.MaxInt64},
		{"a NaN refill: never full", bucketgate.Rule{Capacity: 10, RefillPerSecond: math.NaN()}, math.MaxInt64},
		{"a negative refill: never full", bucketgate.Rule{Capacity: 10, RefillPerSecond: -2}, math.MaxInt64},
		{"an infinitely negative refill: never full", bucketgate.Rule{Capacity: 10, RefillPerSecond: math.Inf(-1)}, math.MaxInt64},
		{"a negative capacity: full at once", bucketgate.Rule{Capacity: -10, RefillPerSecond: 2}, 0},
		{"no capacity: full at once", bucketgate.Rule{RefillPerSecond: 2}, 0},
		{"beyond the longest Duration", bucketgate.Rule{Capacity: 1e9, RefillPerSecond: 1e-9}, math.MaxInt64},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.rule.FillTime(); got != tt.want {
				t.Errorf("FillTime() = %v, want %v", got, tt.want)
			}
		})
	}
}
