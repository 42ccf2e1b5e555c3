package telemetry_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"testing"
	"time"

	"github.com/bucketgate/bucketgate"
	"github.com/bucketgate/bucketgate/internal/guard"
	"github.com/bucketgate/bucketgate/internal/telemetry"
)

func TestLogDecision(t *testing.T) {
	decided := guard.Result{
		Decision: bucketgate.Decision{Allowed: false, Reason: bucketgate.ReasonLimited, Rule: "burst", Limit: 10, RetryAfter: 1500 * time.Millisecond},
		Latency:  2 * time.Millisecond,
	}
	allowed := guard.Result{
		Decision: bucketgate.Decision{Allowed: true, Reason: bucketgate.ReasonOK, Rule: "burst", Limit: 10, Remaining: 9},
	}
	failed := guard.Result{
		Decision: bucketgate.Decision{Reason: bucketgate.ReasonUnavailable, Rule: "burst", Limit: 10, RetryAfter: guard.FailureRetryAfter},
		Failure:  guard.FailureTimeout,
		Err:      errors.New("context deadline exceeded"),
	}
	tests := []struct {
		name      string
		level     slog.Level
		result    guard.Result
		wantLevel string // "" means no line
		want      map[string]any
	}{
		{"limited at debug", slog.LevelDebug, decided, "INFO", map[string]any{
			"identity": "ip:192.0.2.1", "allowed": false, "reason": "limited", "rule": "burst",
			"limit": 10.0, "remaining": 0.0, "retryAfterMs": 1500.0, "redisLatencyMs": 2.0, "denyCacheHit": false,
		}},
		{"limited at info", slog.LevelInfo, decided, "INFO", map[string]any{"reason": "limited", "identity": "ip:192.0.2.1"}},
		{"allowed is quiet at info", slog.LevelInfo, allowed, "", nil},
		{"allowed at debug", slog.LevelDebug, allowed, "DEBUG", map[string]any{"allowed": true, "reason": "ok", "remaining": 9.0}},
		{"failure at warn", slog.LevelInfo, failed, "WARN", map[string]any{
			"reason": "unavailable", "failure": "timeout", "error": "context deadline exceeded", "retryAfterMs": 1000.0,
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var buf bytes.Buffer
			l := telemetry.NewLogger(&buf, tc.level)
			telemetry.LogDecision(context.Background(), l, tc.result, slog.String("identity", "ip:192.0.2.1"))
			if tc.wantLevel == "" {
				if buf.Len() != 0 {
					t.Fatalf("logged %q", buf.String())
				}
				return
			}
			var line map[string]any
			if err := json.Unmarshal(buf.Bytes(), &line); err != nil {
				t.Fatalf("not one JSON line: %q: %v", buf.String(), err)
			}
			if line["level"] != tc.wantLevel || line["msg"] != telemetry.MsgDecision {
				t.Errorf("level %v msg %v", line["level"], line["msg"])
			}
			for k, v := range tc.want {
				if line[k] != v {
					t.Errorf("%s = %#v, want %#v", k, line[k], v)
				}
			}
		})
	}
}

func BenchmarkLogDecisionDisabled(b *testing.B) {
	l := telemetry.NewLogger(&bytes.Buffer{}, slog.LevelInfo)
	r := guard.Result{Decision: bucketgate.Decision{Allowed: true, Reason: bucketgate.ReasonOK}}
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		telemetry.LogDecision(ctx, l, r, slog.String("identity", "ip:192.0.2.1"))
	}
}
