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
	"github.com/bucketgate/bucketgate/internal/lua"
	"github.com/bucketgate/bucketgate/internal/testkit/redistest"
)

// LeasesResult is the leases run: goroutines reserving on a few hot identities, each
// reservation settled by two goroutines at once (at different actual costs, never below
// the estimate, so that no token goes back), idempotent checks sent twice at once, and
// the release storm: checks of a concurrency rule (and a bucket) on a few other hot
// identities, each lease released by two goroutines at once, or never (to expire).
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
	// OverAdmitted is the most tokens any window of the reserves, settles and checks
	// (the release storm's too) took on one identity beyond its capacity and refill: 0
	// is the goal.
	OverAdmitted int64
	// Acquires and Acquired count the checks of the concurrency rule and those allowed
	// (each a lease); Releases the releases Redis decided (two per released lease), and
	// Expired the leases never released, left to expire.
	Acquires, Acquired, Releases, Expired int64
	// ReleasedTwice counts leases both of whose releases answered Released, and
	// LostLeases those neither of whose did before the lease expired: each a failure.
	ReleasedTwice, LostLeases int64
	// MostInFlight is the most leases of one identity in flight at any instant of
	// Redis's clock (acquired, not yet released or expired), and OverConcurrency by how
	// much it exceeds the rule's concurrency: 0 is the goal.
	MostInFlight, OverConcurrency int64
	// Leaked counts the leases in flight after the storm that the run does not hold
	// (or held leases missing), and the sets that would outlive their latest lease by
	// more than the margin and the rest of its minute: 0 is the goal.
	Leaked int64
	// Replay is how each identity's calls (reserves, settles, checks, releases), in
	// Redis time order, compare with the reference model's decisions (see
	// replayLog.replay): no disagreement is the goal.
	Replay Replay
}

// leaseRule is the leases run's bucket: slow enough that the hot identities run dry, fast
// enough that many reserves are allowed and settled.
var leaseRule = bucketgate.Rule{Name: "tokens", Capacity: 200, RefillPerSecond: 5000}

// leaseStreams is the release storm's concurrency rule, beside a bucket that also
// binds now and then: four in flight at most per identity.
var (
	leaseStreams = bucketgate.Rule{Name: "streams", Concurrency: 4}
	leaseTokens  = bucketgate.Rule{Name: "tokens", Capacity: 100, RefillPerSecond: 2000}
)

// TTLs of the release storm's leases: one released holds long enough never to expire
// during the run; one never released expires soon, within the run or just after it.
const (
	leaseHeld   = time.Minute
	leaseUnheld = 50 * time.Millisecond
)

// held is a lease as one concurrency rule's set holds it: its identity and rule, when
// Redis acquired it (us), when it ended there (us: released, or expired) and its expiry
// (ms).
type held struct {
	id, rule       string
	from, end, exp int64
}

// leaseSet names one concurrency rule's set of leases: its identity and rule.
type leaseSet struct{ id, rule string }

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
	led, storm := leaseLedger{}, leaseLedger{}
	var leased []held
	var ops replayLog // under mu
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
				if n%4 == 1 { // the release storm
					if h, err := r.acquireRelease(ctx, l, rng, res, &mu, storm, &ops); err != nil {
						fail(err)
					} else if h != nil {
						mu.Lock()
						leased = append(leased, *h)
						mu.Unlock()
					}
					continue
				}
				id := fmt.Sprintf("lease-%d", rng.IntN(8))
				rules := []bucketgate.Rule{leaseRule}
				if n%4 == 3 { // an idempotent check, sent twice at once
					q := bucketgate.Request{Identity: id, Rules: rules, Cost: 1 + rng.Int64N(5), RequestID: fmt.Sprintf("w%d-%d", w, n)}
					ds, errs := both(func() (bucketgate.Decision, error) { return l.Decide(ctx, q) })
					mu.Lock()
					ops.record(q, errs, ds[:]...)
					mu.Unlock()
					if errs != nil {
						fail(errs)
						continue
					}
					mu.Lock()
					res.Idempotent++
					if !ds[0].Replayed && !ds[1].Replayed {
						res.DoubleCharges++
					}
					led.checked(id, ds, q.Cost)
					mu.Unlock()
					continue
				}
				est := 1 + rng.Int64N(20)
				rq := bucketgate.Request{Identity: id, Rules: rules, Op: bucketgate.OpReserve, Cost: est}
				rd, err := l.Decide(ctx, rq)
				mu.Lock()
				res.Reserves++
				ops.record(rq, err, rd)
				mu.Unlock()
				if err != nil {
					fail(err)
					continue
				}
				if !rd.Allowed {
					continue
				}
				mu.Lock()
				led.admitted(id, rd, est)
				mu.Unlock()
				settle := func(actual int64) bucketgate.Request {
					return bucketgate.Request{Identity: id, Rules: rules, Op: bucketgate.OpSettle, Cost: actual, ID: rd.Reservation}
				}
				sq := [2]bucketgate.Request{settle(est + rng.Int64N(est+1)), settle(est + rng.Int64N(est+1))}
				var ds [2]bucketgate.Decision
				var errs [2]error
				var pair sync.WaitGroup
				pair.Go(func() { ds[0], errs[0] = l.Decide(ctx, sq[0]) })
				pair.Go(func() { ds[1], errs[1] = l.Decide(ctx, sq[1]) })
				pair.Wait()
				mu.Lock()
				ops.record(sq[0], errs[0], ds[0])
				ops.record(sq[1], errs[1], ds[1])
				mu.Unlock()
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
				led.settled(id, ds, est, leaseRule.Capacity)
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	res.OverAdmitted = max(led.overAdmitted(leaseRule), storm.overAdmitted(leaseTokens))
	res.Replay = ops.replay()
	res.MostInFlight = mostInFlight(leased)
	res.OverConcurrency = max(0, res.MostInFlight-int64(leaseStreams.Concurrency))
	var sets []leaseSet
	for k := range 4 {
		sets = append(sets, leaseSet{fmt.Sprintf("conc-%d", k), leaseStreams.Name})
	}
	if res.Leaked, err = leaks(ctx, c, sets, leased); err != nil {
		return err
	}
	r.sum.Leases = res
	r.logf("leases: %d reserves (%d allowed), %d settles, %d double settles, %d idempotent checks, %d charged twice, %d errors, over-admitted %d",
		res.Reserves, res.Allowed, res.Settles, res.DoubleSettles, res.Idempotent, res.DoubleCharges, res.Errors, res.OverAdmitted)
	r.logf("leases: %d acquires (%d leases), %d releases (two at once each), %d left to expire, %d released twice, %d lost, at most %d in flight (concurrency %d), %d leaked",
		res.Acquires, res.Acquired, res.Releases, res.Expired, res.ReleasedTwice, res.LostLeases, res.MostInFlight, leaseStreams.Concurrency, res.Leaked)
	r.logf("leases: replayed through the reference model: %d verified, %d differing (e.g. %v), %d unverifiable, %d at a tied microsecond",
		res.Replay.Verified, res.Replay.Disagreements, res.Replay.Examples, res.Replay.Unverifiable, res.Replay.Ties)
	return nil
}

