package template_test

// The bytes the cost of logs is computed from (docs/deploy.md, "Costs"): CloudWatch Logs
// bills every byte a function writes, its log lines (stderr) and its EMF lines (stdout)
// alike, and Lambda's own lines for each invocation.

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"testing"

	"github.com/bucketgate/bucketgate/internal/testkit/dynalite"
	"github.com/bucketgate/bucketgate/internal/testkit/logbytes"
)

// costRate is the rate of the instance the figures of docs/deploy.md are for: a busy
// one, a request every 10 ms.
const costRate = 100

// The bytes one authorizer invocation writes on average, as Lambda runs it with the
// template's environment (a registry table, here on dynalite; the stack's name) at the
// template's log levels and at LogLevel DEBUG, for a registered key's allowed and
// limited requests on an instance serving costRate a second. Each stays within the
// figure the cost in the docs is computed from, so that the cost there is an upper
// bound, and an allowed request at the defaults within issue 30's goal of 250 bytes:
//
//	go test ./integration/template -run TestDecisionLogBytes -v
//
// prints the figures and the lines of the last second. make bench measures more rates.
func TestDecisionLogBytes(t *testing.T) {
	f := logbytes.NewFixture(t, dynalite.Start(t).Client(t))
	tests := []struct {
		levels           logbytes.Levels
		row              string  // the levels' cell in docs/deploy.md's table
		allowed, limited float64 // the most bytes per invocation, Lambda's lines included
	}{
		{logbytes.Defaults, "defaults", 20, 345},
		{logbytes.Debug, "`LogLevel` `DEBUG`", 360, 345},
	}
	costs := costRows(t)
	if logbytes.Defaults.Application != "INFO" || logbytes.Debug.Application != "DEBUG" {
		t.Fatalf("levels %v and %v", logbytes.Defaults, logbytes.Debug)
	}
	for _, tc := range tests {
		t.Run(tc.levels.Application, func(t *testing.T) {
			for _, limited := range []bool{false, true} {
				r := f.Measure(t, logbytes.Case{Levels: tc.levels, Limited: limited, Rate: costRate, Seconds: 3})
				t.Logf("%v: %.1f bytes per invocation: EMF %d in %d lines, logs %d in %d lines, Lambda's %d, over %d invocations; the last second:\n%s",
					r.Case, r.PerInvocation(), r.EMF, r.EMFLines, r.Logs, r.LogLines, r.Platform, r.Invocations, r.Last)
				want, most, row := r.Invocations, tc.allowed, "allowed | "+tc.row
				if limited {
					want, most, row = 0, tc.limited, "limited | "+tc.row
				}
				if r.Allowed != want || r.Written != r.Invocations {
					t.Fatalf("%v: %d of %d allowed, %d counted in the metrics written", r.Case, r.Allowed, r.Invocations, r.Written)
				}
				costs.hold(t, r, row, most)
			}
		})
	}
	// Redis down: every request fails closed, each with its warn decision line, at any
	// level, while the circuit breaker is open as before it opened.
	t.Run("unavailable", func(t *testing.T) {
		r := f.Measure(t, logbytes.Case{Levels: logbytes.Defaults, Unavailable: true, Rate: costRate, Seconds: 3})
		t.Logf("%v: %.1f bytes per invocation: EMF %d in %d lines, logs %d in %d lines, Lambda's %d, over %d invocations; the last second:\n%s",
			r.Case, r.PerInvocation(), r.EMF, r.EMFLines, r.Logs, r.LogLines, r.Platform, r.Invocations, r.Last)
		if r.Allowed != 0 || r.Written != r.Invocations || r.LogLines != r.Invocations {
			t.Fatalf("%v: %d of %d allowed, %d counted in the metrics written, %d log lines", r.Case, r.Allowed, r.Invocations, r.Written, r.LogLines)
		}
		costs.hold(t, r, "failing closed (Redis down) | any", unavailableBytes)
	})
	// Redis down with FailMode open: every request is allowed, degraded, each with its
	// warn decision line, and its metrics wait a second as an allowed request's do.
	t.Run("degraded", func(t *testing.T) {
		r := f.Measure(t, logbytes.Case{Levels: logbytes.Defaults, Unavailable: true, FailOpen: true, Rate: costRate, Seconds: 3})
		t.Logf("%v: %.1f bytes per invocation: EMF %d in %d lines, logs %d in %d lines, Lambda's %d, over %d invocations; the last second:\n%s",
			r.Case, r.PerInvocation(), r.EMF, r.EMFLines, r.Logs, r.LogLines, r.Platform, r.Invocations, r.Last)
		if r.Allowed != r.Invocations || r.Written != r.Invocations || r.LogLines != r.Invocations || r.EMFLines >= r.Invocations {
			t.Fatalf("%v: %d of %d allowed, %d counted in the metrics written in %d lines, %d log lines: want all allowed, a log line each, the metrics a line a second", r.Case, r.Allowed, r.Invocations, r.Written, r.EMFLines, r.LogLines)
		}
		costs.hold(t, r, "failing open (Redis down, `FailMode` `open`) | any", degradedBytes)
	})
	// A spray of made-up API keys under unknownKeys: refuse: every request a 401 after
	// its registry read (a miss: no key repeats), with no log line at the template's
	// level (its line is at debug) and, as every 401 does, its metrics at once.
	t.Run("refused", func(t *testing.T) {
		r := f.Measure(t, logbytes.Case{Levels: logbytes.Defaults, Refused: true, Rate: costRate, Seconds: 3})
		t.Logf("%v: %.1f bytes per invocation: EMF %d in %d lines, logs %d in %d lines, Lambda's %d, over %d invocations; the last second:\n%s",
			r.Case, r.PerInvocation(), r.EMF, r.EMFLines, r.Logs, r.LogLines, r.Platform, r.Invocations, r.Last)
		if r.Allowed != 0 || r.Written != r.Invocations || r.EMFLines != r.Invocations || r.LogLines != 0 {
			t.Fatalf("%v: %d of %d allowed, %d counted in the metrics written in %d lines, %d log lines: want none allowed, a metrics line each, no log line", r.Case, r.Allowed, r.Invocations, r.Written, r.EMFLines, r.LogLines)
		}
		costs.hold(t, r, "refused (401: a made-up key, `unknownKeys: refuse`) | defaults", refusedBytes)
	})
	// The spray throttling the table (an on-demand table may: docs/keys.md): every
	// request's read fails, and its decision line names the error; the registry's warn
	// line, which names it too, is written once a minute, not once a request; failing closed, a 503 with its metrics at once,
	// whatever unknownKeys says; failing open, limited as its address.
	for _, open := range []bool{false, true} {
		t.Run(fmt.Sprintf("throttled open=%v", open), func(t *testing.T) {
			r := f.Measure(t, logbytes.Case{Levels: logbytes.Defaults, Throttled: true, FailOpen: open, Rate: costRate, Seconds: 3})
			t.Logf("%v: %.1f bytes per invocation: EMF %d in %d lines, logs %d in %d lines, Lambda's %d, over %d invocations; the last second:\n%s",
				r.Case, r.PerInvocation(), r.EMF, r.EMFLines, r.Logs, r.LogLines, r.Platform, r.Invocations, r.Last)
			row, most := "a spray throttling the table (503) | defaults", throttledBytes
			if open {
				row, most = "a spray throttling the table, `FailMode` `open` (429) | defaults", throttledOpenBytes
			}
			if r.Allowed != 0 || r.Written != r.Invocations || r.LogLines < r.Invocations || r.LogLines > r.Invocations+1 {
				t.Fatalf("%v: %d of %d allowed, %d counted in the metrics written, %d log lines: want none allowed, the decision line each and the registry's once a minute", r.Case, r.Allowed, r.Invocations, r.Written, r.LogLines)
			}
			costs.hold(t, r, row, most)
		})
	}
}

