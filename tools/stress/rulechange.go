package stress

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/rueidis"

	"github.com/bucketgate/bucketgate"
	"github.com/bucketgate/bucketgate/internal/bucket"
	"github.com/bucketgate/bucketgate/internal/testkit/redistest"
)

// RuleChangeResult is the rule-change run: goroutines reserving, settling, checking
// and releasing on a few hot identities while the rules of their requests change every
// ruleChangeEvery, as an operator's config reload does with reservations and leases in
// flight: a shadow rule added, a rule removed, a bucket's capacity edited, concurrency
// rules added and removed, a plan that shares no rule with the others.
type RuleChangeResult struct {
	// Changes counts the plan changes; Reserves, Allowed and Checks the reserves, those
	// allowed, and the plain checks.
	Changes, Reserves, Allowed, Checks int64
	// Settles counts the settles and cancels (two at once each) of which Changed were
	// sent under another plan than their reserve's, and Refused refused as they must be
	// (their plan shares no rule with the reserve's); Late were refused for coming after
	// the reservation's expiry (a stalled machine), which is no failure.
	Settles, Changed, Refused, Late int64
	// WronglyRefused counts settles and releases refused though they share a rule with
	// their reserve or acquire, WronglyAccepted those accepted though they share none,
	// and DoubleSettles reservations whose two settles at once were both (or neither)
	// first, or settled another cost: each one a failure. WrongExample is one of the
	// first two.
	WronglyRefused, WronglyAccepted, DoubleSettles int64
	WrongExample                                   string
	// Leases counts the leases taken (by reserves and checks of a plan with a
	// concurrency rule), Releases the releases (two at once each; none by a plan with no
	// concurrency rule, which cannot release), Kept the leases no release ended (its
	// plan has none of their concurrency rules, or none at all), left to expire.
	Leases, Releases, Kept int64
	// ReleasedTwice counts leases both of whose releases answered Released, and
	// LostLeases those neither of whose did though the release's plan still has one of
	// their concurrency rules: each a failure.
	ReleasedTwice, LostLeases int64
	// MostInFlight is the most leases of one set in flight at once, OverConcurrency by
	// how much it exceeds its rule's concurrency, and Leaked the leases in flight after
	// the run that the run does not hold, or sets that outlive their leases: 0 is the
	// goal.
	MostInFlight, OverConcurrency, Leaked int64
	// Errors counts calls that failed otherwise, with an example.
	Errors       int64
	ErrorExample string
	// OverAdmitted is the most tokens any window of one identity's rule admitted beyond
	// its largest capacity and its refill, counting what each settle gave back to or
	// took from the rules it shares with its reserve: 0 is the goal.
	OverAdmitted int64
	// Replay is how each identity's calls, in Redis time order, compare with the
	// reference model's decisions (see replayLog.replay): no disagreement is the goal.
	Replay Replay
}

// The rule-change run's rules: buckets that bind often (a's capacity edited by one
// plan, a made a quota by another, which a day of the run uses up), a small shadow rule
// (enforced by one plan), a rule of a plan that shares none with the others, two
// concurrency rules (streams lowered by one plan: the leases it holds beyond stay theirs).
var (
	changeA      = bucketgate.Rule{Name: "a", Capacity: 60, RefillPerSecond: 2000}
	changeAWider = bucketgate.Rule{Name: "a", Capacity: 90, RefillPerSecond: 2000}
	changeAQuota = bucketgate.Rule{Name: "a", Limit: 600, Period: bucketgate.PeriodDay}
	changeB      = bucketgate.Rule{Name: "b", Capacity: 80, RefillPerSecond: 2000}
	changeTrial  = bucketgate.Rule{Name: "trial", Capacity: 30, RefillPerSecond: 1500, Shadow: true}
	changeTried  = bucketgate.Rule{Name: "trial", Capacity: 30, RefillPerSecond: 1500}
	changeSolo   = bucketgate.Rule{Name: "solo", Capacity: 60, RefillPerSecond: 2000}
	changeLeases = bucketgate.Rule{Name: "streams", Concurrency: 8}
	changeMore   = bucketgate.Rule{Name: "more", Concurrency: 4}
	changeFewer  = bucketgate.Rule{Name: "streams", Concurrency: 4}
)

