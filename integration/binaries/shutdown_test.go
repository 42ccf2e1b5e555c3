package binaries_test

import (
	"encoding/json"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/bucketgate/bucketgate/internal/telemetry"
	"github.com/bucketgate/bucketgate/internal/testkit/redistest"
	"github.com/bucketgate/bucketgate/internal/testkit/samples"
)

// When Lambda ends an instance, each binary writes the metrics that wait before it
// exits: with METRICS_FLUSH_MS at a minute, the first invocation's metrics are written
// at once and the others' wait; the runtime registered its extension (so Lambda sends
// SIGTERM, not SIGKILL), and at SIGTERM the binary writes them and exits by itself, its
// Decisions counting every invocation.
func TestShutdownWritesWaitingMetrics(t *testing.T) {
	tests := []struct {
		logicalID, function, event string
	}{
		{"AuthorizerFunction", "authorizer", "authorizer-rest.json"},
		{"CheckFunction", "check", "check-single.json"},
	}
	redis := redistest.Start(t)
	const invocations = 5
	for _, tc := range tests {
		t.Run(tc.function, func(t *testing.T) {
			f := startFunction(t, bootstrap(t, tc.logicalID), map[string]string{
				"REDIS_ADDR": redis.Addr, "REDIS_TIMEOUT_MS": decisionTimeout, "METRICS_FLUSH_MS": "60000",
			})
			event := samples.Read(t, tc.event)
			for i := range invocations {
				if _, err := f.invoke(t, event); err != nil {
					t.Fatalf("invocation %d: %v", i+1, err)
				}
			}
			if got := f.api.Extensions(); !slices.Equal(got, []string{"GoLangEnableSIGTERM"}) {
				t.Errorf("extensions registered %q, want the runtime's GoLangEnableSIGTERM (lambda.WithEnableSIGTERM)", got)
			}
			sig, err := f.api.Shutdown(f.cmd.Process)
			if err != nil {
				t.Fatal(err)
			}
			select {
			case <-f.exited:
			case <-time.After(exitTimeout):
				f.stop()
				t.Fatalf("still running %v after %v\nstderr: %s", sig, exitTimeout, f.stderr)
			}
			if sig != syscall.SIGTERM || f.waitErr != nil {
				t.Errorf("sent %v, process ended with %v; want SIGTERM and exit status 0", sig, f.waitErr)
			}
			if strings.Contains(f.stderr.String(), "Failed to register internal extension") {
				t.Errorf("the runtime could not register its extension:\n%s", f.stderr)
			}
			decisions := 0.0
			for line := range strings.Lines(f.stdout.String()) {
				var m map[string]any
				if err := json.Unmarshal([]byte(line), &m); err != nil {
					t.Fatalf("stdout line %s: %v", line, err)
				}
				if m[telemetry.DimFunction] == tc.function {
					n, _ := m[telemetry.MetricDecisions].(float64)
					decisions += n
				}
			}
			if decisions != invocations {
				t.Errorf("Decisions on stdout sum to %v, want %d (one per invocation):\n%s", decisions, invocations, f.stdout)
			}
		})
	}
}
