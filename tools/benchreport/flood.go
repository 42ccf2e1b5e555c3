package benchreport

import (
	"context"
	"fmt"
	"math"
	"time"

	"github.com/bucketgate/bucketgate"
)

// FloodPlan is one identity sending requests at a steady Offered rate for Duration
// against Rule, counted in bins of Bin.
type FloodPlan struct {
	// Rule is the only rule of every request.
	Rule bucketgate.Rule
	// Offered is the rate requests are sent at, per second.
	Offered float64
	// Duration is how long the flood lasts.
	Duration time.Duration
	// Bin is the width of one bin of the series.
	Bin time.Duration
}

// FloodBin counts the requests sent in one bin (by their scheduled time) and how many
// of them were admitted.
type FloodBin struct {
	// Start is the bin's start, from the start of the flood.
	Start time.Duration
	// Offered is how many requests were sent in the bin.
	Offered int
	// Admitted is how many of them were allowed.
	Admitted int
}

// Flood is the outcome of a FloodPlan.
type Flood struct {
	// Plan is what was run.
	Plan FloodPlan
	// Bins is the series, in time order.
	Bins []FloodBin
	// Offered and Admitted are the totals.
	Offered, Admitted int
	// Elapsed is the time from the first request to the last decision.
	Elapsed time.Duration
}

// Bound is the most a correct limiter may admit over the flood: a full bucket plus
// the refill over the elapsed time, plus one for the decision in flight at the edge.
func (f Flood) Bound() float64 {
	return float64(f.Plan.Rule.Capacity) + f.Plan.Rule.RefillPerSecond*f.Elapsed.Seconds() + 1
}

// Floor is the fewest a correct limiter admits over the flood, asked more often than it
// refills: every token that was there by the last request (due at the flood's duration
// less one interval at the latest) but a partial one, capacity + rate × (duration -
// interval) - 1, in whole requests. Tokens wait in a bucket below its capacity, so a late
// request loses none; a limiter (or a deny cache) that denies what it holds falls short.
func (f Flood) Floor() int64 {
	r, p := f.Plan.Rule, f.Plan
	asked := p.Duration.Seconds() - 1/p.Offered
	return int64(math.Floor(float64(r.Capacity) + r.RefillPerSecond*asked - 1))
}

// RunFlood sends plan's requests for identity through d, one at a time on schedule
// (catching up without sleeping when a decision took longer than the interval).
func RunFlood(ctx context.Context, d DecideFunc, identity string, plan FloodPlan) (Flood, error) {
	interval := time.Duration(float64(time.Second) / plan.Offered)
	bins := make([]FloodBin, int((plan.Duration+plan.Bin-1)/plan.Bin))
	for i := range bins {
		bins[i].Start = time.Duration(i) * plan.Bin
	}
	f := Flood{Plan: plan, Bins: bins}
	start := time.Now()
	for due := time.Duration(0); due < plan.Duration; due += interval {
		if wait := due - time.Since(start); wait > 0 {
			time.Sleep(wait)
		}
		allowed, err := d(ctx, identity)
		if err != nil {
			return Flood{}, fmt.Errorf("flood request at %v: %w", due, err)
		}
		b := &f.Bins[due/plan.Bin]
		b.Offered++
		f.Offered++
		if allowed {
			b.Admitted++
			f.Admitted++
		}
	}
	f.Elapsed = time.Since(start)
	return f, nil
}
