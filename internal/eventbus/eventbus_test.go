package eventbus_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/eventbridge"
	"github.com/aws/aws-sdk-go-v2/service/eventbridge/types"

	"github.com/bucketgate/bucketgate"
	"github.com/bucketgate/bucketgate/internal/eventbus"
	"github.com/bucketgate/bucketgate/internal/telemetry"
	"github.com/bucketgate/bucketgate/internal/testkit/moto"
)

// month is a quota's window.
var month = eventbus.Window{Start: time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC), End: time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)}

// thresholdEvent is a quota's 80% of identity.
func thresholdEvent(identity string) eventbus.Event {
	return eventbus.Event{Type: eventbus.TypeQuotaThreshold, Time: time.Date(2026, 11, 25, 19, 22, 10, 0, time.UTC), Detail: eventbus.Detail{
		Identity: identity, Account: "acme", Owner: "billing@acme.example", Plan: "pro", Rule: "monthly", Kind: eventbus.KindQuota, Threshold: 80,
		Usage: 80_000, Limit: 100_000, Window: month, Stack: "orders-prod"}}
}

// metrics returns inv as its EMF lines.
func metrics(t *testing.T, inv *telemetry.Invocation) string {
	t.Helper()
	var out bytes.Buffer
	if err := telemetry.NewEmitter(&out, "bucketgate", "orders-prod", "authorizer").Emit(time.Unix(1_800_000_000, 0), inv); err != nil {
		t.Fatal(err)
	}
	return out.String()
}

