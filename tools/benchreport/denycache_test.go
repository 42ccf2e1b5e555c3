package benchreport

import (
	"testing"
	"time"

	"github.com/bucketgate/bucketgate"
)

// syntheticDenyCacheRun is a flood of 1,000 requests over 10 s against capacity 10
// refilled at 10/s, 110 admitted, with calls EVALSHA calls.
func syntheticDenyCacheRun(name string, calls int64) DenyCacheRun {
	plan := FloodPlan{Rule: bucketgate.Rule{Name: "flood", Capacity: 10, RefillPerSecond: 10}, Offered: 100, Duration: 10 * time.Second, Bin: time.Second}
	return DenyCacheRun{Name: name, RedisCalls: calls, Flood: Flood{Plan: plan, Offered: 1000, Admitted: 110, Elapsed: 10 * time.Second}}
}

func TestDenyCacheRun(t *testing.T) {
	tests := []struct {
		name     string
		admitted int
		elapsed  time.Duration
		calls    int64
		per1000  float64
		ceiling  int64
		over     int64
	}{
		{"at the ceiling", 110, 10 * time.Second, 210, 210, 110, 0},
		{"over it", 115, 10 * time.Second, 1000, 1000, 110, 5},
		{"a partial token does not count", 111, 10*time.Second + 50*time.Millisecond, 100, 100, 110, 1},
		{"under it", 50, 10 * time.Second, 50, 50, 110, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := syntheticDenyCacheRun(tt.name, tt.calls)
			d.Flood.Admitted, d.Flood.Elapsed = tt.admitted, tt.elapsed
			if got := d.CallsPer1000(); got != tt.per1000 {
				t.Errorf("CallsPer1000 = %v, want %v", got, tt.per1000)
			}
			if got := d.Ceiling(); got != tt.ceiling {
				t.Errorf("Ceiling = %v, want %v", got, tt.ceiling)
			}
			if got := d.OverAdmitted(); got != tt.over {
				t.Errorf("OverAdmitted = %v, want %v", got, tt.over)
			}
		})
	}
}

func TestHandlerOverheadFrom(t *testing.T) {
	full := map[string]float64{"ns/op": 1, "B/op": 2, "allocs/op": 3}
	tests := []struct {
		name    string
		benches map[string]GoBench
		want    []string
		err     string
	}{
		{"in name order, others ignored", map[string]GoBench{
			handlerOverheadPrefix + "rest": {Name: handlerOverheadPrefix + "rest", Metrics: full},
			handlerOverheadPrefix + "http": {Name: handlerOverheadPrefix + "http", Metrics: full},
			clientCostPaired:               {Name: clientCostPaired, Metrics: full},
		}, []string{"http", "rest"}, ""},
		{"missing", map[string]GoBench{clientCostPaired: {Name: clientCostPaired, Metrics: full}}, nil, "lacks BenchmarkHandlerOverhead/"},
		{"without -benchmem", map[string]GoBench{
			handlerOverheadPrefix + "rest": {Name: handlerOverheadPrefix + "rest", Metrics: map[string]float64{"ns/op": 1}},
		}, nil, "-benchmem"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := handlerOverheadFrom(tt.benches)
			if wantedError(t, err, tt.err) {
				return
			}
			if len(got) != len(tt.want) {
				t.Fatalf("got %d benchmarks, want %v", len(got), tt.want)
			}
			for i, g := range got {
				if overheadCase(g) != tt.want[i] {
					t.Errorf("benchmark %d is %s, want %s", i, overheadCase(g), tt.want[i])
				}
			}
		})
	}
}

// TestFloodVerdicts holds items 6 and 7 to what a correct limiter admits: no more than its
// bound, and no fewer than every token that refilled while the flood asked, all decided
// by Redis.
func TestFloodVerdicts(t *testing.T) {
	fair := syntheticDenyCacheRun("deny cache on", 110)
	fair.Flood.Plan.Offered, fair.Flood.Offered = 110, 1100
	tests := []struct {
		name string
		edit func(d *DenyCacheRun)
		want bool
	}{
		{"every token admitted", func(*DenyCacheRun) {}, true},
		{"the last partial token not admitted", func(d *DenyCacheRun) { d.Flood.Admitted, d.RedisCalls = 109, 109 }, true},
		{"over the bound", func(d *DenyCacheRun) { d.Flood.Admitted, d.RedisCalls = 112, 112 }, false},
		// A deny cache that kept its denials past their retry-after: few calls, nothing
		// over-admitted, and most of the refill denied.
		{"denials cached too long", func(d *DenyCacheRun) { d.Flood.Admitted, d.RedisCalls = 30, 30 }, false},
		// Redis unreachable: every request failed closed without a call.
		{"decided without Redis", func(d *DenyCacheRun) { d.Flood.Admitted, d.RedisCalls, d.Failures = 0, 0, 1100 }, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := fair
			tt.edit(&d)
			r := Report{DenyCache: d, NoDenyCache: fair, Flood: d.Flood}
			if got := r.denyCacheMet(); got != tt.want {
				t.Errorf("item 6 met = %v, want %v", got, tt.want)
			}
			if d.Failures > 0 {
				return // item 7 goes through the Limiter: a failure is an error
			}
			if got := r.floodMet(); got != tt.want {
				t.Errorf("item 7 met = %v, want %v", got, tt.want)
			}
		})
	}
}
