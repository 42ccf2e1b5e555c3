package app_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/lambda"

	"github.com/bucketgate/bucketgate/internal/app"
	"github.com/bucketgate/bucketgate/internal/eventbus"
	"github.com/bucketgate/bucketgate/internal/settings"
	"github.com/bucketgate/bucketgate/internal/telemetry"
	"github.com/bucketgate/bucketgate/internal/testkit"
	"github.com/bucketgate/bucketgate/internal/testkit/redistest"
	"github.com/bucketgate/bucketgate/internal/testkit/samples"
)

// eventsConfig's default plan: a burst that never runs dry here, and a daily quota of 10.
const eventsConfig = `defaultPlan: metered
anonymous: default
plans:
  metered:
    - {name: burst, capacity: 1000, refillPerSecond: 1}
    - {name: daily, limit: 10, period: day}
`

// sampleIP is the source IP of the sample REST authorizer event.
const sampleIP = "203.0.113.10"

// eventsFunction builds function f over vars with the events' configuration, its
// metrics (a line per invocation: METRICS_FLUSH_MS 0) and logs written to the buffers it
// returns (safe for concurrent invocations).
func eventsFunction(t *testing.T, f app.Function, vars map[string]string) (lambda.Handler, *testkit.SyncBuffer, *testkit.SyncBuffer) {
	t.Helper()
	all := map[string]string{settings.EnvConfigInline: eventsConfig, settings.EnvTimeoutMS: "2000", settings.EnvStackName: "events-test", settings.EnvMetricsFlushMS: "0"}
	for k, v := range vars {
		all[k] = v
	}
	metrics, logs := &testkit.SyncBuffer{}, &testkit.SyncBuffer{}
	h, _, err := app.Build(f, env(all), metrics, logs)
	if err != nil {
		t.Fatal(err)
	}
	return h, metrics, logs
}

// Two functions, the authorizer and the check function, decide one identity at once
// on one real Redis: each crossing of the identity's daily quota (80%, 100%, the first
// denial) is one event put on the bus, by whichever invocation crossed, with the detail
// the design gives; another identity, which crosses nothing, puts none. The bus is an
// endpoint of this process that records every entry it is given as it receives it
// (sentBus): what the functions sent, which is what this test is about, whatever a bus
// then does, and an answer within EVENTS_TIMEOUT_MS however loaded the machine (moto, a
// Python server, answered after it on a loaded machine, in five attempts in a row with
// several test runs at once; TestSendToEventBridge puts events on moto's EventBridge
// with a deadline it meets).
func TestEventsOncePerCrossing(t *testing.T) {
	bus := sentBus(t)
	redis := redistest.Start(t)
	vars := map[string]string{settings.EnvRedisAddr: redis.Addr, settings.EnvEventBusName: "bucketgate-events", settings.EnvEventsTimeoutMS: "1000"}
	authorizer, authMetrics, _ := eventsFunction(t, app.Authorizer, vars)
	check, checkMetrics, _ := eventsFunction(t, app.Check, vars)
	rest := samples.Read(t, "authorizer-rest.json")
	same := []byte(`{"identity": "ip:` + sampleIP + `", "plan": "metered"}`)
	var wg sync.WaitGroup
	for w := range 8 {
		h, payload := authorizer, rest
		if w%2 == 1 {
			h, payload = check, same
		}
		wg.Go(func() {
			for range 4 {
				if _, err := h.Invoke(context.Background(), payload); err != nil {
					t.Errorf("invoke: %v", err)
				}
			}
		})
	}
	wg.Wait()
	other := []byte(`{"identity": "ip:198.51.100.7", "plan": "metered"}`)
	for range 3 {
		if _, err := check.Invoke(context.Background(), other); err != nil {
			t.Fatal(err)
		}
	}
	if m := authMetrics.String() + checkMetrics.String(); strings.Contains(m, telemetry.MetricEventsFailed) {
		t.Fatalf("events failed: %s", m)
	}
	var details []string
	start := time.Now().UTC().Truncate(24 * time.Hour)
	for _, e := range bus.entries() {
		var d eventbus.Detail
		if err := json.Unmarshal([]byte(e.Detail), &d); err != nil {
			t.Fatalf("detail %s: %v", e.Detail, err)
		}
		details = append(details, fmt.Sprintf("%s %d %d", e.DetailType, d.Threshold, d.Usage))
		if d.Identity != "ip:"+sampleIP || d.Plan != "metered" || d.Rule != "daily" || d.Limit != 10 || d.Stack != "events-test" ||
			!d.Window.Start.Equal(start) || !d.Window.End.Equal(start.Add(24*time.Hour)) || e.Source != eventbus.Source || e.EventBusName != "bucketgate-events" {
			t.Errorf("event on %s: %s %s %s", e.EventBusName, e.Source, e.DetailType, e.Detail)
		}
	}
	slices.Sort(details)
	want := []string{"Quota Threshold Reached 100 10", "Quota Threshold Reached 80 8", "Rate Limited 0 10"}
	if !slices.Equal(details, want) {
		t.Fatalf("events %q, want %q", details, want)
	}
}

