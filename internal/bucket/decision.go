package bucket

import "time"

// Reason says why a Decision came out as it did.
type Reason string

// The reasons of a Decision, as the check function's "reason" field spells them.
const (
	// ReasonOK: allowed, every rule had enough tokens.
	ReasonOK Reason = "ok"
	// ReasonLimited: denied, a rule lacked tokens; RetryAfter says for how long.
	ReasonLimited Reason = "limited"
	// ReasonUnavailable: denied because Redis could not decide in time (fail closed).
	ReasonUnavailable Reason = "unavailable"
	// ReasonDegraded: allowed without a decision because Redis could not decide in
	// time and the limiter is configured to fail open.
	ReasonDegraded Reason = "degraded"
)

// Decision is the outcome of one Request. The zero Decision is a denial with no reason.
type Decision struct {
	// Allowed reports whether the request may proceed.
	Allowed bool
	// Reason is why: ok, limited, unavailable or degraded.
	Reason Reason
	// Rule names the binding rule: the denying rule with the longest wait, or, when
	// allowed, the rule with the fewest tokens left.
	Rule string
	// Limit is the binding rule's capacity, in tokens.
	Limit int64
	// Remaining is the floor of the tokens left in the tightest rule after the decision.
	Remaining int64
	// RetryAfter is how long until cost tokens are there in every denying rule, rounded
	// up to whole milliseconds; zero when allowed.
	RetryAfter time.Duration
	// ResetAfter is how long until every rule is full again, in whole milliseconds.
	ResetAfter time.Duration
	// At is the Redis server time of the decision; zero when Redis did not decide.
	At time.Time
	// Wait is how long until a request identical to this one could be allowed, rounded
	// up to whole milliseconds: RetryAfter when denied; when allowed, how long until
	// cost tokens are back in every rule, zero when they already are (always for a
	// peek). Other requests only take tokens, so none could be allowed sooner.
	Wait time.Duration
	// WaitRule names the rule that Wait waits for: Rule when denied, the rule with the
	// longest wait when allowed; empty when Wait is zero.
	WaitRule string
}