// throttledBytes is the most bytes a request of a spray of made-up keys writes while the
// table throttles their reads, failing closed: its metrics at once, as for every 503,
// and its warn decision line, which names the key once (as its identity, not again in
// its error); the registry's warn line is once a minute (docs/deploy.md).
const throttledBytes float64 = 1380

// throttledOpenBytes is the same failing open: its share of the metrics and its info
// decision line, limited as its address, which names the key once (unknownKey, not
// again in registryError) (docs/deploy.md).
const throttledOpenBytes float64 = 750

// refusedBytes is the most bytes a request refused for a made-up key writes: its
// metrics, its registry lookup's too, at once as for every 401 (docs/deploy.md).
const refusedBytes = 480

// unavailableBytes is the most bytes a request failing closed writes, its metrics (at
// once, as for every 503) and its warn decision line (docs/deploy.md).
const unavailableBytes = 1200

// degradedBytes is the most bytes a request failing open writes: its warn decision line
// and its share of the metrics, written a line a second (docs/deploy.md).
const degradedBytes = 520

// costTable is docs/deploy.md's table of the bytes a request writes: each row's total,
// by its first two cells ("limited | defaults").
type costTable map[string]float64

// costRows reads the table of docs/deploy.md's Costs.
func costRows(t *testing.T) costTable {
	t.Helper()
	rows := costTable{}
	for line := range strings.Lines(readFile(t, "docs/deploy.md")) {
		cells := strings.Split(strings.Trim(strings.TrimSpace(line), "|"), " | ")
		if len(cells) != 6 || !strings.HasPrefix(line, "  | ") {
			continue
		}
		total := strings.NewReplacer("*", "", ",", "", "+", "").Replace(strings.TrimSpace(cells[5]))
		if n, err := strconv.ParseFloat(total, 64); err == nil {
			rows[strings.TrimSpace(cells[0])+" | "+strings.TrimSpace(cells[1])] = n
		}
	}
	if len(rows) < 7 {
		t.Fatalf("docs/deploy.md's table of the bytes per request has %d rows: is the pattern right?", len(rows))
	}
	return rows
}

// hold fails t unless r wrote at most most bytes per invocation, and the table's row
// gives r's figure, rounded (within 2 bytes or 1%: the latencies' digits vary), within
// that bound: the docs' costs are computed from it.
func (c costTable) hold(t *testing.T, r logbytes.Result, row string, most float64) {
	t.Helper()
	got := r.PerInvocation()
	if got > most {
		t.Errorf("%v: %.1f bytes per invocation, want at most %.0f (update the bound and docs/deploy.md)", r.Case, got, most)
	}
	doc, ok := c[row]
	switch {
	case !ok:
		t.Errorf("%v: docs/deploy.md's table of the bytes per request has no row %q", r.Case, row)
	case math.Abs(doc-got) > max(2, got/100) || doc > most:
		t.Errorf("%v: docs/deploy.md's row %q says %.0f bytes; measured %.1f, at most %.0f", r.Case, row, doc, got, most)
	}
}
