package bucketgate

import "time"

// Reason says why a Decision came out as it did. The zero Reason, "", is none: a
// Decision's that nothing decided.
type Reason string

// The reasons of a Decision, as the check function's "reason" field spells them.
// Later kinds of rule (quotas, concurrency) answer with the same reasons.
const (
	// ReasonOK means allowed: every enforced rule had enough tokens.
	ReasonOK Reason = "ok"
	// ReasonLimited means denied: a rule lacked tokens; RetryAfter says for how long.
	ReasonLimited Reason = "limited"
	// ReasonUnavailable means denied because Redis could not decide in time (fail
	// closed).
	ReasonUnavailable Reason = "unavailable"
	// ReasonDegraded means allowed without a decision because Redis could not decide
	// in time and the limiter is configured to fail open.
	ReasonDegraded Reason = "degraded"
)

// Decision is the outcome of one Request, describing its enforced rules after it: a
// check's decision, or the buckets after a refund or a reset (allowed, reason ok). The
// zero Decision is a denial with no reason.
type Decision struct {
	// Allowed reports whether the request may proceed.
	Allowed bool
	// Reason is why: ok, limited, unavailable or degraded.
	Reason Reason
	// Rule names the binding rule: the denying rule with the longest wait, or, when
	// allowed, the enforced rule with the fewest tokens left (on a tie, a concurrency
	// rule, whose slot frees at the lease's expiry at the latest); empty when every rule of
	// the request is shadow, and for an OpRelease Redis answered. An answer given again
	// (Replayed) names the rule that bound the first, though a plan made it shadow since
	// (and its ShadowLimited and Shortfall are the first's); a settle's, by name and kind,
	// none (Limit and Remaining 0) when its request no longer has it.
	Rule string
	// Limit is the binding rule's capacity (a quota's limit), in tokens, or a concurrency
	// rule's most requests in flight; 0 without a binding rule (Rule empty).
	Limit int64
	// Remaining is the floor of the tokens left in the tightest enforced rule after the
	// decision (what a quota may still admit in its window; a concurrency rule's leases
	// it may still give); 0 without a binding rule.
	Remaining int64
	// RetryAfter is how long until cost tokens are there in every denying rule, rounded
	// up to whole milliseconds (for a quota, until its window ends; for a concurrency
	// rule, until the first of its leases to expire does: a release frees a slot
	// sooner); zero when allowed.
	RetryAfter time.Duration
	// ResetAfter is how long until every rule is full again (every bucket full, and the
	// window of every quota that counted something ended), in whole milliseconds; 0 when
	// every rule is. Leases count in it only in a denial by a concurrency rule, whose
	// ResetAfter is until its latest lease expires, the other rules aside: an admission's
	// lease does not (Expires says when it frees itself).
	ResetAfter time.Duration
	// At is the Redis server time of the decision; zero when Redis did not decide.
	At time.Time
	// ShadowLimited holds the shadow rules of an allowed check that lacked its cost:
	// the rules that, enforced, would have denied it. Empty otherwise.
	ShadowLimited RuleSet
	// Shortfall is, after an admission that left an enforced rule short of cost tokens,
	// the rule an identical request waits for and how long; zero otherwise (see Repeat).
	Shortfall Shortfall
	// Rules holds, for a peek (a check of cost 0) that Redis decided, the state of every
	// rule of the request, enforced and shadow, in the order of its Rules; nil otherwise.
	Rules []RuleState
	// Reservation is, for an OpReserve Redis allowed, the reservation's id: what
	// OpSettle and OpCancel take (Request.ID). Empty otherwise.
	Reservation string
	// Expires is, for an OpReserve Redis allowed, when the reservation ends unsettled
	// (and stays charged at its estimate), and for a check that acquired a Lease, when
	// the lease frees itself; the zero Time otherwise.
	Expires time.Time
	// Lease is, for a check (or a reserve) with concurrency rules that Redis allowed,
	// the id of the lease it holds in each of them: what OpRelease takes (Request.ID).
	// Empty otherwise.
	Lease string
	// Released reports, for an OpRelease, that the lease was held and is returned now;
	// false when it was released before or its TTL ended (nothing changed).
	Released bool
	// Replayed reports a decision Redis gave before, answered again with nothing
	// written: the first decision on a request whose RequestID it had seen, or the first
	// outcome of a reservation settled (or cancelled) before.
	Replayed bool
	// Settled is, for OpSettle and OpCancel, the actual cost the reservation was
	// settled at, in tokens: the first settle's when Replayed; 0 otherwise.
	Settled int64
	// Crossings holds what this check crossed, as Redis reports it once per window and
	// threshold whatever the number of callers: in the order of the request's Rules,
	// for each rule its first denial, then 80%, then 100%. Nil when nothing was crossed.
	Crossings []Crossing
}

