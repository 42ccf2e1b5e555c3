// Package stress is bucketgate's reliability harness behind `make stress`: it starts
// its own redis-server processes (standalone and a 3-master cluster with replicas) and
// worker processes that stand in for concurrent Lambda instances, each deciding with
// many goroutines through the production chain (settings.Load, then app.NewGuard:
// redisconn, bucket, guard). It measures over-admission exactly against capacity + rate × window
// with the window in Redis time, replays every decision through the reference model,
// injects faults (pause, kill and restart, SCRIPT FLUSH, latency through a TCP proxy, a
// cluster failover), calls the engine itself with reservations and leases (the leases
// run), under configuration changes (rule-change) and in batches under SCRIPT FLUSH
// (batch), decides hostile identities in bulk, soaks at a fixed rate while sampling
// memory and goroutines, and runs every fuzz target.
//
// The coordinator (Run) owns the Redis processes and the faults; workers (Work) only
// decide and write one Record per decision to a file the coordinator then reads.
package stress

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"syscall"
	"time"

	"github.com/bucketgate/bucketgate/internal/settings"
)

// WorkerFlag is the flag that makes the stress program a worker: WorkerFlag planPath.
const WorkerFlag = "-worker"

// startDelay is how long after starting its workers a run begins: time for every
// worker process to start and connect, so that all begin deciding together.
const startDelay = 1500 * time.Millisecond

// Options configure a stress run. The zero value of a field means its default
// (DefaultOptions), except FuzzTime, where zero skips fuzzing.
type Options struct {
	// Self is the executable workers are started from (this program).
	Self string
	// GoTool is the go command the fuzz targets run with; Root is the module root.
	GoTool, Root string
	// Workers is how many worker processes a run starts; Goroutines and Instances are
	// per worker.
	Workers, Goroutines, Instances int
	// Load is the length of each load run; Fault of each fault run (the fault starts
	// a third of the way in); Soak of the soak.
	Load, Fault, Soak time.Duration
	// LoadRate and FaultRate are the total decisions per second of each load run and
	// each fault run. Every run is paced (an open loop), as Lambda invocations are
	// driven by their callers: a closed loop would spin on the instant answers of the
	// circuit breaker and the deny cache, and starve the machine.
	LoadRate, FaultRate float64
	// SoakRate is the soak's total decisions per second.
	SoakRate float64
	// FuzzTime is how long each fuzz target runs; zero skips fuzzing.
	FuzzTime time.Duration
	// HostileIdentities and HostileKeys size the hostile-identity run.
	HostileIdentities, HostileKeys int
	// BatchMost is the most requests of a batch in the batch run.
	BatchMost int
	// TimeoutMS is REDIS_TIMEOUT_MS for every production chain; zero keeps the
	// production default.
	TimeoutMS int
	// Seed seeds every random choice.
	Seed uint64
	// Only, when set, runs only the runs whose names it matches (fuzz is named "fuzz").
	Only *regexp.Regexp
	// Log receives progress as the runs go.
	Log io.Writer
}

// DefaultOptions are the sizes `make stress` runs with: about five minutes on two cores.
var DefaultOptions = Options{
	Workers:           4,
	Goroutines:        32,
	Instances:         4,
	Load:              20 * time.Second,
	Fault:             8 * time.Second,
	Soak:              time.Minute,
	LoadRate:          20000,
	FaultRate:         16000,
	SoakRate:          2000,
	HostileIdentities: 20000,
	HostileKeys:       5000,
	BatchMost:         8,
	Seed:              1,
}

// withDefaults fills the zero fields of o from DefaultOptions.
func (o Options) withDefaults() Options {
	d := DefaultOptions
	for _, f := range []struct {
		v   *int
		def int
	}{{&o.Workers, d.Workers}, {&o.Goroutines, d.Goroutines}, {&o.Instances, d.Instances}, {&o.HostileIdentities, d.HostileIdentities}, {&o.HostileKeys, d.HostileKeys}, {&o.BatchMost, d.BatchMost}} {
		if *f.v == 0 {
			*f.v = f.def
		}
	}
	for _, f := range []struct{ v, def *time.Duration }{{&o.Load, &d.Load}, {&o.Fault, &d.Fault}, {&o.Soak, &d.Soak}} {
		if *f.v == 0 {
			*f.v = *f.def
		}
	}
	if o.SoakRate == 0 {
		o.SoakRate = d.SoakRate
	}
	if o.FaultRate == 0 {
		o.FaultRate = d.FaultRate
	}
	if o.LoadRate == 0 {
		o.LoadRate = d.LoadRate
	}
	if o.Seed == 0 {
		o.Seed = d.Seed
	}
	if o.Log == nil {
		o.Log = io.Discard
	}
	return o
}

