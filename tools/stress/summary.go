package stress

import (
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/bucketgate/bucketgate/internal/guard"
)

// Goals a stress run is held to.
const (
	// MinDecisions is the fewest decisions by Redis a full run must make.
	MinDecisions = 1_000_000
	// RecoveryGoal bounds the time from Redis being back to a production chain's first
	// decision by Redis: docs/design.md's "service resumes within a second". The breaker
	// probes every guard.DefaultProbeInterval, so a failover whose first probe meets a
	// stale slot map still makes it with the second probe.
	RecoveryGoal = time.Second
	// maxGoroutineDrift is how many goroutines a soak worker may end with beyond its
	// start: timers and connection goroutines come and go; a leak per decision would
	// add thousands.
	maxGoroutineDrift = 5
	// maxHeapSlope bounds a soak worker's live-heap growth, in bytes per minute. A leak
	// of one small object (16 bytes) per decision at the soak's 1,000 decisions per
	// second per worker would be about 1 MiB a minute.
	maxHeapSlope = 256 << 10
	// maxRedisSlope bounds the growth of Redis's used_memory in the soak, bytes per
	// minute: expiring keys must hold it flat. A key that never expired would add about
	// 100 bytes per new identity, several MiB a minute.
	maxRedisSlope = 1 << 20
)

// Summary is everything a stress run measured.
type Summary struct {
	// Runs are the load, fault and soak runs, in order.
	Runs []*RunResult
	// Hostile is the hostile-identity run, if it ran.
	Hostile *HostileResult
	// Leases is the reserve, settle and idempotent-check storm, if it ran.
	Leases *LeasesResult
	// RuleChange is the storm of settles and releases across plan changes, if it ran.
	RuleChange *RuleChangeResult
	// Batch is the batches of leases, reserves and settles under SCRIPT FLUSH, if it ran.
	Batch *BatchResult
	// Soak is the soak's memory and goroutine trends, if it ran; RedisSamples are its
	// raw Redis readings.
	Soak         *SoakResult
	RedisSamples []RedisSample
	// Fuzz are the fuzz targets' runs.
	Fuzz []FuzzResult
}

// SoakResult is the soak's fixed-rate load and what its processes' memory did.
type SoakResult struct {
	// Rate is the decisions per second achieved; Target the rate asked for.
	Rate, Target float64
	// Heap, RSS and Goroutines are each worker's trends after the warm-up.
	Heap, RSS, Goroutines []Trend
	// RedisMemory and RedisKeys are Redis's used_memory and DBSIZE trends.
	RedisMemory, RedisKeys Trend
}

// soakOf computes the soak's trends from its run and Redis samples, after soakWarmUp.
func soakOf(res *RunResult, redis []RedisSample, target float64) *SoakResult {
	s := &SoakResult{Target: target}
	if res.Span > 0 {
		s.Rate = float64(res.Decisions) / res.Span.Seconds()
	}
	for _, samples := range res.Samples {
		var xs, heap, rss, gs []float64
		for _, v := range samples {
			if v.Elapsed < soakWarmUp {
				continue
			}
			xs = append(xs, v.Elapsed.Seconds())
			heap, rss, gs = append(heap, float64(v.HeapBytes)), append(rss, float64(v.RSSBytes)), append(gs, float64(v.Goroutines))
		}
		s.Heap, s.RSS, s.Goroutines = append(s.Heap, trendOf(xs, heap)), append(s.RSS, trendOf(xs, rss)), append(s.Goroutines, trendOf(xs, gs))
	}
	var xs, mem, keys []float64
	for _, v := range redis {
		if v.Elapsed < soakWarmUp {
			continue
		}
		xs, mem, keys = append(xs, v.Elapsed.Seconds()), append(mem, float64(v.UsedMemory)), append(keys, float64(v.Keys))
	}
	s.RedisMemory, s.RedisKeys = trendOf(xs, mem), trendOf(xs, keys)
	return s
}

