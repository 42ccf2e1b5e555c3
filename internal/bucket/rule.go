package bucket

import (
	"errors"
	"fmt"
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
	// (capacity / refill per second): a yearly quota fits, a slower one does not.
	MaxFillTime = 366 * 24 * time.Hour
	// MaxRuleName is the longest rule name, in bytes.
	MaxRuleName = 64
	// MaxIdentity is the longest identity, in bytes.
	MaxIdentity = 1024
)

// Rule is one token bucket: Capacity tokens at most (the burst), refilled continuously
// at RefillPerSecond tokens per second (fractions allowed: 1000 per day is 1000/86400).
// A new bucket starts full. The zero Rule is invalid.
type Rule struct {
	// Name identifies the bucket together with the identity: the same name in two
	// requests of one identity is one bucket. Letters, digits, '_', '-' and '.'.
	Name string `json:"name"`
	// Capacity is the burst size in whole tokens, 1 to MaxCapacity.
	Capacity int64 `json:"capacity"`
	// RefillPerSecond is the refill rate in tokens per second, above 0 and at most
	// MaxRefillPerSecond, such that the bucket fills within MaxFillTime.
	RefillPerSecond float64 `json:"refillPerSecond"`
	// Shadow marks a rule that is decided and whose bucket evolves as if it were
	// enforced, but that never denies: a new limit tried on live traffic. A check is
	// allowed or denied by the enforced rules alone, and its Decision describes them
	// alone. When they allow it, a shadow rule holding Cost tokens gives them, and one
	// holding fewer gives nothing and is named in Decision.ShadowLimited; when they deny
	// it, nothing is written, shadow rules included. False, the zero value, is an
	// enforced rule.
	Shadow bool `json:"shadow,omitempty"`
}

// Validate reports the first thing wrong with r, naming the field.
func (r Rule) Validate() error {
	switch {
	case !validName(r.Name):
		return fmt.Errorf("%w: name %q: want 1 to %d letters, digits, '_', '-' or '.'", ErrInvalid, r.Name, MaxRuleName)
	case r.Capacity < 1 || r.Capacity > MaxCapacity:
		return fmt.Errorf("%w: rule %s: capacity %d: want 1 to %d", ErrInvalid, r.Name, r.Capacity, MaxCapacity)
	case !(r.RefillPerSecond > 0 && r.RefillPerSecond <= MaxRefillPerSecond): // NaN fails too
		return fmt.Errorf("%w: rule %s: refillPerSecond %v: want a number above 0 and at most %g", ErrInvalid, r.Name, r.RefillPerSecond, MaxRefillPerSecond)
	case r.fillSeconds() > MaxFillTime.Seconds():
		return fmt.Errorf("%w: rule %s: refillPerSecond %v fills capacity %d in %s: want at most %v",
			ErrInvalid, r.Name, r.RefillPerSecond, r.Capacity, formatSeconds(r.fillSeconds()), MaxFillTime)
	}
	return nil
}

// FillTime is how long r takes to refill from empty to Capacity. It saturates at the
// longest Duration; a valid rule fills within MaxFillTime.
func (r Rule) FillTime() time.Duration { return secondsToDuration(r.fillSeconds()) }

// fillSeconds is how long r takes to refill from empty to Capacity, in seconds: the
// same division bucket.lua makes to check the bound.
func (r Rule) fillSeconds() float64 { return float64(r.Capacity) / r.RefillPerSecond }

func validName(name string) bool {
	if len(name) == 0 || len(name) > MaxRuleName {
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

// Op is what a Request does to its buckets. The zero Op is OpCheck.
type Op uint8

// The operations of a Request.
const (
	// OpCheck asks for Cost tokens from every rule at once: allowed when every enforced
	// rule holds them, and then they are taken from every rule; otherwise nothing is
	// written. Cost 0 is a peek: the decision without a write.
	OpCheck Op = iota
	// OpRefund gives Cost tokens back to every rule that has state, never above its
	// capacity: for a request whose work failed downstream. A rule without state is
	// full and stays so. The tokens are added to what the rule stored at its last write,
	// at that write's time, and a rule that stored more than the request's capacity
	// (under a plan of a larger one) stays as it is: a refund never lowers a bucket,
	// whatever rules it names.
	OpRefund
	// OpReset makes every rule full again by removing its state (the identity's key goes
	// with its last rule). Its Cost is 0.
	OpReset
)

// String returns the operation's name as the check function spells it: check, refund
// or reset.
func (o Op) String() string {
	switch o {
	case OpCheck:
		return "check"
	case OpRefund:
		return "refund"
	case OpReset:
		return "reset"
	}
	return fmt.Sprintf("Op(%d)", uint8(o))
}

// Request is one operation on the buckets of Identity for Rules, decided atomically:
// by default a check of Cost tokens.
type Request struct {
	// Identity is whose buckets these are: 1 to MaxIdentity bytes, any bytes at all.
	Identity string
	// Rules are decided together, all or nothing: 1 to MaxRules, distinct names. Shadow
	// rules among them never deny (see Rule.Shadow).
	Rules []Rule
	// Cost is a whole number of tokens, at most the smallest capacity: for OpCheck, the
	// tokens taken from every rule (the zero Cost is a peek: the decision without a
	// write); for OpRefund, the tokens given back, at least 1; for OpReset, 0.
	Cost int64
	// Op is what the request does; the zero Op is OpCheck.
	Op Op
}

// Validate reports the first thing wrong with q, naming the field.
func (q Request) Validate() error {
	switch {
	case q.Identity == "":
		return fmt.Errorf("%w: identity is empty", ErrInvalid)
	case len(q.Identity) > MaxIdentity:
		return fmt.Errorf("%w: identity is %d bytes: want at most %d", ErrInvalid, len(q.Identity), MaxIdentity)
	case len(q.Rules) == 0:
		return fmt.Errorf("%w: no rules", ErrInvalid)
	case len(q.Rules) > MaxRules:
		return fmt.Errorf("%w: %d rules: want at most %d", ErrInvalid, len(q.Rules), MaxRules)
	case q.Op > OpReset:
		return fmt.Errorf("%w: operation %v: want check, refund or reset", ErrInvalid, q.Op)
	case q.Cost < 0:
		return fmt.Errorf("%w: cost %d: want 0 or more", ErrInvalid, q.Cost)
	case q.Op == OpRefund && q.Cost == 0:
		return fmt.Errorf("%w: refund of 0 tokens: want 1 or more", ErrInvalid)
	case q.Op == OpReset && q.Cost != 0:
		return fmt.Errorf("%w: reset with cost %d: a reset takes no cost", ErrInvalid, q.Cost)
	}
	for i, r := range q.Rules {
		if err := r.Validate(); err != nil {
			return fmt.Errorf("rules[%d]: %w", i, err)
		}
		if q.Cost > r.Capacity {
			if q.Op == OpRefund {
				return fmt.Errorf("%w: refund %d exceeds capacity %d of rule %s", ErrInvalid, q.Cost, r.Capacity, r.Name)
			}
			return fmt.Errorf("%w: cost %d exceeds capacity %d of rule %s: it could never be allowed", ErrInvalid, q.Cost, r.Capacity, r.Name)
		}
		for _, earlier := range q.Rules[:i] {
			if earlier.Name == r.Name {
				return fmt.Errorf("%w: rule %s appears twice", ErrInvalid, r.Name)
			}
		}
	}
	return nil
}
