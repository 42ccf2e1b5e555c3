package tracing_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"net"
	"reflect"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"

	"github.com/bucketgate/bucketgate"
	"github.com/bucketgate/bucketgate/internal/bucket"
	"github.com/bucketgate/bucketgate/internal/telemetry"
	"github.com/bucketgate/bucketgate/internal/testkit/redistest"
	"github.com/bucketgate/bucketgate/internal/tracing"
)

const (
	traceID  = "1-5759e988-bd862e3fe1be46a994272793"
	parentID = "53995c3f42cd8ad8"
	// markerTraceID marks the sampled decision that follows one that must send nothing.
	markerTraceID = "1-5759e988-000000000000000000000001"
	// daemonHeader is the first line of every datagram the X-Ray daemon accepts.
	daemonHeader = `{"format": "json", "version": 1}`
	// readLimit only keeps a broken test from hanging; loopback UDP arrives at once.
	readLimit = 10 * time.Second
	// step is how far the test clock moves between two readings.
	step = 3 * time.Millisecond
	// timeTolerance is the precision, in seconds, of epoch times as float64.
	timeTolerance = 1e-6
)

var (
	// start is the test clock's first reading.
	start = time.Date(2024, 5, 31, 12, 0, 0, 250_000_000, time.UTC)
	// segmentID is the shape of an X-Ray segment ID.
	segmentID = regexp.MustCompile(`^[0-9a-f]{16}$`)
)

// request is decided through the tracer; twin is the same request for another identity,
// decided by the bare limiter to show that results pass through unchanged.
var (
	request = bucketgate.Request{
		Identity: "ip:192.0.2.1",
		Rules:    []bucketgate.Rule{{Name: "burst", Capacity: 1, RefillPerSecond: 1}},
		Cost:     1,
	}
	twin = func() bucketgate.Request { q := request; q.Identity = "ip:192.0.2.2"; return q }()
)

// fakeDaemon is a UDP socket on loopback standing in for the X-Ray daemon.
func fakeDaemon(t *testing.T) *net.UDPConn {
	t.Helper()
	conn, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return conn
}

// document is what the fake daemon received, decoded; raw keeps every field so that a
// test can tell an absent field from a false one.
type document struct {
	Type, Name, Namespace, ID string
	TraceID                   string  `json:"trace_id"`
	ParentID                  string  `json:"parent_id"`
	StartTime                 float64 `json:"start_time"`
	EndTime                   float64 `json:"end_time"`
	Annotations               map[string]any
	raw                       map[string]any
	body                      string
}

// receive reads one datagram from daemon and checks its header line.
func receive(t *testing.T, daemon *net.UDPConn) document {
	t.Helper()
	if err := daemon.SetReadDeadline(time.Now().Add(readLimit)); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 64<<10)
	n, err := daemon.Read(buf)
	if err != nil {
		t.Fatalf("no subsegment reached the daemon: %v", err)
	}
	head, body, ok := strings.Cut(string(buf[:n]), "\n")
	if !ok || head != daemonHeader {
		t.Fatalf("datagram %q does not start with the daemon header line %s", buf[:n], daemonHeader)
	}
	doc := document{body: body}
	if err := json.Unmarshal([]byte(body), &doc); err != nil {
		t.Fatalf("subsegment %q: %v", body, err)
	}
	if err := json.Unmarshal([]byte(body), &doc.raw); err != nil {
		t.Fatal(err)
	}
	return doc
}

// sampled is the context the Lambda runtime hands a sampled invocation of trace id.
func sampled(id string) context.Context {
	return withHeader(fmt.Sprintf("Root=%s;Parent=%s;Sampled=1", id, parentID))
}

// withHeader is a context carrying the trace header h as aws-lambda-go puts it.
func withHeader(h any) context.Context {
	return context.WithValue(context.Background(), tracing.LambdaHeaderKey, h) //nolint:staticcheck // aws-lambda-go's own key
}

// clock reads start, then start+step, start+2*step…
func clock() func() time.Time {
	next := start
	return func() time.Time { t := next; next = next.Add(step); return t }
}

// debugLog is a JSON logger at debug level writing to the returned buffer.
func debugLog() (*slog.Logger, *bytes.Buffer) {
	var buf bytes.Buffer
	return telemetry.NewLogger(&buf, slog.LevelDebug), &buf
}

