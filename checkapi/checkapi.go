// Package checkapi is the JSON contract of bucketgate's check function: what a caller
// sends (one Request, or a Batch of them), what it gets back (a Response, or a
// BatchResult), and the limits the function enforces. It has no dependencies, so the
// function and its callers (see package checkclient) share it without pulling in the
// other's libraries. Its Rule, Op and Reason are the root package's (bucketgate), the
// one vocabulary of every part of bucketgate. docs/check.md is the function's guide.
package checkapi

import (
	"time"

	"github.com/bucketgate/bucketgate"
)

// Limits of one invocation.
const (
	// MaxBatch is the most checks one Batch may carry. It keeps every pipeline a batch
	// becomes far below the 2000 commands (rueidis's DefaultBlockingPipeline) from which
	// rueidis sends a pipeline over a pooled connection of its own, which the
	// reconnection after a failover (READONLY) would not reach: a round of script calls
	// is at most 200 commands (one per check, and MULTI and EXEC around the checks of an
	// identity with more than one: 50 identities of two checks each), the connection
	// check 101 (an EXISTS per check and a PEXPIREAT), a peek's or a reset's with
	// concurrency rules MaxRules+1 at most, and the signing secrets' upkeep 4.
	MaxBatch = 100
	// MaxKey is the longest Key, in bytes.
	MaxKey = bucketgate.MaxTenantKey
	// MaxCost is the largest Cost the function parses, in tokens, 2^53: the largest
	// whole number that every JSON implementation holds exactly. A Cost must also fit
	// every rule's capacity, which is far smaller.
	MaxCost = 1 << 53
	// DefaultCost is the tokens a Request takes when it gives no Cost.
	DefaultCost = 1
)

// ErrorTypeInvalidRequest is the errorType of the function error that answers an
// invalid request; its errorMessage names the field, "checks[3].cost: ..." in a batch.
// Nothing is written to Redis for an invalid request or any check of an invalid batch.
const ErrorTypeInvalidRequest = "InvalidRequestError"

// ErrorTypeConflict is the errorType of the function error that answers a request in
// conflict with what the limiter holds: a settle or a cancel of a reservation it did
// not make for the identity, or that expired (it stays charged at its estimate), a
// release of a lease it did not make for the identity, or a RequestID used first for
// another request. Nothing is written for that request; in a Batch, the other checks
// may have been decided all the same (a batch is not atomic), and the errorMessage
// names those that were.
const ErrorTypeConflict = "ConflictError"

// ErrorTypeUnavailable is the errorType of the function error that answers a usage
// request (OpUsage) Redis could not answer in time (or answered with what is not
// bucketgate's usage, which the errorMessage says: NotUsage), or whose identity the
// registry could not resolve (NoConfiguration when no configuration loads): a report
// has no failure policy.
const ErrorTypeUnavailable = "UnavailableError"

// NotUsage is in the errorMessage of an ErrorTypeUnavailable error when Redis answered
// with what is not bucketgate's usage (a day's count that another writer left): unlike
// Redis not answering in time, another call meets it again.
const NotUsage = "Redis holds what is not bucketgate's usage"

// NoConfiguration is in the errorMessage of an ErrorTypeUnavailable error when the usage
// report's identity needs the registry (a key of an account counts in its account's
// usage) and the function has no configuration: its registry table's documents do not
// load (and its init could not read them). Unlike a table that could not be read,
// another call meets it again until the document is fixed.
const NoConfiguration = "the function has no configuration that loads"

