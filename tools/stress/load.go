package stress

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/bucketgate/bucketgate/internal/guard"
)

// loadRun is one run of the workers against Redis, with a fault or without.
type loadRun struct {
	name, target string
	env          map[string]string
	scenarios    []Scenario
	duration     time.Duration
	// rate is each worker's decisions per second; zero is a closed loop.
	rate        float64
	workers     int
	sampleEvery time.Duration
	fault       *fault
	// beside, when set, runs in the coordinator while the workers decide.
	beside func(ctx context.Context, start, end time.Time)
}

// fault is something done to Redis during a run.
type fault struct {
	// inject starts the fault and returns the resets it causes.
	inject func() ([]reset, error)
	// hold is how long the fault lasts before heal.
	hold time.Duration
	// heal ends the fault and returns once Redis answers again.
	heal func() error
	// errorless marks a fault that may make requests time out but never fail with a
	// Redis error (a pause, latency, a script flushed: the engine loads it again).
	errorless bool
}

// faultTiming is when a fault began, when Redis was back, and the resets it caused.
type faultTiming struct {
	injected, back time.Time
	resets         []reset
}

// faultAt places a run's fault: it starts 1/faultAt of the way through the run.
const faultAt = 3

// load runs lr and analyses its records.
func (r *runner) load(ctx context.Context, lr loadRun) (*RunResult, error) {
	r.logf("run %s (%s): %d workers x %d goroutines, %v", lr.name, lr.target, lr.workers, r.opts.Goroutines, lr.duration)
	base := Plan{
		Phase: lr.name, Env: lr.env, StartAt: time.Now().Add(startDelay), Duration: lr.duration,
		Instances: r.opts.Instances, Goroutines: r.opts.Goroutines, Rate: lr.rate,
		Scenarios: lr.scenarios, Seed: r.opts.Seed, SampleEvery: lr.sampleEvery,
	}
	if err := base.validate(); err != nil {
		return nil, err
	}
	procs, err := r.startWorkers(base, lr.workers)
	if err != nil {
		return nil, err
	}
	end := base.StartAt.Add(base.Duration)
	var ft *faultTiming
	var faultErr error
	besideDone := make(chan struct{})
	go func() {
		defer close(besideDone)
		if lr.beside != nil {
			lr.beside(ctx, base.StartAt, end)
		}
	}()
	if lr.fault != nil {
		ft, faultErr = applyFault(lr.fault, base.StartAt.Add(lr.duration/faultAt))
	}
	reports, err := waitWorkers(procs)
	<-besideDone
	if err = errors.Join(faultErr, err); err != nil {
		return nil, fmt.Errorf("run %s: %w", lr.name, err)
	}
	var recs []Record
	for w, wp := range procs {
		rs, err := readRecordsFile(wp.records, uint8(w))
		if err != nil {
			return nil, fmt.Errorf("run %s worker %d: %w", lr.name, w, err)
		}
		recs = append(recs, rs...)
	}
	res := analyse(lr, recs, ft)
	for _, rep := range reports {
		res.Errors += rep.ErrorCount
		res.ErrorExamples = append(res.ErrorExamples, rep.Errors...)
		res.Samples = append(res.Samples, rep.Samples)
	}
	r.sum.Runs = append(r.sum.Runs, res)
	r.logf("%s", res.line())
	return res, nil
}

// applyFault injects f at when, holds it, heals it and says when Redis was back.
func applyFault(f *fault, when time.Time) (*faultTiming, error) {
	time.Sleep(time.Until(when))
	ft := &faultTiming{injected: time.Now()}
	resets, err := f.inject()
	if err != nil {
		return nil, fmt.Errorf("inject fault: %w", err)
	}
	ft.resets = resets
	time.Sleep(time.Until(ft.injected.Add(f.hold)))
	if err := f.heal(); err != nil {
		return nil, fmt.Errorf("heal fault: %w", err)
	}
	ft.back = time.Now()
	return ft, nil
}

// RunResult is what one load run measured.
type RunResult struct {
	// Name and Target name the run and the Redis it ran against.
	Name, Target string
	// Faulted reports a run with a fault; Errorless one that may make requests time
	// out but never fail with a Redis error.
	Faulted, Errorless bool
	// Decisions counts every decision; Decided those Redis made (Allowed of them
	// allowed); CacheHits the denials the deny cache answered; CircuitOpen the
	// fail-closed answers the circuit breaker gave without asking Redis.
	Decisions, Decided, Allowed, CacheHits, CircuitOpen int64
	// FailClosed counts fail-closed denials by failure.
	FailClosed map[guard.Failure]int64
	// Errors counts Decide errors (every request is valid: there must be none), as
	// the workers saw them, with the first few messages; Violations counts them too.
	Errors        int64
	ErrorExamples []string
	// Violations counts decisions of a shape the failure policy never gives (an
	// allowed decision without a Redis time, a degraded one in fail-closed mode, a
	// fail-closed denial without its reason or retry-after, ...).
	Violations        int64
	ViolationExamples []string
	// Accounting is the over-admission measured per bucket and Redis lifetime.
	Accounting Accounting
	// AcrossFailover is what Accounting.OverAdmitted would be had the buckets of the
	// failed master's slots not been given a new lifetime at the failover: writes the
	// replica had not received when its master died.
	AcrossFailover int64
	// Replay compares every decision with the reference model.
	Replay Replay
	// Recovery is, per production chain (stand-in Lambda instance), the time from
	// Redis being back to its first decision by Redis; sorted. NotRecovered counts
	// chains with none before the run ended.
	Recovery     []time.Duration
	NotRecovered int
	// FailClosedOutside counts the fail-closed denials outside the fault: ended before
	// it began, or from a chain that had already recovered (in a run without a fault,
	// every one). On a loaded machine a stall past the deadline gives some.
	FailClosedOutside int64
	// FaultLatency is the slowest decision that started while the fault lasted.
	FaultLatency time.Duration
	// Span is the host time from the first decision to the last.
	Span time.Duration
	// Samples are each worker's memory and goroutine samples (the soak).
	Samples [][]Sample
}