// CrossingKind is what a Crossing crossed, spelled as the EventBridge event's
// detail-type. The zero CrossingKind, "", is none.
type CrossingKind string

// The kinds of a Crossing.
const (
	// CrossingLimited is an enforced rule's first denial of the identity in its window:
	// a quota's calendar window, or for a bucket from that denial until it is full
	// again.
	CrossingLimited CrossingKind = "Rate Limited"
	// CrossingThreshold is an admission that moved a quota's count in its window to
	// Percent (80 or 100) of its limit or above.
	CrossingThreshold CrossingKind = "Quota Threshold Reached"
)

// Crossing is one threshold a check crossed (see Decision.Crossings).
type Crossing struct {
	// Kind is what was crossed.
	Kind CrossingKind
	// Rule names the rule that crossed it.
	Rule string
	// Quota reports that Rule is a quota (it has a Period), not a token bucket: a
	// concurrency rule crosses nothing.
	Quota bool
	// Limit is the rule's capacity (a bucket's) or limit (a quota's), in tokens.
	Limit int64
	// Percent is the threshold of a quota, 80 or 100; 0 for CrossingLimited.
	Percent int64
	// Usage is a quota's count in its window after the check, in tokens; for a bucket,
	// its tokens in use (its capacity less the floor of the tokens it holds): above
	// Limit, by the debt, for a bucket a settle left below zero.
	Usage int64
	// WindowStart and WindowEnd bound the window: a quota's calendar window; for a
	// bucket, the decision's time and when the bucket is full again (whole ms).
	WindowStart, WindowEnd time.Time
}

// RuleState is one rule's state as a peek found it.
type RuleState struct {
	// Remaining is the floor of the tokens a bucket holds, or what a quota may still
	// admit in its window (its limit less its count, 0 at least), in tokens; for a
	// concurrency rule, the leases it may still give (its Concurrency less the leases in
	// flight, 0 at least).
	Remaining int64
	// ResetAfter is how long until a bucket is full again (0 when it is), until a
	// quota's window ends and its count starts again from 0, or until the last lease
	// in flight of a concurrency rule expires (0 with none in flight), rounded up to
	// whole milliseconds.
	ResetAfter time.Duration
}

// Shortfall is the enforced rule that an admission left short of its request's cost:
// the one with the longest wait until an identical request could be allowed. The zero
// Shortfall is none.
type Shortfall struct {
	// Rule names the rule.
	Rule string
	// Limit is the rule's capacity (or a quota's limit), in tokens.
	Limit int64
	// Wait is how long until the rule holds the cost again, rounded up to whole
	// milliseconds.
	Wait time.Duration
}

// Repeat returns the denial that Redis gives a request identical to the one d decided,
// from d's At until the denial's RetryAfter has passed, and false when an identical
// request could be allowed at once or Redis did not decide d. For a denial it is d;
// after an admission that left a rule short of cost tokens, it is the denial naming that
// rule. Other requests only ever take tokens, so none could make it pass sooner. A
// repeat crosses nothing: its Crossings are nil. A decision Replayed is an earlier
// one's: it repeats nothing.
func (d Decision) Repeat() (Decision, bool) {
	switch {
	case d.Replayed:
		return Decision{}, false
	case d.Reason == ReasonLimited:
		d.Crossings = nil
		return d, d.RetryAfter > 0
	case d.Reason != ReasonOK || d.Shortfall.Wait <= 0:
		return Decision{}, false
	}
	return Decision{
		Reason:     ReasonLimited,
		Rule:       d.Shortfall.Rule,
		Limit:      d.Shortfall.Limit,
		Remaining:  d.Remaining,
		RetryAfter: d.Shortfall.Wait,
		ResetAfter: d.ResetAfter,
		At:         d.At,
	}, true
}

// RuleSet is a set of the rules of a Request, by index in its Rules: bit i stands for
// Rules[i]. The zero RuleSet is empty.
type RuleSet uint32

// Has reports whether the rule at index i is in s.
func (s RuleSet) Has(i int) bool { return i >= 0 && i < 32 && s&(1<<i) != 0 }
