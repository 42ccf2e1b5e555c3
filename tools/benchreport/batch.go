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

	"github.com/bucketgate/bucketgate"
	"github.com/bucketgate/bucketgate/checkapi"
	"github.com/bucketgate/bucketgate/internal/bucket"
	"github.com/bucketgate/bucketgate/internal/check"
	"github.com/bucketgate/bucketgate/internal/config"
	"github.com/bucketgate/bucketgate/internal/guard"
	"github.com/bucketgate/bucketgate/internal/registry"
	"github.com/bucketgate/bucketgate/internal/telemetry"
	"github.com/bucketgate/bucketgate/tools/stress"
)

// BatchPlan is item 9: one check, and a batch of Checks, through the check function's
// handler to a redis-server behind a proxy that holds every chunk of bytes for Latency
// in each direction, Reps times each, taking turns. With Settle, each is a settle (of
// 3 tokens) of a reservation (of 5) made for it, untimed, just before.
type BatchPlan struct {
	Latency time.Duration
	Checks  int
	Reps    int
	Settle  bool
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

// batchRule is the rule of check i of a batch, on its own key: named for i and of
// capacity bucketgate.MaxCapacity - i, so that its answer says which check it answers; it
// never runs dry, so that every check of the run is an admission.
const batchRule = `{"name":"burst-%d","capacity":%d,"refillPerSecond":1000000}`

// MeasureBatch runs plan against the redis-server at addr, through a stress.Proxy, with
// the check function's handler on its own client and a guard whose deadline the link
// cannot miss. Every check must be answered ok, and a batch's answers in the order of
// its checks, or the run is an error.
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
		Config:  registry.NewStatic(config.Default(), nil),
		Metrics: telemetry.NewEmitter(io.Discard, "bench", "bench", "check"),
		Log:     slog.New(slog.DiscardHandler),
		Now:     time.Now,
	}
	checks := make([]string, plan.Checks)
	for i := range checks {
		checks[i] = fmt.Sprintf(`{"key":"batch-%d","rules":[`+batchRule+`]`, i, i, bucketgate.MaxCapacity-i)
	}
	request := func(i int, op string) string { return checks[i] + op + "}" }
	batchOf := func(op string) []byte {
		all := make([]string, len(checks))
		for i := range checks {
			all[i] = request(i, op)
		}
		return []byte(`{"checks":[` + strings.Join(all, ",") + `]}`)
	}
	one, batch := []byte(request(0, "")), batchOf("")
	if plan.Settle {
		one, batch = []byte(request(0, `,"op":"settle","reservation":"%s","cost":3`)), batchOf(`,"op":"settle","reservation":"%s","cost":3`)
	}
	run := BatchRun{Plan: plan}
	timed := func(payload []byte, into *[]time.Duration) error {
		isBatch := bytes.Equal(payload, batch)
		if plan.Settle {
			var err error
			if payload, err = reserved(ctx, h, payload, isBatch, plan.Checks); err != nil {
				return err
			}
		}
		start := time.Now()
		out, err := h.Invoke(ctx, payload)
		if err != nil {
			return fmt.Errorf("batch: %w", err)
		}
		*into = append(*into, time.Since(start))
		return inOrder(out, isBatch, plan.Checks)
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

// reserved returns settles, a settle request or a batch of checks of them with a %s
// where each reservation goes, with those of reservations of 5 tokens each that h made
// for them just now (one batch, untimed).
func reserved(ctx context.Context, h *check.Handler, settles []byte, batch bool, checks int) ([]byte, error) {
	reserves := bytes.ReplaceAll(settles, []byte(`"op":"settle","reservation":"%s","cost":3`), []byte(`"op":"reserve","cost":5`))
	if !batch {
		reserves = []byte(`{"checks":[` + string(reserves) + `]}`)
	}
	out, err := h.Invoke(ctx, reserves)
	if err != nil {
		return nil, fmt.Errorf("batch: reserve: %w", err)
	}
	var b checkapi.BatchResult
	if err := json.Unmarshal(out, &b); err != nil {
		return nil, fmt.Errorf("batch: reserve: answer %s: %w", out, err)
	}
	ids := make([]any, len(b.Results))
	for i, r := range b.Results {
		if r.Reservation == "" {
			return nil, fmt.Errorf("batch: reserve %d answered %+v, want a reservation", i, r)
		}
		ids[i] = r.Reservation
	}
	want := 1
	if batch {
		want = checks
	}
	if len(ids) != want {
		return nil, fmt.Errorf("batch: %d reservations for %d settles", len(ids), want)
	}
	return fmt.Appendf(nil, string(settles), ids...), nil
}

// inOrder reports an answer (a batch's results of checks checks, or the response to
// check 0) with a check that was not allowed with reason ok, or that answers another
// check than the one at its index (see batchRule).
func inOrder(out []byte, batch bool, checks int) error {
	var results []checkapi.Response
	if batch {
		var b checkapi.BatchResult
		if err := json.Unmarshal(out, &b); err != nil {
			return fmt.Errorf("batch: answer %s: %w", out, err)
		}
		if len(b.Results) != checks {
			return fmt.Errorf("batch: %d results for %d checks", len(b.Results), checks)
		}
		results = b.Results
	} else {
		results = make([]checkapi.Response, 1)
		if err := json.Unmarshal(out, &results[0]); err != nil {
			return fmt.Errorf("batch: answer %s: %w", out, err)
		}
	}
	for i, r := range results {
		if r.Reason != checkapi.ReasonOK {
			return fmt.Errorf("batch: check %d answered %+v, want ok", i, r)
		}
		if rule, limit := fmt.Sprintf("burst-%d", i), int64(bucketgate.MaxCapacity-i); r.Rule != rule || r.Limit != limit {
			return fmt.Errorf("batch: answer %d is on rule %s of limit %d, want %s of limit %d: answers out of order", i, r.Rule, r.Limit, rule, limit)
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