// changePlans are the plans the run's requests take their rules from, one at a time,
// as reloads would: the rules of each plan apart from the others' are what a change
// adds or removes. The concurrency rule leads a plan, before the script's order.
var changePlans = [][]bucketgate.Rule{
	{changeA, changeB},
	{changeA, changeB, changeTrial},               // a shadow rule added
	{changeA},                                     // b and the shadow rule removed
	{changeAWider, changeTrial},                   // a's capacity edited
	{changeB, changeTried},                        // the shadow rule enforced, a removed
	{changeLeases, changeTrial, changeA, changeB}, // a concurrency rule added
	{changeB, changeMore, changeLeases},           // a removed, another concurrency rule
	{changeFewer, changeA},                        // a concurrency rule lowered, b removed
	{changeAQuota, changeB},                       // a made a quota: another rule
	{changeSolo},                                  // no rule shared with any other plan
}

// Rule-change timing: how often the plan changes, the most a settle (or a release)
// waits after its reserve (or acquire) so that a change comes between them now and
// then, and the ttl of the run's reservations and leases: leases whose release cannot
// end them (its plan has none of their concurrency rules) expire within it.
const (
	ruleChangeEvery = 100 * time.Millisecond
	ruleChangeWait  = 40 * time.Millisecond
	ruleChangeTTL   = 2 * time.Second
)

// ruleChangeIDs is how many hot identities the rule-change run works on.
const ruleChangeIDs = 4

// changeRun is a rule-change run's shared state: the limiter, the index of the plan in
// force (changePlans), and under mu what the run counted, charged and leased.
type changeRun struct {
	l      *bucket.Limiter
	plan   atomic.Int64
	mu     sync.Mutex
	res    *RuleChangeResult
	led    changeLedger
	leased []held
	ops    replayLog
}

// ruleChange runs the rule-change storm against srv for d with workers goroutines.
func (r *runner) ruleChange(ctx context.Context, srv *redistest.Server, d time.Duration, workers int) error {
	r.logf("run rule-change (standalone): %d goroutines, %v, the plan changing every %v", workers, d, ruleChangeEvery)
	c, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{srv.Addr}, DisableCache: true})
	if err != nil {
		return fmt.Errorf("stress: connect for the rule-change run: %w", err)
	}
	defer c.Close()
	run := &changeRun{l: bucket.New(c), res: &RuleChangeResult{}, led: changeLedger{}}
	end := time.Now().Add(d)
	var wg sync.WaitGroup
	wg.Go(func() { // the operator's reloads
		rng := rand.New(rand.NewPCG(r.opts.Seed, 1<<32))
		for time.Now().Before(end) && ctx.Err() == nil {
			time.Sleep(ruleChangeEvery)
			next := int64(rng.IntN(len(changePlans) - 1)) // another plan than the one in force
			if next >= run.plan.Load() {
				next++
			}
			run.plan.Store(next)
			run.res.Changes++ // this goroutine's alone until wg.Wait
		}
	})
	for w := range workers {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(r.opts.Seed, uint64(w)))
			for time.Now().Before(end) && ctx.Err() == nil {
				if err := run.turn(ctx, rng); err != nil {
					run.fail(err)
				}
			}
		})
	}
	wg.Wait()
	res := run.res
	res.OverAdmitted = run.led.overAdmitted()
	res.Replay = run.ops.replay()
	res.MostInFlight = mostInFlight(run.leased)
	for _, rule := range []bucketgate.Rule{changeLeases, changeMore} {
		var one []held
		for _, h := range run.leased {
			if h.rule == rule.Name {
				one = append(one, h)
			}
		}
		res.OverConcurrency = max(res.OverConcurrency, mostInFlight(one)-int64(rule.Concurrency))
	}
	var sets []leaseSet
	for k := range ruleChangeIDs {
		for _, rule := range []bucketgate.Rule{changeLeases, changeMore} {
			sets = append(sets, leaseSet{changeIdentity(k), rule.Name})
		}
	}
	if res.Leaked, err = leaks(ctx, c, sets, run.leased); err != nil {
		return err
	}
	r.sum.RuleChange = res
	r.logf("rule-change: %d plan changes, %d reserves (%d allowed), %d checks, %d settles (%d under another plan, %d refused sharing no rule, %d late), %d wrongly refused, %d wrongly accepted, %d settled twice, %d errors, over-admitted %d",
		res.Changes, res.Reserves, res.Allowed, res.Checks, res.Settles, res.Changed, res.Refused, res.Late, res.WronglyRefused, res.WronglyAccepted, res.DoubleSettles, res.Errors, res.OverAdmitted)
	r.logf("rule-change: %d leases, %d releases, %d kept to expire, %d released twice, %d lost, at most %d in flight (%d beyond), %d leaked",
		res.Leases, res.Releases, res.Kept, res.ReleasedTwice, res.LostLeases, res.MostInFlight, res.OverConcurrency, res.Leaked)
	return nil
}

