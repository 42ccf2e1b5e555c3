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
		var lines []map[string]any
		for line := range strings.Lines(logs.String()) {
			var m map[string]any
			if err := json.Unmarshal([]byte(line), &m); err != nil {
				t.Fatalf("%s: %q: %v", st.name, line, err)
			}
			if m["msg"] == registry.MsgReadFailed {
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
