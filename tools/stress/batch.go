package stress

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/redis/rueidis"

	"github.com/bucketgate/bucketgate"
	"github.com/bucketgate/bucketgate/internal/bucket"
	"github.com/bucketgate/bucketgate/internal/testkit/redistest"
)

// BatchResult is the batch run: goroutines deciding, through DecideBatch, batches of
// acquires, reserves (with a lease or without), settles, cancels, releases, refunds and
// idempotent checks on a few identities of the cluster, each call sent once, while every
// master's script cache is flushed again and again.
type BatchResult struct {
	// Batches and Calls count the batches sent and their requests; Flushes the SCRIPT
	// FLUSH commands that reached a master, and Loads the script calls with the
	// script's text (EVAL) that the masters ran meanwhile: each one a node that had lost
	// the script.
	Batches, Calls, Flushes, Loads int64
	// Acquired counts the leases taken (by checks and reserves), Reserved the
	// reservations, and Settles, Cancels, Releases, Refunds, Checks and Peeks the calls
	// of each kind that Redis decided.
	Acquired, Reserved, Settles, Cancels, Releases, Refunds, Checks, Peeks int64
	// Errors counts calls that failed, with an example.
	Errors       int64
	ErrorExample string
	// Disordered counts calls decided (in Redis time) before an earlier request of their
	// batch on the same identity: each a failure, as a later request must see what an
	// earlier one wrote.
	Disordered int64
	// Twice counts calls, each sent once, that Redis decided twice: a settle or a check
	// with a requestId answered as a replay, a release of a lease held that answered not
	// released. Each a failure.
	Twice int64
	// UsageOff counts identities whose usage (Limiter.Usage, summed over the run's days)
	// differs from what the run's decisions add up to, with an example: a call decided
	// twice counts twice there.
	UsageOff     int64
	UsageExample string
	// OverAdmitted is the most tokens any window of an identity's bucket took beyond its
	// capacity and refill: 0 is the goal.
	OverAdmitted int64
	// MostInFlight is the most leases of one identity in flight at an instant of Redis's
	// clock, OverConcurrency by how much it exceeds the concurrency, and Leaked the
	// leases out of place after the run (see leaks): 0 is the goal of both.
	MostInFlight, OverConcurrency, Leaked int64
	// Replay is each identity's calls replayed through the reference model, as the
	// leases run's are, peeks aside: a peek of a concurrency rule reads the leases in a
	// second round trip after its decision's time, so that the leases acquired and
	// released meanwhile by other goroutines are in it, which the model, replaying it at
	// that time, cannot know; it changes nothing.
	Replay Replay
}

// The batch run's shape: identities every goroutine shares, how often each master's
// script cache is flushed, and how long a lease or a reservation the run means to end
// is held (long enough never to expire first). Options.BatchMost is how long a batch is
// at most.
const (
	batchIdentities = 8
	batchFlushEvery = 200 * time.Millisecond
	batchHeld       = 5 * time.Second
)

// The batch run's rules: a concurrency rule beside a bucket that binds now and then.
var (
	batchStreams = bucketgate.Rule{Name: "streams", Concurrency: 4}
	batchTokens  = bucketgate.Rule{Name: "tokens", Capacity: 100, RefillPerSecond: 2000}
)

// batchCall is one request of a batch and what the run does with its answer.
type batchCall struct {
	q    bucketgate.Request
	keep bool  // a lease the run releases later
	est  int64 // a settle's or a cancel's reserve's estimate
	h    *held // a release's lease
}

// usageCount is what an identity's usage must hold after the run: allowed checks that
// took tokens, the tokens (settles' corrections included), and denials.
type usageCount struct{ allowed, cost, limited int64 }

// batchState is what the batch run's goroutines share, under mu.
type batchState struct {
	mu     sync.Mutex
	res    BatchResult
	led    leaseLedger
	leased []*held
	ops    replayLog
	usage  map[string]*usageCount
}

// fail counts err, a call's error.
func (s *batchState) fail(err error) {
	s.res.Errors++
	if s.res.ErrorExample == "" {
		s.res.ErrorExample = err.Error()
	}
}

