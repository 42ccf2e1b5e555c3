package registry_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/smithy-go"

	"github.com/bucketgate/bucketgate/internal/registry"
	"github.com/bucketgate/bucketgate/internal/telemetry"
	"github.com/bucketgate/bucketgate/internal/testkit/registrytest"
)

// A flood of failed reads (made-up keys while DynamoDB throttles the table) writes the
// registry's warn line once per ReadFailureLogEvery and cause, not once a read: each
// request's decision line names the error already, and the line repeated it at about
// 600 bytes a request, doubling the flood's logs. A new cause is logged at once, and
// the next line of a cause says how many of its failures went unlogged since its last.
func TestCacheReadFailureLoggedOncePerCause(t *testing.T) {
	src := registrytest.New()
	var logs bytes.Buffer
	c, clk := newCache(t, src, registry.Options{Log: telemetry.NewLogger(&logs, nil)})
	throttle := &smithy.GenericAPIError{Code: "ProvisionedThroughputExceededException", Message: "throttled"}
	denied := &smithy.GenericAPIError{Code: "AccessDeniedException", Message: "not authorized"}
	reset := errors.New("connection reset by peer")
	steps := []struct {
		name     string
		advance  time.Duration
		err      error
		reads    int // lookups of new keys, a failed read each
		lines    int // the registry's lines they write
		unlogged int // the last line's failedUnlogged
	}{
		{"the first failure is logged", 0, throttle, 5, 1, 0},
		{"the same cause within the period is counted, not logged", registry.ReadFailureLogEvery / 2, throttle, 5, 0, 0},
		{"another cause is logged at once", 0, denied, 2, 1, 0},
		{"an error of no API code is a cause too", 0, reset, 1, 1, 0},
		{"after the period the cause is logged with what went unlogged", registry.ReadFailureLogEvery / 2, throttle, 1, 1, 9},
		{"a clock that went back logs", -time.Hour, throttle, 1, 1, 0},
	}
	n := 0
	for _, st := range steps {
		clk.advance(st.advance)
		src.Fail(st.err)
		logs.Reset()
		for range st.reads {
			n++
			if _, err := c.Lookup(context.Background(), plans, fmt.Sprintf("key:%032x", n)); !errors.Is(err, st.err) {
				t.Fatalf("%s: lookup: %v, want %v", st.name, err, st.err)
			}
		}
		var lines []map[string]any // the lines of reads: those that say another cause's counted reads alone are TestCacheReadFailuresAllSaid's
		for _, m := range readFailureLines(t, &logs) {
			if m[registry.AttrItem] != nil {
				lines = append(lines, m)
			}
		}
		if len(lines) != st.lines {
			t.Fatalf("%s: %d lines %q, want %d:\n%s", st.name, len(lines), registry.MsgReadFailed, st.lines, &logs)
		}
		if st.lines == 0 {
			continue
		}
		last := lines[len(lines)-1]
		if last[registry.AttrUnlogged] != float64(st.unlogged) || !strings.Contains(fmt.Sprint(last[telemetry.AttrError]), st.err.Error()) {
			t.Errorf("%s: %v, want %s %d and the error %q", st.name, last, registry.AttrUnlogged, st.unlogged, st.err)
		}
	}
}

// gated is a Source whose reads of each id say they began (arrived), wait for that id's
// gate to close, then fail with err: reads in flight together, answered in the order
// the test chooses.
type gated struct {
	gates   map[string]chan struct{}
	arrived chan string
	err     error
}

func (g gated) Get(ctx context.Context, id string) (registry.Record, bool, error) {
	g.arrived <- id
	<-g.gates[id]
	return registry.Record{}, false, g.err
}

// Reads failing together, as a check function's batch's lookups do, are one line: the
// period counts from when a failure is logged, not from when its read began, so that a
// read that began before a logged one and failed after it is counted, not logged.
func TestCacheReadsFailingTogetherLoggedOnce(t *testing.T) {
	first, second := "key:"+strings.Repeat("1", 32), "key:"+strings.Repeat("2", 32)
	src := gated{gates: map[string]chan struct{}{first: make(chan struct{}), second: make(chan struct{})}, arrived: make(chan string, 2),
		err: &smithy.GenericAPIError{Code: "ProvisionedThroughputExceededException", Message: "throttled"}}
	var logs bytes.Buffer
	clk := &clock{t: time.Unix(1_800_000_000, 0)}
	var mu sync.Mutex
	now := func() time.Time { mu.Lock(); defer mu.Unlock(); return clk.now() }
	c := registry.NewCache(src, registry.Options{TTL: ttl, Size: 10, Now: now, Log: telemetry.NewLogger(&logs, nil)})
	done := make(chan error, 2)
	lookup := func(id string) { _, err := c.Lookup(context.Background(), plans, id); done <- err }
	go lookup(first) // begins now
	<-src.arrived
	mu.Lock()
	clk.advance(time.Second)
	mu.Unlock()
	go lookup(second) // begins a second later
	<-src.arrived
	close(src.gates[second]) // fails first, and is logged
	if err := <-done; err == nil {
		t.Fatal("the second lookup: no error")
	}
	close(src.gates[first])
	if err := <-done; err == nil {
		t.Fatal("the first lookup: no error")
	}
	if n := strings.Count(logs.String(), registry.MsgReadFailed); n != 1 {
		t.Errorf("%d lines %q, want 1:\n%s", n, registry.MsgReadFailed, &logs)
	}
}