// The events reach the bus as EventBridge delivers them to a rule's target (moto's
// EventBridge, a rule on the bus delivering to an SQS queue): source bucketgate, the
// detail type, the time of the decision, the detail as sent; more than ten in several
// calls; nothing counted as failed.
func TestSendToEventBridge(t *testing.T) {
	srv := moto.Start(t)
	srv.Setenv(t, "EventBridge", "SQS")
	bus := srv.Bus(t, "bucketgate-test", eventbus.Source)
	client, err := eventbus.NewClient(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	var logs bytes.Buffer
	// A deadline that moto on a busy machine meets: its first PutEvents loads its code.
	s := eventbus.NewSender(client, eventbus.Options{Bus: bus.Name, Timeout: 30 * time.Second, Log: slog.New(slog.NewJSONHandler(&logs, nil))})
	var events []eventbus.Event
	for i := range 12 {
		events = append(events, thresholdEvent(fmt.Sprintf("key:%032x", i)))
	}
	events[11].Type = eventbus.TypeRateLimited
	var inv telemetry.Invocation
	s.Send(t.Context(), &inv, events)
	if m := metrics(t, &inv); m != "" || logs.Len() != 0 {
		t.Fatalf("failures: %s %s", m, &logs)
	}
	got := bus.Receive(t, 12, 20*time.Second)
	if len(got) != 12 {
		t.Fatalf("%d events delivered, want 12", len(got))
	}
	byIdentity := map[string]moto.Event{}
	for _, e := range got {
		var d eventbus.Detail
		if err := json.Unmarshal(e.Detail, &d); err != nil {
			t.Fatalf("detail %s: %v", e.Detail, err)
		}
		byIdentity[d.Identity] = e
		if e.Source != eventbus.Source || e.Region != moto.Region {
			t.Errorf("event %s %s %s: want source %s in region %s", e.Source, e.Region, e.Detail, eventbus.Source, moto.Region)
		}
		if at, err := time.Parse(time.RFC3339, e.Time); err != nil || !at.Equal(events[0].Time) {
			t.Errorf("event time %s, want the decision's %v", e.Time, events[0].Time)
		}
	}
	first := byIdentity[fmt.Sprintf("key:%032x", 0)]
	want := `{"identity":"key:00000000000000000000000000000000","account":"acme","owner":"billing@acme.example","plan":"pro","rule":"monthly","kind":"quota",` +
		`"threshold":80,"usage":80000,"limit":100000,"window":{"start":"2026-11-01T00:00:00Z","end":"2026-12-01T00:00:00Z"},"stack":"orders-prod"}`
	if first.DetailType != eventbus.TypeQuotaThreshold || !jsonEqual(t, first.Detail, want) {
		t.Errorf("event %s %s, want %s %s", first.DetailType, first.Detail, eventbus.TypeQuotaThreshold, want)
	}
	if last := byIdentity[fmt.Sprintf("key:%032x", 11)]; last.DetailType != eventbus.TypeRateLimited {
		t.Errorf("the 12th event's detail type %q, want %q", last.DetailType, eventbus.TypeRateLimited)
	}
}

// jsonEqual reports whether JSON a and b hold the same value.
func jsonEqual(t *testing.T, a json.RawMessage, b string) bool {
	t.Helper()
	var x, y any
	if err := json.Unmarshal(a, &x); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal([]byte(b), &y); err != nil {
		t.Fatal(err)
	}
	xs, _ := json.Marshal(x)
	ys, _ := json.Marshal(y)
	return bytes.Equal(xs, ys)
}

// local returns a sender to an endpoint of this process that answers every request
// with handle, logging to logs with its period counted on the clock *now.
func local(t *testing.T, handle http.HandlerFunc, timeout time.Duration, logs *bytes.Buffer, now *time.Time) *eventbus.Sender {
	t.Helper()
	return eventbus.NewSender(localClient(t, handle), eventbus.Options{Bus: "bucketgate", Timeout: timeout, Log: slog.New(slog.NewJSONHandler(logs, nil)),
		LogEvery: time.Minute, Now: func() time.Time { return *now }})
}

// localClient returns an EventBridge client of an endpoint of this process that answers
// every request with handle.
func localClient(t *testing.T, handle http.HandlerFunc) *eventbridge.Client {
	endpoint := httptest.NewServer(handle)
	t.Cleanup(endpoint.Close)
	return eventbridge.NewFromConfig(aws.Config{Region: "us-east-1", BaseEndpoint: aws.String(endpoint.URL),
		Credentials: credentials.NewStaticCredentialsProvider("id", "secret", "")})
}

// An endpoint that does not answer in time: Send returns at its deadline, whatever the
// endpoint does, and counts the events as timeout.
func TestSendToASlowBus(t *testing.T) {
	release := make(chan struct{})
	held := make(chan struct{}, 10)
	slow := func(w http.ResponseWriter, r *http.Request) {
		held <- struct{}{}
		select { // answers only when the test is over, or when the client gives up
		case <-release:
		case <-r.Context().Done():
		}
	}
	var logs bytes.Buffer
	now := time.Unix(1_800_000_000, 0)
	timeout := 100 * time.Millisecond
	s := local(t, slow, timeout, &logs, &now)
	t.Cleanup(func() { close(release) }) // before the endpoint closes, which waits for its handlers
	var inv telemetry.Invocation
	began := time.Now()
	s.Send(t.Context(), &inv, []eventbus.Event{thresholdEvent("key:0f"), thresholdEvent("key:1f")})
	took := time.Since(began)
	select {
	case <-held:
	default:
		t.Fatal("the endpoint never got the request")
	}
	if m := metrics(t, &inv); !strings.Contains(m, `"EventsFailed":2,"Function":"authorizer","Reason":"timeout"`) {
		t.Errorf("metrics %s: want 2 EventsFailed by timeout", m)
	}
	if !strings.Contains(logs.String(), `"reason":"timeout"`) || !strings.Contains(logs.String(), "not sent within 100ms") {
		t.Errorf("log %s: want the timeout", &logs)
	}
	t.Logf("Send returned after %v against an endpoint that had not answered (timeout %v)", took, timeout)
}

// Near the end of an invocation, a Send ends Margin before the invocation's deadline
// (less than its Timeout away), so that the function still answers in time: the events
// count as not sent within their time, and the line says what cut them short (the
// invocation's deadline, not EVENTS_TIMEOUT_MS, which raising would not help).
func TestSendEndsBeforeTheDeadline(t *testing.T) {
	release := make(chan struct{})
	slow := func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}
	client := localClient(t, slow)
	t.Cleanup(func() { close(release) }) // before the endpoint closes, which waits for its handlers
	var logs bytes.Buffer
	s := eventbus.NewSender(client, eventbus.Options{Bus: "bucketgate", Timeout: time.Minute, Margin: 1500 * time.Millisecond, Log: slog.New(slog.NewJSONHandler(&logs, nil))})
	invocation, cancel := context.WithTimeout(t.Context(), 2*time.Second)
	defer cancel()
	var inv telemetry.Invocation
	s.Send(invocation, &inv, []eventbus.Event{thresholdEvent("key:0f")})
	if err := invocation.Err(); err != nil {
		t.Fatalf("Send returned after the invocation's deadline (%v), not Margin before it", err)
	}
	if m := metrics(t, &inv); !strings.Contains(m, `"EventsFailed":1,"Function":"authorizer","Reason":"timeout"`) {
		t.Errorf("metrics %s: want 1 EventsFailed by timeout", m)
	}
	if line := logs.String(); strings.Contains(line, "within 1m0s") || !strings.Contains(line, "the invocation's deadline less 1.5s") {
		t.Errorf("log %s: want the invocation's deadline less the margin named, not the Timeout", line)
	}
}

