package benchreport

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/redis/rueidis"

	"github.com/bucketgate/bucketgate"
	"github.com/bucketgate/bucketgate/internal/bucket"
	"github.com/bucketgate/bucketgate/internal/lua"
	"github.com/bucketgate/bucketgate/internal/testkit/runtimeapi"
)

// EndToEndPlan is item 10 (issue 17): Invocations of the built authorizer, one after
// another, through a Lambda Runtime API on loopback, after Warm invocations that fill
// its registry cache and its connection; and as many bare EVALSHA round trips from the
// bench's own process, the floor.
type EndToEndPlan struct {
	Invocations int
	Warm        int
}

// EndToEnd is what item 10 measured: the latency of an invocation as the Runtime API
// sees it (from handing the event over to receiving the answer) and of a bare EVALSHA.
type EndToEnd struct {
	Plan EndToEndPlan
	// Invoke and Bare are the latencies, sorted.
	Invoke, Bare []time.Duration
	// Answer is one of the answers, to show what was measured.
	Answer string
}

// percentile returns the p-th percentile (0 to 100) of sorted ds, nearest rank.
func percentile(ds []time.Duration, p float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	i := int(p/100*float64(len(ds))+0.5) - 1
	return ds[min(max(i, 0), len(ds)-1)]
}

// InvokeP50 is the median latency of an invocation.
func (e EndToEnd) InvokeP50() time.Duration { return percentile(e.Invoke, 50) }

// InvokeP99 is the 99th percentile latency of an invocation.
func (e EndToEnd) InvokeP99() time.Duration { return percentile(e.Invoke, 99) }

// BareP50 is the median latency of a bare EVALSHA.
func (e EndToEnd) BareP50() time.Duration { return percentile(e.Bare, 50) }

// BareP99 is the 99th percentile latency of a bare EVALSHA.
func (e EndToEnd) BareP99() time.Duration { return percentile(e.Bare, 99) }

// MeasureEndToEnd builds functions/authorizer under root for this machine, starts it
// with env (Redis, the registry table and its endpoint, the configuration) under a
// Runtime API on loopback, and invokes it with event plan.Warm + plan.Invocations times,
// timing the last plan.Invocations; then times as many EVALSHAs of bucket.lua for the
// same identity and rule through client. Every invocation must be allowed (the plan's
// rule must admit them all), so that each one reaches Redis.
func MeasureEndToEnd(ctx context.Context, root string, env []string, event []byte, client rueidis.Client, rule bucketgate.Rule, plan EndToEndPlan) (EndToEnd, error) {
	dir, err := os.MkdirTemp("", "endtoend")
	if err != nil {
		return EndToEnd{}, err
	}
	defer os.RemoveAll(dir)
	binary := filepath.Join(dir, "bootstrap")
	if _, err := buildBootstrap(ctx, filepath.Join(root, "functions/authorizer"), runtime.GOOS, runtime.GOARCH, binary); err != nil {
		return EndToEnd{}, err
	}
	api, err := runtimeapi.New()
	if err != nil {
		return EndToEnd{}, err
	}
	defer api.Close()
	cmd := exec.CommandContext(ctx, binary)
	cmd.Env = append(slices.Clone(env), "AWS_LAMBDA_RUNTIME_API="+api.Addr)
	cmd.Stdout, cmd.Stderr = io.Discard, io.Discard // EMF lines and logs, as Lambda would ship them
	if err := cmd.Start(); err != nil {
		return EndToEnd{}, fmt.Errorf("start the authorizer: %w", err)
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()

	e := EndToEnd{Plan: plan, Invoke: make([]time.Duration, 0, plan.Invocations), Bare: make([]time.Duration, 0, plan.Invocations)}
	for i := range plan.Warm + plan.Invocations {
		start := time.Now()
		answer, err := api.Invoke(ctx, event)
		took := time.Since(start)
		if err != nil {
			return EndToEnd{}, fmt.Errorf("invocation %d: %w", i+1, err)
		}
		if !allowedAnswer(answer) {
			return EndToEnd{}, fmt.Errorf("invocation %d was not allowed: %s", i+1, answer)
		}
		if i >= plan.Warm {
			e.Invoke = append(e.Invoke, took)
		}
		e.Answer = string(answer)
	}

	// The floor: the same script call the authorizer's Limiter makes, prepared once.
	key := bucket.Key("e2e-floor")
	cmdArgs := []string{rule.Name + lua.TokensSuffix, rule.Name + lua.StampSuffix, strconv.FormatInt(rule.Capacity, 10), strconv.FormatFloat(rule.RefillPerSecond, 'f', -1, 64)}
	if err := client.Do(ctx, client.B().ScriptLoad().Script(lua.BucketSource).Build()).Error(); err != nil {
		return EndToEnd{}, err
	}
	evalsha := client.B().Evalsha().Sha1(lua.BucketSHA1).Numkeys(1).Key(key).Arg(cmdArgs...).Build().Pin()
	for i := range plan.Warm + plan.Invocations {
		start := time.Now()
		err := client.Do(ctx, evalsha).Error()
		took := time.Since(start)
		if err != nil {
			return EndToEnd{}, fmt.Errorf("EVALSHA %d: %w", i+1, err)
		}
		if i >= plan.Warm {
			e.Bare = append(e.Bare, took)
		}
	}
	slices.Sort(e.Invoke)
	slices.Sort(e.Bare)
	return e, nil
}

// allowedAnswer reports whether an authorizer answer allows the request: an Allow
// policy or isAuthorized true.
func allowedAnswer(answer []byte) bool {
	return strings.Contains(string(answer), `"Effect":"Allow"`) || strings.Contains(string(answer), `"isAuthorized":true`)
}