// Request is one check: may Key spend Cost tokens now? Or, with Op, a refund or a
// reset of Key's buckets, or a report of Key's usage (OpUsage, with From and To and no
// rules or cost; answered by a Usage, never in a batch). The rules come from Plan, or
// inline from Rules, or (with neither) from the plan configured for Key as a tenant,
// else the default plan. The zero Request is invalid: it has no Key.
type Request struct {
	// Key identifies whose buckets these are (a tenant, a user, an API client):
	// 1 to MaxKey bytes of UTF-8 text. Required, unless Identity is given, or the
	// request settles or cancels the authorizer's Reservation, or releases its Lease,
	// by the id alone. It rests in Redis and the registry as given: name an API client
	// by its key's digest (bucketgate.KeyDigest) or its id, never by the key; an API key
	// bucketgate made ("bg_...") is refused as an invalid request.
	Key string `json:"key,omitempty"`
	// Identity names the buckets of an identity instead of Key's: one of the
	// authorizer's, "key:<digest>" (an API key by the first 32 hex digits of its
	// SHA-256) or "ip:<address>" (a source address exactly as the authorizer spells it:
	// an IPv6 one by its prefix of the function's IPV6_PREFIX_LENGTH, such as
	// "ip:2001:db8::/64"), "acct:<name>" (an account of the registry, whose keys all
	// spend its buckets), or "tenant:<key>", Key's own buckets. An API key of an account
	// reaches its account's buckets (its own rules among them), whatever the plan or
	// rules given. It is the operator's path (bucketgate buckets), logged at info:
	// whoever may invoke the function that serves it may spend, refund or reset any
	// caller's buckets. A stack's check function serves services alone (its
	// OPERATOR_FUNCTION names the stack's operator function, which serves this path): it
	// refuses an Identity, and OpReset, as an invalid request naming that function.
	// Empty means Key's buckets; not together with Key.
	Identity string `json:"identity,omitempty"`
	// Op is what to do; OpCheck, the zero Op, leaves "op" out of the JSON (the function
	// refuses "op": "", as any other unknown operation).
	Op Op `json:"op,omitempty"`
	// Plan names a configured plan; empty means none. Not together with Rules.
	Plan string `json:"plan,omitempty"`
	// Rules are inline rules, decided together, all or nothing; nil means none. Not
	// together with Plan.
	Rules []Rule `json:"rules,omitempty"`
	// Cost is the whole number of tokens, at most the smallest capacity or limit: taken
	// from every rule by a check (0 is a peek: the decision, nothing taken, and the state
	// of every rule in Response.Rules), given back by a refund (at least 1). Nil means
	// DefaultCost; a reset takes none (nil). See Cost.
	Cost *int64 `json:"cost,omitempty"`
	// From is the first UTC day of a usage report (OpUsage), as YYYY-MM-DD, within the
	// days the function keeps (USAGE_RETENTION_DAYS, today included); empty means To.
	// Only with OpUsage.
	From string `json:"from,omitempty"`
	// To is the last UTC day of a usage report (OpUsage), as YYYY-MM-DD, within the
	// days the function keeps; empty means today (UTC, by Redis's clock, which counts
	// the days). Only with OpUsage.
	To string `json:"to,omitempty"`
	// TTLMS is how long a reserve's reservation holds, and a check's (or reserve's)
	// lease of its concurrency rules, in milliseconds: 1 to 3600000; 0 (left out) means
	// 300000. A reservation not settled within it stays charged at its estimate; a lease
	// not released within it frees itself. Only with OpReserve, or OpCheck of a cost
	// with a concurrency rule.
	TTLMS int64 `json:"ttlMs,omitempty"`
	// RequestID makes a check that takes tokens, a reserve or a refund idempotent: the
	// same Key (or Identity) and RequestID within the function's IDEMPOTENCY_TTL_MS
	// answers the first decision again (Response.Replayed) and changes nothing (a
	// reserve's or an acquire's RequestID is remembered TTLMS longer, while its id may
	// be held). A denial is a first decision too: sent again after its RetryAfterMS with
	// the same RequestID, it is that denial again, its wait the first one's; trying
	// again after a denial needs a new RequestID. 1 to 128 bytes; empty for none. A
	// RequestID used again for another request (another operation, cost, ttl or rules)
	// is refused (ErrorTypeConflict). Two checks of one Batch with the same Key (or
	// Identity, or two keys of one account) and RequestID are an invalid request
	// (ErrorTypeInvalidRequest).
	RequestID string `json:"requestId,omitempty"`
	// Reservation is what OpSettle and OpCancel settle: a Response.Reservation of a
	// reserve with the same Key (or Identity) and a rule in common (by name and kind: the
	// settle gives back to those alone); or, with no Key, Identity, Plan or Rules, a
	// reservation the authorizer made on a route that reserves (its context's, the
	// X-RateLimit-Reservation header), which carries its identity and route itself.
	Reservation string `json:"reservation,omitempty"`
	// Lease is what OpRelease returns: a Response.Lease of a check with the same Key (or
	// Identity) and a rule in common (by name and kind); or, with no Key, Identity, Plan
	// or Rules, a lease the authorizer acquired (its context's, the X-RateLimit-Lease
	// header), which carries its identity and route itself.
	Lease string `json:"lease,omitempty"`
}

