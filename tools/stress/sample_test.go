package stress

import (
	"math"
	"testing"
	"time"
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
	if got := trendOf(xs[:1], line[:1]); got != (Trend{Samples: 1}) {
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

// TestSoakWithoutSamples: a soak whose samples are missing after the warm-up (the workers'
// or Redis's: a soak no longer than its warm-up, a Redis that never answered INFO) has
// measured no trend, which is no flat one.
func TestSoakWithoutSamples(t *testing.T) {
	samples := func(n int) ([]Sample, []RedisSample) {
		var w []Sample
		var r []RedisSample
		for i := range n {
			at := soakWarmUp + time.Duration(i)*time.Second
			w = append(w, Sample{Elapsed: at, HeapBytes: 1 << 20, Goroutines: 40})
			r = append(r, RedisSample{Elapsed: at, UsedMemory: 1 << 20, Keys: 100})
		}
		return w, r
	}
	full, fullRedis := samples(45)
	tests := []struct {
		name   string
		worker [][]Sample
		redis  []RedisSample
		fails  bool
	}{
		{"flat, sampled throughout", [][]Sample{full, full}, fullRedis, false},
		{"no worker samples", [][]Sample{nil, nil}, fullRedis, true},
		{"no worker reported", nil, fullRedis, true},
		{"no Redis samples", [][]Sample{full, full}, nil, true},
		{"one sample after the warm-up", [][]Sample{full[:1], full[:1]}, fullRedis[:1], true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := Summary{Soak: soakOf(&RunResult{Samples: tc.worker, Span: time.Minute, Decisions: 120_000}, tc.redis, 2000)}
			if got := s.Failures(); (len(got) > 0) != tc.fails {
				t.Fatalf("failures %q, want failed %v", got, tc.fails)
			}
		})
	}
}
