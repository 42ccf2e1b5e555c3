package tracing_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-xray-sdk-go/xray"
	"github.com/aws/aws-xray-sdk-go/xraylog"

	"github.com/bucketgate/bucketgate/internal/bucket"
	"github.com/bucketgate/bucketgate/internal/redistest"
	"github.com/bucketgate/bucketgate/internal/tracing"
)

const (
	traceID  = "1-5759e988-bd862e3fe1be46a994272793"
	parentID = "53995c3f42cd8ad8"
	// readLimit only keeps a broken test from hanging; loopback UDP arrives at once.
	readLimit = 10 * time.Second
)

var request = bucket.Request{
	Identity: "ip:192.0.2.1",
	Rules:    []bucket.Rule{{Name: "burst", Capacity: 10, RefillPerSecond: 1}},
	Cost:     1,
}

// captureSDKLog sends every X-Ray SDK message, debug included, to the returned buffer
// until the test ends.
func captureSDKLog(t *testing.T) *bytes.Buffer {
	var buf bytes.Buffer
	xray.SetLogger(xraylog.NewDefaultLogger(&buf, xraylog.LogLevelDebug))
	t.Cleanup(func() { tracing.SetLogger(slog.New(slog.DiscardHandler)) })
	return &buf
}

// fakeDaemon points the SDK at a UDP socket standing in for the X-Ray daemon.
func fakeDaemon(t *testing.T) *net.UDPConn {
	conn, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	if err := xray.Configure(xray.Config{DaemonAddr: conn.LocalAddr().String()}); err != nil {
		t.Fatal(err)
	}
	return conn
}

// lambdaContext is the context the Lambda runtime hands a traced invocation.
func lambdaContext(sampled int) context.Context {
	header := fmt.Sprintf("Root=%s;Parent=%s;Sampled=%d", traceID, parentID, sampled)
	return context.WithValue(context.Background(), xray.LambdaTraceHeaderKey, header) //nolint:staticcheck // the SDK's own key
}

func TestSubsegmentAroundRedisCall(t *testing.T) {
	captureSDKLog(t)
	daemon := fakeDaemon(t)
	_, client := redistest.Mini(t)
	d := tracing.Wrap(bucket.New(client))

	dec, err := d.Decide(lambdaContext(1), request)
	if err != nil || !dec.Allowed {
		t.Fatalf("Decide = %+v, %v", dec, err)
	}
	buf := make([]byte, 64<<10)
	if err := daemon.SetReadDeadline(time.Now().Add(readLimit)); err != nil {
		t.Fatal(err)
	}
	n, err := daemon.Read(buf)
	if err != nil {
		t.Fatalf("no subsegment reached the daemon: %v", err)
	}
	_, body, ok := strings.Cut(string(buf[:n]), "\n")
	if !ok {
		t.Fatalf("datagram without the daemon header: %q", buf[:n])
	}
	var seg struct {
		Name        string         `json:"name"`
		Namespace   string         `json:"namespace"`
		Type        string         `json:"type"`
		TraceID     string         `json:"trace_id"`
		ParentID    string         `json:"parent_id"`
		StartTime   float64        `json:"start_time"`
		EndTime     float64        `json:"end_time"`
		Annotations map[string]any `json:"annotations"`
	}
	if err := json.Unmarshal([]byte(body), &seg); err != nil {
		t.Fatalf("subsegment %q: %v", body, err)
	}
	if seg.Name != tracing.SubsegmentName || seg.Namespace != "remote" || seg.Type != "subsegment" {
		t.Errorf("subsegment name/namespace/type = %q/%q/%q", seg.Name, seg.Namespace, seg.Type)
	}
	if seg.TraceID != traceID || seg.ParentID != parentID {
		t.Errorf("trace %q parent %q, want %q %q", seg.TraceID, seg.ParentID, traceID, parentID)
	}
	if seg.EndTime < seg.StartTime || seg.StartTime == 0 {
		t.Errorf("times %v..%v", seg.StartTime, seg.EndTime)
	}
	want := map[string]any{tracing.AnnotationAllowed: true, tracing.AnnotationReason: "ok", tracing.AnnotationRule: "burst"}
	for k, v := range want {
		if seg.Annotations[k] != v {
			t.Errorf("annotation %s = %v, want %v (all: %v)", k, seg.Annotations[k], v, seg.Annotations)
		}
	}
	if strings.Contains(body, request.Identity) {
		t.Errorf("the subsegment carries the identity: %s", body)
	}
}

