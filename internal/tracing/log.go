package tracing

import (
	"log/slog"
	"sync/atomic"
)

// processLog is the logger given to SetLogger; nil until then.
var processLog atomic.Pointer[slog.Logger]

// discardLog is the log of a Decider made with no logger at all.
var discardLog = slog.New(slog.DiscardHandler)

// SetLogger makes l the log of every Decider made after it without Options.Log (Wrap
// makes such Deciders). Call it from main before building the decision chain.
func SetLogger(l *slog.Logger) { processLog.Store(l) }

// defaultLog is the logger given to SetLogger, else one that discards.
func defaultLog() *slog.Logger {
	if l := processLog.Load(); l != nil {
		return l
	}
	return discardLog
}
