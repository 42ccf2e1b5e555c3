package benchreport

import (
	"context"
	"fmt"
	"math"

	"github.com/redis/rueidis"

	"github.com/bucketgate/bucketgate"
	"github.com/bucketgate/bucketgate/internal/guard"
)

// perThousand is the number of requests item 6 counts Redis calls for.
const perThousand = 1000

// DenyCacheRun is one flood through the production guard (internal/guard) and the
// number of decisions Redis was asked for, counted by the server.
type DenyCacheRun struct {
	// Name says which guard ran: with or without the deny cache.
	Name string
	// Flood is what the identity sent and got.
	Flood Flood
	// RedisCalls is how many EVALSHA calls the server ran during the flood.
	RedisCalls int64
	// Failures is how many decisions the guard made without Redis's answer (timeouts,
	// errors, an open circuit): zero in a fair run.
	Failures int
}

// CallsPer1000 is RedisCalls per 1,000 requests offered; goal <= 100.
func (d DenyCacheRun) CallsPer1000() float64 {
	return float64(d.RedisCalls) * perThousand / float64(d.Flood.Offered)
}

// Ceiling is the most a correct limiter admits over the flood: a full bucket plus the
// refill over its elapsed time, capacity + rate × window, in whole requests.
func (d DenyCacheRun) Ceiling() int64 {
	r := d.Flood.Plan.Rule
	return int64(math.Floor(float64(r.Capacity) + r.RefillPerSecond*d.Flood.Elapsed.Seconds()))
}

// OverAdmitted is how many admissions went beyond Ceiling; goal 0.
func (d DenyCacheRun) OverAdmitted() int64 { return max(0, int64(d.Flood.Admitted)-d.Ceiling()) }

// GuardDecide decides through g with rules and counts in *failures the decisions g
// made without Redis's answer.
func GuardDecide(g *guard.Guard, failures *int, rules ...bucketgate.Rule) DecideFunc {
	return func(ctx context.Context, identity string) (bool, error) {
		r, err := g.Decide(ctx, bucketgate.Request{Identity: identity, Rules: rules, Cost: 1})
		if r.Failure != guard.FailureNone {
			*failures++
		}
		return r.Allowed, err
	}
}

// MeasureDenyCache runs plan's flood for one identity through g on an empty database
// and counts the EVALSHA calls the server ran for it. The script is loaded first, by a
// decision for another identity, so that every call of the flood is one EVALSHA.
func MeasureDenyCache(ctx context.Context, admin rueidis.Client, name string, g *guard.Guard, plan FloodPlan) (DenyCacheRun, error) {
	if err := flushAll(ctx, admin); err != nil {
		return DenyCacheRun{}, err
	}
	run := DenyCacheRun{Name: name}
	decide := GuardDecide(g, &run.Failures, plan.Rule)
	if _, err := decide(ctx, "deny-cache-warm-up"); err != nil {
		return DenyCacheRun{}, fmt.Errorf("%s: warm up: %w", name, err)
	}
	run.Failures = 0
	if err := resetStats(ctx, admin); err != nil {
		return DenyCacheRun{}, err
	}
	var err error
	if run.Flood, err = RunFlood(ctx, decide, "deny-cache-flooder", plan); err != nil {
		return DenyCacheRun{}, fmt.Errorf("%s: %w", name, err)
	}
	st, err := commandStat(ctx, admin, "evalsha")
	if err != nil {
		return DenyCacheRun{}, fmt.Errorf("%s: %w", name, err)
	}
	run.RedisCalls = st.Calls
	return run, nil
}
