package telemetry_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/bucketgate/bucketgate"
	"github.com/bucketgate/bucketgate/internal/guard"
	"github.com/bucketgate/bucketgate/internal/telemetry"
)

// allowed is an allowed decision that asked Redis for d.
func allowed(d time.Duration) guard.Result {
	return guard.Result{Decision: bucketgate.Decision{Allowed: true, Reason: bucketgate.ReasonOK}, Latency: d}
}

// summaries returns the summary of each line out holds.
func summaries(t *testing.T, base time.Time, out *bytes.Buffer) []string {
	t.Helper()
	var got []string
	for _, line := range strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n") {
		if line != "" {
			got = append(got, summary(t, base, line))
		}
	}
	return got
}

// summary is one EMF line in short: its timestamp (ms after the test's base time), and
// per outcome its decisions and number of latencies, per result its lookups.
func summary(t *testing.T, base time.Time, line string) string {
	t.Helper()
	var doc map[string]any
	if err := json.Unmarshal([]byte(line), &doc); err != nil {
		t.Fatalf("EMF line %s: %v", line, err)
	}
	aws, _ := doc["_aws"].(map[string]any)
	ts, _ := aws["Timestamp"].(float64)
	s := fmt.Sprintf("@%d", int64(ts)-base.UnixMilli())
	if o, ok := doc[telemetry.DimOutcome]; ok {
		lat, _ := doc[telemetry.MetricRedisLatency].([]any)
		s += fmt.Sprintf(" %s %s/%d", o, field(doc, telemetry.MetricDecisions), len(lat))
	}
	if r, ok := doc[telemetry.DimResult]; ok {
		s += fmt.Sprintf(" %s %s", r, field(doc, telemetry.MetricRegistryLookups))
	}
	return s
}

// With FlushEvery, an instance writes the sum of what it served at most once per
// interval: the first Invocation at once, those within the interval after a write with
// the first that comes an interval or more after it, under the time of the first they
// hold; a new minute first writes the old one's; Flush writes what waits.
func TestFlushEvery(t *testing.T) {
	base := time.Date(2026, 11, 25, 19, 22, 10, 0, time.UTC)
	type step struct {
		at    time.Duration // after base; -1: Flush
		n     int           // allowed decisions with a registry hit, in one Invocation
		lines []string      // the lines it writes
	}
	const flush = -1
	tests := []struct {
		name  string
		steps []step
	}{
		{"the first at once, the rest within the second wait", []step{
			{0, 1, []string{"@0 allowed 1/1 hit 1"}},
			{10 * time.Millisecond, 1, nil},
			{500 * time.Millisecond, 2, nil},
			{999 * time.Millisecond, 1, nil},
			{time.Second, 1, []string{"@10 allowed 5/5 hit 5"}},
			{1001 * time.Millisecond, 1, nil},
			{flush, 0, []string{"@1001 allowed 1/1 hit 1"}},
			{flush, 0, nil},
		}},
		{"a quiet instance writes each at once", []step{
			{0, 1, []string{"@0 allowed 1/1 hit 1"}},
			{5 * time.Second, 1, []string{"@5000 allowed 1/1 hit 1"}},
			{7 * time.Second, 3, []string{"@7000 allowed 3/3 hit 3"}},
		}},
		{"waiting past a minute: the old minute's first", []step{
			{0, 1, []string{"@0 allowed 1/1 hit 1"}},
			{300 * time.Millisecond, 2, nil},
			{3 * time.Minute, 1, []string{"@300 allowed 2/2 hit 2", "@180000 allowed 1/1 hit 1"}},
		}},
		{"a new minute within the second", []step{
			{49*time.Second + 500*time.Millisecond, 1, []string{"@49500 allowed 1/1 hit 1"}},
			{49*time.Second + 900*time.Millisecond, 1, nil},
			{50*time.Second + 100*time.Millisecond, 1, []string{"@49900 allowed 1/1 hit 1"}},
			{50*time.Second + 600*time.Millisecond, 1, []string{"@50100 allowed 2/2 hit 2"}},
		}},
		{"a clock that goes back writes at once", []step{
			{2 * time.Second, 1, []string{"@2000 allowed 1/1 hit 1"}},
			{time.Second, 1, []string{"@1000 allowed 1/1 hit 1"}},
		}},
		{"more latencies than a line holds", []step{
			{0, 1, []string{"@0 allowed 1/1 hit 1"}},
			{time.Millisecond, 249, nil},
			{flush, 0, []string{"@1 allowed 249/100 hit 249", "@1 allowed -/100", "@1 allowed -/49"}},
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var out bytes.Buffer
			e := telemetry.NewEmitter(&out, "ns", "orders-prod", "authorizer", telemetry.FlushEvery(time.Second))
			for i, s := range tc.steps {
				out.Reset()
				if s.at == flush {
					if err := e.Flush(); err != nil {
						t.Fatal(err)
					}
				} else {
					var inv telemetry.Invocation
					for range s.n {
						inv.Observe(allowed(time.Millisecond))
						inv.ObserveLookup("hit", false)
					}
					if err := e.Emit(base.Add(s.at), &inv); err != nil {
						t.Fatal(err)
					}
				}
				if got := summaries(t, base, &out); strings.Join(got, "; ") != strings.Join(s.lines, "; ") {
					t.Fatalf("step %d: lines %q, want %q\n%s", i+1, got, s.lines, &out)
				}
			}
		})
	}
}