// An endpoint that answers garbage, an error, or refuses entries: each failure counted
// by its reason; the first logged, the others within the period only counted, and said
// by the first line after it.
func TestSendToABrokenBus(t *testing.T) {
	answers := []struct {
		name   string
		handle http.HandlerFunc
		reason string
		failed int
	}{
		{"garbage", func(w http.ResponseWriter, _ *http.Request) { fmt.Fprint(w, "<html>not EventBridge</html>") }, telemetry.EventsError, 2},
		{"an error", func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Type", "application/x-amz-json-1.1")
			w.WriteHeader(http.StatusBadRequest)
			fmt.Fprint(w, `{"__type":"ResourceNotFoundException","message":"Event bus bucketgate does not exist."}`)
		}, telemetry.EventsError, 2},
		{"a refused entry", func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Type", "application/x-amz-json-1.1")
			fmt.Fprint(w, `{"FailedEntryCount":1,"Entries":[{"EventId":"1"},{"ErrorCode":"AccessDeniedException","ErrorMessage":"not authorized"}]}`)
		}, telemetry.EventsRejected, 1},
	}
	for _, a := range answers {
		t.Run(a.name, func(t *testing.T) {
			var logs bytes.Buffer
			now := time.Unix(1_800_000_000, 0)
			s := local(t, a.handle, 5*time.Second, &logs, &now)
			var inv telemetry.Invocation
			for range 3 { // within a minute
				s.Send(t.Context(), &inv, []eventbus.Event{thresholdEvent("key:0f"), thresholdEvent("key:1f")})
				now = now.Add(10 * time.Second)
			}
			want := fmt.Sprintf(`"EventsFailed":%d,"Function":"authorizer","Reason":%q`, 3*a.failed, a.reason)
			if m := metrics(t, &inv); !strings.Contains(m, want) {
				t.Errorf("metrics %s: want %s", m, want)
			}
			if n := strings.Count(logs.String(), eventbus.MsgFailed); n != 1 || !strings.Contains(logs.String(), `"reason":"`+a.reason+`"`) {
				t.Fatalf("%d lines within the period, want 1 with its reason:\n%s", n, &logs)
			}
			now = now.Add(time.Minute)
			s.Send(t.Context(), &inv, []eventbus.Event{thresholdEvent("key:0f"), thresholdEvent("key:1f")})
			if n := strings.Count(logs.String(), eventbus.MsgFailed); n != 2 || !strings.Contains(logs.String(), fmt.Sprintf(`"failedUnlogged":%d`, 2*a.failed)) {
				t.Fatalf("%d lines after the period, want a second saying the %d failed unlogged:\n%s", n, 2*a.failed, &logs)
			}
			if strings.Contains(logs.String(), "billing@acme.example") {
				t.Errorf("a log line holds the detail: %s", &logs)
			}
		})
	}
}

// A Send whose calls fail, alike or not, logs one line with its totals: how many of its
// events were not sent in all and by reason, the reasons and the first error of each;
// the next Send's, within the period, only counted, and said by the first line after.
func TestSendLogsItsFailuresInOneLine(t *testing.T) {
	notFound := func(w http.ResponseWriter) {
		w.Header().Set("Content-Type", "application/x-amz-json-1.1")
		w.WriteHeader(http.StatusBadRequest)
		fmt.Fprint(w, `{"__type":"ResourceNotFoundException","message":"Event bus bucketgate does not exist."}`)
	}
	refuseOne := func(w http.ResponseWriter, entries int) { // the first entry, for good
		w.Header().Set("Content-Type", "application/x-amz-json-1.1")
		fmt.Fprintf(w, `{"FailedEntryCount":1,"Entries":[{"ErrorCode":"AccessDeniedException","ErrorMessage":"not authorized"}%s]}`, strings.Repeat(`,{"EventId":"1"}`, entries-1))
	}
	for _, tc := range []struct {
		name     string
		answer   func(w http.ResponseWriter, call int64, entries int)
		reason   string
		failed   int
		byReason map[string]int
		errors   []string
	}{
		{"every call failing alike", func(w http.ResponseWriter, _ int64, _ int) { notFound(w) },
			"error", 30, map[string]int{"error": 30}, []string{"ResourceNotFoundException"}},
		{"calls failing differently", func(w http.ResponseWriter, call int64, entries int) {
			if call%3 == 1 { // one call of each Send's three
				notFound(w)
				return
			}
			refuseOne(w, entries)
		}, "error,rejected", 12, map[string]int{"error": 10, "rejected": 2}, []string{"error: ", "ResourceNotFoundException", "; rejected: refused: AccessDeniedException: not authorized"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var calls atomic.Int64
			endpoint := func(w http.ResponseWriter, r *http.Request) {
				var in struct{ Entries []json.RawMessage }
				if err := json.NewDecoder(r.Body).Decode(&in); err != nil {
					t.Errorf("request: %v", err)
				}
				tc.answer(w, calls.Add(1), len(in.Entries))
			}
			var logs bytes.Buffer
			now := time.Unix(1_800_000_000, 0)
			s := local(t, endpoint, 5*time.Second, &logs, &now)
			events := make([]eventbus.Event, 30) // three calls
			for i := range events {
				events[i] = thresholdEvent(fmt.Sprintf("key:%032x", i))
			}
			var inv telemetry.Invocation
			s.Send(t.Context(), &inv, events)
			lines := strings.Split(strings.TrimSpace(logs.String()), "\n")
			if len(lines) != 1 {
				t.Fatalf("%d lines for one Send, want 1:\n%s", len(lines), &logs)
			}
			var line struct {
				Reason         string
				Failed         int
				FailedByReason map[string]int
				FailedUnlogged int
				Error          string
			}
			if err := json.Unmarshal([]byte(lines[0]), &line); err != nil {
				t.Fatal(err)
			}
			if line.Reason != tc.reason || line.Failed != tc.failed || !reflect.DeepEqual(line.FailedByReason, tc.byReason) || line.FailedUnlogged != 0 {
				t.Errorf("line %s: want reason %q, failed %d, failedByReason %v, failedUnlogged 0", lines[0], tc.reason, tc.failed, tc.byReason)
			}
			for _, e := range tc.errors {
				if !strings.Contains(line.Error, e) {
					t.Errorf("error %q: want %q in it", line.Error, e)
				}
			}
			now = now.Add(10 * time.Second)
			s.Send(t.Context(), &inv, events)
			now = now.Add(time.Minute)
			s.Send(t.Context(), &inv, events)
			if n := strings.Count(logs.String(), eventbus.MsgFailed); n != 2 || !strings.Contains(logs.String(), fmt.Sprintf(`"failedUnlogged":%d`, tc.failed)) {
				t.Errorf("%d lines after the period, want a second saying the %d failed unlogged:\n%s", n, tc.failed, &logs)
			}
		})
	}
}