// Cost returns a pointer to n, for Request.Cost: Cost(0) is a peek.
func Cost(n int64) *int64 { return &n }

// Op is what a Request does to its buckets: its JSON is the operation's name. The zero
// Op is OpCheck.
type Op = bucketgate.Op

// The operations of a Request.
const (
	// OpCheck takes Cost tokens from every rule when every rule has them, and answers
	// whether it did: the default, left out of the JSON.
	OpCheck = bucketgate.OpCheck
	// OpRefund gives Cost tokens back to every rule, never above its capacity: for a
	// request whose work failed after its check. A rule that is full stays full, and a
	// refund never lowers a bucket, whatever plan it names: one that another plan of a
	// larger capacity left above this plan's stays as it is.
	OpRefund = bucketgate.OpRefund
	// OpUsage reports Key's (or Identity's) usage per UTC day from From to To: a Usage.
	OpUsage = bucketgate.OpUsage
	// OpReset makes every rule full again: its state removed from Redis. An operator's
	// operation: a service-facing check function refuses it (see Request.Identity).
	OpReset = bucketgate.OpReset
	// OpReserve is a check of Cost, the estimate of work whose cost is known only after
	// it, that, when allowed, answers a Response.Reservation held for TTLMS.
	OpReserve = bucketgate.OpReserve
	// OpSettle settles Reservation at Cost, the actual cost: the difference given back,
	// or taken (into a debt of a bucket's capacity at most: it never fails). Settling
	// again answers the first outcome.
	OpSettle = bucketgate.OpSettle
	// OpCancel settles Reservation at 0.
	OpCancel = bucketgate.OpCancel
	// OpRelease returns Lease to the concurrency rules that gave it: Response.Released
	// reports whether it was still held (false: released before, or its TTLMS ended).
	OpRelease = bucketgate.OpRelease
)

// Rule is one inline rule: a token bucket, Capacity tokens at most refilled
// continuously at RefillPerSecond tokens per second (fractions allowed), JSON {"name",
// "capacity", "refillPerSecond", "shadow"}; a quota on the calendar, Limit tokens a
// UTC day, a week from Monday or a month from day Anchor, JSON {"name", "limit",
// "period", "anchor", "shadow"}; or a concurrency rule, Concurrency requests in flight
// at most, JSON {"name", "concurrency"}. Shadow marks a rule that is decided but never
// denies. The zero Rule is invalid.
type Rule = bucketgate.Rule

// Batch is up to MaxBatch checks in one invocation, decided in one round trip to Redis
// (a peek or a reset of a concurrency rule takes one of its own), in order: each check is
// atomic, the batch is not, and a later check sees the tokens an earlier one took. Checks Redis does not answer before the invocation's deadline
// answer as a Redis failure would (unavailable, or degraded when failing open). The
// zero Batch is invalid: it has no checks.
type Batch struct {
	// Checks are the checks, 1 to MaxBatch.
	Checks []Request `json:"checks"`
}

// BatchResult answers a Batch: Results[i] answers Checks[i].
type BatchResult struct {
	// Results are the answers, in the order of the checks.
	Results []Response `json:"results"`
}

