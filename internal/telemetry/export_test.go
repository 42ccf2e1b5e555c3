package telemetry

import "time"

// FlushTimesOf returns when e's waiting Invocations began, and when its last interval
// began, for the tests.
func FlushTimesOf(e *Emitter) (start, flushed time.Time) {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.start, e.flushed
}