// Failures only counted within the period are said by the first Send after it even
// when that Send fails nothing (the bus came back): a line with failed 0 and the count;
// else they were said by no line at all. A Send that follows it, or that follows a
// period with nothing unsaid, logs nothing.
func TestSendSaysUnloggedFailuresOnceTheBusIsBack(t *testing.T) {
	var broken atomic.Bool
	endpoint := func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/x-amz-json-1.1")
		if broken.Load() {
			w.WriteHeader(http.StatusBadRequest)
			fmt.Fprint(w, `{"__type":"ResourceNotFoundException","message":"Event bus bucketgate does not exist."}`)
			return
		}
		fmt.Fprint(w, `{"FailedEntryCount":0,"Entries":[{"EventId":"1"},{"EventId":"2"}]}`)
	}
	var logs bytes.Buffer
	now := time.Unix(1_800_000_000, 0)
	s := local(t, endpoint, 5*time.Second, &logs, &now)
	var inv telemetry.Invocation
	send := func() {
		s.Send(t.Context(), &inv, []eventbus.Event{thresholdEvent("key:0f"), thresholdEvent("key:1f")})
	}
	broken.Store(true)
	for range 3 { // the first logged, the others counted
		send()
		now = now.Add(10 * time.Second)
	}
	broken.Store(false)
	now = now.Add(time.Minute)
	send()
	lines := strings.Split(strings.TrimSpace(logs.String()), "\n")
	if len(lines) != 2 {
		t.Fatalf("%d lines, want the first failure's and one after the period saying the 4 unlogged:\n%s", len(lines), &logs)
	}
	var line struct {
		Msg            string
		Failed         int
		FailedUnlogged int
	}
	if err := json.Unmarshal([]byte(lines[1]), &line); err != nil {
		t.Fatal(err)
	}
	if line.Msg != eventbus.MsgFailed || line.Failed != 0 || line.FailedUnlogged != 4 {
		t.Errorf("line %s: want %q, failed 0, failedUnlogged 4", lines[1], eventbus.MsgFailed)
	}
	now = now.Add(time.Minute)
	send()
	if n := strings.Count(logs.String(), "\n"); n != 2 {
		t.Errorf("%d lines after a Send with nothing unsaid, want 2:\n%s", n, &logs)
	}
}

// Flush says at once the failures only counted within the period, as the instance
// ends (at SIGTERM) before any Send could; then nothing more.
func TestFlushSaysUnloggedFailures(t *testing.T) {
	var logs bytes.Buffer
	now := time.Unix(1_800_000_000, 0)
	s := local(t, func(w http.ResponseWriter, _ *http.Request) { fmt.Fprint(w, "<html>not EventBridge</html>") }, 5*time.Second, &logs, &now)
	var inv telemetry.Invocation
	for range 3 { // the first logged, the others counted
		s.Send(t.Context(), &inv, []eventbus.Event{thresholdEvent("key:0f"), thresholdEvent("key:1f")})
		now = now.Add(10 * time.Second)
	}
	for range 2 {
		s.Flush(t.Context())
	}
	lines := strings.Split(strings.TrimSpace(logs.String()), "\n")
	if len(lines) != 2 || !strings.Contains(lines[1], `"failed":0,`) || !strings.Contains(lines[1], `"failedUnlogged":4,`) {
		t.Fatalf("%d lines, want the first failure's and one saying the 4 unlogged:\n%s", len(lines), &logs)
	}
}

// No events, no call.
func TestSendNothing(t *testing.T) {
	var logs bytes.Buffer
	now := time.Unix(1_800_000_000, 0)
	called := false
	s := local(t, func(http.ResponseWriter, *http.Request) { called = true }, time.Second, &logs, &now)
	var inv telemetry.Invocation
	s.Send(context.Background(), &inv, nil)
	if called || metrics(t, &inv) != "" || logs.Len() != 0 {
		t.Fatalf("called %v, metrics %q, logs %q: want nothing", called, metrics(t, &inv), &logs)
	}
}