// batch runs the batch run against c's masters, for d, through clients rueidis clients
// shared by goroutines goroutines.
func (r *runner) batch(ctx context.Context, c *redistest.Cluster, d time.Duration, clients, goroutines int) error {
	r.logf("run batch (cluster): %d goroutines on %d clients, %v, SCRIPT FLUSH on every master every %v", goroutines, clients, d, batchFlushEvery)
	ls := make([]*bucket.Limiter, clients)
	var admin rueidis.Client
	for k := range ls {
		cc, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: c.Seeds(), DisableCache: true})
		if err != nil {
			return fmt.Errorf("stress: connect for the batch run: %w", err)
		}
		defer cc.Close()
		ls[k], admin = bucket.New(cc, bucket.Usage(2)), cc
	}
	s := &batchState{led: leaseLedger{}, usage: map[string]*usageCount{}}
	evals, err := evalCalls(ctx, c.Masters)
	if err != nil {
		return err
	}
	start, end := time.Now(), time.Now().Add(d)
	stop := make(chan struct{})
	var flusher, wg sync.WaitGroup
	flusher.Go(func() { s.flush(ctx, c.Masters, stop) })
	for g := range goroutines {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(r.opts.Seed, uint64(g)))
			var pending []batchCall
			for n := 0; len(pending) > 0 || time.Now().Before(end) && ctx.Err() == nil; n++ {
				var qs []batchCall
				qs, pending = nextBatch(rng, g, n, r.opts.BatchMost, pending, time.Now().Before(end) && ctx.Err() == nil)
				pending = append(pending, s.decide(ctx, ls[g%len(ls)], qs)...)
			}
		})
	}
	wg.Wait()
	close(stop)
	flusher.Wait()
	res := &s.res
	after, err := evalCalls(ctx, c.Masters)
	if err != nil {
		return err
	}
	res.Loads = after - evals
	res.OverAdmitted = s.led.overAdmitted(batchTokens)
	res.Replay = s.ops.replay()
	leased := make([]held, len(s.leased))
	for i, h := range s.leased {
		leased[i] = *h
	}
	res.MostInFlight = mostInFlight(leased)
	res.OverConcurrency = max(0, res.MostInFlight-int64(batchStreams.Concurrency))
	var sets []leaseSet
	for k := range batchIdentities {
		sets = append(sets, leaseSet{batchIdentity(k), batchStreams.Name})
	}
	if res.Leaked, err = leaks(ctx, admin, sets, leased); err != nil {
		return err
	}
	if err := s.checkUsage(ctx, ls[0], start); err != nil {
		return err
	}
	r.sum.Batch = res
	r.logf("batch: %d batches of %d calls, %d flushes, %d loads; %d leases, %d reservations, %d settles, %d cancels, %d releases, %d refunds, %d checks, %d peeks; %d errors, %d out of order, %d decided twice, %d usages off, over-admitted %d",
		res.Batches, res.Calls, res.Flushes, res.Loads, res.Acquired, res.Reserved, res.Settles, res.Cancels, res.Releases, res.Refunds, res.Checks, res.Peeks, res.Errors, res.Disordered, res.Twice, res.UsageOff, res.OverAdmitted)
	r.logf("batch: at most %d in flight (concurrency %d), %d leaked; replayed through the reference model: %d verified, %d differing (e.g. %v), %d unverifiable, %d at a tied microsecond",
		res.MostInFlight, batchStreams.Concurrency, res.Leaked, res.Replay.Verified, res.Replay.Disagreements, res.Replay.Examples, res.Replay.Unverifiable, res.Replay.Ties)
	return nil
}

// flush sends SCRIPT FLUSH to every master every batchFlushEvery until stop closes.
func (s *batchState) flush(ctx context.Context, masters []*redistest.Server, stop chan struct{}) {
	t := time.NewTicker(batchFlushEvery)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case <-t.C:
		}
		for _, m := range masters {
			if _, err := command(ctx, m, "SCRIPT", "FLUSH"); err == nil {
				s.mu.Lock()
				s.res.Flushes++
				s.mu.Unlock()
			}
		}
	}
}

// evalCalls is how many EVAL commands masters have run (INFO commandstats).
func evalCalls(ctx context.Context, masters []*redistest.Server) (int64, error) {
	var n int64
	for _, m := range masters {
		info, err := command(ctx, m, "INFO", "commandstats")
		if err != nil {
			return 0, fmt.Errorf("stress: batch: %w", err)
		}
		for line := range strings.SplitSeq(info, "\n") {
			if v, ok := strings.CutPrefix(strings.TrimSpace(line), "cmdstat_eval:calls="); ok {
				calls, _, _ := strings.Cut(v, ",")
				k, err := strconv.ParseInt(calls, 10, 64)
				if err != nil {
					return 0, fmt.Errorf("stress: batch: INFO commandstats of %s: %q: %w", m.Addr, line, err)
				}
				n += k
			}
		}
	}
	return n, nil
}

