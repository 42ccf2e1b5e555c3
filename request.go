package bucketgate

import (
	"fmt"
	"strings"
)

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
	// whatever rules it names. A quota's count in its current window goes down by Cost,
	// to 0 at least; a window that has ended has nothing to give back.
	OpRefund
	// OpReset makes every rule full again by removing its state (the identity's key goes
	// with its last rule). Its Cost is 0.
	OpReset
	// OpUsage reads an identity's usage by UTC day (requests allowed and limited, cost
	// admitted): a report, not a decision, so no Request has it (Validate refuses it).
	// The check function takes it by name.
	OpUsage
)

// opNames are the operations' names, by Op.
var opNames = [...]string{OpCheck: "check", OpRefund: "refund", OpReset: "reset", OpUsage: "usage"}

// opList lists the operations' names for an error: "check, refund, reset or usage".
var opList = strings.Join(opNames[:len(opNames)-1], ", ") + " or " + opNames[len(opNames)-1]

// String returns the operation's name as the check function spells it: check, refund,
// reset or usage.
func (o Op) String() string {
	if int(o) < len(opNames) {
		return opNames[o]
	}
	return fmt.Sprintf("Op(%d)", uint8(o))
}

// ParseOp returns the operation called name (exactly, as String spells it).
func ParseOp(name string) (Op, bool) {
	for o, n := range opNames {
		if n == name {
			return Op(o), true
		}
	}
	return 0, false
}

// MarshalText returns the operation's name; an unknown Op is an error.
func (o Op) MarshalText() ([]byte, error) {
	if int(o) >= len(opNames) {
		return nil, fmt.Errorf("%w: operation %v", ErrInvalid, o)
	}
	return []byte(opNames[o]), nil
}

// UnmarshalText reads an operation's name; an unknown one is an error naming those
// there are.
func (o *Op) UnmarshalText(name []byte) error {
	op, ok := ParseOp(string(name))
	if !ok {
		return fmt.Errorf("unknown operation %q: want %s", name, opList)
	}
	*o = op
	return nil
}

// Request is one operation on the buckets of Identity for Rules, decided atomically:
// by default a check of Cost tokens.
type Request struct {
	// Identity is whose buckets these are: 1 to MaxIdentity bytes, any bytes at all.
	Identity string
	// Rules are decided together, all or nothing: 1 to MaxRules, distinct names (valid
	// rule names, or KeyRuleName's of them for the own rules of an account's key),
	// buckets and quotas alike. Shadow rules among them never deny (see Rule.Shadow).
	Rules []Rule
	// Cost is a whole number of tokens, at most every rule's Max: for OpCheck, the
	// tokens taken from every rule (the zero Cost is a peek: the decision without a
	// write); for OpRefund, the tokens given back, at least 1; for OpReset, 0.
	Cost int64
	// Op is what the request does; the zero Op is OpCheck. OpUsage is no request's.
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
	case int(q.Op) >= len(opNames):
		return fmt.Errorf("%w: operation %v: want %s", ErrInvalid, q.Op, opList)
	case q.Op == OpUsage:
		return fmt.Errorf("%w: operation usage reads a report, not a decision", ErrInvalid)
	case q.Cost < 0:
		return fmt.Errorf("%w: cost %d: want 0 or more", ErrInvalid, q.Cost)
	case q.Op == OpRefund && q.Cost == 0:
		return fmt.Errorf("%w: refund of 0 tokens: want 1 or more", ErrInvalid)
	case q.Op == OpReset && q.Cost != 0:
		return fmt.Errorf("%w: reset with cost %d: a reset takes no cost", ErrInvalid, q.Cost)
	}
	for i, r := range q.Rules {
		own := r // a key's own rule (KeyRuleName) is valid as its rule is
		if name, ok := cutKeyRule(r.Name); ok {
			own.Name = name
		}
		if err := own.Validate(); err != nil {
			return fmt.Errorf("rules[%d]: %w", i, err)
		}
		if q.Cost > r.Max() {
			if q.Op == OpRefund {
				return fmt.Errorf("%w: refund %d exceeds %s %d of rule %s", ErrInvalid, q.Cost, r.MaxName(), r.Max(), r.Name)
			}
			return fmt.Errorf("%w: cost %d exceeds %s %d of rule %s: it could never be allowed", ErrInvalid, q.Cost, r.MaxName(), r.Max(), r.Name)
		}
		for _, earlier := range q.Rules[:i] {
			if earlier.Name == r.Name {
				return fmt.Errorf("%w: rule %s appears twice", ErrInvalid, r.Name)
			}
		}
	}
	return nil
}
