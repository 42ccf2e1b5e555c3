package bucketgate

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// ErrInvalid is wrapped by every error about a request or rule that can never be
// decided as given. Nothing is written to Redis for such a request.
var ErrInvalid = errors.New("invalid")

// Limits on rules and requests. They keep every figure the script computes an exact
// integer in a Lua double (below 2^53) and every key a sensible size. bucket.lua holds
// the bounds of a rule (capacity, refill per second, fill time) to the same figures, so
// that a rule this package accepts is one every Redis, Valkey and miniredis accepts.
const (
	// MaxRules is the most rules one request may carry.
	MaxRules = 8
	// MaxCapacity is the largest capacity of a rule, in tokens.
	MaxCapacity = 1_000_000_000
	// MaxRefillPerSecond is the fastest refill of a rule, in tokens per second: a
	// bucket of MaxCapacity tokens refilled within a second.
	MaxRefillPerSecond = 1e9
	// MaxFillTime is the longest time an empty bucket may take to fill again
	// (capacity / refill per second): a bucket that fills in a year fits, a slower one
	// does not. A quota on the calendar has no fill time.
	MaxFillTime = 366 * 24 * time.Hour
	// maxFillSeconds is the bound Validate and bucket.lua hold capacity / refill per
	// second to: MaxFillTime and a microsecond, so that a rate written as refill tokens
	// per period that fills in exactly MaxFillTime (4026 tokens, 11 a day) is accepted
	// although the division rounds a little above it. The literal is bucket.lua's too.
	maxFillSeconds = 31622400.000001
	// MaxRuleName is the longest rule name, in bytes.
	MaxRuleName = 64
	// MaxIdentity is the longest identity, in bytes.
	MaxIdentity = 1024
	// MaxConcurrency is the most requests in flight a concurrency rule may allow.
	MaxConcurrency = 10_000
)

// Rule is one limit of a request: a token bucket (Capacity and RefillPerSecond), a
// quota on the calendar (Limit, Period and Anchor), or a limit of requests in flight
// (Concurrency). The zero Rule is invalid.
//
// A token bucket holds Capacity tokens at most (the burst), refilled continuously at
// RefillPerSecond tokens per second (fractions allowed: 1000 per day is 1000/86400). A
// new bucket starts full.
//
// A quota admits Limit tokens at most in each window of its Period (a UTC day, a week
// from Monday, or a month from day Anchor), counting what it admitted since the window
// began; it starts at 0 in every window, with nothing refilled in between.
//
// A concurrency rule admits Concurrency requests in flight at most: a check it admits
// holds a lease (Decision.Lease) until OpRelease returns it or its TTL ends.
type Rule struct {
	// Name identifies the rule's state together with the identity: the same name in
	// two requests of one identity is one bucket (or one quota). Letters, digits, '_',
	// '-' and '.'.
	Name string `json:"name"`
	// Capacity is a bucket's burst size in whole tokens, 1 to MaxCapacity; 0 for a quota.
	Capacity int64 `json:"capacity,omitempty"`
	// RefillPerSecond is a bucket's refill rate in tokens per second, above 0 and at
	// most MaxRefillPerSecond, such that the bucket fills within MaxFillTime; 0 for a
	// quota.
	RefillPerSecond float64 `json:"refillPerSecond,omitempty"`
	// Limit is a quota's most tokens per window, 1 to MaxCapacity; 0 for a bucket.
	Limit int64 `json:"limit,omitempty"`
	// Period is a quota's window: PeriodDay, PeriodWeek or PeriodMonth. PeriodNone, the
	// zero value, makes the rule a bucket.
	Period Period `json:"period,omitempty"`
	// Anchor is the day of the month, 1 to MaxAnchor, on which a monthly quota's
	// windows begin (the billing day); 0 means 1. Only a monthly quota has one. (A byte,
	// so that a Rule stays 48 bytes: registry cache entries hold many.)
	Anchor uint8 `json:"anchor,omitempty"`
	// Shadow marks a rule that is decided and whose state evolves as if it were
	// enforced, but that never denies: a new limit tried on live traffic. A check is
	// allowed or denied by the enforced rules alone, and its Decision describes them
	// alone. When they allow it, a shadow rule holding Cost tokens gives them, and one
	// holding fewer (a Cost above its capacity included) gives nothing and is named in
	// Decision.ShadowLimited; when they deny it, nothing is written, shadow rules
	// included. False, the zero value, is an enforced rule.
	Shadow bool `json:"shadow,omitempty"`
	// Concurrency is a concurrency rule's most requests in flight, 1 to
	// MaxConcurrency; 0 for a bucket or a quota. Such a rule has no other number and is
	// never shadow. (An int32, so that a Rule stays 48 bytes.)
	Concurrency int32 `json:"concurrency,omitempty"`
}