// traced returns the limiter over m traced to daemon with the test clock, and the bare
// limiter.
func traced(t *testing.T, daemon *net.UDPConn, log *slog.Logger) (*tracing.Limiter, *bucket.Limiter, *miniredis.Miniredis) {
	t.Helper()
	m, client := redistest.Mini(t)
	m.SetTime(start)
	bare := bucket.New(client)
	d := tracing.New(bare, tracing.Options{Daemon: daemon.LocalAddr().(*net.UDPAddr), Now: clock(), Log: log})
	return d, bare, m
}

func TestSubsegmentOfEachOutcome(t *testing.T) {
	tests := []struct {
		name string
		// prepare runs before the decision, for the traced request q and its twin.
		prepare   func(m *miniredis.Miniredis, bare *bucket.Limiter, q, twin bucketgate.Request)
		cost      int64
		wantAnn   map[string]any
		wantError bool // the request is invalid: the caller's error, word for word the bare one
		wantFault bool // Redis failed: an error too
	}{
		{
			name:    "allowed",
			cost:    1,
			wantAnn: map[string]any{tracing.AnnotationAllowed: true, tracing.AnnotationReason: "ok", tracing.AnnotationRule: "burst"},
		},
		{
			name: "limited",
			prepare: func(_ *miniredis.Miniredis, bare *bucket.Limiter, q, twin bucketgate.Request) {
				for _, r := range []bucketgate.Request{q, twin} {
					if _, err := bare.Decide(context.Background(), r); err != nil {
						t.Fatal(err)
					}
				}
			},
			cost:    1,
			wantAnn: map[string]any{tracing.AnnotationAllowed: false, tracing.AnnotationReason: "limited", tracing.AnnotationRule: "burst"},
		},
		{name: "invalid request", cost: 2, wantError: true},
		{
			name:      "redis down",
			prepare:   func(m *miniredis.Miniredis, _ *bucket.Limiter, _, _ bucketgate.Request) { m.Close() },
			cost:      1,
			wantFault: true,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			daemon := fakeDaemon(t)
			log, logBuf := debugLog()
			d, bare, m := traced(t, daemon, log)
			q, tq := request, twin
			q.Cost, tq.Cost = tc.cost, tc.cost
			if tc.prepare != nil {
				tc.prepare(m, bare, q, tq)
			}
			want, wantErr := bare.Decide(context.Background(), tq)

			got, err := d.Decide(sampled(traceID), q)

			if !reflect.DeepEqual(got, want) {
				t.Errorf("Decision = %+v, want the bare limiter's %+v", got, want)
			}
			switch {
			case tc.wantError:
				if !errors.Is(err, bucketgate.ErrInvalid) || wantErr == nil || err.Error() != wantErr.Error() {
					t.Fatalf("error %v, want the bare limiter's %v", err, wantErr)
				}
			case tc.wantFault:
				if err == nil || wantErr == nil {
					t.Fatalf("errors %v (bare %v), want both", err, wantErr)
				}
			case err != nil || wantErr != nil:
				t.Fatalf("errors %v (bare %v), want none", err, wantErr)
			}

			doc := receive(t, daemon)
			if doc.Type != "subsegment" || doc.Name != tracing.SubsegmentName || doc.Namespace != "remote" {
				t.Errorf("type/name/namespace = %q/%q/%q", doc.Type, doc.Name, doc.Namespace)
			}
			if doc.TraceID != traceID || doc.ParentID != parentID {
				t.Errorf("trace %q parent %q, want %q %q", doc.TraceID, doc.ParentID, traceID, parentID)
			}
			if !segmentID.MatchString(doc.ID) || doc.ID == parentID {
				t.Errorf("id %q: want 16 hex digits of its own", doc.ID)
			}
			wantStart := float64(start.UnixNano()) / float64(time.Second)
			if math.Abs(doc.StartTime-wantStart) > timeTolerance || math.Abs(doc.EndTime-doc.StartTime-step.Seconds()) > timeTolerance {
				t.Errorf("times %f..%f, want %f..+%v", doc.StartTime, doc.EndTime, wantStart, step)
			}
			if fmt.Sprint(doc.Annotations) != fmt.Sprint(tc.wantAnn) {
				t.Errorf("annotations %v, want %v", doc.Annotations, tc.wantAnn)
			}
			for flag, want := range map[string]bool{"error": tc.wantError, "fault": tc.wantFault} {
				if v, present := doc.raw[flag]; present != want || (present && v != true) {
					t.Errorf("%s = %v (present %v), want present %v", flag, v, present, want)
				}
			}
			if strings.Contains(doc.body, "192.0.2") {
				t.Errorf("the subsegment carries the identity: %s", doc.body)
			}
			if logBuf.Len() != 0 {
				t.Errorf("log lines for a sent subsegment: %s", logBuf)
			}
		})
	}
}

