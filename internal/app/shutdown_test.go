package app_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/lambda"

	"github.com/bucketgate/bucketgate"
	"github.com/bucketgate/bucketgate/internal/app"
	"github.com/bucketgate/bucketgate/internal/authorizer"
	"github.com/bucketgate/bucketgate/internal/eventbus"
	"github.com/bucketgate/bucketgate/internal/guard"
	"github.com/bucketgate/bucketgate/internal/registry"
	"github.com/bucketgate/bucketgate/internal/settings"
	"github.com/bucketgate/bucketgate/internal/telemetry"
	"github.com/bucketgate/bucketgate/internal/testkit"
	"github.com/bucketgate/bucketgate/internal/testkit/registrytest"
	"github.com/bucketgate/bucketgate/internal/testkit/samples"
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

// emitter is a metrics emitter of function fn writing to out, which writes only when
// flushed or a minute has passed, and emit, which emits one allowed decision to it.
func emitter(t *testing.T, fn string) (out *testkit.SyncBuffer, e *telemetry.Emitter, emit func()) {
	out = new(testkit.SyncBuffer)
	e = telemetry.NewEmitter(out, "ns", "orders-prod", fn, telemetry.FlushEvery(time.Minute))
	emit = func() {
		var inv telemetry.Invocation
		inv.Observe(guard.Result{Decision: bucketgate.Decision{Allowed: true, Reason: bucketgate.ReasonOK}})
		if err := e.Emit(time.Now(), &inv); err != nil {
			t.Error(err)
		}
	}
	return out, e, emit
}

// At SIGTERM a function writes the metrics that wait, then exits with status 0; an
// invocation that runs meanwhile loses nothing of what it emitted before (run with
// -race: the emitter is shared).
func TestAtShutdown(t *testing.T) {
	out, e, emit := emitter(t, "authorizer")
	for range 3 { // the first is written at once, the others wait
		emit()
	}
	if got := decisionsIn(t, out.String()); got != 1 {
		t.Fatalf("%v decisions written before the shutdown, want 1: the test needs some to wait", got)
	}
	exits := make(chan int, 1)
	shutdown := app.AtShutdown(new(app.Invocations), time.Minute, e, func(context.Context) {}, telemetry.NewLogger(io.Discard, slog.LevelInfo), func(code int) { exits <- code })

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

// notifyingWriter is a testkit.SyncBuffer that says on said that it was written to.
type notifyingWriter struct {
	testkit.SyncBuffer
	said chan struct{}
}

func (w *notifyingWriter) Write(p []byte) (int, error) {
	n, err := w.SyncBuffer.Write(p)
	select {
	case w.said <- struct{}{}:
	default:
	}
	return n, err
}

// At SIGTERM during an invocation (one that timed out: Lambda resets the instance as it
// ends it, the runtime first), a function waits for it, up to a bound, and then writes
// its metrics with those that wait before it exits; one that outlives the wait is said.
func TestAtShutdownWaitsForInvocation(t *testing.T) {
	tests := []struct {
		name    string
		wait    time.Duration
		ends    bool    // the invocation ends once the shutdown says it waits
		written float64 // decisions written when the function exits
		logged  string  // the line the shutdown logs
	}{
		{"ends while waited for", time.Minute, true, 3, app.MsgShutdownWaits},
		{"outlives the wait", time.Millisecond, false, 2, app.MsgShutdownLeft},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, e, emit := emitter(t, "check")
			emit() // written at once; the next ones wait
			emit()
			running := new(app.Invocations)
			entered, release, returned := make(chan struct{}), make(chan struct{}), make(chan struct{})
			h := app.Counted(invokeFunc(func(context.Context, []byte) ([]byte, error) {
				close(entered)
				<-release
				emit() // as the handlers emit their invocation's metrics, last
				return []byte("{}"), nil
			}), running, telemetry.NewLogger(io.Discard, slog.LevelInfo))
			go func() {
				defer close(returned)
				if _, err := h.Invoke(context.Background(), []byte("{}")); err != nil {
					t.Error(err)
				}
			}()
			<-entered
			logs := &notifyingWriter{said: make(chan struct{}, 1)}
			exits := make(chan float64, 1)
			shutdown := app.AtShutdown(running, tt.wait, e, func(context.Context) {}, telemetry.NewLogger(logs, slog.LevelInfo), func(code int) {
				if code != 0 {
					t.Errorf("exit status %d, want 0", code)
				}
				exits <- decisionsIn(t, out.String())
			})
			go shutdown()
			if tt.ends {
				select {
				case <-logs.said:
				case written := <-exits:
					close(release)
					<-returned
					t.Fatalf("exited while the invocation ran, %v decisions written:\n%s", written, out.String())
				}
				close(release)
				<-returned // the runtime's answer, which a reset instance refuses (the process then ends), after the write
				select {
				case written := <-exits:
					exits <- written // checked below
				default:
					t.Fatal("the invocation returned to the runtime before the shutdown wrote the metrics")
				}
			}
			written := <-exits
			if !tt.ends {
				close(release)
			}
			<-returned
			if written != tt.written {
				t.Errorf("%v decisions written at the exit, want %v:\n%s", written, tt.written, out.String())
			}
			if !strings.Contains(logs.String(), tt.logged) || !strings.Contains(logs.String(), `"`+app.AttrInvocations+`":1`) {
				t.Errorf("logs want %q with 1 invocation:\n%s", tt.logged, logs.String())
			}
		})
	}
}

