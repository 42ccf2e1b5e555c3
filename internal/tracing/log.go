package tracing

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/aws/aws-xray-sdk-go/xray"
	"github.com/aws/aws-xray-sdk-go/xraylog"
)

// MinSDKLevel is the least severe X-Ray SDK message that reaches the log: the SDK's
// debug and info chatter (emitter addresses, every subsegment) stays out of it.
const MinSDKLevel = xraylog.LogLevelWarn

// SetLogger routes the X-Ray SDK's own messages of MinSDKLevel and above to l, as JSON
// lines like every other log line, instead of the SDK's plain text on stdout where the
// metrics go. Call it once from main before the first invocation: the SDK's logger is
// a global that is not safe to change concurrently.
func SetLogger(l *slog.Logger) { xray.SetLogger(NewSDKLogger(l)) }

// NewSDKLogger returns an xraylog.Logger writing to l, dropping messages below
// MinSDKLevel.
func NewSDKLogger(l *slog.Logger) xraylog.Logger { return sdkLogger{l: l} }

type sdkLogger struct{ l *slog.Logger }

func (s sdkLogger) Log(level xraylog.LogLevel, msg fmt.Stringer) {
	if level < MinSDKLevel {
		return
	}
	lv := slog.LevelWarn
	if level >= xraylog.LogLevelError {
		lv = slog.LevelError
	}
	s.l.LogAttrs(context.Background(), lv, "xray: "+msg.String())
}