// leaseLedger is what the leases run's checks, reserves and settles took from each
// identity's bucket, when Redis took it; not safe for concurrent use.
type leaseLedger map[string][]admission

// checked records an idempotent check sent twice at once: what each first decision
// (not replayed) took, at its time; both when Redis charged it twice.
func (l leaseLedger) checked(id string, ds [2]bucketgate.Decision, cost int64) {
	for _, d := range ds {
		if d.Allowed && !d.Replayed {
			l[id] = append(l[id], admission{at: d.At.UnixMicro(), cost: cost})
		}
	}
}

// admitted records an allowed reserve of its estimate, or an allowed check of cost.
func (l leaseLedger) admitted(id string, d bucketgate.Decision, cost int64) {
	l[id] = append(l[id], admission{at: d.At.UnixMicro(), cost: cost})
}

// settled records the two settles, sent at once, of a reserve of est on a bucket of
// capacity: what each first outcome (not replayed) took beyond the estimate, at its
// time (see settlement). Taking the rest never fails (the bucket may go below zero,
// down to minus its capacity), so no window ends at a settle; the checks and reserves
// after it must wait for the tokens it took.
func (l leaseLedger) settled(id string, ds [2]bucketgate.Decision, est, capacity int64) {
	for _, d := range ds {
		if !d.Replayed && d.Settled != est {
			l[id] = append(l[id], settlement(d.At, est, d.Settled, capacity))
		}
	}
}

// overAdmitted is the most whole tokens any identity's bucket (of rule) admitted
// beyond its bound in any window.
func (l leaseLedger) overAdmitted(rule bucketgate.Rule) int64 {
	var most int64
	for _, a := range l {
		inOrder(a) // a settle at the same microsecond as a check goes after it
		most = max(most, overTokens(excess(a, rule.Capacity, rule.RefillPerSecond)))
	}
	return most
}

