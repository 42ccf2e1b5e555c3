package stress

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sort"
	"sync"
	"time"

	"github.com/redis/rueidis"

	"github.com/bucketgate/bucketgate"
	"github.com/bucketgate/bucketgate/internal/bucket"
	"github.com/bucketgate/bucketgate/internal/testkit/redistest"
)

// LeasesResult is the leases run: goroutines reserving on a few hot identities, each
// reservation settled by two goroutines at once (at different actual costs, never below
// the estimate, so that no token goes back), and idempotent checks sent twice at once.
type LeasesResult struct {
	// Reserves, Allowed and Settles count the reserves, those allowed, and the settles
	// of them that Redis decided (two per allowed reserve).
	Reserves, Allowed, Settles int64
	// DoubleSettles counts reservations settled twice, both outcomes first (not
	// replayed), or with different settled costs: each one a failure.
	DoubleSettles int64
	// Idempotent counts the checks sent twice at once with one requestId, and
	// DoubleCharges those both decided first: each one a failure.
	Idempotent, DoubleCharges int64
	// Errors counts calls that failed, with an example.
	Errors       int64
	ErrorExample string
	// OverAdmitted is the most tokens any window of the reserves and checks admitted on
	// one identity beyond its capacity and refill: 0 is the goal.
	OverAdmitted int64
}

// leaseRule is the leases run's bucket: slow enough that the hot identities run dry, fast
// enough that many reserves are allowed and settled.
var leaseRule = bucketgate.Rule{Name: "tokens", Capacity: 200, RefillPerSecond: 5000}

// leases runs the leases storm against srv for d with workers goroutines.
func (r *runner) leases(ctx context.Context, srv *redistest.Server, d time.Duration, workers int) error {
	r.logf("run leases (standalone): %d goroutines, %v", workers, d)
	c, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{srv.Addr}, DisableCache: true})
	if err != nil {
		return fmt.Errorf("stress: connect for the leases run: %w", err)
	}
	defer c.Close()
	l := bucket.New(c)
	res := &LeasesResult{}
	var mu sync.Mutex
	adm := map[string][]admission{}
	admit := func(id string, d bucketgate.Decision, cost int64) {
		mu.Lock()
		defer mu.Unlock()
		adm[id] = append(adm[id], admission{at: d.At.UnixMicro(), cost: cost})
	}
	fail := func(err error) {
		mu.Lock()
		defer mu.Unlock()
		res.Errors++
		if res.ErrorExample == "" {
			res.ErrorExample = err.Error()
		}
	}
	end := time.Now().Add(d)
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(r.opts.Seed, uint64(w)))
			for n := 0; time.Now().Before(end) && ctx.Err() == nil; n++ {
				id := fmt.Sprintf("lease-%d", rng.IntN(8))
				rules := []bucketgate.Rule{leaseRule}
				if n%4 == 3 { // an idempotent check, sent twice at once
					q := bucketgate.Request{Identity: id, Rules: rules, Cost: 1 + rng.Int64N(5), RequestID: fmt.Sprintf("w%d-%d", w, n)}
					ds, errs := both(func() (bucketgate.Decision, error) { return l.Decide(ctx, q) })
					if errs != nil {
						fail(errs)
						continue
					}
					mu.Lock()
					res.Idempotent++
					if !ds[0].Replayed && !ds[1].Replayed {
						res.DoubleCharges++
					}
					mu.Unlock()
					if ds[0].Allowed {
						admit(id, ds[0], q.Cost)
					}
					continue
				}
				est := 1 + rng.Int64N(20)
				rd, err := l.Decide(ctx, bucketgate.Request{Identity: id, Rules: rules, Op: bucketgate.OpReserve, Cost: est})
				mu.Lock()
				res.Reserves++
				mu.Unlock()
				if err != nil {
					fail(err)
					continue
				}
				if !rd.Allowed {
					continue
				}
				admit(id, rd, est)
				settle := func(actual int64) func() (bucketgate.Decision, error) {
					return func() (bucketgate.Decision, error) {
						return l.Decide(ctx, bucketgate.Request{Identity: id, Rules: rules, Op: bucketgate.OpSettle, Cost: actual, ID: rd.Reservation})
					}
				}
				a1, a2 := est+rng.Int64N(est+1), est+rng.Int64N(est+1)
				var ds [2]bucketgate.Decision
				var errs [2]error
				var pair sync.WaitGroup
				pair.Go(func() { ds[0], errs[0] = settle(a1)() })
				pair.Go(func() { ds[1], errs[1] = settle(a2)() })
				pair.Wait()
				if err := errors.Join(errs[:]...); err != nil {
					fail(err)
					continue
				}
				mu.Lock()
				res.Allowed++
				res.Settles += 2
				if ds[0].Replayed == ds[1].Replayed || ds[0].Settled != ds[1].Settled {
					res.DoubleSettles++
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	for _, a := range adm {
		sort.Slice(a, func(i, j int) bool { return a[i].at < a[j].at })
		res.OverAdmitted = max(res.OverAdmitted, overTokens(excess(a, leaseRule.Capacity, leaseRule.RefillPerSecond)))
	}
	r.sum.Leases = res
	r.logf("leases: %d reserves (%d allowed), %d settles, %d double settles, %d idempotent checks, %d charged twice, %d errors, over-admitted %d",
		res.Reserves, res.Allowed, res.Settles, res.DoubleSettles, res.Idempotent, res.DoubleCharges, res.Errors, res.OverAdmitted)
	return nil
}

// both calls f twice at once and returns both answers, or the first error.
func both(f func() (bucketgate.Decision, error)) ([2]bucketgate.Decision, error) {
	var ds [2]bucketgate.Decision
	var errs [2]error
	var wg sync.WaitGroup
	wg.Go(func() { ds[0], errs[0] = f() })
	wg.Go(func() { ds[1], errs[1] = f() })
	wg.Wait()
	return ds, errors.Join(errs[:]...)
}
