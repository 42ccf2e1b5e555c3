// Package checkapi is the JSON contract of bucketgate's check function: what a caller
// sends (one Request, or a Batch of them), what it gets back (a Response, or a
// BatchResult), and the limits the function enforces. It has no dependencies, so the
// function and its callers (see package checkclient) share it without pulling in the
// other's libraries.
package checkapi

import "time"

// Limits of one invocation.
const (
	// MaxBatch is the most checks one Batch may carry.
	MaxBatch = 100
	// MaxKey is the longest Key, in bytes.
	MaxKey = 1000
	// MaxCost is the largest Cost the function parses, 2^53: the largest whole number
	// that every JSON implementation holds exactly. A Cost must also fit every rule's
	// capacity, which is far smaller.
	MaxCost = 1 << 53
	// DefaultCost is the tokens a Request takes when it gives no Cost.
	DefaultCost = 1
)

// ErrorTypeInvalidRequest is the errorType of the function error that answers an
// invalid request; its errorMessage names the field, "checks[3].cost: ..." in a batch.
// Nothing is written to Redis for an invalid request or any check of an invalid batch.
const ErrorTypeInvalidRequest = "InvalidRequestError"

// Request is one check: may Key spend Cost tokens now? The rules come from Plan, or
// inline from Rules, or (with neither) from the plan configured for Key as a tenant,
// else the default plan.
type Request struct {
	// Key identifies whose buckets these are (a tenant, a user, an API client):
	// 1 to MaxKey bytes. Required.
	Key string `json:"key"`
	// Plan names a configured plan; empty means none. Not together with Rules.
	Plan string `json:"plan,omitempty"`
	// Rules are inline rules, decided together, all or nothing; nil means none. Not
	// together with Plan.
	Rules []Rule `json:"rules,omitempty"`
	// Cost is the whole number of tokens to take from every rule, 0 to the smallest
	// capacity; 0 is a peek (the decision, nothing taken). Nil means DefaultCost.
	Cost *int64 `json:"cost,omitempty"`
}

// Rule is one inline token bucket: Capacity tokens at most, refilled continuously at
// RefillPerSecond tokens per second. The zero Rule is invalid.
type Rule struct {
	// Name identifies the bucket together with the key: 1 to 64 letters, digits,
	// '_', '-' or '.'.
	Name string `json:"name"`
	// Capacity is the burst, in whole tokens, 1 to 1e9.
	Capacity int64 `json:"capacity"`
	// RefillPerSecond is the refill rate in tokens per second, > 0; fractions allowed
	// (a daily quota of 1000 refills 1000/86400 per second).
	RefillPerSecond float64 `json:"refillPerSecond"`
}

// Batch is up to MaxBatch checks in one invocation, decided one after another in
// order: each check is atomic, the batch is not, and a later check sees the tokens an
// earlier one took.
type Batch struct {
	// Checks are the checks, 1 to MaxBatch.
	Checks []Request `json:"checks"`
}

// BatchResult answers a Batch: Results[i] answers Checks[i].
type BatchResult struct {
	// Results are the answers, in the order of the checks.
	Results []Response `json:"results"`
}

// Reason says why a Response came out as it did.
type Reason string

// The reasons of a Response: the engine's own values (package bucket), restated here
// so that callers need not import it; a test holds the two equal.
const (
	ReasonOK          Reason = "ok"          // allowed: every rule had enough tokens
	ReasonLimited     Reason = "limited"     // denied: a rule lacked tokens; see RetryAfterMS
	ReasonUnavailable Reason = "unavailable" // denied: Redis could not decide in time (fail closed)
	ReasonDegraded    Reason = "degraded"    // allowed: Redis could not decide in time (fail open)
)

// Response is the decision on one Request. The zero Response is a denial with no reason.
type Response struct {
	// Allowed reports whether the request may proceed.
	Allowed bool `json:"allowed"`
	// Reason is why: ok, limited, unavailable or degraded.
	Reason Reason `json:"reason"`
	// Limit is the binding rule's capacity, in tokens.
	Limit int64 `json:"limit"`
	// Remaining is the floor of the tokens left in the tightest rule after the
	// decision; 0 when Redis did not decide.
	Remaining int64 `json:"remaining"`
	// RetryAfterMS is how long to wait before cost tokens are there, in whole
	// milliseconds; 0 when allowed, 1000 when Redis could not decide (fail closed).
	RetryAfterMS int64 `json:"retryAfterMs"`
	// ResetAfterMS is how long until every rule is full again, in whole milliseconds;
	// 0 when Redis did not decide.
	ResetAfterMS int64 `json:"resetAfterMs"`
	// Rule names the binding rule: the denying rule with the longest wait, or, when
	// allowed, the rule with the fewest tokens left.
	Rule string `json:"rule"`
	// Plan names the plan the check was decided under; empty for inline rules.
	Plan string `json:"plan"`
}

// RetryAfter returns RetryAfterMS as a Duration.
func (r Response) RetryAfter() time.Duration { return time.Duration(r.RetryAfterMS) * time.Millisecond }

// ResetAfter returns ResetAfterMS as a Duration.
func (r Response) ResetAfter() time.Duration { return time.Duration(r.ResetAfterMS) * time.Millisecond }
