package stress

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"github.com/bucketgate/bucketgate"
	"github.com/bucketgate/bucketgate/internal/app"
	"github.com/bucketgate/bucketgate/internal/guard"
	"github.com/bucketgate/bucketgate/internal/settings"
)

// maxReportedErrors bounds how many unexpected errors a worker reports verbatim.
const maxReportedErrors = 5

// WorkerReport is what a worker prints on its stdout, as JSON, when it is done.
type WorkerReport struct {
	// Decisions is how many decisions the worker made.
	Decisions int64 `json:"decisions"`
	// ErrorCount counts Decide errors of a load run (every request there is valid);
	// Errors holds the first few.
	ErrorCount int64    `json:"errorCount"`
	Errors     []string `json:"errors,omitempty"`
	// Samples are the worker's memory and goroutine samples, when asked for.
	Samples []Sample `json:"samples,omitempty"`
	// Hostile is the outcome of a hostile-identity run.
	Hostile *HostileReport `json:"hostile,omitempty"`
}

// WorkerMain runs the worker whose plan is at planPath, prints its report on stdout and
// returns the process exit code.
func WorkerMain(planPath string, stdout, stderr io.Writer) int {
	p, err := ReadPlan(planPath)
	if err == nil {
		var rep WorkerReport
		if rep, err = Work(p); err == nil {
			err = json.NewEncoder(stdout).Encode(rep)
		}
	}
	if err != nil {
		fmt.Fprintf(stderr, "worker: %v\n", err)
		return 1
	}
	return 0
}

// Work builds p's production chains from its environment exactly as a Lambda function
// does at init (settings.Load, app.NewGuard), and runs p.
func Work(p Plan) (WorkerReport, error) {
	s, err := settings.Load(func(k string) string { return p.Env[k] })
	if err != nil {
		return WorkerReport{}, err
	}
	instances := make([]*guard.Guard, max(p.Instances, 1))
	for i := range instances {
		g, conn, err := app.NewGuard(s, slog.New(slog.DiscardHandler), nil)
		if err != nil {
			return WorkerReport{}, fmt.Errorf("instance %d: %w", i, err)
		}
		defer conn.Close()
		instances[i] = g
	}
	if p.Hostile != nil {
		rep, err := workHostile(p, instances)
		return WorkerReport{Decisions: rep.Decisions, Hostile: &rep}, err
	}
	rf, err := createRecordFile(p.Records)
	if err != nil {
		return WorkerReport{}, err
	}
	w := &worker{plan: p, instances: instances, records: rf}
	for _, s := range p.Scenarios {
		w.totalWeight += s.Weight
	}
	warmUp(instances, p)
	time.Sleep(time.Until(p.StartAt))
	end := p.StartAt.Add(p.Duration)
	var samples []Sample
	var wg sync.WaitGroup
	if p.SampleEvery > 0 {
		wg.Go(func() { samples = sampleUntil(p.StartAt, end, p.SampleEvery) })
	}
	for g := range p.Goroutines {
		wg.Go(func() { w.run(g, end) })
	}
	wg.Wait()
	if err := rf.Close(); err != nil {
		return WorkerReport{}, err
	}
	return WorkerReport{Decisions: w.decisions.Load(), ErrorCount: w.errCount.Load(), Errors: w.errs, Samples: samples}, nil
}

// worker is the state a load run's goroutines share.
type worker struct {
	plan        Plan
	instances   []*guard.Guard
	records     *recordFile
	totalWeight int
	decisions   atomic.Int64
	errCount    atomic.Int64
	mu          sync.Mutex
	errs        []string
}

// run is goroutine g: it decides until end, at the plan's rate or as fast as it can,
// and records every decision.
func (w *worker) run(g int, end time.Time) {
	rng := rand.New(rand.NewPCG(w.plan.Seed, uint64(w.plan.Worker)<<32|uint64(g)))
	instance := g % len(w.instances)
	chain := w.instances[instance]
	b := w.records.batch()
	defer b.flush()
	var tick <-chan time.Time
	if w.plan.Rate > 0 {
		t := time.NewTicker(time.Duration(float64(time.Second) * float64(w.plan.Goroutines) / w.plan.Rate))
		defer t.Stop()
		tick = t.C
	}
	ctx := context.Background()
	for {
		if tick != nil {
			<-tick
		}
		if !time.Now().Before(end) {
			return
		}
		si := w.pick(rng)
		s := &w.plan.Scenarios[si]
		id := uint32(rng.IntN(s.Identities))
		shape := rng.IntN(len(s.Shapes))
		q := bucketgate.Request{
			Identity: IdentityName(w.plan.Phase, s.Name, id),
			Rules:    s.Shapes[shape],
			Cost:     cost(rng, s, s.Shapes[shape]),
		}
		start := time.Now()
		res, err := chain.Decide(ctx, q)
		rec := newRecord(start, time.Now(), res, err)
		rec.Scenario, rec.Identity, rec.Shape, rec.Cost, rec.Instance = uint8(si), id, uint8(shape), uint8(q.Cost), uint8(instance)
		if err != nil {
			w.noteError(err)
		}
		b.add(rec)
		w.decisions.Add(1)
	}
}

// pick chooses a scenario by weight.
func (w *worker) pick(rng *rand.Rand) int {
	n := rng.IntN(w.totalWeight)
	for i, s := range w.plan.Scenarios {
		if n < s.Weight {
			return i
		}
		n -= s.Weight
	}
	return len(w.plan.Scenarios) - 1
}

// cost chooses a request's cost: a peek PeekPercent of the time, else 1 to MaxCost,
// never above the smallest capacity (or quota's limit) of its rules.
func cost(rng *rand.Rand, s *Scenario, rules []bucketgate.Rule) int64 {
	if rng.IntN(100) < s.PeekPercent {
		return 0
	}
	c := 1 + rng.Int64N(s.MaxCost)
	for _, r := range rules {
		if r.Period != bucketgate.PeriodNone {
			c = min(c, r.Limit)
		} else {
			c = min(c, r.Capacity)
		}
	}
	return c
}

func (w *worker) noteError(err error) {
	w.errCount.Add(1)
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.errs) < maxReportedErrors {
		w.errs = append(w.errs, err.Error())
	}
}

// warmUpIdentities is how many identities each production chain peeks at before the
// run starts: enough to reach every node of a cluster, so that connections are open
// and the script is loaded when the run begins, as after a Lambda instance's first
// invocations.
const warmUpIdentities = 32

// warmUp peeks, through every chain, at warmUpIdentities identities of p's phase
// that the run never uses.
func warmUp(instances []*guard.Guard, p Plan) {
	rules := p.Scenarios[0].Shapes[0]
	for _, g := range instances {
		for i := range warmUpIdentities {
			_, _ = g.Decide(context.Background(), bucketgate.Request{Identity: IdentityName(p.Phase, "warm-up", uint32(i)), Rules: rules})
		}
	}
}