// peeks reports whether q, a request of the batch run, is a peek.
func peeks(q bucketgate.Request) bool { return q.Op == bucketgate.OpCheck && q.Cost == 0 }

// batchIdentity names the batch run's identity k: 600 bytes, so that a batch of a few
// dozen calls is longer than one 16 KB read of Redis's query buffer, between which
// another client's call may load the script.
func batchIdentity(k int) string { return fmt.Sprintf("batch-%d-%s", k, strings.Repeat("x", 592)) }

// nextBatch makes goroutine g's batch n, of 2 to most requests: up to half of it ends what pending holds (a
// settle or a cancel of a reservation, a release of a lease), all of it when more is
// false (the run is over), the rest new requests (acquires, reserves, idempotent checks,
// refunds, peeks), in a random order. It returns the batch and what is still pending.
func nextBatch(rng *rand.Rand, g, n, most int, pending []batchCall, more bool) (qs, rest []batchCall) {
	size := 2 + rng.IntN(most-1)
	ends := min(len(pending), size/2)
	if !more {
		ends, size = len(pending), len(pending)
	}
	qs = append(qs, pending[:ends]...)
	rest = pending[ends:]
	for i := range qs {
		if qs[i].q.Op != bucketgate.OpSettle {
			continue
		}
		if rng.IntN(6) == 0 { // a cancel
			qs[i].q.Op = bucketgate.OpCancel
		} else { // below the estimate, or above it
			qs[i].q.Cost = rng.Int64N(2*qs[i].est + 1)
		}
	}
	for k := 0; len(qs) < size; k++ {
		id := batchIdentity(rng.IntN(batchIdentities))
		both := []bucketgate.Rule{batchStreams, batchTokens}
		switch p := rng.IntN(20); {
		case p < 7: // an acquire, one in ten left to expire
			keep := rng.IntN(10) != 0
			ttl := leaseUnheld
			if keep {
				ttl = batchHeld
			}
			qs = append(qs, batchCall{q: bucketgate.Request{Identity: id, Rules: both, Cost: 1 + rng.Int64N(3), TTL: ttl}, keep: keep})
		case p < 14: // a reserve, half of them with a lease
			rules := []bucketgate.Rule{batchTokens}
			if p%2 == 0 {
				rules = both
			}
			qs = append(qs, batchCall{q: bucketgate.Request{Identity: id, Rules: rules, Op: bucketgate.OpReserve, Cost: 1 + rng.Int64N(10), TTL: batchHeld}, keep: true})
		case p < 17: // a check with a requestId, sent once
			qs = append(qs, batchCall{q: bucketgate.Request{Identity: id, Rules: []bucketgate.Rule{batchTokens}, Cost: 1 + rng.Int64N(3), RequestID: fmt.Sprintf("g%d-%d-%d", g, n, k)}})
		case p < 19: // a refund of a concurrency rule's request
			qs = append(qs, batchCall{q: bucketgate.Request{Identity: id, Rules: both, Op: bucketgate.OpRefund, Cost: 1 + rng.Int64N(2)}})
		default: // a peek of a concurrency rule's request, decided on its own between the others
			qs = append(qs, batchCall{q: bucketgate.Request{Identity: id, Rules: both}})
		}
	}
	rng.Shuffle(len(qs), func(i, j int) { qs[i], qs[j] = qs[j], qs[i] })
	return qs, rest
}

// decide sends qs as one batch through l and accounts for every answer; it returns the
// calls that end what the batch's answers hold (settles, cancels, releases).
func (s *batchState) decide(ctx context.Context, l *bucket.Limiter, qs []batchCall) (pending []batchCall) {
	reqs := make([]bucketgate.Request, len(qs))
	for i, c := range qs {
		reqs[i] = c.q
	}
	ds, errs := l.DecideBatch(ctx, reqs)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.res.Batches++
	s.res.Calls += int64(len(qs))
	s.res.Disordered += outOfOrder(reqs, ds, errs)
	for i, c := range qs {
		d, err := ds[i], errs[i]
		if !peeks(c.q) { // see BatchResult.Replay
			s.ops.record(c.q, err, d)
		}
		if err != nil {
			s.fail(fmt.Errorf("%s of %s: %w", c.q.Op, c.q.Identity, err))
			continue
		}
		pending = append(pending, s.account(c, d)...)
	}
	return pending
}