// changeIdentity is the rule-change run's identity k.
func changeIdentity(k int) string { return fmt.Sprintf("change-%d", k) }

// fail counts an error of a call that should have answered.
func (run *changeRun) fail(err error) {
	run.mu.Lock()
	defer run.mu.Unlock()
	run.res.Errors++
	if run.res.ErrorExample == "" {
		run.res.ErrorExample = err.Error()
	}
}

// wrong keeps the first example of a settle or a release wrongly refused or accepted;
// run.mu held.
func (run *changeRun) wrong(example string) {
	if run.res.WrongExample == "" {
		run.res.WrongExample = example
	}
}

// turn is one goroutine's turn: a reserve (three times in four) or a check of the plan
// now, then, after a moment, two settles at once of an allowed reserve under the plan
// then, and two releases at once of a lease it took under the plan after that.
func (run *changeRun) turn(ctx context.Context, rng *rand.Rand) error {
	id := changeIdentity(rng.IntN(ruleChangeIDs))
	rules := changePlans[run.plan.Load()]
	q := bucketgate.Request{Identity: id, Rules: rules, Cost: 1 + rng.Int64N(5)}
	reserve := rng.IntN(4) != 0
	if reserve {
		q.Op, q.Cost = bucketgate.OpReserve, 1+rng.Int64N(15)
	}
	if reserve || slices.ContainsFunc(rules, bucketgate.Rule.IsConcurrency) {
		q.TTL = ruleChangeTTL
	}
	d, err := run.l.Decide(ctx, q)
	run.mu.Lock()
	if reserve {
		run.res.Reserves++
	} else {
		run.res.Checks++
	}
	run.ops.record(q, err, d)
	if err == nil && d.Allowed {
		run.led.admitted(id, rules, d, q.Cost)
		if reserve {
			run.res.Allowed++
		}
	}
	run.mu.Unlock()
	if err != nil || !d.Allowed {
		return err
	}
	var errs []error
	if reserve {
		time.Sleep(time.Duration(rng.Int64N(int64(ruleChangeWait))))
		errs = append(errs, run.settle(ctx, rng, q, d))
	}
	if d.Lease != "" {
		time.Sleep(time.Duration(rng.Int64N(int64(ruleChangeWait))))
		errs = append(errs, run.release(ctx, q, d))
	}
	return errors.Join(errs...)
}

// settle sends two settles (or cancels) at once of reserve q's allowed decision d under
// the plan now, and checks their answers against what the rules they share with q's
// allow.
func (run *changeRun) settle(ctx context.Context, rng *rand.Rand, q bucketgate.Request, d bucketgate.Decision) error {
	rules := changePlans[run.plan.Load()]
	s := bucketgate.Request{Identity: q.Identity, Rules: rules, Op: bucketgate.OpSettle, Cost: rng.Int64N(2*q.Cost + 1), ID: d.Reservation}
	if rng.IntN(6) == 0 {
		s.Op, s.Cost = bucketgate.OpCancel, 0
	}
	ds, err := both(func() (bucketgate.Decision, error) { return run.l.Decide(ctx, s) })
	shared := shares(q.Rules, rules)
	run.mu.Lock()
	defer run.mu.Unlock()
	run.ops.record(s, err, ds[:]...)
	run.res.Settles++
	if !slices.Equal(q.Rules, rules) {
		run.res.Changed++
	}
	switch {
	case err != nil && errors.Is(err, bucketgate.ErrConflict) && strings.Contains(err.Error(), "expired"):
		run.res.Late++
		return nil
	case err != nil && errors.Is(err, bucketgate.ErrConflict):
		if shared {
			run.res.WronglyRefused++
			run.wrong(fmt.Sprintf("a settle sharing a rule with its reserve (%s, then %s) refused: %v", ruleNames(q.Rules), ruleNames(rules), err))
			return nil
		}
		run.res.Refused++
		return nil
	case err != nil:
		return err
	case !shared:
		run.res.WronglyAccepted++
		run.wrong(fmt.Sprintf("a settle sharing no rule with its reserve (%s, then %s) accepted", ruleNames(q.Rules), ruleNames(rules)))
		return nil
	}
	if ds[0].Replayed == ds[1].Replayed || ds[0].Settled != s.Cost || ds[1].Settled != s.Cost {
		run.res.DoubleSettles++
	}
	for _, o := range ds {
		if !o.Replayed {
			run.led.settled(q, d, rules, o)
		}
	}
	return nil
}

