package app_test

import (
	"encoding/json"
	"io"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bucketgate/bucketgate"
	"github.com/bucketgate/bucketgate/internal/app"
	"github.com/bucketgate/bucketgate/internal/guard"
	"github.com/bucketgate/bucketgate/internal/telemetry"
)

// decisionsIn sums the Decisions of the EMF lines in out.
func decisionsIn(t *testing.T, out string) float64 {
	t.Helper()
	sum := 0.0
	for line := range strings.Lines(out) {
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("line %s: %v", line, err)
		}
		n, _ := m[telemetry.MetricDecisions].(float64)
		sum += n
	}
	return sum
}

// At SIGTERM a function writes the metrics that wait, then exits with status 0; an
// invocation that runs meanwhile loses nothing of what it emitted before (run with
// -race: the emitter is shared).
func TestAtShutdown(t *testing.T) {
	var out syncBuffer
	e := telemetry.NewEmitter(&out, "ns", "orders-prod", "authorizer", telemetry.FlushEvery(time.Minute))
	emit := func() {
		var inv telemetry.Invocation
		inv.Observe(guard.Result{Decision: bucketgate.Decision{Allowed: true, Reason: bucketgate.ReasonOK}})
		if err := e.Emit(time.Now(), &inv); err != nil {
			t.Error(err)
		}
	}
	for range 3 { // the first is written at once, the others wait
		emit()
	}
	if got := decisionsIn(t, out.String()); got != 1 {
		t.Fatalf("%v decisions written before the shutdown, want 1: the test needs some to wait", got)
	}
	exits := make(chan int, 1)
	shutdown := app.AtShutdown(e, telemetry.NewLogger(io.Discard, slog.LevelInfo), func(code int) { exits <- code })

	const during = 50
	var wg sync.WaitGroup
	wg.Go(func() {
		for range during {
			emit()
		}
	})
	shutdown()
	if code := <-exits; code != 0 {
		t.Errorf("exit status %d, want 0", code)
	}
	wg.Wait()
	if got := decisionsIn(t, out.String()); got < 3 {
		t.Fatalf("%v decisions written at the shutdown, want the 3 emitted before it at least:\n%s", got, out.String())
	}
	if err := e.Flush(); err != nil {
		t.Fatal(err)
	}
	if got := decisionsIn(t, out.String()); got != 3+during {
		t.Errorf("%v decisions in all, want %d: one was lost or written twice", got, 3+during)
	}
}
