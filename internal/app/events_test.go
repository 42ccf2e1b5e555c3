package app_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/lambda"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/eventbridge"
	ebtypes "github.com/aws/aws-sdk-go-v2/service/eventbridge/types"

	"github.com/bucketgate/bucketgate/internal/app"
	"github.com/bucketgate/bucketgate/internal/eventbus"
	"github.com/bucketgate/bucketgate/internal/settings"
	"github.com/bucketgate/bucketgate/internal/telemetry"
	"github.com/bucketgate/bucketgate/internal/testkit/moto"
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
func eventsFunction(t *testing.T, f app.Function, vars map[string]string) (lambda.Handler, *syncBuffer, *syncBuffer) {
	t.Helper()
	all := map[string]string{settings.EnvConfigInline: eventsConfig, settings.EnvTimeoutMS: "2000", settings.EnvStackName: "events-test", settings.EnvMetricsFlushMS: "0"}
	for k, v := range vars {
		all[k] = v
	}
	metrics, logs := &syncBuffer{}, &syncBuffer{}
	h, _, err := app.Build(f, env(all), metrics, logs)
	if err != nil {
		t.Fatal(err)
	}
	return h, metrics, logs
}

// syncBuffer is a bytes.Buffer for concurrent writers.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// Two functions, the authorizer and the check function, decide one identity at once
// on one real Redis, with moto's EventBridge delivering the bus's events to a queue:
// each crossing of the identity's daily quota (80%, 100%, the first denial) is one
// event, sent by whichever invocation crossed, with the detail the design gives;
// another identity, which crosses nothing, sends none. moto is a Python server: on a
// loaded machine it may answer after EVENTS_TIMEOUT_MS (1 s at most), an event then
// counted as failed by timeout, which says nothing of the product; the scenario then
// runs again on a fresh Redis and a fresh bus, five times at most (several test runs at
// once on 2 cores have made moto that slow three times in a row). Any other failure
// fails at once.
func TestEventsOncePerCrossing(t *testing.T) {
	srv := moto.Start(t)
	srv.Setenv(t, "EventBridge", "SQS")
	for attempt := 1; ; attempt++ {
		bus := srv.Bus(t, fmt.Sprintf("bucketgate-events-%d", attempt), eventbus.Source)
		warmUp(t, bus)
		if !eventsOncePerCrossing(t, bus) {
			return
		}
		if attempt == 5 {
			t.Fatalf("events failed by timeout in %d attempts: moto answered after EVENTS_TIMEOUT_MS each time", attempt)
		}
		t.Logf("attempt %d: an event failed by timeout (moto answered after EVENTS_TIMEOUT_MS on a loaded machine): again on a fresh Redis and bus", attempt)
	}
}

// eventsOncePerCrossing runs TestEventsOncePerCrossing's scenario once on bus and a
// fresh Redis, and reports whether an event failed by timeout (then it checks nothing
// more).
func eventsOncePerCrossing(t *testing.T, bus *moto.Bus) (timedOut bool) {
	t.Helper()
	redis := redistest.Start(t)
	vars := map[string]string{settings.EnvRedisAddr: redis.Addr, settings.EnvEventBusName: bus.Name, settings.EnvEventsTimeoutMS: "1000"}
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
	for _, line := range strings.Split(authMetrics.String()+checkMetrics.String(), "\n") {
		switch {
		case !strings.Contains(line, telemetry.MetricEventsFailed):
		case strings.Contains(line, `"`+telemetry.DimReason+`":"`+telemetry.EventsTimeout+`"`):
			timedOut = true
		default:
			t.Fatalf("events failed: %s", line)
		}
	}
	if timedOut {
		return true
	}
	got := bus.Receive(t, 4, 10*time.Second) // three, and a wait for a fourth that must not come
	var details []string
	for _, e := range got {
		var d eventbus.Detail
		if err := json.Unmarshal(e.Detail, &d); err != nil {
			t.Fatalf("detail %s: %v", e.Detail, err)
		}
		details = append(details, fmt.Sprintf("%s %d %d", e.DetailType, d.Threshold, d.Usage))
		start := time.Now().UTC().Truncate(24 * time.Hour)
		if d.Identity != "ip:"+sampleIP || d.Plan != "metered" || d.Rule != "daily" || d.Limit != 10 || d.Stack != "events-test" ||
			!d.Window.Start.Equal(start) || !d.Window.End.Equal(start.Add(24*time.Hour)) || e.Source != eventbus.Source {
			t.Errorf("event %s %s %s", e.Source, e.DetailType, e.Detail)
		}
	}
	slices.Sort(details)
	want := []string{"Quota Threshold Reached 100 10", "Quota Threshold Reached 80 8", "Rate Limited 0 10"}
	if !slices.Equal(details, want) {
		t.Fatalf("events %q, want %q", details, want)
	}
	return false
}

// warmUp puts one event on bus and reads it from its queue: moto loads the code of
// PutEvents, of its rules and of their delivery to SQS on first use, which is slower
// than EVENTS_TIMEOUT_MS (1 s at most) on a busy machine.
func warmUp(t *testing.T, bus *moto.Bus) {
	t.Helper()
	client, err := eventbus.NewClient(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := client.PutEvents(t.Context(), &eventbridge.PutEventsInput{Entries: []ebtypes.PutEventsRequestEntry{{
		EventBusName: aws.String(bus.Name), Source: aws.String(eventbus.Source), DetailType: aws.String("warm-up"), Detail: aws.String("{}")}}}); err != nil {
		t.Fatal(err)
	}
	if got := bus.Receive(t, 1, 30*time.Second); len(got) != 1 {
		t.Fatalf("the warm-up event: %d delivered, want 1", len(got))
	}
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