// TestFlushEveryByWallClock: with FlushEvery, the interval is told by the wall clock.
// The clock's times come with a monotonic reading (time.Now's), which may stand still
// while a Lambda instance is frozen between invocations: kept, the first Invocation
// after a freeze longer than the interval would wait (for the next one, maybe
// minutes away), not be written at once. None of the times the Emitter keeps carries it
// (a Time's String shows " m=" when it does).
func TestFlushEveryByWallClock(t *testing.T) {
	now := time.Now()
	if !strings.Contains(now.String(), " m=") {
		t.Fatal("time.Now has no monotonic reading here: this test proves nothing")
	}
	var out bytes.Buffer
	e := telemetry.NewEmitter(&out, "ns", "orders-prod", "authorizer", telemetry.FlushEvery(time.Second))
	for i, at := range []time.Time{now, now.Add(time.Millisecond)} {
		var inv telemetry.Invocation
		inv.Observe(allowed(time.Millisecond))
		if err := e.Emit(at, &inv); err != nil {
			t.Fatal(err)
		}
		start, flushed := telemetry.FlushTimesOf(e)
		if strings.Contains(start.String(), " m=") || strings.Contains(flushed.String(), " m=") {
			t.Errorf("after Invocation %d: start %v, last write %v: a monotonic reading kept, a freeze would not count", i+1, start, flushed)
		}
	}
	if err := e.FlushDue(now.Add(2 * time.Second)); err != nil {
		t.Fatal(err)
	}
	if _, flushed := telemetry.FlushTimesOf(e); strings.Contains(flushed.String(), " m=") {
		t.Errorf("after FlushDue: last write %v: a monotonic reading kept, a freeze would not count", flushed)
	}
}

// A timer's FlushDue (a process not frozen between requests: the middleware's) writes
// what has waited an interval or more, and counts as a write: a busy instance still
// writes at most once per interval (its invocations write, the timer nothing), a quiet
// one holds nothing back much longer than an interval, and an invocation within the
// interval of the timer's write waits.
func TestFlushDue(t *testing.T) {
	base := time.Date(2026, 11, 25, 19, 22, 10, 0, time.UTC)
	type step struct {
		at    time.Duration // after base
		tick  bool          // FlushDue at at, else an Invocation of an allowed decision
		lines []string      // the lines it writes
	}
	tests := []struct {
		name  string
		steps []step
	}{
		{"busy: the timer writes nothing within the interval of the last write", []step{
			{0, false, []string{"@0 allowed 1/1"}},
			{200 * time.Millisecond, false, nil},
			{500 * time.Millisecond, true, nil},
			{800 * time.Millisecond, false, nil},
			{time.Second, false, []string{"@200 allowed 3/3"}},
			{1500 * time.Millisecond, true, nil},
		}},
		{"quiet: the timer writes what waited an interval", []step{
			{0, false, []string{"@0 allowed 1/1"}},
			{200 * time.Millisecond, false, nil},
			{900 * time.Millisecond, true, nil},
			{1200 * time.Millisecond, true, []string{"@200 allowed 1/1"}},
			{1500 * time.Millisecond, false, nil},
			{2200 * time.Millisecond, true, nil},
			{2600 * time.Millisecond, true, []string{"@1500 allowed 1/1"}},
			{3000 * time.Millisecond, true, nil},
		}},
		{"a clock gone back writes", []step{
			{time.Second, false, []string{"@1000 allowed 1/1"}},
			{1100 * time.Millisecond, false, nil},
			{500 * time.Millisecond, true, []string{"@1100 allowed 1/1"}},
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var out bytes.Buffer
			e := telemetry.NewEmitter(&out, "ns", "orders-prod", "middleware", telemetry.FlushEvery(time.Second))
			for i, s := range tc.steps {
				out.Reset()
				var err error
				if s.tick {
					err = e.FlushDue(base.Add(s.at))
				} else {
					var inv telemetry.Invocation
					inv.Observe(allowed(time.Millisecond))
					err = e.Emit(base.Add(s.at), &inv)
				}
				if err != nil {
					t.Fatal(err)
				}
				if got := summaries(t, base, &out); strings.Join(got, "; ") != strings.Join(s.lines, "; ") {
					t.Fatalf("step %d: lines %q, want %q\n%s", i+1, got, s.lines, &out)
				}
			}
		})
	}
}