// A decision's crossings become one event each, at the decision's time, naming the
// identity by its digest form (a tenant's raw key never leaves), the account, owner and
// plan given, and the rule's usage, limit and window; a decision that crossed nothing
// makes none.
func TestCrossed(t *testing.T) {
	at := time.Date(2026, 11, 25, 19, 22, 10, 0, time.UTC)
	d := bucketgate.Decision{At: at, Crossings: []bucketgate.Crossing{
		{Kind: bucketgate.CrossingThreshold, Rule: "monthly", Quota: true, Limit: 100_000, Percent: 80, Usage: 80_000, WindowStart: month.Start, WindowEnd: month.End},
		{Kind: bucketgate.CrossingLimited, Rule: "burst", Limit: 10, Usage: 10, WindowStart: at, WindowEnd: at.Add(10 * time.Second)},
	}}
	who := eventbus.Who{Identity: "tenant:acme-secret", Account: "acme", Owner: "billing@acme.example", Plan: "pro"}
	got := eventbus.Crossed(d, who)
	id := bucketgate.LogForm("tenant:acme-secret")
	want := []eventbus.Event{
		{Type: eventbus.TypeQuotaThreshold, Time: at, Detail: eventbus.Detail{Identity: id, Account: "acme", Owner: "billing@acme.example", Plan: "pro",
			Rule: "monthly", Kind: eventbus.KindQuota, Threshold: 80, Usage: 80_000, Limit: 100_000, Window: month}},
		{Type: eventbus.TypeRateLimited, Time: at, Detail: eventbus.Detail{Identity: id, Account: "acme", Owner: "billing@acme.example", Plan: "pro",
			Rule: "burst", Kind: eventbus.KindBucket, Usage: 10, Limit: 10, Window: eventbus.Window{Start: at, End: at.Add(10 * time.Second)}}},
	}
	if !reflect.DeepEqual(got, want) || strings.Contains(fmt.Sprint(got), "acme-secret") {
		t.Fatalf("events %+v, want %+v", got, want)
	}
	if e := eventbus.Crossed(bucketgate.Decision{At: at}, who); e != nil {
		t.Fatalf("events %+v of a decision that crossed nothing", e)
	}
}

// A caller that stopped waiting after its decision was made (a client of the middleware
// that hung up: its request's context canceled) loses no event: the script reported the
// crossing to that decision alone, so Send still puts it on the bus, within Timeout and
// the caller's deadline, and counts nothing.
func TestSendForACallerThatStoppedWaiting(t *testing.T) {
	var logs bytes.Buffer
	now := time.Unix(1_800_000_000, 0)
	got := make(chan int, 10)
	accept := func(w http.ResponseWriter, r *http.Request) {
		var in struct{ Entries []json.RawMessage }
		if err := json.NewDecoder(r.Body).Decode(&in); err != nil {
			t.Errorf("request: %v", err)
		}
		got <- len(in.Entries)
		w.Header().Set("Content-Type", "application/x-amz-json-1.1")
		fmt.Fprint(w, `{"FailedEntryCount":0,"Entries":[{"EventId":"1"},{"EventId":"2"}]}`)
	}
	s := local(t, accept, 5*time.Second, &logs, &now)
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	var inv telemetry.Invocation
	s.Send(ctx, &inv, []eventbus.Event{thresholdEvent("key:0f"), thresholdEvent("key:1f")})
	if m := metrics(t, &inv); m != "" || logs.Len() != 0 {
		t.Fatalf("failures: %s %s", m, &logs)
	}
	select {
	case n := <-got:
		if n != 2 {
			t.Fatalf("%d entries put, want 2", n)
		}
	default:
		t.Fatal("the events were never put")
	}
}