// Decisions is the total number of decisions over every run, and of those Redis made
// (the hostile run's among both).
func (s *Summary) Decisions() (all, decided int64) {
	for _, r := range s.Runs {
		all += r.Decisions
		decided += r.Decided
	}
	if h := s.Hostile; h != nil {
		all += h.Decisions
		decided += h.Identities * int64(len(wantRemaining))
	}
	return all, decided
}

// OverAdmitted is the total over-admission over every run, in tokens.
func (s *Summary) OverAdmitted() int64 {
	var n int64
	for _, r := range s.Runs {
		n += r.Accounting.OverAdmitted
	}
	if s.Leases != nil {
		n += s.Leases.OverAdmitted
	}
	if s.RuleChange != nil {
		n += s.RuleChange.OverAdmitted
	}
	if s.Batch != nil {
		n += s.Batch.OverAdmitted
	}
	return n
}

// Failures lists every correctness goal the runs missed: over-admission, a decision
// the failure policy never gives, a disagreement with the reference model, a chain
// that never recovered, a reply of the wrong shape, a Redis error without a fault, a
// run Redis decided nothing of, a hostile identity mishandled, a
// soak that leaks, a fuzz failure. Any of them fails the stress run.
func (s *Summary) Failures() []string {
	var out []string
	add := func(format string, args ...any) { out = append(out, fmt.Sprintf(format, args...)) }
	for _, r := range s.Runs {
		if r.Accounting.OverAdmitted > 0 {
			add("%s: over-admitted %d tokens", r.Name, r.Accounting.OverAdmitted)
		}
		if r.Violations > 0 {
			add("%s: %d decisions of a shape the failure policy never gives, e.g. %s", r.Name, r.Violations, r.ViolationExamples[0])
		}
		if r.Errors > 0 {
			add("%s: %d errors for valid requests, e.g. %s", r.Name, r.Errors, r.ErrorExamples[0])
		}
		if r.Replay.Disagreements > 0 {
			add("%s: %d decisions differ from the reference model, e.g. %s", r.Name, r.Replay.Disagreements, r.Replay.Examples[0])
		}
		if r.Faulted && r.NotRecovered > 0 {
			add("%s: %d production chains never recovered", r.Name, r.NotRecovered)
		}
		// No fault here makes Redis answer out of shape: a bad response is the engine's.
		if n := r.FailClosed[guard.FailureBadResponse]; n > 0 {
			add("%s: %d replies of the wrong shape from a real Redis", r.Name, n)
		}
		// Without a fault, or with one that causes none, nothing makes a Redis on this
		// host refuse or answer an error (a stalled machine times out): a script that
		// errors fails everything closed and leaves nothing to over-admit or to replay.
		if n := r.FailClosed[guard.FailureRedisError]; (!r.Faulted || r.Errorless) && n > 0 {
			add("%s: %d Redis errors in a run without a fault that causes them", r.Name, n)
		}
		if r.Decisions > 0 && r.Decided == 0 {
			add("%s: none of %d decisions made by Redis", r.Name, r.Decisions)
		}
	}
	if l := s.Leases; l != nil {
		if l.OverAdmitted > 0 {
			add("leases: over-admitted %d tokens", l.OverAdmitted)
		}
		if l.DoubleSettles > 0 || l.DoubleCharges > 0 {
			add("leases: %d reservations settled twice, %d requestIds charged twice", l.DoubleSettles, l.DoubleCharges)
		}
		if l.Errors > 0 {
			add("leases: %d errors, e.g. %s", l.Errors, l.ErrorExample)
		}
		if l.OverConcurrency > 0 || l.ReleasedTwice > 0 || l.LostLeases > 0 || l.Leaked > 0 {
			add("leases: %d in flight beyond the concurrency, %d leases released twice, %d lost, %d leaked", l.OverConcurrency, l.ReleasedTwice, l.LostLeases, l.Leaked)
		}
		if l.Replay.Disagreements > 0 {
			add("leases: %d decisions differ from the reference model, e.g. %s", l.Replay.Disagreements, l.Replay.Examples[0])
		}
	}
	if c := s.RuleChange; c != nil {
		if c.OverAdmitted > 0 {
			add("rule-change: over-admitted %d tokens", c.OverAdmitted)
		}
		if c.WronglyRefused > 0 || c.WronglyAccepted > 0 || c.DoubleSettles > 0 {
			add("rule-change: %d settles or releases refused though they share a rule, %d accepted though they share none (e.g. %s), %d reservations settled twice", c.WronglyRefused, c.WronglyAccepted, c.WrongExample, c.DoubleSettles)
		}
		if c.Errors > 0 {
			add("rule-change: %d errors, e.g. %s", c.Errors, c.ErrorExample)
		}
		if c.Replay.Disagreements > 0 {
			add("rule-change: %d decisions differ from the reference model, e.g. %s", c.Replay.Disagreements, c.Replay.Examples[0])
		}
		if c.OverConcurrency > 0 || c.ReleasedTwice > 0 || c.LostLeases > 0 || c.Leaked > 0 {
			add("rule-change: %d in flight beyond the concurrency, %d leases released twice, %d lost, %d leaked", c.OverConcurrency, c.ReleasedTwice, c.LostLeases, c.Leaked)
		}
	}
	if b := s.Batch; b != nil {
		if b.OverAdmitted > 0 {
			add("batch: over-admitted %d tokens", b.OverAdmitted)
		}
		if b.Errors > 0 {
			add("batch: %d errors, e.g. %s", b.Errors, b.ErrorExample)
		}
		if b.Disordered > 0 || b.Twice > 0 {
			add("batch: %d calls decided before an earlier request of their batch on the same identity, %d decided twice", b.Disordered, b.Twice)
		}
		if b.UsageOff > 0 {
			add("batch: %d identities' usage differs from their decisions, e.g. %s", b.UsageOff, b.UsageExample)
		}
		if b.OverConcurrency > 0 || b.Leaked > 0 {
			add("batch: %d in flight beyond the concurrency, %d leaked", b.OverConcurrency, b.Leaked)
		}
		if b.Replay.Disagreements > 0 {
			add("batch: %d decisions differ from the reference model, e.g. %s", b.Replay.Disagreements, b.Replay.Examples[0])
		}
	}
	if h := s.Hostile; h != nil {
		failed := int64(0)
		for _, n := range h.FailClosed {
			failed += n
		}
		if h.Collisions+h.ResolveMismatches+h.Unexpected+failed > 0 || h.DigestCollisions+h.SlotMismatches > 0 || h.Keys != int64(h.Valid) || h.Identities != int64(h.Valid) {
			add("hostile: %d collisions, %d resolve mismatches, %d unexpected, %d fail-closed, %d digest collisions, %d slot mismatches, %d keys for %d identities (%d decided); e.g. %q",
				h.Collisions, h.ResolveMismatches, h.Unexpected, failed, h.DigestCollisions, h.SlotMismatches, h.Keys, h.Valid, h.Identities, h.Examples)
		}
	}
	if so := s.Soak; so != nil {
		if len(so.Heap) == 0 {
			add("soak: no worker sampled its memory")
		}
		for w := range so.Heap {
			if n := so.Heap[w].Samples; n < minTrendSamples {
				add("soak worker %d: %d samples after the %v warm-up, fewer than the %d a trend needs", w, n, soakWarmUp, minTrendSamples)
			}
			if d := so.Goroutines[w].Last - so.Goroutines[w].First; d > maxGoroutineDrift {
				add("soak worker %d: goroutines grew by %.0f", w, d)
			}
			if so.Heap[w].PerMinute > maxHeapSlope {
				add("soak worker %d: live heap grows %s a minute", w, bytesText(so.Heap[w].PerMinute))
			}
		}
		if n := so.RedisMemory.Samples; n < minTrendSamples {
			add("soak: %d Redis samples after the %v warm-up, fewer than the %d a trend needs", n, soakWarmUp, minTrendSamples)
		}
		if so.RedisMemory.PerMinute > maxRedisSlope {
			add("soak: Redis memory grows %s a minute", bytesText(so.RedisMemory.PerMinute))
		}
	}
	for _, f := range s.Fuzz {
		if f.Failed {
			add("fuzz %s %s failed:\n%s", f.Package, f.Target, f.Tail)
		}
	}
	return out
}

