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
	case !validName(r.Name, MaxRuleName):
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

// FillTime is how long r takes to refill from empty to Capacity. It saturates at the
// longest Duration; a valid rule fills within MaxFillTime.
func (r Rule) FillTime() time.Duration { return secondsToDuration(r.fillSeconds()) }

// fillSeconds is how long r takes to refill from empty to Capacity, in seconds: the
// same division bucket.lua makes to check the bound.
func (r Rule) fillSeconds() float64 { return float64(r.Capacity) / r.RefillPerSecond }

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

// secondsToDuration converts seconds to a Duration, saturating instead of overflowing.
func secondsToDuration(s float64) time.Duration {
	if s >= float64(math.MaxInt64)/float64(time.Second) {
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
