package benchreport

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-redis/redis_rate/v10"

	"github.com/bucketgate/bucketgate"
	"github.com/bucketgate/bucketgate/internal/bucket"
)

// DecideFunc decides one request of cost 1 for identity and reports whether it was allowed.
type DecideFunc func(ctx context.Context, identity string) (bool, error)

// BucketgateDecide decides through bucketgate's Limiter with rules.
func BucketgateDecide(l *bucket.Limiter, rules ...bucketgate.Rule) DecideFunc {
	return func(ctx context.Context, identity string) (bool, error) {
		d, err := l.Decide(ctx, bucketgate.Request{Identity: identity, Rules: rules, Cost: 1})
		return d.Allowed, err
	}
}

// RedisRateDecide decides through go-redis/redis_rate's GCRA limiter, its own API.
func RedisRateDecide(l *redis_rate.Limiter, limit redis_rate.Limit) DecideFunc {
	return func(ctx context.Context, identity string) (bool, error) {
		res, err := l.Allow(ctx, identity, limit)
		if err != nil {
			return false, err
		}
		return res.Allowed > 0, nil
	}
}

// The rules every comparison uses. The burst rule and the peer's limit are the same
// bucket: 10 at once, then one every 10 s (GCRA with burst 10 and an emission interval
// of 10 s admits exactly what a token bucket of capacity 10 refilled at 0.1/s admits).
// The slow refill keeps the mix of allowed and denied requests the same whatever the
// speed of the contender. The daily rule is a plan's chained quota: 1000 a day.
var (
	burstRule = bucketgate.Rule{Name: "burst", Capacity: 10, RefillPerSecond: 0.1}
	dailyRule = bucketgate.Rule{Name: "daily", Capacity: 1000, RefillPerSecond: 1000.0 / 86400}
	peerLimit = redis_rate.Limit{Rate: 1, Burst: 10, Period: 10 * time.Second}
)

// Workload is a fair mix of requests for every limiter: Identities distinct identities,
// each sent Rounds requests of cost 1, round by round (every identity once, then again),
// by Workers goroutines. With a burst of 10 and 20 rounds about half are allowed and
// half denied, whichever limiter decides.
type Workload struct {
	// Identities is how many distinct identities (keys) the requests spread over.
	Identities int
	// Rounds is how many requests each identity sends.
	Rounds int
	// Workers is how many goroutines send requests at once.
	Workers int
}

// Total is the number of requests in w.
func (w Workload) Total() int { return w.Identities * w.Rounds }

// Outcome counts what a run of a Workload got.
type Outcome struct {
	// Total is how many requests were decided.
	Total int64
	// Allowed is how many of them were allowed.
	Allowed int64
	// Elapsed is the wall time of the run.
	Elapsed time.Duration
}

// AllowedShare is the fraction of requests allowed, 0 to 1; 0 for an empty Outcome.
func (o Outcome) AllowedShare() float64 {
	if o.Total == 0 {
		return 0
	}
	return float64(o.Allowed) / float64(o.Total)
}

// PerSecond is the rate of decisions over the run's wall time.
func (o Outcome) PerSecond() float64 { return float64(o.Total) / o.Elapsed.Seconds() }

// Run sends w's requests through d, identities named prefix + index, and stops at the
// first error.
func (w Workload) Run(ctx context.Context, prefix string, d DecideFunc) (Outcome, error) {
	ids := make([]string, w.Identities)
	for i := range ids {
		ids[i] = prefix + strconv.Itoa(i)
	}
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	var next, allowed atomic.Int64
	var wg sync.WaitGroup
	start := time.Now()
	for range w.Workers {
		wg.Go(func() {
			for {
				i := next.Add(1) - 1
				if i >= int64(w.Total()) || ctx.Err() != nil {
					return
				}
				ok, err := d(ctx, ids[i%int64(w.Identities)])
				if err != nil {
					cancel(fmt.Errorf("request %d: %w", i, err))
					return
				}
				if ok {
					allowed.Add(1)
				}
			}
		})
	}
	wg.Wait()
	if err := context.Cause(ctx); err != nil {
		return Outcome{}, err
	}
	return Outcome{Total: int64(w.Total()), Allowed: allowed.Load(), Elapsed: time.Since(start)}, nil
}