// Reason says why a Response came out as it did: ok, limited, unavailable or degraded.
type Reason = bucketgate.Reason

// The reasons of a Response.
const (
	ReasonOK          = bucketgate.ReasonOK          // allowed: every rule had enough tokens
	ReasonLimited     = bucketgate.ReasonLimited     // denied: a rule lacked tokens; see RetryAfterMS
	ReasonUnavailable = bucketgate.ReasonUnavailable // denied: Redis could not decide in time (fail closed)
	ReasonDegraded    = bucketgate.ReasonDegraded    // allowed: Redis could not decide in time (fail open)
)

// Response is the decision on one Request, describing its enforced rules after it:
// for a refund or a reset, allowed with reason ok (unavailable or degraded, as a check's,
// when Redis could not answer: it may not have been done). The zero Response is a
// denial with no reason.
type Response struct {
	// Allowed reports whether the request may proceed.
	Allowed bool `json:"allowed"`
	// Reason is why: ok, limited, unavailable or degraded.
	Reason Reason `json:"reason"`
	// Limit is the binding rule's capacity (a quota's limit), in tokens, or a
	// concurrency rule's most requests in flight; 0 when every rule is shadow, and for a
	// release Redis answered.
	Limit int64 `json:"limit"`
	// Remaining is the floor of the tokens left in the tightest rule after the
	// decision (a concurrency rule's leases it may still give); 0 when Redis did not
	// decide.
	Remaining int64 `json:"remaining"`
	// RetryAfterMS is how long to wait before cost tokens are there, in whole
	// milliseconds; 0 when allowed, 1000 when Redis could not decide (fail closed).
	RetryAfterMS int64 `json:"retryAfterMs"`
	// ResetAfterMS is how long until every rule is full again, in whole milliseconds;
	// 0 when Redis did not decide.
	ResetAfterMS int64 `json:"resetAfterMs"`
	// Rule names the binding rule: the denying rule with the longest wait, or, when
	// allowed, the enforced rule with the fewest tokens left; empty when every rule is
	// shadow (nothing is enforced, and the check is allowed), and for a release Redis
	// answered (Released says what it did). An answer given again (Replayed) names the
	// first's binding rule, though a plan made it shadow since; a settle's none (Limit
	// and Remaining 0) when the plan no longer has it.
	Rule string `json:"rule"`
	// Plan names the plan the check was decided under; empty for inline rules.
	Plan string `json:"plan"`
	// Identity is, for a request naming an Identity (the operator's path), whose buckets
	// it reached: the Identity asked, or "acct:<name>" for a key of an account
	// (whose buckets every key of the account spends together), or the lone key's
	// "key:<digest>" for an account a roll made from it. Empty (left out) for a Key's.
	Identity string `json:"identity,omitempty"`
	// Rules holds, for a peek (cost 0) Redis decided, every rule of the check, enforced
	// and shadow, in order; nil otherwise (left out of the JSON).
	Rules []RuleStatus `json:"rules,omitempty"`
	// Reservation is, for a reserve Redis allowed, the reservation's id, which OpSettle
	// and OpCancel take; empty (left out) otherwise.
	Reservation string `json:"reservation,omitempty"`
	// ExpiresAt is when that reservation ends unsettled (or the Lease frees itself),
	// RFC 3339 in UTC with milliseconds, by Redis's clock; empty (left out) otherwise.
	ExpiresAt string `json:"expiresAt,omitempty"`
	// Replayed reports a first decision (or a settle's first outcome) answered again,
	// nothing written: the RequestID was seen before, or the reservation was settled.
	Replayed bool `json:"replayed,omitempty"`
	// Settled is, for a settle (or a cancel), the actual cost the reservation was
	// settled at: the first settle's when Replayed. 0 (left out of the JSON) for a
	// cancel, a settle at 0, and every other operation.
	Settled int64 `json:"settled,omitempty"`
	// Lease is, for a check (or reserve) with concurrency rules Redis allowed, the id of
	// the lease it holds, which OpRelease returns; ExpiresAt is then when it frees
	// itself. Empty (left out) otherwise.
	Lease string `json:"lease,omitempty"`
	// Released is, for a release, whether the lease was held and is returned now; false
	// when it was released before or its TTLMS ended (nothing changed). Nil (left out)
	// for every other operation, and for a release Redis did not answer (reason
	// unavailable or degraded: send it again).
	Released *bool `json:"released,omitempty"`
}