// Run runs every stress run that o selects and returns their summary. Its error is for
// a run that could not be carried out (a server that would not start, a worker that
// crashed); what the runs measured, good or bad, is in the Summary.
func Run(ctx context.Context, o Options) (*Summary, error) {
	o = o.withDefaults()
	if o.BatchMost < 2 {
		return nil, fmt.Errorf("stress: a batch of at most %d requests: want 2 or more", o.BatchMost)
	}
	dir, err := os.MkdirTemp("", "bucketgate-stress-")
	if err != nil {
		return nil, fmt.Errorf("stress: %w", err)
	}
	defer os.RemoveAll(dir)
	r := &runner{opts: o, dir: dir, sum: &Summary{}}
	for _, stage := range []func(context.Context) error{r.standalone, r.cluster, r.soak, r.fuzz} {
		if err := stage(ctx); err != nil {
			return r.sum, err
		}
	}
	return r.sum, nil
}

// runner carries a Run's options, working directory and summary through its stages.
type runner struct {
	opts Options
	dir  string // removed when the run is done
	sum  *Summary
}

// selected reports whether the run called name is to run.
func (r *runner) selected(name string) bool {
	return r.opts.Only == nil || r.opts.Only.MatchString(name)
}

// logf writes one progress line.
func (r *runner) logf(format string, args ...any) {
	fmt.Fprintf(r.opts.Log, "%s  "+format+"\n", append([]any{time.Now().Format("15:04:05")}, args...)...)
}

// chainEnv is the environment of the production chains of a run against addrs.
func (r *runner) chainEnv(addrs string, cluster bool) map[string]string {
	env := map[string]string{settings.EnvRedisAddr: addrs, settings.EnvCluster: string(settings.ClusterOff)}
	if cluster {
		env[settings.EnvCluster] = string(settings.ClusterOn)
	}
	if r.opts.TimeoutMS > 0 {
		env[settings.EnvTimeoutMS] = strconv.Itoa(r.opts.TimeoutMS)
	}
	return env
}

// workerProc is one running worker process.
type workerProc struct {
	cmd            *exec.Cmd
	stdout, stderr bytes.Buffer
	records        string
}

// startWorkers writes a plan per worker from base and starts the workers.
func (r *runner) startWorkers(base Plan, workers int) ([]*workerProc, error) {
	dir, err := os.MkdirTemp(r.dir, "workers-")
	if err != nil {
		return nil, fmt.Errorf("stress: %w", err)
	}
	procs := make([]*workerProc, workers)
	for w := range procs {
		p := base
		p.Worker, p.Workers = w, workers
		p.Records = filepath.Join(dir, fmt.Sprintf("worker-%d.records", w))
		planPath := filepath.Join(dir, fmt.Sprintf("worker-%d.plan.json", w))
		if err := writePlan(planPath, p); err != nil {
			return nil, err
		}
		wp := &workerProc{records: p.Records}
		wp.cmd = exec.Command(r.opts.Self, WorkerFlag, planPath)
		wp.cmd.Stdout, wp.cmd.Stderr = &wp.stdout, &wp.stderr
		wp.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
		if err := wp.cmd.Start(); err != nil {
			return nil, fmt.Errorf("start worker %d: %w", w, err)
		}
		procs[w] = wp
	}
	return procs, nil
}

// waitWorkers waits for every worker and returns their reports; a worker that failed
// (a panic, an init error) is an error quoting its stderr.
func waitWorkers(procs []*workerProc) ([]WorkerReport, error) {
	reports := make([]WorkerReport, len(procs))
	var errs []error
	for w, wp := range procs {
		if err := wp.cmd.Wait(); err != nil {
			errs = append(errs, fmt.Errorf("worker %d: %w\n%s", w, err, tail(wp.stderr.Bytes())))
			continue
		}
		if err := json.Unmarshal(wp.stdout.Bytes(), &reports[w]); err != nil {
			errs = append(errs, fmt.Errorf("worker %d report: %w", w, err))
		}
	}
	return reports, errors.Join(errs...)
}
