package telemetry

import "github.com/bucketgate/bucketgate/internal/guard"

// OutcomeRefused is the Outcome of a request refused before any bucket was decided: an
// identity the configuration refuses (the authorizer's 401), or an operator operation
// that a service-facing check function does not serve. A refusal is the caller's doing,
// not the limiter's: it is counted apart, so that an alarm on the functions' errors can
// leave it out.
const OutcomeRefused = "refused"

// ObserveRefused counts one refused request: Decisions with Outcome refused, with no
// latency and no failure.
func (inv *Invocation) ObserveRefused() {
	inv.group(OutcomeRefused, guard.FailureNone).decisions++
}
