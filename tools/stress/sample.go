package stress

import (
	"bytes"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"time"
)

// Sample is one reading of a worker process's memory and goroutines.
type Sample struct {
	// Elapsed is the time since the run started.
	Elapsed time.Duration `json:"elapsed"`
	// HeapBytes is the live heap right after a garbage collection, in bytes.
	HeapBytes uint64 `json:"heapBytes"`
	// RSSBytes is the process's resident set size, in bytes; zero where unknown.
	RSSBytes uint64 `json:"rssBytes"`
	// Goroutines is the number of goroutines.
	Goroutines int `json:"goroutines"`
}

// sampleUntil takes a Sample at start and every interval after it until end.
func sampleUntil(start, end time.Time, every time.Duration) []Sample {
	time.Sleep(time.Until(start))
	var out []Sample
	t := time.NewTicker(every)
	defer t.Stop()
	for now := time.Now(); now.Before(end); now = <-t.C {
		out = append(out, takeSample(now.Sub(start)))
	}
	return out
}

func takeSample(elapsed time.Duration) Sample {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	rss, _ := residentBytes()
	return Sample{Elapsed: elapsed, HeapBytes: ms.HeapAlloc, RSSBytes: rss, Goroutines: runtime.NumGoroutine()}
}

// residentBytes reads the process's resident set size from /proc/self/statm (Linux).
func residentBytes() (uint64, error) {
	b, err := os.ReadFile("/proc/self/statm")
	if err != nil {
		return 0, err
	}
	fields := bytes.Fields(b)
	if len(fields) < 2 {
		return 0, fmt.Errorf("/proc/self/statm: %q", b)
	}
	pages, err := strconv.ParseUint(string(fields[1]), 10, 64)
	if err != nil {
		return 0, fmt.Errorf("/proc/self/statm: %w", err)
	}
	return pages * uint64(os.Getpagesize()), nil
}

// Trend summarises a series sampled over time: the mean of its first and last
// windows and its least-squares slope.
type Trend struct {
	// First and Last are the means of the first and last window of samples.
	First, Last float64
	// PerMinute is the least-squares slope, in units per minute.
	PerMinute float64
	// Samples is how many samples it summarises.
	Samples int
}

// trendWindow is how many samples the First and Last means of a Trend average.
const trendWindow = 5

// minTrendSamples is the fewest samples a soak's trend is held to: its first and last
// windows apart. Fewer measured nothing, which is no flat trend.
const minTrendSamples = 2 * trendWindow

// trendOf returns the Trend of ys sampled at xs (seconds). It needs two samples.
func trendOf(xs, ys []float64) Trend {
	n := len(xs)
	if n < 2 || len(ys) != n {
		return Trend{Samples: min(n, len(ys))}
	}
	w := min(trendWindow, n/2)
	return Trend{First: mean(ys[:w]), Last: mean(ys[n-w:]), PerMinute: 60 * slope(xs, ys), Samples: n}
}

func mean(v []float64) float64 {
	var s float64
	for _, x := range v {
		s += x
	}
	return s / float64(len(v))
}

// slope is the least-squares slope of ys over xs.
func slope(xs, ys []float64) float64 {
	mx, my := mean(xs), mean(ys)
	var num, den float64
	for i := range xs {
		num += (xs[i] - mx) * (ys[i] - my)
		den += (xs[i] - mx) * (xs[i] - mx)
	}
	if den == 0 {
		return 0
	}
	return num / den
}