// IsQuota reports whether r is a quota on the calendar (it has a Period) rather than a
// token bucket.
func (r Rule) IsQuota() bool { return r.Period != PeriodNone }

// IsConcurrency reports whether r limits requests in flight (it has a Concurrency)
// rather than tokens.
func (r Rule) IsConcurrency() bool { return r.Concurrency != 0 }

// Max is the most tokens r holds: a bucket's Capacity, a quota's Limit; a concurrency
// rule's requests in flight. No request of a bucket or quota may cost more, and a
// Decision whose binding rule is r has it as its Limit. Of a rule that Validate
// refuses it is that field as it is, 0 or below 0 too.
func (r Rule) Max() int64 {
	switch {
	case r.IsQuota():
		return r.Limit
	case r.IsConcurrency():
		return int64(r.Concurrency)
	}
	return r.Capacity
}

// MaxName names what Max is for r, for a message: "capacity", "limit" or
// "concurrency".
func (r Rule) MaxName() string {
	switch {
	case r.IsQuota():
		return "limit"
	case r.IsConcurrency():
		return "concurrency"
	}
	return "capacity"
}

// Validate reports the first thing wrong with r, naming the field.
func (r Rule) Validate() error {
	if !validName(r.Name, MaxRuleName) {
		return fmt.Errorf("%w: name %.*q: want 1 to %d letters, digits, '_', '-' or '.'", ErrInvalid, MaxRuleName+1, r.Name, MaxRuleName) // enough to see it is too long
	}
	if r.IsConcurrency() {
		return r.validateConcurrency()
	}
	if r.IsQuota() {
		return r.validateQuota()
	}
	switch {
	case r.Limit != 0 || r.Anchor != 0:
		return fmt.Errorf("%w: rule %s: a limit or an anchor without a period: a quota needs a period (day, week or month), a bucket has a capacity and a refillPerSecond instead", ErrInvalid, r.Name)
	case r.Capacity < 1 || r.Capacity > MaxCapacity:
		return fmt.Errorf("%w: rule %s: capacity %d: want 1 to %d", ErrInvalid, r.Name, r.Capacity, MaxCapacity)
	case !(r.RefillPerSecond > 0 && r.RefillPerSecond <= MaxRefillPerSecond): // NaN fails too
		return fmt.Errorf("%w: rule %s: refillPerSecond %v: want a number above 0 and at most %g", ErrInvalid, r.Name, r.RefillPerSecond, MaxRefillPerSecond)
	case r.fillSeconds() > maxFillSeconds:
		return fmt.Errorf("%w: rule %s: refillPerSecond %v fills capacity %d in %s: want at most %v",
			ErrInvalid, r.Name, r.RefillPerSecond, r.Capacity, formatSeconds(r.fillSeconds()), MaxFillTime)
	}
	return nil
}

// KeyRuleName returns the name by which a request of an account names the rule called
// name of one of the account's API keys, the key of digest: "<digest>/<name>". A key's
// own rules limit that key alone, in the same atomic call as the account's rules: their
// state lives in the account's hash beside the account's rules, apart from them and
// from every other key's, and the headers and answers name them so. No rule of a
// configuration document, a registry item or a check can have such a name ('/' is none
// of a rule name's characters), so none shares such a rule's bucket. A request's rule
// names are valid rule names, or such names of valid rule names.
func KeyRuleName(digest, name string) string { return digest + keyRuleSeparator + name }

// keyRuleSeparator separates the digest from the rule's name in KeyRuleName.
const keyRuleSeparator = "/"

// cutKeyRule returns the rule's own name of a KeyRuleName, and false for any other name.
func cutKeyRule(name string) (string, bool) {
	digest, rule, ok := strings.Cut(name, keyRuleSeparator)
	return rule, ok && ValidDigest(digest)
}