// A call that fails for a reason worth another try (EventBridge throttling the account's
// PutEvents, a 5xx), or entries EventBridge refused for such a reason (ThrottlingException,
// InternalFailure: those alone, beside others refused for good too), are tried again at once, three attempts in all, within
// the deadline: a failure that lasts is counted as the error it is, which the log line
// names, not as a deadline passed while the SDK waited (up to 2 s) to try again.
func TestSendRetriesWithinTheDeadline(t *testing.T) {
	answer := func(w http.ResponseWriter, status int, body string) {
		w.Header().Set("Content-Type", "application/x-amz-json-1.1")
		w.WriteHeader(status)
		fmt.Fprint(w, body)
	}
	const throttled = `{"__type":"ThrottlingException","message":"Rate exceeded"}`
	for _, tc := range []struct {
		name string
		// answer answers the call-th call, of entries entries (of the two events, then of
		// those refused).
		answer func(w http.ResponseWriter, call, entries int)
		calls  int
		want   string // the metric line's failure, or "" for none
		log    string
	}{
		{"throttled throughout", func(w http.ResponseWriter, _, _ int) { answer(w, http.StatusBadRequest, throttled) },
			3, `"EventsFailed":2,"Function":"authorizer","Reason":"error"`, "ThrottlingException: Rate exceeded"},
		{"an entry throttled once", func(w http.ResponseWriter, call, entries int) {
			switch {
			case call == 1:
				answer(w, http.StatusOK, `{"FailedEntryCount":1,"Entries":[{"EventId":"1"},{"ErrorCode":"ThrottlingException","ErrorMessage":"Rate exceeded"}]}`)
			case entries == 1:
				answer(w, http.StatusOK, `{"FailedEntryCount":0,"Entries":[{"EventId":"2"}]}`)
			default:
				answer(w, http.StatusBadRequest, `{"__type":"ValidationException","message":"want the refused entry alone"}`)
			}
		}, 2, "", ""},
		{"an entry failing throughout", func(w http.ResponseWriter, call, entries int) {
			switch {
			case call == 1:
				answer(w, http.StatusOK, `{"FailedEntryCount":1,"Entries":[{"EventId":"1"},{"ErrorCode":"InternalFailure","ErrorMessage":"try again"}]}`)
			case entries == 1:
				answer(w, http.StatusOK, `{"FailedEntryCount":1,"Entries":[{"ErrorCode":"InternalFailure","ErrorMessage":"try again"}]}`)
			default:
				answer(w, http.StatusBadRequest, `{"__type":"ValidationException","message":"want the refused entry alone"}`)
			}
		}, 3, `"EventsFailed":1,"Function":"authorizer","Reason":"rejected"`, "InternalFailure: try again"},
		{"an entry refused for good", func(w http.ResponseWriter, _, _ int) {
			answer(w, http.StatusOK, `{"FailedEntryCount":1,"Entries":[{"EventId":"1"},{"ErrorCode":"AccessDeniedException","ErrorMessage":"not authorized"}]}`)
		}, 1, `"EventsFailed":1,"Function":"authorizer","Reason":"rejected"`, "AccessDeniedException: not authorized"},
		{"an entry throttled beside one refused for good", func(w http.ResponseWriter, call, entries int) {
			switch {
			case call == 1:
				answer(w, http.StatusOK, `{"FailedEntryCount":2,"Entries":[{"ErrorCode":"ThrottlingException","ErrorMessage":"Rate exceeded"},{"ErrorCode":"AccessDeniedException","ErrorMessage":"not authorized"}]}`)
			case entries == 1:
				answer(w, http.StatusOK, `{"FailedEntryCount":0,"Entries":[{"EventId":"1"}]}`)
			default:
				answer(w, http.StatusBadRequest, `{"__type":"ValidationException","message":"want the throttled entry alone"}`)
			}
		}, 2, `"EventsFailed":1,"Function":"authorizer","Reason":"rejected"`, "AccessDeniedException: not authorized"},
		{"a 5xx once", func(w http.ResponseWriter, call, _ int) {
			if call == 1 {
				answer(w, http.StatusInternalServerError, `{"__type":"InternalException","message":"try again"}`)
				return
			}
			answer(w, http.StatusOK, `{"FailedEntryCount":0,"Entries":[{"EventId":"1"},{"EventId":"2"}]}`)
		}, 2, "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var logs bytes.Buffer
			now := time.Unix(1_800_000_000, 0)
			var calls atomic.Int32
			s := local(t, func(w http.ResponseWriter, r *http.Request) {
				var in struct{ Entries []json.RawMessage }
				if err := json.NewDecoder(r.Body).Decode(&in); err != nil {
					t.Errorf("request: %v", err)
				}
				tc.answer(w, int(calls.Add(1)), len(in.Entries))
			}, 500*time.Millisecond, &logs, &now)
			var inv telemetry.Invocation
			s.Send(t.Context(), &inv, []eventbus.Event{thresholdEvent("key:0f"), thresholdEvent("key:1f")})
			m := metrics(t, &inv)
			if int(calls.Load()) != tc.calls || tc.want == "" && m != "" || !strings.Contains(m, tc.want) || !strings.Contains(logs.String(), tc.log) {
				t.Fatalf("%d calls, metrics %q, log %q: want %d calls, %q, a line naming %q", calls.Load(), m, &logs, tc.calls, tc.want, tc.log)
			}
		})
	}
}

