package template_test

// The bytes the cost of logs is computed from (docs/deploy.md, "Costs"): CloudWatch Logs
// bills every byte a function writes, its log lines (stderr) and its EMF lines (stdout)
// alike, and Lambda's own lines for each invocation.

import (
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
		allowed, limited float64 // the most bytes per invocation, Lambda's lines included
	}{
		{logbytes.Defaults, 20, 345},
		{logbytes.Debug, 360, 345},
	}
	if logbytes.Defaults.Application != "INFO" || logbytes.Debug.Application != "DEBUG" {
		t.Fatalf("levels %v and %v", logbytes.Defaults, logbytes.Debug)
	}
	for _, tc := range tests {
		t.Run(tc.levels.Application, func(t *testing.T) {
			for _, limited := range []bool{false, true} {
				r := f.Measure(t, logbytes.Case{Levels: tc.levels, Limited: limited, Rate: costRate, Seconds: 3})
				t.Logf("%v: %.1f bytes per invocation: EMF %d in %d lines, logs %d in %d lines, Lambda's %d, over %d invocations; the last second:\n%s",
					r.Case, r.PerInvocation(), r.EMF, r.EMFLines, r.Logs, r.LogLines, r.Platform, r.Invocations, r.Last)
				want, most := r.Invocations, tc.allowed
				if limited {
					want, most = 0, tc.limited
				}
				if r.Allowed != want || r.Written != r.Invocations {
					t.Fatalf("%v: %d of %d allowed, %d counted in the metrics written", r.Case, r.Allowed, r.Invocations, r.Written)
				}
				if r.PerInvocation() > most {
					t.Errorf("%v: %.1f bytes per invocation, want at most %.0f, the figure of docs/deploy.md (update it there and here)", r.Case, r.PerInvocation(), most)
				}
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
		if r.PerInvocation() > unavailableBytes {
			t.Errorf("%v: %.1f bytes per invocation, want at most %d, the figure of docs/deploy.md (update it there and here)", r.Case, r.PerInvocation(), unavailableBytes)
		}
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
		if r.PerInvocation() > degradedBytes {
			t.Errorf("%v: %.1f bytes per invocation, want at most %d, the figure of docs/deploy.md (update it there and here)", r.Case, r.PerInvocation(), degradedBytes)
		}
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
		if r.PerInvocation() > refusedBytes {
			t.Errorf("%v: %.1f bytes per invocation, want at most %d, the figure of docs/deploy.md (update it there and here)", r.Case, r.PerInvocation(), refusedBytes)
		}
	})
}

// refusedBytes is the most bytes a request refused for a made-up key writes: its
// metrics, its registry lookup's too, at once as for every 401 (docs/deploy.md).
const refusedBytes = 480

// unavailableBytes is the most bytes a request failing closed writes, its metrics (at
// once, as for every 503) and its warn decision line (docs/deploy.md).
const unavailableBytes = 1200

// degradedBytes is the most bytes a request failing open writes: its warn decision line
// and its share of the metrics, written a line a second (docs/deploy.md).
const degradedBytes = 520