// release sends two releases at once of the lease of acquire q's decision d under the
// plan now, records the lease in each set it was taken in until its release there or
// its expiry, and checks the answers: a release refused unless it shares a rule with
// q, and released (once) when its plan has one of q's concurrency rules.
func (run *changeRun) release(ctx context.Context, q bucketgate.Request, d bucketgate.Decision) error {
	rules := changePlans[run.plan.Load()]
	var ds [2]bucketgate.Decision
	var err error
	// A plan with no concurrency rule cannot release (an invalid request, which the
	// check API refuses as a conflict before the engine): the lease expires.
	canRelease := slices.ContainsFunc(rules, bucketgate.Rule.IsConcurrency)
	if canRelease {
		ds, err = both(func() (bucketgate.Decision, error) {
			return run.l.Decide(ctx, bucketgate.Request{Identity: q.Identity, Rules: rules, Op: bucketgate.OpRelease, ID: d.Lease})
		})
	}
	shared, ends := shares(q.Rules, rules), false
	for _, rule := range rules {
		ends = ends || rule.IsConcurrency() && slices.ContainsFunc(q.Rules, func(x bucketgate.Rule) bool { return sameRule(x, rule) })
	}
	run.mu.Lock()
	defer run.mu.Unlock()
	run.res.Leases++
	if canRelease {
		run.res.Releases++
		run.ops.record(bucketgate.Request{Identity: q.Identity, Rules: rules, Op: bucketgate.OpRelease, ID: d.Lease}, err, ds[:]...)
	}
	exp := d.Expires.UnixMilli()
	at := exp * 1000 // the lease's end in each set: its expiry unless released there
	switch {
	case !canRelease:
		run.res.Kept++
	case err != nil && errors.Is(err, bucketgate.ErrConflict) && shared:
		run.res.WronglyRefused++
		run.wrong(fmt.Sprintf("a release sharing a rule with its acquire (%s, then %s) refused: %v", ruleNames(q.Rules), ruleNames(rules), err))
		err = nil
	case err != nil && errors.Is(err, bucketgate.ErrConflict):
		run.res.Kept++
		err = nil
	case err != nil:
	case !shared:
		run.res.WronglyAccepted++
		run.wrong(fmt.Sprintf("a release sharing no rule with its acquire (%s, then %s) accepted", ruleNames(q.Rules), ruleNames(rules)))
	case ds[0].Released && ds[1].Released:
		run.res.ReleasedTwice++
	case ds[0].Released || ds[1].Released:
		at = ds[0].At.UnixMicro()
		if ds[1].Released {
			at = ds[1].At.UnixMicro()
		}
	case ends && ds[0].At.UnixMilli() < exp && ds[1].At.UnixMilli() < exp:
		run.res.LostLeases++
	default: // no set of its own in the plan, or released after its expiry (a stalled machine)
		run.res.Kept++
	}
	for _, rule := range q.Rules {
		if !rule.IsConcurrency() {
			continue
		}
		h := held{id: q.Identity, rule: rule.Name, from: d.At.UnixMicro(), end: exp * 1000, exp: exp}
		if slices.ContainsFunc(rules, func(x bucketgate.Rule) bool { return sameRule(x, rule) }) {
			h.end = at // released there, its concurrency edited since or not
		}
		run.leased = append(run.leased, h)
	}
	return err
}

// shares reports whether rules shares a rule (a name and a kind) with those of a
// reserve or an acquire: only then may its settle or release be accepted.
func shares(reserved, rules []bucketgate.Rule) bool {
	return slices.ContainsFunc(rules, func(r bucketgate.Rule) bool {
		return slices.ContainsFunc(reserved, func(x bucketgate.Rule) bool { return sameRule(x, r) })
	})
}