// Every metric gathered reaches a line: the sums of every outcome and failure, lookup
// result, invalid item, shadow rule and events not sent of the Invocations, as FlushEvery adds them up,
// equal what their lines one by one hold.
func TestFlushEveryKeepsEveryMetric(t *testing.T) {
	results := []guard.Result{
		allowed(time.Millisecond),
		{Decision: bucketgate.Decision{Reason: bucketgate.ReasonLimited}, Latency: 2 * time.Millisecond},
		{Decision: bucketgate.Decision{Reason: bucketgate.ReasonLimited}, CacheHit: true},
		{Decision: bucketgate.Decision{Reason: bucketgate.ReasonUnavailable}, Failure: guard.FailureTimeout, Latency: 50 * time.Millisecond},
		{Decision: bucketgate.Decision{Allowed: true, Reason: bucketgate.ReasonDegraded}, Failure: guard.FailureRedisError},
		{Decision: bucketgate.Decision{Allowed: true, Reason: bucketgate.ReasonOK, ShadowLimited: 1}, Latency: time.Millisecond},
	}
	results = append(results, results...)
	lookups := []string{"hit", "miss", "stale", "error"}
	at := time.UnixMilli(1_800_000_030_000) // 30 s into a minute
	var each, summed bytes.Buffer
	one := telemetry.NewEmitter(&each, "ns", "orders-prod", "check")
	sum := telemetry.NewEmitter(&summed, "ns", "orders-prod", "check", telemetry.FlushEvery(time.Minute))
	if err := sum.Emit(at.Add(-time.Second), new(telemetry.Invocation)); err != nil { // starts an interval
		t.Fatal(err)
	}
	for i, r := range results {
		var inv telemetry.Invocation
		inv.Observe(r)
		inv.ObserveLookup(lookups[i%len(lookups)], i%3 == 0)
		inv.ObserveConfig("", i%4 == 1)
		if r.ShadowLimited != 0 {
			inv.ObserveShadowLimited("trial")
		}
		inv.ObserveEventsFailed([]string{telemetry.EventsTimeout, telemetry.EventsError, telemetry.EventsRejected}[i%3], i%2)
		for _, e := range []*telemetry.Emitter{one, sum} {
			if err := e.Emit(at, &inv); err != nil {
				t.Fatal(err)
			}
		}
	}
	if summed.Len() != 0 {
		t.Fatalf("written within the interval: %s", &summed)
	}
	if err := sum.Flush(); err != nil {
		t.Fatal(err)
	}
	totals := func(b *bytes.Buffer) map[string]float64 {
		got := map[string]float64{}
		lines := strings.Split(strings.TrimSpace(b.String()), "\n")
		for _, line := range lines {
			l := parseEMF(t, line)
			for _, d := range l.directives {
				dim := d.Dimensions[0][1]
				for _, m := range d.Metrics {
					k := m.Name
					if dim != telemetry.DimFunction {
						k += " " + dim + "=" + fmt.Sprint(l.members[dim])
					}
					switch v := l.members[m.Name].(type) {
					case float64:
						got[k] += v
					case []any:
						for _, x := range v {
							got[k] += x.(float64)
						}
						got[k+" values"] += float64(len(v))
					}
				}
			}
		}
		got["lines"] = float64(len(lines))
		return got
	}
	want, got := totals(&each), totals(&summed)
	if want["lines"] <= got["lines"] {
		t.Errorf("%v lines added up, %v one by one: want fewer", got["lines"], want["lines"])
	}
	delete(want, "lines")
	delete(got, "lines")
	if !jsonEqual(t, got, want) {
		t.Fatalf("added up %v\none by one %v", got, want)
	}
}