// At SIGTERM a function logs the events' failures that its once-a-minute line left
// unsaid: no later Send would say them.
func TestAtShutdownSaysUnloggedEvents(t *testing.T) {
	localBus(t, func(w http.ResponseWriter, _ *http.Request) { fmt.Fprint(w, "<html>not EventBridge</html>") })
	s, err := settings.Load(env(map[string]string{settings.EnvEventBusName: "bucketgate", settings.EnvEventsTimeoutMS: "1000"}))
	if err != nil {
		t.Fatal(err)
	}
	var logs testkit.SyncBuffer
	log := telemetry.NewLogger(&logs, slog.LevelInfo)
	events, err := app.NewEvents(s, log)
	if err != nil {
		t.Fatal(err)
	}
	var inv telemetry.Invocation
	for range 3 { // the first logged, the others counted for the next line
		events.Send(t.Context(), &inv, []eventbus.Event{{Type: eventbus.TypeRateLimited, Time: time.Now()}})
	}
	if n := strings.Count(logs.String(), eventbus.MsgFailed); n != 1 {
		t.Fatalf("%d lines before the shutdown, want 1:\n%s", n, logs.String())
	}
	exited := false
	app.AtShutdown(new(app.Invocations), time.Minute, telemetry.NewEmitter(io.Discard, "ns", "orders-prod", "check"), events.Flush, log, func(int) { exited = true })()
	if !exited || !strings.Contains(logs.String(), `"failedUnlogged":2`) {
		t.Errorf("exited %v; want the 2 failures unlogged said at the shutdown:\n%s", exited, logs.String())
	}
}

// invokeFunc is a Lambda handler that is a function.
type invokeFunc func(ctx context.Context, payload []byte) ([]byte, error)

func (f invokeFunc) Invoke(ctx context.Context, payload []byte) ([]byte, error) {
	return f(ctx, payload)
}

// An invocation that panics writes the metrics that wait, its own with them, before its
// panic goes on to the runtime, which ends the process: they would be lost. One that
// returns leaves them to METRICS_FLUSH_MS.
func TestFlushOnPanic(t *testing.T) {
	tests := []struct {
		name    string
		panics  bool
		written float64 // decisions written when the invocation ends
	}{
		{"panics", true, 3},
		{"returns", false, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, e, emit := emitter(t, "check")
			emit() // written at once; the next ones wait
			h := app.FlushOnPanic(invokeFunc(func(context.Context, []byte) ([]byte, error) {
				defer emit() // as the handlers emit their invocation's metrics
				if tt.panics {
					panic("handler bug")
				}
				return []byte("{}"), nil
			}), func() {
				if err := e.Flush(); err != nil {
					t.Error(err)
				}
			})
			emit()
			var recovered any
			func() {
				defer func() { recovered = recover() }()
				if _, err := h.Invoke(context.Background(), []byte("{}")); err != nil {
					t.Error(err)
				}
			}()
			if want := map[bool]any{true: "handler bug", false: nil}[tt.panics]; recovered != want {
				t.Errorf("recovered %v, want %v: the panic must go on unchanged", recovered, want)
			}
			if got := decisionsIn(t, out.String()); got != tt.written {
				t.Errorf("%v decisions written, want %v:\n%s", got, tt.written, out.String())
			}
		})
	}
}