// The middleware's authorizer (NewAuthorizer), closed, logs the events' failures its
// once-a-minute line left unsaid, as a function does at SIGTERM.
func TestNewAuthorizerCloseSaysUnloggedEvents(t *testing.T) {
	localBus(t, func(w http.ResponseWriter, _ *http.Request) { fmt.Fprint(w, "<html>not EventBridge</html>") })
	vars := withMini(t, map[string]string{settings.EnvConfigInline: eventsConfig, settings.EnvEventBusName: "bucketgate", settings.EnvEventsTimeoutMS: "1000"})
	var logs testkit.SyncBuffer
	h, _, closeIt, err := app.NewAuthorizer("api", env(vars), io.Discard, &logs)
	if err != nil {
		t.Fatal(err)
	}
	rest := samples.Read(t, "authorizer-rest.json")
	for range 11 { // the daily quota's 80 and 100 percent, then its first denial: three Sends
		if _, err := h.Invoke(context.Background(), rest); err != nil && !strings.Contains(err.Error(), "Unauthorized") {
			t.Fatalf("invoke: %v", err)
		}
	}
	if n := strings.Count(logs.String(), eventbus.MsgFailed); n != 1 {
		t.Fatalf("%d lines of failed events before Close, want 1 (the others within the minute):\n%s", n, logs.String())
	}
	closeIt()
	if n := strings.Count(logs.String(), eventbus.MsgFailed); n != 2 || !strings.Contains(logs.String(), `"failed":0,`) {
		t.Errorf("%d lines of failed events after Close, want a second saying those unlogged:\n%s", n, logs.String())
	}
}

// An identity that stops at its first denial, as a client that waits out its
// Retry-After does, is sent its Rate Limited event all the same: the first denial after
// the admission that exhausted the quota reaches Redis, which reports it, though the
// deny cache (on by default) knows from that admission's wait that it is denied; the
// denials after it are the cache's, and cross nothing.
func TestEventsFirstDenialThroughTheDenyCache(t *testing.T) {
	rest := samples.Read(t, "authorizer-rest.json")
	for _, tc := range []struct {
		name    string
		f       app.Function
		payload []byte
	}{
		{"authorizer", app.Authorizer, rest},
		{"check function", app.Check, []byte(`{"identity": "ip:` + sampleIP + `", "plan": "metered"}`)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			bus := sentBus(t)
			redis := redistest.Start(t)
			h, _, _ := eventsFunction(t, tc.f, map[string]string{settings.EnvRedisAddr: redis.Addr, settings.EnvEventBusName: "bucketgate-events", settings.EnvEventsTimeoutMS: "1000"})
			for range 10 + 3 { // the daily quota of 10, then three denials
				if _, err := h.Invoke(context.Background(), tc.payload); err != nil {
					t.Fatalf("invoke: %v", err)
				}
			}
			var got []string
			for _, e := range bus.entries() {
				var d eventbus.Detail
				if err := json.Unmarshal([]byte(e.Detail), &d); err != nil {
					t.Fatalf("detail %s: %v", e.Detail, err)
				}
				got = append(got, fmt.Sprintf("%s %d %d", e.DetailType, d.Threshold, d.Usage))
			}
			slices.Sort(got)
			if want := []string{"Quota Threshold Reached 100 10", "Quota Threshold Reached 80 8", "Rate Limited 0 10"}; !slices.Equal(got, want) {
				t.Fatalf("events %q, want %q", got, want)
			}
		})
	}
}

// recordingBus is an EventBridge endpoint of this process that accepts every entry of
// every PutEvents call and keeps it.
type recordingBus struct {
	mu   sync.Mutex
	sent []sentEntry
}

// sentEntry is an entry of a PutEvents call, as the SDK writes it.
type sentEntry struct {
	EventBusName, Source, DetailType, Detail string
}

// entries returns the entries the bus was given.
func (b *recordingBus) entries() []sentEntry {
	b.mu.Lock()
	defer b.mu.Unlock()
	return slices.Clone(b.sent)
}

