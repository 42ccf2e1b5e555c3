package benchreport

import (
	"context"
	"fmt"
	"slices"

	"github.com/redis/rueidis"
)

// Contender is one limiter under measurement.
type Contender struct {
	// Name labels the contender in the report.
	Name string
	// Decide decides one request.
	Decide DecideFunc
}

// RedisSide is the Redis-side cost of one contender's decisions.
type RedisSide struct {
	// Name is the contender's.
	Name string
	// UsecPerCall is the least over the repetitions of EVALSHA's mean server time per
	// call, in microseconds: other work on the machine only ever adds to it.
	UsecPerCall float64
	// Median is the median over the repetitions, in microseconds.
	Median float64
	// Runs holds every repetition's mean, in microseconds, in order.
	Runs []float64
	// Outcome is the last repetition's count of allowed and denied requests.
	Outcome Outcome
}

// MeasureRedisSide runs w through every contender, reps times over, interleaved
// (A B C A B C ...) so that a slow moment of the machine hurts all alike, each run on
// an empty database with the command statistics reset, and reads EVALSHA's
// usec_per_call from INFO commandstats after each run.
func MeasureRedisSide(ctx context.Context, admin rueidis.Client, w Workload, reps int, cs ...Contender) ([]RedisSide, error) {
	out := make([]RedisSide, len(cs))
	for rep := range reps {
		for i, c := range cs {
			usec, o, err := redisSideRun(ctx, admin, w, c)
			if err != nil {
				return nil, fmt.Errorf("%s, repetition %d: %w", c.Name, rep+1, err)
			}
			out[i].Name, out[i].Outcome = c.Name, o
			out[i].Runs = append(out[i].Runs, usec)
		}
	}
	for i := range out {
		out[i].UsecPerCall, out[i].Median = slices.Min(out[i].Runs), median(out[i].Runs)
	}
	return out, nil
}

func redisSideRun(ctx context.Context, admin rueidis.Client, w Workload, c Contender) (float64, Outcome, error) {
	// One call first, so that the script is loaded and no NOSCRIPT-then-EVAL is counted.
	if _, err := c.Decide(ctx, "warm-up"); err != nil {
		return 0, Outcome{}, fmt.Errorf("warm-up: %w", err)
	}
	if err := flushAll(ctx, admin); err != nil {
		return 0, Outcome{}, err
	}
	if err := resetStats(ctx, admin); err != nil {
		return 0, Outcome{}, err
	}
	o, err := w.Run(ctx, c.Name+":", c.Decide)
	if err != nil {
		return 0, Outcome{}, err
	}
	st, err := commandStat(ctx, admin, "evalsha")
	if err != nil {
		return 0, Outcome{}, err
	}
	if st.Calls != o.Total {
		return 0, Outcome{}, fmt.Errorf("EVALSHA ran %d times for %d decisions: something else used the server", st.Calls, o.Total)
	}
	return st.UsecPerCall, o, nil
}

// flushAll empties the server.
func flushAll(ctx context.Context, c rueidis.Client) error {
	if err := c.Do(ctx, c.B().Flushall().Build()).Error(); err != nil {
		return fmt.Errorf("flushall: %w", err)
	}
	return nil
}

// median returns the middle value of xs (the mean of the middle two for an even
// count), and 0 for none.
func median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Sorted(slices.Values(xs))
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}
