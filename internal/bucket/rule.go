package bucket

import (
	"errors"
	"fmt"
	"math"
	"time"
)

// ErrInvalid is wrapped by every error about a request or rule that can never be
// decided as given. Nothing is written to Redis for such a request.
var ErrInvalid = errors.New("invalid")

// Limits on rules and requests. They keep every figure the script computes an exact
// integer in a Lua double (below 2^53) and every key a sensible size.
const (
	// MaxRules is the most rules one request may carry.
	MaxRules = 8
	// MaxCapacity is the largest capacity of a rule, in tokens.
	MaxCapacity = 1_000_000_000
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
	// RefillPerSecond is the refill rate in tokens per second, > 0.
	RefillPerSecond float64 `json:"refillPerSecond"`
	// Shadow marks a rule that is decided and whose bucket evolves as if it were
	// enforced, but that never denies: a new limit tried on live traffic. False, the
	// zero value, is an enforced rule.
	Shadow bool `json:"shadow,omitempty"`
}

// Validate reports the first thing wrong with r, naming the field.
func (r Rule) Validate() error {
	switch {
	case !validName(r.Name):
		return fmt.Errorf("%w: name %q: want 1 to %d letters, digits, '_', '-' or '.'", ErrInvalid, r.Name, MaxRuleName)
	case r.Capacity < 1 || r.Capacity > MaxCapacity:
		return fmt.Errorf("%w: rule %s: capacity %d: want 1 to %d", ErrInvalid, r.Name, r.Capacity, MaxCapacity)
	case math.IsNaN(r.RefillPerSecond) || r.RefillPerSecond <= 0 || math.IsInf(r.RefillPerSecond, 0):
		return fmt.Errorf("%w: rule %s: refillPerSecond %v: want a finite number > 0", ErrInvalid, r.Name, r.RefillPerSecond)
	case r.FillTime() > MaxFillTime:
		return fmt.Errorf("%w: rule %s: refillPerSecond %v fills capacity %d in %v: want at most %v",
			ErrInvalid, r.Name, r.RefillPerSecond, r.Capacity, r.FillTime().Round(time.Second), MaxFillTime)
	}
	return nil
}

// FillTime is how long r takes to refill from empty to Capacity.
func (r Rule) FillTime() time.Duration {
	return secondsToDuration(float64(r.Capacity) / r.RefillPerSecond)
}

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

// Request asks for Cost tokens from every rule of Identity at once.
type Request struct {
	// Identity is whose buckets these are: 1 to MaxIdentity bytes, any bytes at all.
	Identity string
	// Rules are decided together, all or nothing: 1 to MaxRules, distinct names.
	Rules []Rule
	// Cost is the whole number of tokens to take from every rule, 0 to the smallest
	// capacity. The zero Cost is a peek: the decision without a write.
	Cost int64
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
	case q.Cost < 0:
		return fmt.Errorf("%w: cost %d: want 0 or more", ErrInvalid, q.Cost)
	}
	for i, r := range q.Rules {
		if err := r.Validate(); err != nil {
			return fmt.Errorf("rules[%d]: %w", i, err)
		}
		if q.Cost > r.Capacity {
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
