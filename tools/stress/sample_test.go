package stress

import (
	"math"
	"testing"
)

func TestTrend(t *testing.T) {
	xs := []float64{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11}
	line, flat, noisy := make([]float64, len(xs)), make([]float64, len(xs)), make([]float64, len(xs))
	for i, x := range xs {
		line[i] = 100 + 2*x
		flat[i] = 50
		noisy[i] = 50 + float64(i%2) // alternating, no trend
	}
	tests := []struct {
		name                   string
		ys                     []float64
		first, last, perMinute float64
	}{
		{"a line", line, 104, 118, 120},
		{"flat", flat, 50, 50, 0},
		{"alternating", noisy, 50.4, 50.6, 60 * 3.0 / 143}, // Sxy 3, Sxx 143
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := trendOf(xs, tc.ys)
			if math.Abs(got.First-tc.first) > 1e-9 || math.Abs(got.Last-tc.last) > 1e-9 || math.Abs(got.PerMinute-tc.perMinute) > 1e-9 {
				t.Fatalf("%+v, want first %v last %v per minute %v", got, tc.first, tc.last, tc.perMinute)
			}
		})
	}
	if got := trendOf(xs[:1], line[:1]); got != (Trend{}) {
		t.Fatalf("one sample: %+v", got)
	}
}

func TestTakeSample(t *testing.T) {
	s := takeSample(0)
	if s.HeapBytes == 0 || s.Goroutines < 1 {
		t.Fatalf("%+v", s)
	}
	if _, err := residentBytes(); err == nil && s.RSSBytes < s.HeapBytes/2 {
		t.Fatalf("resident %d bytes for a live heap of %d", s.RSSBytes, s.HeapBytes)
	}
}
