package bucketgate

import (
	"fmt"
	"strings"
	"time"
	"unicode/utf8"
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
	// OpReserve is a check of Cost tokens, the estimate of work whose cost is known only
	// after it, that, when allowed, holds them as a reservation for TTL:
	// Decision.Reservation is its id, which OpSettle and OpCancel take. A reservation
	// not settled within its TTL stays charged at its estimate.
	OpReserve
	// OpSettle settles the reservation ID at Cost, the actual cost: it gives back what
	// the estimate took beyond it, or takes the rest, which never fails (a bucket may go
	// down to minus its capacity, a quota over its limit by as much; later checks wait
	// until it has refilled). Settling again answers the first outcome and changes
	// nothing.
	OpSettle
	// OpCancel settles the reservation ID at 0: every token of its estimate back.
	OpCancel
	// OpRelease returns the lease ID (Decision.Lease) to the concurrency rules of Rules:
	// Decision.Released reports whether it was still held. Releasing again, or after
	// the lease's TTL, answers Released false and changes nothing. Its Cost is 0.
	OpRelease
)

// opNames are the operations' names, by Op.
var opNames = [...]string{OpCheck: "check", OpRefund: "refund", OpReset: "reset", OpUsage: "usage",
	OpReserve: "reserve", OpSettle: "settle", OpCancel: "cancel", OpRelease: "release"}

// opList lists the operations' names for an error: "check, refund, ... or cancel".
var opList = strings.Join(opNames[:len(opNames)-1], ", ") + " or " + opNames[len(opNames)-1]

// ErrConflict is wrapped by every error about a request that conflicts with what the
// limiter holds: a settle or a cancel of a reservation it did not make for the identity
// and a rule of the request (a bad id, or none made with it), or that expired (it stays
// charged at its estimate), a release of a lease it did not make for them, or a
// RequestID used first for another request. Nothing is written. Such a request can
// never be decided as given: errors.Is(err, ErrInvalid) holds too.
var ErrConflict error = conflict{}

// conflict is ErrConflict's type: an ErrInvalid too.
type conflict struct{}

func (conflict) Error() string        { return "conflict" }
func (conflict) Is(target error) bool { return target == ErrInvalid }

// unknownName is the error of reading a name that is none of an Op's or a Period's:
// an ErrInvalid, whose message is its own, with no "invalid: " before it.
type unknownName string

func (e unknownName) Error() string      { return string(e) }
func (unknownName) Is(target error) bool { return target == ErrInvalid }

// Reservations and idempotent requests.
const (
	// DefaultTTL is how long a reservation or a lease holds when its Request gives no
	// TTL.
	DefaultTTL = 5 * time.Minute
	// MaxTTL is the longest TTL of a reservation or a lease.
	MaxTTL = time.Hour
	// MaxRequestID is the longest RequestID, in bytes.
	MaxRequestID = 128
	// MaxID is the longest reservation or lease id, in bytes: more is not one the
	// limiter made. An id with MaxClaims of claims is shorter: it fits an HTTP header.
	MaxID = 512
	// MaxClaims is the most bytes of claims a reservation or lease id carries
	// (Request.Claims).
	MaxClaims = 256
	// MaxSettle is the largest actual cost a settle takes, in tokens: MaxCapacity,
	// beyond which a cost is not a measure of work but a mistake.
	MaxSettle = MaxCapacity
)

// String returns the operation's name as the check function spells it: check, refund,
// reset, usage, reserve, settle, cancel or release.
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
// there are, an ErrInvalid as MarshalText's is.
func (o *Op) UnmarshalText(name []byte) error {
	op, ok := ParseOp(string(name))
	if !ok {
		return unknownName(fmt.Sprintf("unknown operation %.64q: want %s", name, opList)) // its start: name may be megabytes
	}
	*o = op
	return nil
}