// Every failed read is in the registry's lines, whatever follows the flood: summed over
// them, failed (1 for the line of a read, which names its item; 0 for a line that only
// says the reads counted since the last) and failedUnlogged are the reads that failed.
// The reads a cause's last line left counted are said, once ReadFailureLogEvery has
// passed since it, by the next lookup (the table back, or no more reads failing of that
// cause), or at once by Flush (the instance's end, at SIGTERM): a flood that ended, or
// an instance that stopped, within the minute no longer leaves them unsaid.
func TestCacheReadFailuresAllSaid(t *testing.T) {
	throttle := &smithy.GenericAPIError{Code: "ProvisionedThroughputExceededException", Message: "throttled"}
	denied := &smithy.GenericAPIError{Code: "AccessDeniedException", Message: "not authorized"}
	type step struct {
		advance  time.Duration
		err      error // the table's failure from then on; nil: it answers
		lookups  int   // of new keys: a read each
		flush    bool  // Flush after the lookups
		lines    int   // the registry's lines the step writes
		failed   int   // the last one's failed (-1: any), and unlogged its failedUnlogged
		unlogged int
	}
	tests := []struct {
		name  string
		steps []step
	}{
		{"a flood that ends within the minute: the next lookup after it says the rest", []step{
			{0, throttle, 5, false, 1, 1, 0},
			{time.Second, nil, 3, false, 0, 0, 0},
			{registry.ReadFailureLogEvery, nil, 1, false, 1, 0, 4},
			{registry.ReadFailureLogEvery, nil, 1, false, 0, 0, 0},
		}},
		{"the table back within the minute: nothing said before the minute has passed", []step{
			{0, throttle, 3, false, 1, 1, 0},
			{registry.ReadFailureLogEvery / 2, nil, 2, false, 0, 0, 0},
			{registry.ReadFailureLogEvery/2 - time.Nanosecond, nil, 1, false, 0, 0, 0},
			{time.Nanosecond, nil, 1, false, 1, 0, 2},
		}},
		{"an instance that stops within the minute: Flush says the rest", []step{
			{0, throttle, 5, false, 1, 1, 0},
			{time.Second, throttle, 2, true, 1, 0, 6},
			{registry.ReadFailureLogEvery, nil, 1, true, 0, 0, 0},
		}},
		{"each cause says its own", []step{
			{0, throttle, 3, false, 1, 1, 0},
			{0, denied, 4, false, 1, 1, 0},
			{registry.ReadFailureLogEvery, nil, 1, false, 2, 0, -1},
		}},
		{"a flood that goes on: a line a minute, the read's", []step{
			{0, throttle, 5, false, 1, 1, 0},
			{registry.ReadFailureLogEvery, throttle, 5, false, 1, 1, 4},
			{registry.ReadFailureLogEvery, throttle, 5, true, 2, 0, 4},
		}},
		{"nothing counted: nothing more said", []step{
			{0, throttle, 1, false, 1, 1, 0},
			{registry.ReadFailureLogEvery, nil, 1, true, 0, 0, 0},
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			src := registrytest.New()
			var logs bytes.Buffer
			c, clk := newCache(t, src, registry.Options{Log: telemetry.NewLogger(&logs, nil)})
			n, failed, said := 0, 0, 0
			sum := func(lines []map[string]any) {
				for _, l := range lines {
					f, _ := l[registry.AttrFailed].(float64)
					u, _ := l[registry.AttrUnlogged].(float64)
					said += int(f + u)
				}
			}
			for i, st := range tc.steps {
				clk.advance(st.advance)
				src.Fail(st.err)
				logs.Reset()
				for range st.lookups {
					n++
					if _, err := c.Lookup(context.Background(), plans, fmt.Sprintf("key:%032x", n)); !errors.Is(err, st.err) {
						t.Fatalf("step %d: lookup: %v, want %v", i, err, st.err)
					}
					if st.err != nil {
						failed++
					}
				}
				if st.flush {
					c.Flush(context.Background())
				}
				lines := readFailureLines(t, &logs)
				if len(lines) != st.lines {
					t.Fatalf("step %d: %d lines %q, want %d:\n%s", i, len(lines), registry.MsgReadFailed, st.lines, &logs)
				}
				sum(lines)
				if st.lines == 0 || st.unlogged < 0 {
					continue
				}
				last := lines[len(lines)-1]
				if last[registry.AttrFailed] != float64(st.failed) || last[registry.AttrUnlogged] != float64(st.unlogged) ||
					(last[registry.AttrItem] != nil) != (st.failed == 1) || last[telemetry.AttrError] == nil {
					t.Errorf("step %d: %v, want %s %d, %s %d, an %s with a read's, and the error", i, last, registry.AttrFailed, st.failed,
						registry.AttrUnlogged, st.unlogged, registry.AttrItem)
				}
			}
			logs.Reset()
			c.Flush(context.Background()) // the instance ends
			sum(readFailureLines(t, &logs))
			if said != failed {
				t.Errorf("the lines say %d failed reads, want %d", said, failed)
			}
		})
	}
}

// readFailureLines returns the lines of logs whose message is registry.MsgReadFailed.
func readFailureLines(t *testing.T, logs *bytes.Buffer) []map[string]any {
	t.Helper()
	var lines []map[string]any
	for line := range strings.Lines(logs.String()) {
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("%q: %v", line, err)
		}
		if m["msg"] == registry.MsgReadFailed {
			lines = append(lines, m)
		}
	}
	return lines
}