// sameRule reports whether x and y are one rule to a settle: one name, one kind
// (bucket, quota, concurrency), whatever their figures and shadow flag.
func sameRule(x, y bucketgate.Rule) bool {
	return x.Name == y.Name && x.IsQuota() == y.IsQuota() && x.IsConcurrency() == y.IsConcurrency()
}

// ruleNames is the names of rules, for an error.
func ruleNames(rules []bucketgate.Rule) string {
	names := make([]string, len(rules))
	for i, r := range rules {
		names[i] = r.Name
	}
	return "[" + strings.Join(names, " ") + "]"
}

// changeLedger is what the rule-change run's decisions took from (and settles gave
// back to) each bucket and quota of each identity, when Redis did; not safe for
// concurrent use.
type changeLedger map[changeKey][]admission

// changeKey names a series of the rule-change run's ledger: an identity's rule (its
// name and period alone: a name and a kind) and, for a quota, the start of its window
// (Unix us).
type changeKey struct {
	id     string
	rule   bucketgate.Rule
	window int64
}

// add records a, taken from (or given back to) rule r of identity id: a quota's in its
// window that holds at (Unix us).
func (l changeLedger) add(id string, r bucketgate.Rule, at int64, a admission) {
	k := changeKey{id: id, rule: bucketgate.Rule{Name: r.Name, Period: r.Period}}
	if r.IsQuota() {
		start, _ := r.Window(time.UnixMicro(at))
		k.window = start.UnixMicro()
	}
	l[k] = append(l[k], a)
}

// admitted records an allowed reserve or check d of cost on rules: cost taken from
// every bucket and quota but the shadow rules it was a shadow denial of.
func (l changeLedger) admitted(id string, rules []bucketgate.Rule, d bucketgate.Decision, cost int64) {
	for i, r := range rules {
		if !r.IsConcurrency() && !d.ShadowLimited.Has(i) {
			l.add(id, r, d.At.UnixMicro(), admission{at: d.At.UnixMicro(), cost: cost})
		}
	}
}

// settled records o, the first outcome of a settle under rules of reserve q's decision
// d: to each bucket and quota of rules that q took its estimate from, what it gave back
// or took (see settlement: a bucket owes its capacity at most, a quota's count goes up
// to twice its limit); nothing to any other rule, added since, a shadow denial or of
// another kind. A quota gives back in its reserve's window only (docs/check.md): what
// a settle after that window's end gives back goes to a window that has ended, and
// lowers no count; what a settle takes goes to the settle's window.
func (l changeLedger) settled(q bucketgate.Request, d bucketgate.Decision, rules []bucketgate.Rule, o bucketgate.Decision) {
	if o.Settled == q.Cost {
		return
	}
	for _, r := range rules {
		i := slices.IndexFunc(q.Rules, func(x bucketgate.Rule) bool { return sameRule(x, r) })
		if r.IsConcurrency() || i < 0 || d.ShadowLimited.Has(i) {
			continue
		}
		a, rule, at := settlement(o.At, q.Cost, o.Settled, max(r.Capacity, r.Limit)), r, o.At.UnixMicro()
		if a.cost < 0 {
			rule, at = q.Rules[i], d.At.UnixMicro()
		}
		l.add(q.Identity, rule, at, a)
	}
}

// overAdmitted is the most whole tokens any identity's bucket admitted beyond its
// bound in any window (the largest capacity its name has in any plan, and its refill),
// or any quota beyond its limit in one of its windows.
func (l changeLedger) overAdmitted() int64 {
	widest := map[bucketgate.Rule]bucketgate.Rule{} // by name and period
	for _, plan := range changePlans {
		for _, r := range plan {
			k := bucketgate.Rule{Name: r.Name, Period: r.Period}
			if w, ok := widest[k]; !ok || r.Capacity > w.Capacity {
				widest[k] = r
			}
		}
	}
	var most int64
	for k, a := range l {
		inOrder(a)
		w := widest[k.rule]
		if w.IsQuota() { // no refill: within its window, a quota's count never goes below 0
			w.Capacity = w.Limit
		}
		most = max(most, overTokens(excess(a, w.Capacity, w.RefillPerSecond)))
	}
	return most
}
