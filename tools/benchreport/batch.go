package benchreport

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"time"

	"github.com/redis/rueidis"

	"github.com/bucketgate/bucketgate/checkapi"
	"github.com/bucketgate/bucketgate/internal/bucket"
	"github.com/bucketgate/bucketgate/internal/check"
	"github.com/bucketgate/bucketgate/internal/config"
	"github.com/bucketgate/bucketgate/internal/guard"
	"github.com/bucketgate/bucketgate/internal/telemetry"
	"github.com/bucketgate/bucketgate/tools/stress"
)

// BatchPlan is item 8: one check, and a batch of Checks, through the check function's
// handler to a redis-server behind a proxy that holds every chunk of bytes for Latency
// in each direction, Reps times each, taking turns.
type BatchPlan struct {
	Latency time.Duration
	Checks  int
	Reps    int
}

// BatchRun is what item 8 measured: the wall time of each invocation, by repetition.
type BatchRun struct {
	Plan       BatchPlan
	One, Batch []time.Duration
}

// OneMedian is the median wall time of one check.
func (b BatchRun) OneMedian() time.Duration { return medianDuration(b.One) }

// BatchMedian is the median wall time of a batch.
func (b BatchRun) BatchMedian() time.Duration { return medianDuration(b.Batch) }

// Ratio is BatchMedian over OneMedian; goal <= goalBatchRatio.
func (b BatchRun) Ratio() float64 { return float64(b.BatchMedian()) / float64(b.OneMedian()) }

// batchRule never runs dry, so that every check of the run is an admission.
const batchRule = `{"name":"burst","capacity":1000000000,"refillPerSecond":1000000}`

// MeasureBatch runs plan against the redis-server at addr, through a stress.Proxy, with
// the check function's handler on its own client and a guard whose deadline the link
// cannot miss. Every check must be answered ok, or the run is an error.
func MeasureBatch(ctx context.Context, addr string, plan BatchPlan) (BatchRun, error) {
	proxy, err := stress.StartProxy(addr)
	if err != nil {
		return BatchRun{}, err
	}
	defer proxy.Close()
	proxy.SetLatency(plan.Latency)
	client, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{proxy.Addr}, DisableCache: true})
	if err != nil {
		return BatchRun{}, fmt.Errorf("batch: %w", err)
	}
	defer client.Close()
	h := &check.Handler{
		Guard:   guard.New(bucket.New(client), guard.Options{Timeout: time.Second + 100*plan.Latency}),
		Plans:   config.Default(),
		Metrics: telemetry.NewEmitter(io.Discard, "bench", "check"),
		Log:     slog.New(slog.DiscardHandler),
		Now:     time.Now,
	}
	checks := make([]string, plan.Checks)
	for i := range checks {
		checks[i] = fmt.Sprintf(`{"key":"batch-%d","rules":[%s]}`, i, batchRule)
	}
	one, batch := []byte(checks[0]), []byte(`{"checks":[`+strings.Join(checks, ",")+`]}`)
	run := BatchRun{Plan: plan}
	timed := func(payload []byte, into *[]time.Duration) error {
		start := time.Now()
		out, err := h.Invoke(ctx, payload)
		if err != nil {
			return fmt.Errorf("batch: %w", err)
		}
		*into = append(*into, time.Since(start))
		return allOK(out)
	}
	var warm []time.Duration
	if err := timed(one, &warm); err != nil { // connected, script loaded
		return BatchRun{}, err
	}
	for rep := range plan.Reps {
		first, second := one, batch
		firstInto, secondInto := &run.One, &run.Batch
		if rep%2 == 1 {
			first, second, firstInto, secondInto = second, first, secondInto, firstInto
		}
		if err := timed(first, firstInto); err != nil {
			return BatchRun{}, err
		}
		if err := timed(second, secondInto); err != nil {
			return BatchRun{}, err
		}
	}
	return run, nil
}

// allOK reports an answer (one response or a batch's results) with a check that was
// not allowed with reason ok.
func allOK(out []byte) error {
	var batch checkapi.BatchResult
	if bytes.HasPrefix(out, []byte(`{"results"`)) {
		if err := json.Unmarshal(out, &batch); err != nil {
			return fmt.Errorf("batch: answer %s: %w", out, err)
		}
	} else {
		batch.Results = make([]checkapi.Response, 1)
		if err := json.Unmarshal(out, &batch.Results[0]); err != nil {
			return fmt.Errorf("batch: answer %s: %w", out, err)
		}
	}
	for i, r := range batch.Results {
		if r.Reason != checkapi.ReasonOK {
			return fmt.Errorf("batch: check %d answered %+v, want ok", i, r)
		}
	}
	return nil
}

// medianDuration is the median of ds.
func medianDuration(ds []time.Duration) time.Duration {
	fs := make([]float64, len(ds))
	for i, d := range ds {
		fs[i] = float64(d)
	}
	return time.Duration(median(fs))
}