// Misses lists the timing and volume goals the runs missed: recovery slower than
// RecoveryGoal, and, when full (every run ran), fewer than MinDecisions decisions by
// Redis. They are reported, not failed: on a loaded two-core machine they measure the
// machine as much as bucketgate.
func (s *Summary) Misses(full bool) []string {
	var out []string
	for _, r := range s.Runs {
		if n := len(r.Recovery); r.Faulted && n > 0 && r.Recovery[n-1] > RecoveryGoal {
			out = append(out, fmt.Sprintf("%s: slowest recovery %v, goal %v", r.Name, r.Recovery[n-1].Round(time.Millisecond), RecoveryGoal))
		}
	}
	if _, decided := s.Decisions(); full && decided < MinDecisions {
		out = append(out, fmt.Sprintf("%d decisions by Redis, goal at least %d", decided, MinDecisions))
	}
	return out
}

// bytesText writes a byte count in KiB or MiB.
func bytesText(b float64) string {
	if b >= 1<<20 || b <= -(1<<20) {
		return fmt.Sprintf("%.1f MiB", b/(1<<20))
	}
	return fmt.Sprintf("%.1f KiB", b/(1<<10))
}

// ms writes a duration in whole milliseconds.
func ms(d time.Duration) string {
	return fmt.Sprintf("%d ms", d.Round(time.Millisecond).Milliseconds())
}