// validateQuota reports the first thing wrong with quota r, naming the field.
func (r Rule) validateQuota() error {
	switch {
	case int(r.Period) >= len(periodNames):
		return fmt.Errorf("%w: rule %s: period %v: want day, week or month", ErrInvalid, r.Name, r.Period)
	case r.Capacity != 0 || r.RefillPerSecond != 0:
		return fmt.Errorf("%w: rule %s: a quota (period %v) has a limit, not a capacity or a refillPerSecond", ErrInvalid, r.Name, r.Period)
	case r.Limit < 1 || r.Limit > MaxCapacity:
		return fmt.Errorf("%w: rule %s: limit %d: want 1 to %d", ErrInvalid, r.Name, r.Limit, MaxCapacity)
	case r.Anchor != 0 && r.Period != PeriodMonth:
		return fmt.Errorf("%w: rule %s: anchor %d with period %v: only a monthly quota has an anchor", ErrInvalid, r.Name, r.Anchor, r.Period)
	case r.Anchor > MaxAnchor:
		return fmt.Errorf("%w: rule %s: anchor %d: want a day of the month from 1 to %d", ErrInvalid, r.Name, r.Anchor, MaxAnchor)
	}
	return nil
}

// validateConcurrency reports the first thing wrong with concurrency rule r, naming the
// field.
func (r Rule) validateConcurrency() error {
	switch {
	case r.Concurrency < 1 || r.Concurrency > MaxConcurrency:
		return fmt.Errorf("%w: rule %s: concurrency %d: want 1 to %d", ErrInvalid, r.Name, r.Concurrency, MaxConcurrency)
	case r.Capacity != 0 || r.RefillPerSecond != 0 || r.Limit != 0 || r.Period != PeriodNone || r.Anchor != 0:
		return fmt.Errorf("%w: rule %s: a concurrency rule has no capacity, refillPerSecond, limit, period or anchor", ErrInvalid, r.Name)
	case r.Shadow:
		return fmt.Errorf("%w: rule %s: a concurrency rule cannot be shadow", ErrInvalid, r.Name)
	}
	return nil
}

// SameKind reports whether a and b are of one kind, both buckets, both quotas or both
// concurrency rules: what a rule name must keep wherever it appears, since it names one
// state of an identity.
func SameKind(a, b Rule) bool {
	return a.IsQuota() == b.IsQuota() && a.IsConcurrency() == b.IsConcurrency()
}

// FillTime is how long bucket r takes to refill from empty to Capacity. It saturates at
// the longest Duration, which it also gives for a bucket that never refills (a
// RefillPerSecond of 0, below 0 or NaN, as the zero Rule's: never full, as
// x/time/rate's InfDuration for a limit of 0 or less); one of no Capacity (0 or less)
// is full at once: 0. A valid bucket fills within MaxFillTime. A quota and a
// concurrency rule have none: 0.
func (r Rule) FillTime() time.Duration {
	switch {
	case r.IsQuota() || r.IsConcurrency():
		return 0
	case !(r.RefillPerSecond > 0): // NaN too
		return time.Duration(math.MaxInt64)
	case r.Capacity <= 0:
		return 0
	}
	return secondsToDuration(r.fillSeconds())
}

// fillSeconds is how long r takes to refill from empty to Capacity, in seconds: the
// same division bucket.lua makes to check the bound.
func (r Rule) fillSeconds() float64 {
	if r.IsQuota() || r.IsConcurrency() {
		return 0
	}
	return float64(r.Capacity) / r.RefillPerSecond
}

// validName reports whether name is 1 to maxLen letters, digits, '_', '-' or '.': a
// rule's name, or an account's.
func validName(name string, maxLen int) bool {
	if len(name) == 0 || len(name) > maxLen {
		return false
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '_' || c == '-' || c == '.') {
			return false
		}
	}
	return true
}

// secondsToDuration converts seconds to a Duration, saturating instead of overflowing
// (NaN, 0/0 of the zero Rule, saturates too: Go leaves its conversion to the platform).
func secondsToDuration(s float64) time.Duration {
	if !(s < float64(math.MaxInt64)/float64(time.Second)) { // NaN too
		return time.Duration(math.MaxInt64)
	}
	return time.Duration(s * float64(time.Second))
}

// formatSeconds writes s seconds as a Duration rounded to the second, or, beyond the
// longest Duration, in seconds with four significant digits.
func formatSeconds(s float64) string {
	if s >= float64(math.MaxInt64)/float64(time.Second) {
		return strconv.FormatFloat(s, 'g', 4, 64) + "s"
	}
	return secondsToDuration(s).Round(time.Second).String()
}