// Request is one operation on the buckets of Identity for Rules, decided atomically:
// by default a check of Cost tokens. The zero Request is invalid: it has no identity.
type Request struct {
	// Identity is whose buckets these are: 1 to MaxIdentity bytes, any bytes at all.
	Identity string
	// Rules are decided together, all or nothing: 1 to MaxRules, distinct names (valid
	// rule names, or KeyRuleName's of them for the own rules of an account's key),
	// buckets, quotas and concurrency rules alike. Shadow rules among them never deny
	// (see Rule.Shadow). A check of a cost that every rule allows acquires a lease of
	// every concurrency rule (Decision.Lease); a refund, a settle and a cancel leave
	// concurrency rules as they are, and a reserve, a refund, a settle and a cancel need
	// a bucket or a quota. A settle, a cancel or a release shares at least one rule (by
	// name and kind) with its reserve or acquire: it gives back to those alone.
	Rules []Rule
	// Cost is a whole number of tokens, at most every rule's Max: for OpCheck, the tokens
	// taken from every rule (the zero Cost is a peek: the decision without a write); for
	// OpReserve, the estimate, at least 1; for OpRefund, the tokens given back, at least
	// 1; for OpSettle, the actual cost, 0 to MaxSettle (more than any Max); for OpReset
	// and OpCancel, 0.
	Cost int64
	// Op is what the request does; the zero Op is OpCheck. OpUsage is no request's.
	Op Op
	// TTL is how long an OpReserve holds its reservation, and a check or reserve with
	// concurrency rules its lease: whole milliseconds, 1 ms to MaxTTL; zero means
	// DefaultTTL. Only those have one.
	TTL time.Duration
	// RequestID makes a request that takes or gives back tokens (a check of a cost, a
	// reserve, a refund) idempotent: Redis remembers it for the identity, and the same
	// RequestID again answers the first decision, Replayed, and writes nothing. 1 to
	// MaxRequestID bytes of UTF-8; empty for none. A settle and a cancel are idempotent
	// by their ID already: one given there is ignored.
	RequestID string
	// ID is the reservation an OpSettle or OpCancel settles (Decision.Reservation), or
	// the lease an OpRelease returns (Decision.Lease): 1 to MaxID bytes. Identity must be
	// the reserve's or the acquire's, and Rules share a rule (its name and kind) with
	// theirs. A release ignores a RequestID: releasing is idempotent already.
	ID string
	// Claims is what the reservation and lease ids of a request that holds something
	// (Holds: a reserve, or a check with a concurrency rule) carry besides, signed with
	// them, for whoever settles or releases by the id alone: what they need to find
	// the identity and the rules again (the authorizer's say where its rules came from).
	// The limiter never reads it. 0 to MaxClaims bytes; empty for none (an id then
	// carries only the reservation or lease).
	Claims string
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
	case q.Op == OpReserve && q.Cost == 0:
		return fmt.Errorf("%w: reserve of 0 tokens: want an estimate of 1 or more", ErrInvalid)
	case q.Op == OpSettle && q.Cost > MaxSettle:
		return fmt.Errorf("%w: settle at cost %d: want the actual cost, 0 to %d", ErrInvalid, q.Cost, MaxSettle)
	case (q.Op == OpReset || q.Op == OpCancel || q.Op == OpRelease) && q.Cost != 0:
		return fmt.Errorf("%w: %v with cost %d: a %v takes no cost", ErrInvalid, q.Op, q.Cost, q.Op)
	}
	if err := q.validateHold(); err != nil {
		return err
	}
	if err := q.validateLease(); err != nil {
		return err
	}
	for i, r := range q.Rules {
		own := r // a key's own rule (KeyRuleName) is valid as its rule is
		if name, ok := cutKeyRule(r.Name); ok {
			own.Name = name
		}
		if err := own.Validate(); err != nil {
			return fmt.Errorf("rules[%d]: %w", i, err)
		}
		switch {
		case q.Op == OpSettle || r.IsConcurrency() || r.Shadow || q.Cost <= r.Max():
		case q.Op == OpRefund:
			return fmt.Errorf("%w: refund %d exceeds %s %d of rule %s", ErrInvalid, q.Cost, r.MaxName(), r.Max(), r.Name)
		case q.Op == OpReserve: // the estimate: a route's reserve, which has no cost
			return fmt.Errorf("%w: reserve of %d tokens exceeds %s %d of rule %s: it could never be allowed", ErrInvalid, q.Cost, r.MaxName(), r.Max(), r.Name)
		default:
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

// validateHold reports the first thing wrong with q's TTL, RequestID and ID.
func (q Request) validateHold() error {
	byID := q.Op == OpSettle || q.Op == OpCancel || q.Op == OpRelease
	switch {
	case q.TTL != 0 && !q.Holds():
		return fmt.Errorf("%w: ttl with a %v: only a reserve, or a check with a concurrency rule, holds anything", ErrInvalid, q.writes())
	case q.TTL < 0 || q.TTL > MaxTTL || q.TTL%time.Millisecond != 0:
		return fmt.Errorf("%w: ttl %v: want whole milliseconds from 1ms to %v (0 for %v)", ErrInvalid, q.TTL, MaxTTL, DefaultTTL)
	case q.RequestID != "" && (q.Op == OpReset || q.Op == OpCheck && q.Cost == 0):
		return fmt.Errorf("%w: requestId with a %s: it comes out the same however often it runs", ErrInvalid, q.writes())
	case len(q.RequestID) > MaxRequestID:
		return fmt.Errorf("%w: requestId of %d bytes: want 1 to %d", ErrInvalid, len(q.RequestID), MaxRequestID)
	case !utf8.ValidString(q.RequestID):
		return fmt.Errorf("%w: requestId is not UTF-8 text", ErrInvalid)
	case byID && q.ID == "":
		return fmt.Errorf("%w: %v without the id of its %s", ErrInvalid, q.Op, q.idName())
	case !byID && q.ID != "":
		return fmt.Errorf("%w: an id with a %v: only settle, cancel and release take one", ErrInvalid, q.Op)
	case len(q.ID) > MaxID:
		return fmt.Errorf("%w: id of %d bytes: want at most %d", ErrInvalid, len(q.ID), MaxID)
	case q.Claims != "" && !q.Holds():
		return fmt.Errorf("%w: claims with a %v: only the ids of a reserve or an acquire carry them", ErrInvalid, q.writes())
	case len(q.Claims) > MaxClaims:
		return fmt.Errorf("%w: claims of %d bytes: want at most %d", ErrInvalid, len(q.Claims), MaxClaims)
	}
	return nil
}

// validateLease reports the first thing wrong with q's concurrency rules: a release
// needs one, and a reserve, a refund, a settle and a cancel a bucket or a quota.
func (q Request) validateLease() error {
	var leases int
	for _, r := range q.Rules {
		if r.IsConcurrency() {
			leases++
		}
	}
	switch {
	case q.Op == OpRelease && leases == 0:
		return fmt.Errorf("%w: release without a concurrency rule: a lease is returned to the concurrency rules that gave it", ErrInvalid)
	case leases == len(q.Rules) && (q.Op == OpReserve || q.Op == OpRefund || q.Op == OpSettle || q.Op == OpCancel):
		return fmt.Errorf("%w: %v with concurrency rules alone: it needs a bucket or a quota", ErrInvalid, q.Op)
	}
	return nil
}

// Holds reports whether q holds something for a TTL: a reserve holds its reservation,
// and a check of a cost (or a reserve) with a concurrency rule acquires a lease.
func (q Request) Holds() bool { return q.Op == OpReserve || q.Acquires() }

// Acquires reports whether q, when allowed, acquires a lease: a check of a cost, or a
// reserve, with a concurrency rule.
func (q Request) Acquires() bool {
	if q.Op != OpReserve && (q.Op != OpCheck || q.Cost == 0) {
		return false
	}
	for _, r := range q.Rules {
		if r.IsConcurrency() {
			return true
		}
	}
	return false
}

// idName names what q's ID is, for a message: "lease" or "reservation".
func (q Request) idName() string {
	if q.Op == OpRelease {
		return "lease"
	}
	return "reservation"
}

// writes names q's operation for a message: "peek" for a check of cost 0.
func (q Request) writes() string {
	if q.Op == OpCheck && q.Cost == 0 {
		return "peek"
	}
	return q.Op.String()
}