// Write prints the summary as Markdown tables; its last line is "over-admitted: N".
func (s *Summary) Write(w io.Writer, failures, misses []string) {
	p := func(format string, args ...any) { fmt.Fprintf(w, format+"\n", args...) }
	p("## Load and fault runs\n")
	p("| run | target | decisions | by Redis | allowed | deny-cache hits | fail-closed timeout / redis_error / bad_response | of which circuit open | shape violations | model: verified / differ / unverifiable | over-admitted | worst window |")
	p("|---|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|")
	for _, r := range s.Runs {
		p("| %s | %s | %d | %d | %d | %d | %d / %d / %d | %d | %d | %d / %d / %d | %d | %s |", r.Name, r.Target, r.Decisions, r.Decided, r.Allowed, r.CacheHits,
			r.FailClosed[guard.FailureTimeout], r.FailClosed[guard.FailureRedisError], r.FailClosed[guard.FailureBadResponse], r.CircuitOpen,
			r.Violations, r.Replay.Verified, r.Replay.Disagreements, r.Replay.Unverifiable, r.Accounting.OverAdmitted, worstText(r.Accounting.Worst))
	}
	p("\nworst window: the largest (admitted - capacity - rate x window) of any bucket; negative means every window stayed under its bound.")
	p("\n| run | saturated buckets admitted / bound (hot, many, chained) | Redis-time ties |")
	p("|---|---|--:|")
	for _, r := range s.Runs {
		var parts []string
		for _, name := range []string{"hot", "many", "chained"} {
			if b := r.Accounting.Bound[name]; b > 0 {
				parts = append(parts, fmt.Sprintf("%s %.2f%%", name, 100*r.Accounting.Admitted[name]/b))
			}
		}
		p("| %s | %s | %d |", r.Name, strings.Join(parts, ", "), r.Replay.Ties)
	}
	p("\n## Faults\n")
	p("| run | slowest answer during the fault | chains | recovery min / median / max | not recovered | fail-closed outside the fault | over-admitted if the failover were not a new lifetime |")
	p("|---|--:|--:|--:|--:|--:|--:|")
	for _, r := range s.Runs {
		if !r.Faulted {
			continue
		}
		rec := "-"
		if n := len(r.Recovery); n > 0 {
			rec = fmt.Sprintf("%s / %s / %s", ms(r.Recovery[0]), ms(r.Recovery[n/2]), ms(r.Recovery[n-1]))
		}
		p("| %s | %s | %d | %s | %d | %d | %d |", r.Name, ms(r.FaultLatency), len(r.Recovery)+r.NotRecovered, rec, r.NotRecovered, r.FailClosedOutside, r.AcrossFailover)
	}
	if l := s.Leases; l != nil {
		p("\n## Leases (standalone)\n")
		p("| reserves | allowed | settles (two at once each) | settled twice | idempotent checks (two at once each) | charged twice | errors | over-admitted |")
		p("|---|---|---|---|---|---|---|---|")
		p("| %d | %d | %d | %d | %d | %d | %d | %d |", l.Reserves, l.Allowed, l.Settles, l.DoubleSettles, l.Idempotent, l.DoubleCharges, l.Errors, l.OverAdmitted)
		p("\n| acquires | leases | releases (two at once each) | left to expire | released twice | lost | most in flight (concurrency %d) | leaked |", leaseStreams.Concurrency)
		p("|---|---|---|---|---|---|---|---|")
		p("| %d | %d | %d | %d | %d | %d | %d | %d |", l.Acquires, l.Acquired, l.Releases, l.Expired, l.ReleasedTwice, l.LostLeases, l.MostInFlight, l.Leaked)
		p("\n- replayed through the reference model: %d verified, %d differing, %d unverifiable, %d at a tied microsecond", l.Replay.Verified, l.Replay.Disagreements, l.Replay.Unverifiable, l.Replay.Ties)
	}
	if c := s.RuleChange; c != nil {
		p("\n## Rule changes (standalone)\n")
		p("| plan changes | reserves | allowed | checks | settles (two at once each) | under another plan | refused, sharing no rule | late | wrongly refused | wrongly accepted | settled twice | errors | over-admitted |")
		p("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
		p("| %d | %d | %d | %d | %d | %d | %d | %d | %d | %d | %d | %d | %d |", c.Changes, c.Reserves, c.Allowed, c.Checks, c.Settles, c.Changed, c.Refused, c.Late, c.WronglyRefused, c.WronglyAccepted, c.DoubleSettles, c.Errors, c.OverAdmitted)
		p("\n| leases | releases (two at once each) | left to expire | released twice | lost | most in flight of a set | beyond its concurrency | leaked |")
		p("|---|---|---|---|---|---|---|---|")
		p("| %d | %d | %d | %d | %d | %d | %d | %d |", c.Leases, c.Releases, c.Kept, c.ReleasedTwice, c.LostLeases, c.MostInFlight, c.OverConcurrency, c.Leaked)
		p("\n- replayed through the reference model: %d verified, %d differing, %d unverifiable, %d at a tied microsecond", c.Replay.Verified, c.Replay.Disagreements, c.Replay.Unverifiable, c.Replay.Ties)
	}
	if b := s.Batch; b != nil {
		p("\n## Batches (cluster, SCRIPT FLUSH every %v on every master)\n", batchFlushEvery)
		p("| batches | calls | flushes | script loads (EVAL) | leases | reservations | settles | cancels | releases | refunds | checks | peeks | errors | out of order | decided twice | usage off | over-admitted |")
		p("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
		p("| %d | %d | %d | %d | %d | %d | %d | %d | %d | %d | %d | %d | %d | %d | %d | %d | %d |", b.Batches, b.Calls, b.Flushes, b.Loads, b.Acquired, b.Reserved, b.Settles, b.Cancels, b.Releases, b.Refunds, b.Checks, b.Peeks, b.Errors, b.Disordered, b.Twice, b.UsageOff, b.OverAdmitted)
		p("\n- most in flight %d (concurrency %d), %d leaked", b.MostInFlight, batchStreams.Concurrency, b.Leaked)
		p("- replayed through the reference model: %d verified, %d differing, %d unverifiable, %d at a tied microsecond", b.Replay.Verified, b.Replay.Disagreements, b.Replay.Unverifiable, b.Replay.Ties)
	}
	if h := s.Hostile; h != nil {
		p("\n## Hostile identities (cluster)\n")
		p("- %d cases (%d valid identities, the longest Redis key %d bytes); %d decisions", h.Cases, h.Valid, h.LongestKey, h.Decisions)
		p("- identities decided with exactly their own spending: %d; collisions: %d; resolve mismatches: %d; digest collisions: %d", h.Identities, h.Collisions, h.ResolveMismatches, h.DigestCollisions)
		p("- invalid identities refused with a clear error: %d; unexpected outcomes: %d; fail-closed: %v", h.Refused, h.Unexpected, h.FailClosed)
		p("- keys in the cluster afterwards: %d (one per valid identity: %d); keys not in their identity's slot: %d", h.Keys, h.Valid, h.SlotMismatches)
	}
	if so := s.Soak; so != nil {
		p("\n## Soak\n")
		p("- %.0f decisions/s achieved (target %.0f); trends after a %v warm-up, first vs last %d samples, least-squares slope", so.Rate, so.Target, soakWarmUp, trendWindow)
		for w := range so.Heap {
			p("- worker %d: live heap %s -> %s (%s/min); RSS %s -> %s (%s/min); goroutines %.0f -> %.0f (%.2f/min)", w,
				bytesText(so.Heap[w].First), bytesText(so.Heap[w].Last), bytesText(so.Heap[w].PerMinute),
				bytesText(so.RSS[w].First), bytesText(so.RSS[w].Last), bytesText(so.RSS[w].PerMinute),
				so.Goroutines[w].First, so.Goroutines[w].Last, so.Goroutines[w].PerMinute)
		}
		p("- Redis: used_memory %s -> %s (%s/min); keys %.0f -> %.0f", bytesText(so.RedisMemory.First), bytesText(so.RedisMemory.Last), bytesText(so.RedisMemory.PerMinute), so.RedisKeys.First, so.RedisKeys.Last)
	}
	if len(s.Fuzz) > 0 {
		p("\n## Fuzz\n")
		p("| package | target | executions | result |")
		p("|---|---|--:|---|")
		for _, f := range s.Fuzz {
			result := "pass"
			switch {
			case f.Failed:
				result = "FAIL"
			case f.Note != "":
				result = "infrastructure note (below)"
			}
			p("| %s | %s | %d | %s |", f.Package, f.Target, f.Execs, result)
		}
	}
	p("\n## Totals\n")
	var failClosed = map[guard.Failure]int64{}
	var disagreements, verified int64
	for _, r := range s.Runs {
		for f, n := range r.FailClosed {
			failClosed[f] += n
		}
		verified += r.Replay.Verified
		disagreements += r.Replay.Disagreements
	}
	var execs int64
	for _, f := range s.Fuzz {
		execs += f.Execs
	}
	all, decided := s.Decisions()
	p("- decisions: %d, of which by Redis: %d; verified against the reference model: %d, differing: %d", all, decided, verified, disagreements)
	p("- fail-closed: timeout %d, redis_error %d, bad_response %d", failClosed[guard.FailureTimeout], failClosed[guard.FailureRedisError], failClosed[guard.FailureBadResponse])
	p("- fuzz executions: %d", execs)
	if len(failures)+len(misses) == 0 {
		p("- goals: all met")
	}
	for _, f := range failures {
		p("- FAILED: %s", f)
	}
	for _, m := range misses {
		p("- GOAL MISSED: %s", m)
	}
	for _, f := range s.Fuzz {
		if f.Note != "" {
			p("- NOTE, not the product's: fuzz %s %s: %s", f.Package, f.Target, f.Note)
		}
	}
	p("")
	p("over-admitted: %d", s.OverAdmitted())
}

// worstText writes a worst-window excess, or "-" when nothing was admitted.
func worstText(w float64) string {
	if w < -1e18 {
		return "-"
	}
	return fmt.Sprintf("%.3g", w)
}

// line is a run's one-line progress report.
func (r *RunResult) line() string {
	return fmt.Sprintf("%s: %d decisions (%d by Redis, %d allowed), fail-closed %v, violations %d, model %d/%d differ, over-admitted %d, recovery %v",
		r.Name, r.Decisions, r.Decided, r.Allowed, r.FailClosed, r.Violations, r.Replay.Disagreements, r.Replay.Verified, r.Accounting.OverAdmitted, r.Recovery)
}
