package telemetry

// MetricEventsFailed counts, by Reason, the EventBridge events an invocation could not
// send (package eventbus): timeout (not sent within EVENTS_TIMEOUT_MS), error (the
// request failed, or its answer could not be read) or rejected (EventBridge refused the
// entry). Written only when there were some.
const MetricEventsFailed = "EventsFailed"

// Reasons of MetricEventsFailed.
const (
	EventsTimeout  = "timeout"
	EventsError    = "error"
	EventsRejected = "rejected"
)

// ObserveEventsFailed counts n events not sent, for reason (EventsTimeout, EventsError
// or EventsRejected).
func (inv *Invocation) ObserveEventsFailed(reason string, n int) {
	if n > 0 {
		inv.addCount(MetricEventsFailed, DimReason, reason, n)
	}
}