// Whatever the context holds short of a sampled, well-formed header, Decide decides,
// sends nothing and logs nothing.
func TestNothingSentUnlessSampled(t *testing.T) {
	tests := []struct {
		name string
		ctx  context.Context
	}{
		{"bare context", context.Background()},
		{"empty header", withHeader("")},
		{"not a string", withHeader(42)},
		{"not sampled", withHeader(fmt.Sprintf("Root=%s;Parent=%s;Sampled=0", traceID, parentID))},
		{"sampling requested", withHeader(fmt.Sprintf("Root=%s;Parent=%s;Sampled=?", traceID, parentID))},
		{"no sampling decision", withHeader(fmt.Sprintf("Root=%s;Parent=%s", traceID, parentID))},
		{"sampled=10", withHeader(fmt.Sprintf("Root=%s;Parent=%s;Sampled=10", traceID, parentID))},
		{"no parent", withHeader(fmt.Sprintf("Root=%s;Sampled=1", traceID))},
		{"no root", withHeader(fmt.Sprintf("Parent=%s;Sampled=1", parentID))},
		{"short parent", withHeader(fmt.Sprintf("Root=%s;Parent=53995c3f;Sampled=1", traceID))},
		{"root of version 2", withHeader(fmt.Sprintf("Root=2-5759e988-bd862e3fe1be46a994272793;Parent=%s;Sampled=1", parentID))},
		{"root not hex", withHeader(fmt.Sprintf("Root=1-5759e988-bd862e3fe1be46a99427279z;Parent=%s;Sampled=1", parentID))},
		{"root upper case", withHeader(fmt.Sprintf("Root=1-5759E988-BD862E3FE1BE46A994272793;Parent=%s;Sampled=1", parentID))},
		{"garbage", withHeader("Sampled=1;;;==;Root=;Parent=")},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			daemon := fakeDaemon(t)
			log, logBuf := debugLog()
			d, _, _ := traced(t, daemon, log)
			if tracing.Traced(tc.ctx) {
				t.Error("Traced = true")
			}
			if dec, err := d.Decide(tc.ctx, request); err != nil || !dec.Allowed {
				t.Fatalf("Decide = %+v, %v", dec, err)
			}
			if logBuf.Len() != 0 {
				t.Errorf("log lines: %s", logBuf)
			}
			// Were anything sent above, it would arrive before the marker's subsegment.
			if !tracing.Traced(sampled(markerTraceID)) {
				t.Fatal("the marker's context is not traced")
			}
			if _, err := d.Decide(sampled(markerTraceID), request); err != nil {
				t.Fatal(err)
			}
			if doc := receive(t, daemon); doc.TraceID != markerTraceID {
				t.Fatalf("the daemon got a subsegment of trace %s first", doc.TraceID)
			}
		})
	}
}

func TestHeaderWithSpacesAndExtraFields(t *testing.T) {
	daemon := fakeDaemon(t)
	d, _, _ := traced(t, daemon, nil)
	ctx := withHeader(fmt.Sprintf("Root=%s; Parent=%s; Sampled=1; Lineage=a87bd80c:1|68fd508a:5", traceID, parentID))
	if _, err := d.Decide(ctx, request); err != nil {
		t.Fatal(err)
	}
	if doc := receive(t, daemon); doc.TraceID != traceID || doc.ParentID != parentID {
		t.Fatalf("trace %q parent %q", doc.TraceID, doc.ParentID)
	}
}