// A function that ends says the failed registry reads that its once-a-minute line left
// counted (failedUnlogged): at SIGTERM, as Main has it, and at the middleware's Close.
// The lines' failed and failedUnlogged then add up to every read that failed: a flood of
// made-up keys that throttled the table, each read refused (a 503 each).
func TestShutdownSaysUnloggedRegistryReads(t *testing.T) {
	endpoint, _ := registrytest.FailingTable(t, registrytest.Throttled)
	for k, v := range map[string]string{"AWS_ENDPOINT_URL_DYNAMODB": endpoint, "AWS_REGION": "us-east-1",
		"AWS_ACCESS_KEY_ID": "id", "AWS_SECRET_ACCESS_KEY": "secret", "AWS_EC2_METADATA_DISABLED": "true"} {
		t.Setenv(k, v)
	}
	rest := samples.Read(t, "authorizer-rest.json")
	tests := []struct {
		name  string
		build func(t *testing.T, vars map[string]string, logs io.Writer) (h lambda.Handler, end func())
	}{
		{"a function at SIGTERM", func(t *testing.T, vars map[string]string, logs io.Writer) (lambda.Handler, func()) {
			exited := false
			h, shutdown, err := app.BuildShutdown(app.Authorizer, env(vars), io.Discard, logs, func(int) { exited = true })
			if err != nil {
				t.Fatal(err)
			}
			return h, func() {
				if shutdown(); !exited {
					t.Error("the shutdown did not exit")
				}
			}
		}},
		{"the middleware's Close", func(t *testing.T, vars map[string]string, logs io.Writer) (lambda.Handler, func()) {
			h, _, closeIt, err := app.NewAuthorizer("api", env(vars), io.Discard, logs)
			if err != nil {
				t.Fatal(err)
			}
			return h, closeIt
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var logs testkit.SyncBuffer
			h, end := tc.build(t, withMini(t, map[string]string{settings.EnvRegistryTable: "bucketgate-keys"}), &logs)
			for i := range 3 { // the first logged, the others counted for the next line
				if _, err := h.Invoke(context.Background(), samples.WithAPIKey(t, rest, fmt.Sprintf("made-up-%d", i))); !errors.As(err, new(*authorizer.UnavailableError)) {
					t.Fatalf("invoke: %v, want a 503: the table throttles", err)
				}
			}
			if n := strings.Count(logs.String(), registry.MsgReadFailed); n != 1 {
				t.Fatalf("%d lines %q before the end, want 1:\n%s", n, registry.MsgReadFailed, logs.String())
			}
			end()
			said := 0
			for line := range strings.Lines(logs.String()) {
				var m map[string]any
				if err := json.Unmarshal([]byte(line), &m); err != nil {
					t.Fatalf("%q: %v", line, err)
				}
				if m["msg"] == registry.MsgReadFailed {
					failed, _ := m[registry.AttrFailed].(float64)
					unlogged, _ := m[registry.AttrUnlogged].(float64)
					said += int(failed + unlogged)
				}
			}
			if said != 3 {
				t.Errorf("the lines say %d failed reads, want 3:\n%s", said, logs.String())
			}
		})
	}
}