// sentBus points the SDK's EventBridge at a recordingBus, which it returns.
func sentBus(t *testing.T) *recordingBus {
	t.Helper()
	bus := &recordingBus{}
	localBus(t, func(w http.ResponseWriter, r *http.Request) {
		var in struct{ Entries []sentEntry }
		if err := json.NewDecoder(r.Body).Decode(&in); err != nil || r.Header.Get("X-Amz-Target") != "AWSEvents.PutEvents" {
			t.Errorf("a call %s that is no PutEvents: %v", r.Header.Get("X-Amz-Target"), err)
			http.Error(w, "not PutEvents", http.StatusBadRequest)
			return
		}
		results := make([]map[string]string, len(in.Entries))
		bus.mu.Lock()
		for i, e := range in.Entries {
			bus.sent = append(bus.sent, e)
			results[i] = map[string]string{"EventId": strconv.Itoa(len(bus.sent))}
		}
		bus.mu.Unlock()
		w.Header().Set("Content-Type", "application/x-amz-json-1.1")
		if err := json.NewEncoder(w).Encode(map[string]any{"FailedEntryCount": 0, "Entries": results}); err != nil {
			t.Errorf("PutEvents answer: %v", err)
		}
	})
	return bus
}

// localBus points the SDK's EventBridge at an endpoint of this process that answers
// with handle.
func localBus(t *testing.T, handle http.HandlerFunc) {
	t.Helper()
	endpoint := httptest.NewServer(handle)
	t.Cleanup(endpoint.Close)
	for k, v := range map[string]string{"AWS_ENDPOINT_URL_EVENTBRIDGE": endpoint.URL, "AWS_REGION": "us-east-1",
		"AWS_ACCESS_KEY_ID": "id", "AWS_SECRET_ACCESS_KEY": "secret", "AWS_EC2_METADATA_DISABLED": "true"} {
		t.Setenv(k, v)
	}
}

// A bus that never answers: the check that crossed is answered as without events, once
// EVENTS_TIMEOUT_MS has passed (the bus holds the request until the test ends, so an
// answer at all proves the deadline), and the event is counted as timed out.
func TestEventsSlowBus(t *testing.T) {
	held := make(chan struct{})
	localBus(t, func(w http.ResponseWriter, r *http.Request) { <-held })
	defer close(held)
	check, metrics, _ := eventsFunction(t, app.Check, withMini(t, map[string]string{settings.EnvEventBusName: "bucketgate", settings.EnvEventsTimeoutMS: "50", settings.EnvMetricsFlushMS: "0"}))
	payload := []byte(`{"key": "tenant-1", "plan": "metered", "cost": 8}`) // 80% of the daily quota at once
	start := time.Now()
	out, err := check.Invoke(context.Background(), payload)
	if err != nil {
		t.Fatal(err)
	}
	if took := time.Since(start); took > 10*time.Second {
		t.Fatalf("answered after %v: the bus's deadline did not hold", took)
	}
	if !strings.HasPrefix(string(out), `{"allowed":true,"reason":"ok","limit":10,"remaining":2,`) {
		t.Fatalf("answer %s: the decision changed", out)
	}
	if m := metrics.String(); !strings.Contains(m, telemetry.MetricEventsFailed) || !strings.Contains(m, `"Reason":"`+telemetry.EventsTimeout+`"`) {
		t.Fatalf("metrics %s: want EventsFailed, reason timeout", m)
	}
}

// An endpoint that answers garbage: every event is counted as failed (error), the
// failures are logged once per period, and the decisions are those made without a bus.
func TestEventsGarbageBus(t *testing.T) {
	localBus(t, func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, "<<not json>>") })
	check, metrics, logs := eventsFunction(t, app.Check, withMini(t, map[string]string{settings.EnvEventBusName: "bucketgate", settings.EnvMetricsFlushMS: "0"}))
	answers := []string{`{"allowed":true,"reason":"ok","limit":10,"remaining":2,`, `{"allowed":true,"reason":"ok","limit":10,"remaining":0,`, `{"allowed":false,"reason":"limited","limit":10,"remaining":0,`}
	for i, payload := range []string{`{"key": "t", "plan": "metered", "cost": 8}`, `{"key": "t", "plan": "metered", "cost": 2}`, `{"key": "t", "plan": "metered"}`} {
		out, err := check.Invoke(context.Background(), []byte(payload))
		if err != nil || !strings.HasPrefix(string(out), answers[i]) {
			t.Fatalf("check %d: %s %v, want %s...", i+1, out, err, answers[i])
		}
	}
	if n := strings.Count(metrics.String(), `"`+telemetry.MetricEventsFailed+`":1`); n != 3 || !strings.Contains(metrics.String(), `"Reason":"`+telemetry.EventsError+`"`) {
		t.Fatalf("metrics %s: want EventsFailed, reason error, on each of three invocations", metrics)
	}
	if n := strings.Count(logs.String(), eventbus.MsgFailed); n != 1 {
		t.Fatalf("%d lines %q, want 1 (once per period): %s", n, eventbus.MsgFailed, logs)
	}
}