// A bus throttled throughout (the account's PutEvents quota spent) is not sent three
// calls for each Send of an instance: the retries of all its Sends, of a call throttled
// or of its entries refused as throttled, are capped together by one retry quota
// (awsretry.AtOnce), as the registry's reads are, so that an instance adds at most the
// quota's retries to the throttle (refilled a little by each call answered), not twice
// its calls.
func TestSendThrottledWithinOneRetryQuota(t *testing.T) {
	for _, tc := range []struct {
		name   string
		status int
		body   string
		failed string // the metric line of a Send's event
	}{
		{"calls throttled", http.StatusBadRequest, `{"__type":"ThrottlingException","message":"Rate exceeded"}`,
			`"EventsFailed":1,"Function":"authorizer","Reason":"error"`},
		{"entries throttled", http.StatusOK, `{"FailedEntryCount":1,"Entries":[{"ErrorCode":"ThrottlingException","ErrorMessage":"Rate exceeded"}]}`,
			`"EventsFailed":1,"Function":"authorizer","Reason":"rejected"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var calls atomic.Int64
			var logs bytes.Buffer
			now := time.Unix(1_800_000_000, 0)
			s := local(t, func(w http.ResponseWriter, r *http.Request) {
				calls.Add(1)
				w.Header().Set("Content-Type", "application/x-amz-json-1.1")
				w.WriteHeader(tc.status)
				fmt.Fprint(w, tc.body)
			}, time.Second, &logs, &now)
			const sends = 200
			failed := 0
			for i := range sends {
				var inv telemetry.Invocation
				s.Send(t.Context(), &inv, []eventbus.Event{thresholdEvent(fmt.Sprintf("key:%02x", i))})
				if strings.Contains(metrics(t, &inv), tc.failed) {
					failed++
				}
			}
			// The quota's tokens, and the one each call the bus answered (200) gives back.
			got := calls.Load()
			retries := (int64(retry.DefaultRetryRateTokens) + got*int64(retry.DefaultNoRetryIncrement)) / int64(retry.DefaultRetryCost)
			if failed != sends || got > sends+retries || !strings.Contains(logs.String(), "ThrottlingException") {
				t.Fatalf("%d Sends to a throttled bus made %d PutEvents calls, %d counted as %s; log %s: want at most one each and the quota's %d retries, every event counted, the throttle named",
					sends, got, failed, tc.failed, &logs, retries)
			}
		})
	}
}

// A batch of the check function's that crossed 1,600 thresholds (100 checks of 8 rules,
// each crossing 80 and 100 percent) makes 160 PutEvents calls: at most MaxCalls of them
// run at once, and every event is put, or counted as failed when the deadline cuts the
// calls still waiting short, and said in one line.
func TestSendBoundsItsCalls(t *testing.T) {
	const n = 1_600
	events := make([]eventbus.Event, n)
	for i := range events {
		events[i] = thresholdEvent(fmt.Sprintf("key:%032x", i))
	}
	for _, tc := range []struct {
		name     string
		answers  bool // the endpoint answers, or holds every call until the client gives up
		timeout  time.Duration
		put      int // entries the endpoint took, at least
		timedOut int // events counted as not sent in time
	}{
		{"an endpoint that answers", true, 30 * time.Second, n, 0},
		{"an endpoint that never answers", false, 100 * time.Millisecond, 0, n},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var running, most, took atomic.Int64
			release := make(chan struct{})
			endpoint := func(w http.ResponseWriter, r *http.Request) {
				now := running.Add(1)
				defer running.Add(-1)
				for m := most.Load(); now > m && !most.CompareAndSwap(m, now); m = most.Load() {
				}
				var in struct{ Entries []json.RawMessage }
				if err := json.NewDecoder(r.Body).Decode(&in); err != nil {
					t.Errorf("request: %v", err)
				}
				if !tc.answers {
					select { // answers only when the test is over, or when the client gives up
					case <-release:
					case <-r.Context().Done():
					}
					return
				}
				time.Sleep(5 * time.Millisecond) // long enough for calls made at once to overlap
				took.Add(int64(len(in.Entries)))
				w.Header().Set("Content-Type", "application/x-amz-json-1.1")
				fmt.Fprintf(w, `{"FailedEntryCount":0,"Entries":[%s]}`, strings.TrimSuffix(strings.Repeat(`{"EventId":"1"},`, len(in.Entries)), ","))
			}
			var logs bytes.Buffer
			now := time.Unix(1_800_000_000, 0)
			s := local(t, endpoint, tc.timeout, &logs, &now)
			t.Cleanup(func() { close(release) }) // before the endpoint closes, which waits for its handlers
			var inv telemetry.Invocation
			s.Send(t.Context(), &inv, events)
			if m := most.Load(); m > eventbus.MaxCalls {
				t.Errorf("%d calls ran at once, want at most %d", m, eventbus.MaxCalls)
			}
			m := metrics(t, &inv)
			want := fmt.Sprintf(`"EventsFailed":%d,"Function":"authorizer","Reason":"timeout"`, tc.timedOut)
			if tc.timedOut == 0 && m != "" || tc.timedOut > 0 && !strings.Contains(m, want) {
				t.Errorf("metrics %q: want %d EventsFailed by timeout, and no other", m, tc.timedOut)
			}
			if int(took.Load()) != tc.put {
				t.Errorf("the endpoint took %d entries, want %d", took.Load(), tc.put)
			}
			if tc.timedOut > 0 && (strings.Count(logs.String(), eventbus.MsgFailed) != 1 || !strings.Contains(logs.String(), fmt.Sprintf(`"failed":%d,`, tc.timedOut))) {
				t.Errorf("log %s: want one line saying the %d events not sent", &logs, tc.timedOut)
			}
		})
	}
}

// lateBus is an EventBridge that refuses entries with its first answer, given only once
// the caller's deadline has passed (an answer read in the instant before it), and
// takes every entry after.
type lateBus struct {
	first string // the first answer's entries, JSON
	calls atomic.Int32
}

func (b *lateBus) PutEvents(ctx context.Context, in *eventbridge.PutEventsInput, _ ...func(*eventbridge.Options)) (*eventbridge.PutEventsOutput, error) {
	if b.calls.Add(1) > 1 {
		return &eventbridge.PutEventsOutput{Entries: make([]types.PutEventsResultEntry, len(in.Entries))}, nil
	}
	<-ctx.Done()
	var out eventbridge.PutEventsOutput
	if err := json.Unmarshal([]byte(b.first), &out.Entries); err != nil {
		return nil, err
	}
	for _, e := range out.Entries {
		if e.ErrorCode != nil {
			out.FailedEntryCount++
		}
	}
	return &out, nil
}

// An entry refused for a reason worth another try, when the deadline passes before it
// can be tried again, is counted as not sent in time (timeout), as the call it would
// have been: not as refused (rejected), which would point at EventBridge's answer; one
// refused for good beside it is still rejected.
func TestSendDeadlineBetweenRetries(t *testing.T) {
	for _, tc := range []struct {
		name    string
		first   string
		want    []string
		retried string // the refusal of the entry left to try again, which a timeout's line names
	}{
		{"an entry throttled", `[{"EventId":"1"},{"ErrorCode":"ThrottlingException","ErrorMessage":"Rate exceeded"}]`,
			[]string{`"EventsFailed":1,"Function":"authorizer","Reason":"timeout"`}, "ThrottlingException: Rate exceeded"},
		{"an entry throttled beside one refused for good", `[{"ErrorCode":"InternalFailure","ErrorMessage":"try again"},{"ErrorCode":"AccessDeniedException","ErrorMessage":"not authorized"}]`,
			[]string{`"EventsFailed":1,"Function":"authorizer","Reason":"timeout"`, `"EventsFailed":1,"Function":"authorizer","Reason":"rejected"`}, "InternalFailure: try again"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			bus := &lateBus{first: tc.first}
			var logs bytes.Buffer
			now := time.Unix(1_800_000_000, 0)
			s := eventbus.NewSender(bus, eventbus.Options{Bus: "bucketgate", Timeout: 50 * time.Millisecond, Log: slog.New(slog.NewJSONHandler(&logs, nil)),
				Now: func() time.Time { now = now.Add(time.Hour); return now }}) // every failure its line
			var inv telemetry.Invocation
			s.Send(t.Context(), &inv, []eventbus.Event{thresholdEvent("key:0f"), thresholdEvent("key:1f")})
			m := metrics(t, &inv)
			for _, w := range tc.want {
				if !strings.Contains(m, w) {
					t.Errorf("metrics %s: want %s", m, w)
				}
			}
			if strings.Count(m, `"EventsFailed":`) != len(tc.want) || bus.calls.Load() != 1 {
				t.Errorf("metrics %s after %d calls: want only %q after 1", m, bus.calls.Load(), tc.want)
			}
			if !strings.Contains(logs.String(), "not sent within 50ms: context deadline exceeded, before trying again what was refused: "+tc.retried) {
				t.Errorf("log %s: want the deadline, and why the entry was to be tried again (%s)", &logs, tc.retried)
			}
		})
	}
}

// TestLogEveryByWallClock: a Sender tells LogEvery by the wall clock. The clock's times
// come with a monotonic reading (time.Now's), which may stand still while a Lambda
// instance is frozen between invocations: kept, the failures of the first Send after a
// freeze longer than LogEvery would be taken as within the period, counted and not
// logged, until the instance's invocations themselves (not its idle time) had added up
// to LogEvery: for a quiet instance, hours of failures with no line saying why. The time
// of the last line carries none (a Time's String shows " m=" when it does).
func TestLogEveryByWallClock(t *testing.T) {
	now := time.Now()
	if !strings.Contains(now.String(), " m=") {
		t.Fatal("time.Now has no monotonic reading here: this test proves nothing")
	}
	notFound := func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/x-amz-json-1.1")
		w.WriteHeader(http.StatusBadRequest)
		fmt.Fprint(w, `{"__type":"ResourceNotFoundException","message":"Event bus bucketgate does not exist."}`)
	}
	var logs bytes.Buffer
	s := local(t, notFound, 5*time.Second, &logs, &now)
	var inv telemetry.Invocation
	s.Send(t.Context(), &inv, []eventbus.Event{thresholdEvent("key:0f")})
	if n := strings.Count(logs.String(), eventbus.MsgFailed); n != 1 {
		t.Fatalf("%d lines for a failed Send, want 1:\n%s", n, &logs)
	}
	if at := eventbus.LoggedOf(s); strings.Contains(at.String(), " m=") {
		t.Errorf("the last line's time %v keeps a monotonic reading: a freeze would not count", at)
	}
}
