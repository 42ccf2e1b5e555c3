// Command bucketgate-stress is `make stress`: bucketgate's reliability run. It starts
// its own redis-server processes and worker processes (re-running itself with
// -worker), puts them through load, faults, hostile identities, a soak and the fuzz
// targets, and prints a Markdown summary whose last line is "over-admitted: N". It
// exits 1 on a correctness failure (over-admission among them) or a run that could not
// be carried out; timing goals missed are reported, not failed.
//
// Run it from inside the repository: make stress, or go run ./cmd/bucketgate-stress in tools/.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"regexp"

	"github.com/bucketgate/bucketgate/tools/internal/repo"
	"github.com/bucketgate/bucketgate/tools/stress"
)

func main() {
	if len(os.Args) == 3 && os.Args[1] == stress.WorkerFlag {
		os.Exit(stress.WorkerMain(os.Args[2], os.Stdout, os.Stderr))
	}
	d := stress.DefaultOptions
	o := stress.Options{GoTool: "go", Log: os.Stderr}
	flag.IntVar(&o.Workers, "workers", d.Workers, "worker processes per run (stand-ins for Lambda instances)")
	flag.IntVar(&o.Goroutines, "goroutines", d.Goroutines, "goroutines per worker")
	flag.IntVar(&o.Instances, "instances", d.Instances, "production chains (Redis connection, breaker, deny cache) per worker")
	flag.DurationVar(&o.Load, "load", d.Load, "length of each load run")
	flag.DurationVar(&o.Fault, "fault", d.Fault, "length of each fault run")
	flag.DurationVar(&o.Soak, "soak", d.Soak, "length of the soak")
	flag.Float64Var(&o.LoadRate, "load-rate", d.LoadRate, "decisions per second during each load run")
	flag.Float64Var(&o.FaultRate, "fault-rate", d.FaultRate, "decisions per second during each fault run")
	flag.Float64Var(&o.SoakRate, "soak-rate", d.SoakRate, "decisions per second during the soak")
	flag.DurationVar(&o.FuzzTime, "fuzztime", 0, "time per fuzz target; 0 skips fuzzing")
	flag.IntVar(&o.HostileIdentities, "hostile-identities", d.HostileIdentities, "random raw identities in the hostile run")
	flag.IntVar(&o.HostileKeys, "hostile-keys", d.HostileKeys, "random API keys through the authorizer's identity resolution")
	flag.IntVar(&o.BatchMost, "batch-most", d.BatchMost, "most requests of a batch in the batch run")
	flag.IntVar(&o.TimeoutMS, "timeout-ms", 0, "REDIS_TIMEOUT_MS of every production chain; 0 keeps the production default")
	flag.Uint64Var(&o.Seed, "seed", d.Seed, "seed of every random choice")
	flag.StringVar(&o.GoTool, "go", o.GoTool, "go command for the fuzz targets")
	only := flag.String("only", "", "regular expression: run only the runs it matches (standalone, pause, kill-restart, script-flush, latency-below-deadline, latency-beyond-deadline, leases, rule-change, cluster, hostile, batch, failover, soak, fuzz)")
	flag.Parse()
	if err := run(o, *only); err != nil {
		if !errors.Is(err, errFailed) {
			fmt.Fprintf(os.Stderr, "bucketgate-stress: %v\n", err)
		}
		os.Exit(1)
	}
}

// errFailed reports failures the summary already lists, so that its last line stays
// the last line printed.
var errFailed = errors.New("failures")

func run(o stress.Options, only string) error {
	var err error
	if only != "" {
		if o.Only, err = regexp.Compile(only); err != nil {
			return fmt.Errorf("-only: %w", err)
		}
	}
	if o.Self, err = os.Executable(); err != nil {
		return err
	}
	if o.Root, err = repo.Root(); err != nil {
		return fmt.Errorf("run from inside the repository (the fuzz targets are found from there): %w", err)
	}
	// An interrupt kills this process; its workers and redis-servers die with it
	// (they are started with a parent-death signal).
	sum, err := stress.Run(context.Background(), o)
	if sum == nil {
		return err
	}
	failures := sum.Failures()
	if err != nil {
		failures = append(failures, fmt.Sprintf("the run stopped early: %v", err))
	}
	sum.Write(os.Stdout, failures, sum.Misses(only == ""))
	if len(failures) > 0 {
		return errFailed
	}
	return nil
}