// analyse measures a run's records.
func analyse(lr loadRun, recs []Record, ft *faultTiming) *RunResult {
	res := &RunResult{Name: lr.name, Target: lr.target, Faulted: ft != nil, Errorless: lr.fault != nil && lr.fault.errorless, FailClosed: map[guard.Failure]int64{}, Decisions: int64(len(recs))}
	var resets []reset
	if ft != nil {
		resets = ft.resets
	}
	first, last := int64(0), int64(0)
	for _, rec := range recs {
		if first == 0 || rec.Start < first {
			first = rec.Start
		}
		last = max(last, rec.End)
		if rec.Decided() {
			res.Decided++
		}
		if rec.Allowed() {
			res.Allowed++
		}
		if rec.CacheHit() {
			res.CacheHits++
		}
		if rec.CircuitOpen() {
			res.CircuitOpen++
		}
		if Outcome(rec.Outcome) == OutcomeUnavailable {
			res.FailClosed[failureName(rec.Failure)]++
			res.FailClosedOutside++
		}
		if v := violation(rec); v != "" {
			res.Violations++
			if len(res.ViolationExamples) < maxSamples {
				res.ViolationExamples = append(res.ViolationExamples, fmt.Sprintf("%s: %+v", v, rec))
			}
		}
	}
	res.Span = time.Duration(last-first) * time.Microsecond
	res.Accounting = account(lr.scenarios, recs, resets)
	res.Replay = replay(lr.name, lr.scenarios, recs, resets)
	if ft == nil {
		return res
	}
	var emptied []reset
	for _, rs := range resets {
		if rs.emptied {
			emptied = append(emptied, rs)
		}
	}
	if len(emptied) < len(resets) {
		res.AcrossFailover = account(lr.scenarios, recs, emptied).OverAdmitted
	}
	injected, back := ft.injected.UnixMicro(), ft.back.UnixMicro()
	recovered, notRecovered := recovery(recs, ft.back)
	res.NotRecovered = notRecovered
	for _, t := range recovered {
		res.Recovery = append(res.Recovery, time.Duration(t-back)*time.Microsecond)
	}
	slices.Sort(res.Recovery)
	res.FailClosedOutside = 0
	for _, rec := range recs {
		if rec.Start >= injected && rec.Start < back {
			res.FaultLatency = max(res.FaultLatency, time.Duration(rec.End-rec.Start)*time.Microsecond)
		}
		t, ok := recovered[chainOf(rec)]
		if Outcome(rec.Outcome) == OutcomeUnavailable && (rec.End < injected || ok && rec.Start > t) {
			res.FailClosedOutside++
		}
	}
	return res
}

// failureName names a Record's failure code.
func failureName(code uint8) guard.Failure {
	if int(code) < len(failures) {
		return failures[code]
	}
	return "unknown"
}

// violation says what is wrong with the shape of a decision in a fail-closed run, or
// "" when nothing is.
func violation(r Record) string {
	decided, failed := r.At != 0, r.Failure != 0
	switch Outcome(r.Outcome) {
	case OutcomeOK:
		if !r.Allowed() || !decided || failed || r.CacheHit() || r.CircuitOpen() || r.RetryAfter != 0 {
			return "ok decision without a Redis time, or with a failure or retry-after"
		}
	case OutcomeLimited:
		if r.Allowed() || failed || r.RetryAfter <= 0 || r.CircuitOpen() || decided == r.CacheHit() {
			return "limited decision allowed, failed, without retry-after or without a Redis time"
		}
	case OutcomeUnavailable:
		if r.Allowed() || !failed || decided || r.RetryAfter != guard.FailureRetryAfter.Milliseconds() {
			return "fail-closed denial allowed, without a failure, or without the 1 s retry-after"
		}
	case OutcomeDegraded:
		return "degraded (fail open) in a fail-closed run"
	case OutcomeError:
		return "error for a valid request"
	default:
		return "unknown reason"
	}
	return ""
}

// chain names a production chain: its worker and its instance in the worker.
type chain [2]uint8

// chainOf is the production chain that made r.
func chainOf(r Record) chain { return chain{r.Worker, r.Instance} }

// recovery returns, per production chain, when its first decision by Redis that ended
// at or after back ended (microseconds), and how many chains had none.
func recovery(recs []Record, back time.Time) (map[chain]int64, int) {
	b := back.UnixMicro()
	firstAfter := map[chain]int64{}
	chains := map[chain]bool{}
	for _, rec := range recs {
		c := chainOf(rec)
		chains[c] = true
		if !rec.Decided() || rec.End < b {
			continue
		}
		if t, ok := firstAfter[c]; !ok || rec.End < t {
			firstAfter[c] = rec.End
		}
	}
	return firstAfter, len(chains) - len(firstAfter)
}