// TestAtShutdownCountsEachDecisionOnce: at SIGTERM every decision the function made is
// written before it exits, and once: that of an invocation that returned just before
// (waiting in METRICS_FLUSH_MS's sums), as that of one still running
// (TestAtShutdownWaitsForInvocation). An invocation the runtime hands over once SIGTERM
// has come (Lambda sends none; a Runtime API might), while the shutdown waits for
// another or while it writes, decides nothing and says so (MsgShutdownRefused): its
// answer would come after the exit, that is never, and a decision made after the write
// spent tokens that no metric counted.
func TestAtShutdownCountsEachDecisionOnce(t *testing.T) {
	tests := []struct {
		name    string
		when    string  // the second invocation: "before" SIGTERM, while the shutdown is "waiting" for the first, or "writing"
		written float64 // decisions written at the exit
	}{
		{"returned just before SIGTERM", "before", 3},
		{"starts while the shutdown waits for another", "waiting", 3},
		{"starts while the shutdown writes", "writing", 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, e, emit := emitter(t, "check")
			emit() // written at once; the next ones wait
			emit()
			running := new(app.Invocations)
			logs := &notifyingWriter{said: make(chan struct{}, 1)}
			log := telemetry.NewLogger(logs, slog.LevelInfo)
			// invoke starts an invocation that emits its decision once release is closed,
			// and returns channels closed when its handler has begun, when it has decided
			// and when it has returned (its error then in *err).
			invoke := func(release <-chan struct{}, err *error) (entered, decided, returned chan struct{}) {
				entered, decided, returned = make(chan struct{}), make(chan struct{}), make(chan struct{})
				h := app.Counted(invokeFunc(func(context.Context, []byte) ([]byte, error) {
					close(entered)
					<-release
					emit()
					close(decided)
					return []byte("{}"), nil
				}), running, log)
				go func() {
					defer close(returned)
					_, *err = h.Invoke(context.Background(), []byte("{}"))
				}()
				return entered, decided, returned
			}
			// refusedOrDecided waits until the second invocation is refused (logged) or
			// has decided, and reports whether it decided.
			refusedOrDecided := func(decided <-chan struct{}) bool {
				for !strings.Contains(logs.String(), app.MsgShutdownRefused) {
					select {
					case <-decided:
						return true
					case <-logs.said:
					}
				}
				return false
			}
			var (
				firstErr, secondErr         error
				firstReturned, secondDone   = make(chan struct{}), make(chan struct{})
				releaseFirst, releaseAtOnce = make(chan struct{}), make(chan struct{})
				secondDecided               = make(chan struct{})
				decidedLate                 bool
			)
			close(releaseAtOnce)
			close(firstReturned)
			switch tt.when {
			case "before":
				_, secondDecided, secondDone = invoke(releaseAtOnce, &secondErr)
				<-secondDone
			case "waiting":
				var entered chan struct{}
				entered, _, firstReturned = invoke(releaseFirst, &firstErr)
				<-entered // running at SIGTERM
			}
			exits := make(chan float64, 1)
			shutdown := app.AtShutdown(running, time.Minute, e, func(context.Context) {}, log, func(code int) {
				if code != 0 {
					t.Errorf("exit status %d, want 0", code)
				}
				if tt.when == "writing" {
					_, secondDecided, secondDone = invoke(releaseAtOnce, &secondErr)
					decidedLate = refusedOrDecided(secondDecided)
				}
				exits <- decisionsIn(t, out.String())
			})
			shutdownDone := make(chan struct{})
			go func() {
				defer close(shutdownDone)
				shutdown()
			}()
			if tt.when == "waiting" {
				for !strings.Contains(logs.String(), app.MsgShutdownWaits) {
					<-logs.said
				}
				_, secondDecided, secondDone = invoke(releaseAtOnce, &secondErr)
				decidedLate = refusedOrDecided(secondDecided)
				close(releaseFirst)
			}
			<-shutdownDone
			<-firstReturned
			<-secondDone
			written := <-exits
			if decidedLate {
				t.Errorf("the invocation that started after SIGTERM decided (error %v); want it refused, deciding nothing", secondErr)
			}
			if tt.when != "before" && (secondErr == nil || !strings.Contains(logs.String(), app.MsgShutdownRefused)) {
				t.Errorf("the invocation that started after SIGTERM: error %v; want one, and %q logged:\n%s", secondErr, app.MsgShutdownRefused, logs.String())
			}
			if firstErr != nil {
				t.Errorf("the invocation running at SIGTERM: %v", firstErr)
			}
			if written != tt.written {
				t.Errorf("%v decisions written at the exit, want %v:\n%s", written, tt.written, out.String())
			}
			if err := e.Flush(); err != nil {
				t.Fatal(err)
			}
			if all := decisionsIn(t, out.String()); all != written {
				t.Errorf("%v decisions written in all, %v at the exit: a decision was left unwritten at the exit", all, written)
			}
		})
	}
}