func TestParseDaemonAddress(t *testing.T) {
	tests := []struct {
		name, addr, want string
	}{
		{"host and port", "127.0.0.1:2000", "127.0.0.1:2000"},
		{"UDP and TCP", "udp:169.254.79.129:2000 tcp:169.254.79.129:2001", "169.254.79.129:2000"},
		{"TCP first", "tcp:127.0.0.1:2001 udp:127.0.0.1:2002", "127.0.0.1:2002"},
		{"no port", "no port here", ""},
		{"TCP alone", "tcp:127.0.0.1:2000 tcp:127.0.0.1:2001", ""},
		{"unknown protocol", "udp:127.0.0.1:2000 sctp:127.0.0.1:2001", ""},
		{"empty", "", ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			addr, err := tracing.ParseDaemonAddress(tc.addr)
			if tc.want == "" {
				if err == nil {
					t.Fatalf("ParseDaemonAddress(%q) = %v, want an error", tc.addr, addr)
				}
				return
			}
			if err != nil || addr.String() != tc.want {
				t.Fatalf("ParseDaemonAddress(%q) = %v, %v; want %s", tc.addr, addr, err, tc.want)
			}
		})
	}
}

// Without a daemon address nothing is sent and nothing is logged; decisions go on.
func TestNoDaemon(t *testing.T) {
	log, logBuf := debugLog()
	_, client := redistest.Mini(t)
	decideTwice(t, tracing.New(bucket.New(client), tracing.Options{Log: log}))
	if logBuf.Len() != 0 {
		t.Fatalf("log lines without a daemon: %s", logBuf)
	}
}

// A subsegment that cannot be sent costs one debug line per decision, never the
// decision.
func TestUnsendableSubsegmentIsLoggedAtDebug(t *testing.T) {
	log, logBuf := debugLog()
	_, client := redistest.Mini(t)
	// A link-local IPv6 address without a zone cannot be dialed.
	nowhere := &net.UDPAddr{IP: net.ParseIP("fe80::1"), Port: 2000}
	d := tracing.New(bucket.New(client), tracing.Options{Daemon: nowhere, Log: log})
	decideTwice(t, d)
	recs := logRecords(t, logBuf)
	if len(recs) != 2 {
		t.Fatalf("log %+v, want one line per decision", recs)
	}
	for _, r := range recs {
		if r.Level != "DEBUG" || r.Msg != tracing.MsgNotSent || !strings.Contains(r.Error, "fe80::1") {
			t.Errorf("log line %+v", r)
		}
	}
}

// decideTwice decides request twice in a sampled trace, and fails t unless both are
// allowed.
func decideTwice(t *testing.T, d *tracing.Limiter) {
	t.Helper()
	q := request
	for range 2 {
		if dec, err := d.Decide(sampled(traceID), q); err != nil || !dec.Allowed {
			t.Fatalf("Decide = %+v, %v", dec, err)
		}
		q.Cost = 0 // peek the second time: the bucket holds one token
	}
}

// logRecord is one JSON log line.
type logRecord struct{ Level, Msg, Error string }

func logRecords(t *testing.T, buf *bytes.Buffer) []logRecord {
	t.Helper()
	var recs []logRecord
	for line := range strings.Lines(buf.String()) {
		var r logRecord
		if err := json.Unmarshal([]byte(line), &r); err != nil {
			t.Fatalf("log line %q: %v", line, err)
		}
		recs = append(recs, r)
	}
	return recs
}

func BenchmarkDecide(b *testing.B) {
	daemon, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		b.Fatal(err)
	}
	defer daemon.Close()
	for _, bc := range []struct {
		name string
		ctx  context.Context
	}{
		{"untraced", context.Background()},
		{"unsampled", withHeader(fmt.Sprintf("Root=%s;Parent=%s;Sampled=0", traceID, parentID))},
		{"sampled", sampled(traceID)},
	} {
		b.Run(bc.name, func(b *testing.B) {
			_, client := redistest.Mini(b)
			d := tracing.New(bucket.New(client), tracing.Options{Daemon: daemon.LocalAddr().(*net.UDPAddr)})
			q := request
			q.Cost = 0
			b.ReportAllocs()
			for b.Loop() {
				if _, err := d.Decide(bc.ctx, q); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