// Concurrent Emits and Flushes (a server's requests and its timer) lose nothing.
func TestFlushEveryConcurrent(t *testing.T) {
	var out bytes.Buffer
	e := telemetry.NewEmitter(&out, "ns", "orders-prod", "middleware", telemetry.FlushEvery(time.Millisecond))
	const workers, each = 8, 200
	done := make(chan struct{})
	for w := range workers {
		go func() {
			defer func() { done <- struct{}{} }()
			for i := range each {
				var inv telemetry.Invocation
				inv.Observe(allowed(time.Millisecond))
				_ = e.Emit(time.Now(), &inv)
				if i%50 == w {
					_ = e.Flush()
				}
			}
		}()
	}
	for range workers {
		<-done
	}
	if err := e.Flush(); err != nil {
		t.Fatal(err)
	}
	decisions := 0.0
	for _, line := range strings.Split(strings.TrimSpace(out.String()), "\n") {
		// A line may hold latencies alone: a second's values beyond EMF's 100 per line.
		if n, ok := parseEMF(t, line).members[telemetry.MetricDecisions].(float64); ok {
			decisions += n
		}
	}
	if decisions != workers*each {
		t.Fatalf("%v decisions written, want %d", decisions, workers*each)
	}
}

// With WriteAtOnce, an Invocation that counts a decision of its outcomes, those its
// function answers with a function error, which Lambda's Errors metric counts at once
// (the authorizer's refusals, 401, and decisions failed closed, 503; the check
// function's refusals), is written at once with what waits, though within the
// interval: the error alarms subtract its count from Errors, and an instance frozen
// after it would otherwise hold it for as long as it stays idle. Other outcomes still
// wait, and without the option every one does.
func TestFlushEveryWritesErrorsAtOnce(t *testing.T) {
	base := time.Date(2026, 11, 26, 0, 10, 5, 0, time.UTC)
	tests := []struct {
		name    string
		observe func(*telemetry.Invocation)
		outcome string   // the outcome observe counts
		lines   []string // the lines the second Invocation writes at once
	}{
		{"refused", (*telemetry.Invocation).ObserveRefused, telemetry.OutcomeRefused, []string{"@0 allowed 2/2", "@0 refused 1/0"}},
		{"failed closed", func(inv *telemetry.Invocation) {
			inv.Observe(guard.Result{Decision: bucketgate.Decision{Reason: bucketgate.ReasonUnavailable}, Failure: guard.FailureTimeout})
		}, telemetry.OutcomeUnavailable, []string{"@0 allowed 2/2", "@0 unavailable 1/0"}},
		{"limited", func(inv *telemetry.Invocation) {
			inv.Observe(guard.Result{Decision: bucketgate.Decision{Reason: bucketgate.ReasonLimited}})
		}, telemetry.OutcomeLimited, nil},
		{"degraded", func(inv *telemetry.Invocation) {
			inv.Observe(guard.Result{Decision: bucketgate.Decision{Allowed: true, Reason: bucketgate.ReasonDegraded}, Failure: guard.FailureTimeout})
		}, telemetry.OutcomeDegraded, nil},
	}
	functions := []struct {
		name   string
		atOnce []string // WriteAtOnce's outcomes; nil: no option
	}{
		{"authorizer's", []string{telemetry.OutcomeRefused, telemetry.OutcomeUnavailable}},
		{"check function's", []string{telemetry.OutcomeRefused}},
		{"without the option", nil},
	}
	for _, tc := range tests {
		for _, f := range functions {
			t.Run(tc.name+", "+f.name, func(t *testing.T) {
				opts, want := []telemetry.EmitterOption{telemetry.FlushEvery(time.Second)}, []string(nil)
				if f.atOnce != nil {
					opts = append(opts, telemetry.WriteAtOnce(f.atOnce...))
				}
				if slices.Contains(f.atOnce, tc.outcome) {
					want = tc.lines
				}
				var out bytes.Buffer
				e := telemetry.NewEmitter(&out, "ns", "orders-prod", "authorizer", opts...)
				var first telemetry.Invocation
				first.Observe(allowed(time.Millisecond))
				if err := e.Emit(base.Add(-time.Millisecond), &first); err != nil { // starts an interval
					t.Fatal(err)
				}
				if err := e.Emit(base, &first); err != nil { // waits
					t.Fatal(err)
				}
				out.Reset()
				var inv telemetry.Invocation
				inv.Observe(allowed(time.Millisecond))
				tc.observe(&inv)
				if err := e.Emit(base.Add(10*time.Millisecond), &inv); err != nil {
					t.Fatal(err)
				}
				if got := summaries(t, base, &out); strings.Join(got, "; ") != strings.Join(want, "; ") {
					t.Fatalf("lines %q, want %q\n%s", got, want, &out)
				}
			})
		}
	}
}