func TestSilentWithoutTrace(t *testing.T) {
	sdkLog := captureSDKLog(t)
	_, client := redistest.Mini(t)
	d := tracing.Wrap(bucket.New(client))

	if tracing.Traced(context.Background()) {
		t.Fatal("a bare context counts as traced")
	}
	if dec, err := d.Decide(context.Background(), request); err != nil || !dec.Allowed {
		t.Fatalf("Decide = %+v, %v", dec, err)
	}
	if sdkLog.Len() != 0 {
		t.Fatalf("the SDK spoke without a trace: %q", sdkLog)
	}
	// The capture works: asking the SDK itself for a subsegment without a segment makes
	// it complain, which is what Decide must avoid.
	xray.BeginSubsegment(context.Background(), "probe")
	if !strings.Contains(sdkLog.String(), "segment cannot be found") {
		t.Fatalf("the SDK did not complain about a missing segment: %q", sdkLog)
	}
}

// In Lambda every invocation carries a trace header, sampled or not; an unsampled one
// must cost nothing visible: the decision stands and the log gets no SDK line.
func TestUnsampledInvocationIsQuiet(t *testing.T) {
	var buf bytes.Buffer
	tracing.SetLogger(slog.New(slog.NewJSONHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug})))
	t.Cleanup(func() { tracing.SetLogger(slog.New(slog.DiscardHandler)) })
	_, client := redistest.Mini(t)
	d := tracing.Wrap(bucket.New(client))
	if dec, err := d.Decide(lambdaContext(0), request); err != nil || !dec.Allowed {
		t.Fatalf("Decide = %+v, %v", dec, err)
	}
	if buf.Len() != 0 {
		t.Fatalf("SDK lines in the log: %s", buf.String())
	}
}

func TestTracedOnlyWithSegmentOrHeader(t *testing.T) {
	segCtx, seg := xray.BeginFacadeSegment(context.Background(), "facade", nil)
	defer seg.Close(nil)
	tests := []struct {
		name string
		ctx  context.Context
		want bool
	}{
		{"bare", context.Background(), false},
		{"empty Lambda header", context.WithValue(context.Background(), xray.LambdaTraceHeaderKey, ""), false}, //nolint:staticcheck // the SDK's own key
		{"Lambda header", lambdaContext(1), true},
		{"unsampled Lambda header", lambdaContext(0), true},
		{"segment", segCtx, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := tracing.Traced(tc.ctx); got != tc.want {
				t.Fatalf("Traced = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestSDKLoggerKeepsWarningsOnly(t *testing.T) {
	var buf bytes.Buffer
	l := tracing.NewSDKLogger(slog.New(slog.NewJSONHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug})))
	l.Log(xraylog.LogLevelDebug, stringer("debug chatter"))
	l.Log(xraylog.LogLevelInfo, stringer("Emitter using address"))
	l.Log(xraylog.LogLevelWarn, stringer("a warning"))
	l.Log(xraylog.LogLevelError, stringer("an error"))

	var levels, msgs []string
	for _, line := range strings.Split(strings.TrimSpace(buf.String()), "\n") {
		var rec struct{ Level, Msg string }
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			t.Fatalf("line %q: %v", line, err)
		}
		levels, msgs = append(levels, rec.Level), append(msgs, rec.Msg)
	}
	if strings.Join(levels, ",") != "WARN,ERROR" || strings.Join(msgs, ",") != "xray: a warning,xray: an error" {
		t.Fatalf("levels %v messages %v", levels, msgs)
	}
}

type stringer string

func (s stringer) String() string { return string(s) }

func BenchmarkDecideUntraced(b *testing.B) {
	_, client := redistest.Mini(b)
	d := tracing.Wrap(bucket.New(client))
	q := request
	q.Cost = 0
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := d.Decide(ctx, q); err != nil {
			b.Fatal(err)
		}
	}
}