// acquireRelease is one turn of the release storm: a check of the concurrency rule on
// one of four hot identities and, when it holds a lease, two releases of it at once
// after a moment, or, one time in ten, none (the lease expires). What an allowed check
// took from the bucket goes to led, its calls to ops (both under mu). It returns the
// lease, nil when denied.
func (r *runner) acquireRelease(ctx context.Context, l *bucket.Limiter, rng *rand.Rand, res *LeasesResult, mu *sync.Mutex, led leaseLedger, ops *replayLog) (*held, error) {
	id := fmt.Sprintf("conc-%d", rng.IntN(4))
	rules := []bucketgate.Rule{leaseStreams, leaseTokens}
	keep := rng.IntN(10) != 0
	ttl := leaseUnheld
	if keep {
		ttl = leaseHeld
	}
	q := bucketgate.Request{Identity: id, Rules: rules, Cost: 1 + rng.Int64N(3), TTL: ttl}
	d, err := l.Decide(ctx, q)
	mu.Lock()
	res.Acquires++
	ops.record(q, err, d)
	mu.Unlock()
	if err != nil || !d.Allowed {
		return nil, err
	}
	h := &held{id: id, rule: leaseStreams.Name, from: d.At.UnixMicro(), end: d.Expires.UnixMilli() * 1000, exp: d.Expires.UnixMilli()}
	mu.Lock()
	led.admitted(id, d, q.Cost)
	res.Acquired++
	if !keep {
		res.Expired++
	}
	mu.Unlock()
	if !keep {
		return h, nil
	}
	time.Sleep(time.Duration(rng.IntN(2000)) * time.Microsecond)
	rq := bucketgate.Request{Identity: id, Rules: rules, Op: bucketgate.OpRelease, ID: d.Lease}
	ds, err := both(func() (bucketgate.Decision, error) { return l.Decide(ctx, rq) })
	mu.Lock()
	defer mu.Unlock()
	ops.record(rq, err, ds[:]...)
	if err != nil {
		return h, err // the lease may stand: counted as held to its expiry
	}
	res.Releases += 2
	switch {
	case ds[0].Released && ds[1].Released:
		res.ReleasedTwice++
	case !ds[0].Released && !ds[1].Released:
		res.LostLeases++
	case ds[0].Released:
		h.end = ds[0].At.UnixMicro()
	default:
		h.end = ds[1].At.UnixMicro()
	}
	return h, nil
}

// mostInFlight is the most leases of one set (identity and rule) held at one instant:
// each from its acquire to its release or expiry, an end counting before a start at the
// same instant.
func mostInFlight(leased []held) int64 {
	type edge struct {
		at    int64
		delta int64
	}
	by := map[leaseSet][]edge{}
	for _, h := range leased {
		k := leaseSet{h.id, h.rule}
		by[k] = append(by[k], edge{h.from, 1}, edge{h.end, -1})
	}
	var most int64
	for _, es := range by {
		sort.Slice(es, func(i, j int) bool { return es[i].at < es[j].at || es[i].at == es[j].at && es[i].delta < es[j].delta })
		var n int64
		for _, e := range es {
			n += e.delta
			most = max(most, n)
		}
	}
	return most
}

// leaks compares the leases in flight in each of sets after a storm with those the run
// holds (none of the released ones; the unreleased ones not expired yet); then, once
// every unreleased lease has expired, checks that no set holds a lease in flight and
// that each set left (its expired leases not swept yet) expires within the margin of
// the latest lease it ever held. It returns the leases and sets out of place.
func leaks(ctx context.Context, c rueidis.Client, sets []leaseSet, leased []held) (int64, error) {
	t, err := bucket.New(c).Time(ctx, "")
	if err != nil {
		return 0, fmt.Errorf("stress: leases: %w", err)
	}
	want, latest, last := map[leaseSet]int64{}, map[leaseSet]int64{}, int64(0)
	for _, h := range leased {
		k := leaseSet{h.id, h.rule}
		if h.end > t.UnixMicro() {
			want[k]++
		}
		latest[k] = max(latest[k], h.exp)
		last = max(last, h.end/1000)
	}
	inFlight := func(s leaseSet, nowMS int64) (int64, error) { // the set's mark is no lease
		zs, err := c.Do(ctx, c.B().Zrange().Key(bucket.LeaseKey(s.id, s.rule)).Min(fmt.Sprintf("(%d", nowMS)).Max("+inf").Byscore().Withscores().Build()).AsZScores()
		var n int64
		for _, z := range zs {
			if z.Member != lua.LeaseSetMark {
				n++
			}
		}
		if err != nil {
			return 0, fmt.Errorf("stress: leases of %s (%s): %w", s.id, s.rule, err)
		}
		return n, nil
	}
	var leaked int64
	for _, s := range sets {
		n, err := inFlight(s, t.UnixMilli())
		if err != nil {
			return 0, err
		}
		leaked += max(n-want[s], want[s]-n)
	}
	time.Sleep(time.Until(time.UnixMilli(last).Add(100 * time.Millisecond))) // Redis's clock is this machine's
	if t, err = bucket.New(c).Time(ctx, ""); err != nil {
		return 0, fmt.Errorf("stress: leases: %w", err)
	}
	for _, s := range sets {
		n, err := inFlight(s, t.UnixMilli())
		if err != nil {
			return 0, err
		}
		at, err := c.Do(ctx, c.B().Pexpiretime().Key(bucket.LeaseKey(s.id, s.rule)).Build()).AsInt64()
		if err != nil {
			return 0, fmt.Errorf("stress: leases of %s (%s): %w", s.id, s.rule, err)
		}
		leaked += n
		bound := latest[s] + bucket.ExpiryMargin.Milliseconds() // then the whole minute (lua.LeaseSetMinute)
		bound += (lua.LeaseSetMinute - bound%lua.LeaseSetMinute) % lua.LeaseSetMinute
		if at != -2 && (at < 0 || at > bound) {
			leaked++ // a set that would outlive its leases by more than its minute
		}
	}
	return leaked, nil
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