// RuleStatus is one rule's state as a peek found it.
type RuleStatus struct {
	// Name is the rule's name.
	Name string `json:"name"`
	// Period is a quota's period (day, week or month); empty (left out) for a bucket.
	Period bucketgate.Period `json:"period,omitempty"`
	// Limit is a bucket's capacity or a quota's limit, in tokens; a concurrency rule's
	// most requests in flight.
	Limit int64 `json:"limit"`
	// Remaining is the floor of a bucket's tokens, or what a quota may still admit in
	// its window; for a concurrency rule, the leases it may still give (Limit less
	// those in flight).
	Remaining int64 `json:"remaining"`
	// ResetAfterMS is how long until a bucket is full again (0 when it is), until a
	// quota's window ends, or until a concurrency rule's last lease expires (0 with none
	// in flight), in whole milliseconds rounded up.
	ResetAfterMS int64 `json:"resetAfterMs"`
	// WindowEnd is when a quota's window ends, RFC 3339 in UTC (2026-12-01T00:00:00Z),
	// by Redis's clock; empty (left out) for a bucket.
	WindowEnd string `json:"windowEnd,omitempty"`
	// Shadow marks a shadow rule, which never denies.
	Shadow bool `json:"shadow,omitempty"`
	// Concurrency marks a concurrency rule, whose Limit is requests in flight.
	Concurrency bool `json:"concurrency,omitempty"`
}

// Usage answers a usage request (OpUsage): the identity's usage of every UTC day from
// From to To, a day with no checks as zeros, and their total. It counts what Redis
// decided: checks allowed and the cost they took, and checks limited; peeks, refunds and
// resets count nothing, and neither do denials an authorizer's in-process deny cache
// answered without Redis.
type Usage struct {
	// Identity is whose usage it is: "tenant:<key>" for a Key, else whose buckets the
	// Identity asked reaches (see Response.Identity): a key of an account counts in its
	// account's usage.
	Identity string `json:"identity"`
	// From is the first day, YYYY-MM-DD.
	From string `json:"from"`
	// To is the last day, YYYY-MM-DD.
	To string `json:"to"`
	// Days are the days from From to To, in order.
	Days []UsageDay `json:"days"`
	// Total adds the days up.
	Total UsageCounts `json:"total"`
}

// UsageDay is one UTC day of a Usage.
type UsageDay struct {
	// Date is the day, YYYY-MM-DD.
	Date string `json:"date"`
	// UsageCounts are the day's counts, members of the day's JSON object.
	UsageCounts
}

// UsageCounts are the counts of a day or of a Usage's total. The zero UsageCounts is
// a day of no checks.
type UsageCounts struct {
	// Allowed counts the checks allowed that took tokens.
	Allowed int64 `json:"allowed"`
	// Limited counts the checks denied.
	Limited int64 `json:"limited"`
	// Cost is the tokens the allowed checks took, a reserve's estimate corrected by its
	// settle (or cancel) on the day the settle is made: a day's cost may be below its
	// allowed checks, or below zero when its settles gave back what reserves of earlier
	// days took; a total over both days is what was used.
	Cost int64 `json:"cost"`
}

// RetryAfter returns RetryAfterMS as a Duration.
func (r Response) RetryAfter() time.Duration { return time.Duration(r.RetryAfterMS) * time.Millisecond }

// ResetAfter returns ResetAfterMS as a Duration.
func (r Response) ResetAfter() time.Duration { return time.Duration(r.ResetAfterMS) * time.Millisecond }