// outOfOrder counts the requests of a batch qs, answered ds and errs, that Redis
// decided (in its time) before an earlier request of the batch on the same identity.
func outOfOrder(qs []bucketgate.Request, ds []bucketgate.Decision, errs []error) int64 {
	var n int64
	last := map[string]int64{} // each identity's latest decision of the batch so far
	for i, q := range qs {
		if errs[i] != nil {
			continue
		}
		at := ds[i].At.UnixMicro()
		if at < last[q.Identity] {
			n++
		}
		last[q.Identity] = max(last[q.Identity], at)
	}
	return n
}

// account adds what Redis decided of call c, d, to the run's counts, ledger, leases and
// usage, and returns the calls that end what d holds: a release of a lease kept, a
// settle of a reservation (its cost, or a cancel, chosen by nextBatch).
func (s *batchState) account(c batchCall, d bucketgate.Decision) (ends []batchCall) {
	q := c.q
	u := s.usage[q.Identity]
	if u == nil {
		u = &usageCount{}
		s.usage[q.Identity] = u
	}
	twice := func() { s.res.Twice++ }
	switch q.Op {
	case bucketgate.OpRelease:
		s.res.Releases++
		if !d.Released {
			twice()
			return nil
		}
		c.h.end = d.At.UnixMicro()
	case bucketgate.OpSettle, bucketgate.OpCancel:
		if q.Op == bucketgate.OpSettle {
			s.res.Settles++
		} else {
			s.res.Cancels++
		}
		if d.Replayed {
			twice()
			return nil
		}
		if d.Settled != c.est {
			s.led[q.Identity] = append(s.led[q.Identity], settlement(d.At, c.est, d.Settled, batchTokens.Capacity))
			u.cost += d.Settled - c.est
		}
	case bucketgate.OpRefund:
		s.res.Refunds++
		s.led[q.Identity] = append(s.led[q.Identity], admission{at: d.At.UnixMicro(), cost: -q.Cost})
	default: // a check, an acquire, a reserve, a peek
		if peeks(q) {
			s.res.Peeks++ // it takes nothing, and counts nothing in usage
			return nil
		}
		if d.Replayed {
			twice()
			return nil
		}
		if q.Op == bucketgate.OpCheck && !q.Acquires() {
			s.res.Checks++
		}
		if !d.Allowed {
			u.limited++
			return nil
		}
		u.allowed++
		u.cost += q.Cost
		s.led.admitted(q.Identity, d, q.Cost)
		if d.Lease != "" {
			h := &held{id: q.Identity, rule: batchStreams.Name, from: d.At.UnixMicro(), end: d.Expires.UnixMilli() * 1000, exp: d.Expires.UnixMilli()}
			s.leased = append(s.leased, h)
			s.res.Acquired++
			if c.keep {
				ends = append(ends, batchCall{q: bucketgate.Request{Identity: q.Identity, Rules: q.Rules, Op: bucketgate.OpRelease, ID: d.Lease}, h: h})
			}
		}
		if d.Reservation != "" {
			s.res.Reserved++
			ends = append(ends, batchCall{q: bucketgate.Request{Identity: q.Identity, Rules: q.Rules, Op: bucketgate.OpSettle, ID: d.Reservation}, est: q.Cost})
		}
	}
	return ends
}

// checkUsage compares each identity's usage from start to now, as l reads it, with
// what the run's decisions add up to; identities a call of which failed (Redis may or
// may not have decided it) are left out.
func (s *batchState) checkUsage(ctx context.Context, l *bucket.Limiter, start time.Time) error {
	now, err := l.Time(ctx, "")
	if err != nil {
		return fmt.Errorf("stress: batch: %w", err)
	}
	for id, want := range s.usage {
		if s.ops.tainted[id] {
			continue
		}
		days, err := l.Usage(ctx, id, start, now)
		if err != nil {
			return fmt.Errorf("stress: batch: usage of %s: %w", id, err)
		}
		var got usageCount
		for _, day := range days {
			got.allowed += day.Allowed
			got.cost += day.Cost
			got.limited += day.Limited
		}
		if got != *want {
			s.res.UsageOff++
			if s.res.UsageExample == "" {
				s.res.UsageExample = fmt.Sprintf("%s: Redis counted %d allowed, %d tokens, %d limited; the run's decisions %d, %d, %d", id, got.allowed, got.cost, got.limited, want.allowed, want.cost, want.limited)
			}
		}
	}
	return nil
}
