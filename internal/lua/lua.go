// Package lua holds bucketgate's Redis script, bucket.lua, embedded at build time, and
// names the positions of its KEYS, ARGV and reply. What each position means is written
// once, in bucket.lua's header; this file gives the positions the Go side reads and
// writes, and nothing on the Go side indexes the script's arguments or reply otherwise.
package lua

import (
	"crypto/sha1"
	_ "embed"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// bucketFile is bucket.lua as written, more than half of it comments.
//
//go:embed bucket.lua
var bucketFile string

// BucketSource is the text of the token-bucket decision script that Redis is sent (EVAL,
// SCRIPT LOAD): bucket.lua with each whole-line comment emptied, its line kept, so that
// a line Redis names in an error is the file's. A node that lost the script (a failover,
// a restart, SCRIPT FLUSH) gets it whole, without those comments' bytes.
var BucketSource = func() string {
	text, err := stripComments(bucketFile)
	if err != nil {
		panic("bucket.lua: " + err.Error())
	}
	return text
}()

// stripComments returns src with each line whose first characters but blanks are "--"
// emptied, its newline kept, and every other line as it is. It refuses a text it could
// misread so: with a long bracket ("[[", "[=": a long string or comment, inside which a
// line may start with "--"), or a line that ends with a backslash (a string that goes on
// on the next line).
func stripComments(src string) (string, error) {
	if strings.Contains(src, "[[") || strings.Contains(src, "[=") {
		return "", errors.New("a long string or comment ([[ or [=): its lines are not told from code")
	}
	lines := strings.Split(src, "\n")
	for i, line := range lines {
		if strings.HasSuffix(line, "\\") {
			return "", fmt.Errorf("line %d ends with a backslash: a string may go on on the next line", i+1)
		}
		if strings.HasPrefix(strings.TrimLeft(line, " \t"), "--") {
			lines[i] = ""
		}
	}
	return strings.Join(lines, "\n"), nil
}

// BucketSHA1 is the SHA-1 of BucketSource in hex: the name EVALSHA runs it by.
var BucketSHA1 = func() string {
	sum := sha1.Sum([]byte(BucketSource))
	return hex.EncodeToString(sum[:])
}()

// KEYS of bucket.lua, by index: the identity's state hash, and with usage (Args.Usage)
// or a hold (Args.Hold) its usage archive, and with a hold the record of the request or
// of its reservation (RecordInfix), all in the same cluster slot; a reset's resets
// (ResetSuffix) at KeyResetsOfReset, and a settle's that sends its reserve's time at
// KeyResetsOfSettle. KeysMax is the most keys a call has.
const (
	KeyState          = 0
	KeyUsage          = 1
	KeyRecord         = 2
	KeyResetsOfReset  = 1
	KeyResetsOfSettle = 3
	KeysMax           = KeyLeases + MaxLeaseRules
)

// ResetSuffix follows the state hash's key in the key of the identity's resets: a hash
// of one field per rule a reset named, its name, = when (Unix ms), which lives
// bucketgate.MaxTTL past the last reset. A settle below its estimate gives nothing back
// to a rule reset at or after its reserve: the reset refilled what the reserve took.
const ResetSuffix = ":reset"

// With a lease (LeaseMark), the last KEYS are the concurrency rules' sorted sets, in
// the hold's order: "<state key>" + LeaseInfix + the rule's name, a member per lease
// (its nonce) scored by its expiry (Unix ms of Redis's clock). KEYS[KeyUsage] comes
// before them only with usage or a record, KEYS[KeyRecord] only with a record. A call
// has MaxLeaseRules sets at most; KeyLeases is the index of the first set when every
// other key is given.
const (
	KeyLeases     = 3
	MaxLeaseRules = 8
	LeaseInfix    = ":c:"
)

// LeaseSetMark is the member of every concurrency rule's set beside its leases, scored
// by the set's expiry (Unix ms): the first multiple of LeaseSetMinute at least the
// expiry margin past the set's latest lease. It is no lease: it is never counted as one.
const LeaseSetMark = "~"

// LeaseSetMinute is the step of a set's expiry, in ms: the set expires on a whole
// minute (Unix time), so that most acquires leave its expiry as it is.
const LeaseSetMinute = 60_000

// LeaseSweepMax is the most expired members a call removes from a concurrency rule's
// set (the 100 written in bucket.lua): one call's work stays bounded however many
// leases expired unreleased (8 sets of 10000 once took one script 18 ms, every tenant of
// the server waiting). A call decides on the leases in flight, not the set's size, so
// the expired ones left for later calls neither deny a lease nor let one more in.
const LeaseSweepMax = 100

// LeaseMark starts the lease in ARGV's hold for a call with concurrency rules:
// "@<ttl>/<N1>/.../<Nm> <nonce>", the lease's ms to live, the most in flight of each
// concurrency rule in the order of their sets, and the lease's member; after any other
// hold and a space, so that a hold that starts with it is a lease alone.
// With OpRelease as the operation (and no other rule), the call releases the lease.
const LeaseMark = "@"

// OpRelease is ARGV's operation that releases a lease (LeaseMark's hold, ttl 0).
const OpRelease = "release"

// MaxConcurrency is the most in flight the script takes for a concurrency rule: the
// 10000 written in it.
const MaxConcurrency = 10000

// A release's reply: ReplyReleased, how many sets held the lease (0 when it was
// released before or expired), and ReplyReleaseNow, the Redis TIME (microseconds).
const (
	ReplyReleased   = 0
	ReplyReleaseNow = 1
	ReplyReleaseLen = 2
)

// RecordInfix and SettledInfix follow the state hash's key in a record's key, before its
// nonce: "<state key>:h:<nonce>" holds an idempotent request's decision, "<state
// key>:s:<nonce>" a settled reservation's outcome.
const (
	RecordInfix  = ":h:"
	SettledInfix = ":s:"
)

// SkipMark starts the last part of a settle's hold, " k<skip>": the rules its reserve
// took nothing from (those it was a shadow denial of, those it did not have), bit r for
// the script's rule r (0-based), which the settle gives nothing back and takes nothing
// more from.
const SkipMark = "k"

// SettlePrefix starts ARGV's operation, with a hold, for a settle at the actual cost
// that follows.
const SettlePrefix = "s"

// OpReset is ARGV's operation that removes every rule's state.
const OpReset = "reset"

// Args is the layout of ARGV for a call on Rules rules: the operation (left out when Op
// is false: a check of cost 1), the days usage is kept (only with Usage, which needs the
// operation), then two hash field names per rule (a bucket's tokens and stamp, a quota's
// count and window's end), then two numbers per rule (a bucket's capacity and refill per
// second, a quota's limit and period code; the first negated for a shadow rule), each
// group in the order of the rules. Indexes are 0-based, as a Go slice holds ARGV; r is
// the index of a rule, from 0 to Rules-1.
type Args struct {
	// Rules is how many rules the call decides.
	Rules int
	// Op reports whether ARGV starts with the operation; false for a check of cost 1
	// without usage.
	Op bool
	// Usage reports whether ARGV holds the days usage is kept after the operation: the
	// call counts a check that takes tokens in the identity's usage of the day.
	Usage bool
	// Hold reports whether ARGV holds, after the operation and the days usage is kept
	// ("0" for none), the hold (ArgHold): a settle, an idempotent request, or a lease
	// (LeaseMark) and perhaps one of the others.
	Hold bool
}

// ArgOp is the index in ARGV of the operation, when Args.Op: a check's cost (a whole
// number >= 0), a refund's tokens negated, or OpReset.
const ArgOp = 0

// ArgUsageDays is the index in ARGV of the days usage is kept (1 to MaxUsageDays), when
// Args.Usage; with Args.Hold, the same or "0" for none. A settle given the days corrects
// the cost of the day's usage by its actual cost less its estimate.
const ArgUsageDays = 1

// ArgHold is the index in ARGV of the hold, when Args.Hold: for a settle, "<estimate>
// <expiry> <life>", its reservation's estimate and expiry (Unix ms) and how long its
// record lives past that (ms), and when it gives back " <reserved>", its reserve's time
// (Unix ms: a rule reset since gives nothing back), then with a quota " <w1>,...,<wn>",
// each rule's window end (Unix s, 0 for a bucket) at its reserve; for an idempotent request, "<life> <fingerprint>"; with
// concurrency rules, the lease (LeaseMark), alone or after an idempotent request's and a
// space.
const ArgHold = 2

// Len is the length of ARGV.
func (a Args) Len() int { return a.fixed() + ArgsPerRule*a.Rules }

// fixed is how many values precede the rules' fields: the operation and the days usage
// is kept, the operation, or none.
func (a Args) fixed() int {
	switch {
	case a.Hold:
		return 3
	case a.Usage:
		return 2
	case a.Op:
		return 1
	}
	return 0
}

// TokensField is the index of rule r's first field name: a bucket's tokens (its name +
// TokensSuffix), a quota's count (its name + UsedSuffix).
func (a Args) TokensField(r int) int { return a.fixed() + fieldsPerRule*r }

// StampField is the index of rule r's second field name: a bucket's stamp (its name +
// StampSuffix), a quota's window's end (its name + EndSuffix).
func (a Args) StampField(r int) int { return a.TokensField(r) + 1 }

// Capacity is the index of rule r's capacity (a quota's limit), in whole tokens,
// negated for a shadow rule.
func (a Args) Capacity(r int) int { return a.fixed() + fieldsPerRule*a.Rules + numbersPerRule*r }

// Rate is the index of rule r's refill per second, or a quota's period code (PeriodDay,
// PeriodWeek, PeriodMonth less the anchor day).
func (a Args) Rate(r int) int { return a.Capacity(r) + 1 }

// How many values ARGV holds: at most ArgsFixed for the call (the operation, the days
// usage is kept, the hold), and ArgsPerRule for each rule (two field names, two numbers).
const (
	ArgsFixed      = 3
	ArgsPerRule    = fieldsPerRule + numbersPerRule
	fieldsPerRule  = 2
	numbersPerRule = 2
)

// TokensSuffix and StampSuffix follow a bucket's name in its two fields of the
// identity's hash: its tokens (a double) and the Redis TIME of its last write
// (microseconds). UsedSuffix and EndSuffix follow a quota's name in its two: what it
// admitted in its window (a whole number), and when the window ends (Unix seconds).
// LimitSuffix follows it in a third, written with the thresholds an admission reports
// (MarkReached80, MarkReached100): the limit they are of, whose marks a limit changed in
// the window does not heed.
const (
	TokensSuffix = ":tokens"
	StampSuffix  = ":ts"
	UsedSuffix   = ":used"
	EndSuffix    = ":end"
	LimitSuffix  = ":limit"
)

// Marks for events on a stamp or a window's end, which read as the same number:
// MarkLimited ('+') starts it once the rule's first denial in its window was reported;
// a quota's end ends with MarkReached80 once 80% of its limit was reported in its
// window, MarkReached100 once 100% also was.
const (
	MarkLimited    = '+'
	MarkReached80  = "e0"
	MarkReached100 = "E0"
)

// A quota's period code, its second number in ARGV: PeriodDay for a UTC day,
// PeriodWeek for a week from Monday, PeriodMonth - a for a month from day a (1 to 28).
const (
	PeriodDay   = -1
	PeriodWeek  = -7
	PeriodMonth = -100
)

// Usage fields in the identity's hash: UsagePrefix, the UTC day (days since 1970-01-01,
// in decimal), ':' and one of UsageAllowed (checks allowed), UsageExtra (the cost they
// took above one each: the cost admitted is allowed + extra, and a check of cost 1
// touches no extra field) and UsageLimited (checks limited), each a whole number. See
// UsageField.
const (
	UsagePrefix  = "u:"
	UsageAllowed = 'a'
	UsageExtra   = 'x'
	UsageLimited = 'l'
)

// MaxUsageDays is the most days of usage the script keeps: the 400 written in it.
const MaxUsageDays = 400

// UsageField returns the field of the identity's hash that holds what (UsageAllowed,
// UsageExtra or UsageLimited) of UTC day day, days since 1970-01-01: "u:20417:a".
func UsageField(day int64, what byte) string {
	return UsagePrefix + strconv.FormatInt(day, 10) + ":" + string(what)
}

// ExpiryMarginMillis is how long after every bucket written is full again bucket.lua
// lets a key expire, in milliseconds: the 1000 written in the script.
const ExpiryMarginMillis = 1000

// Reply layout of bucket.lua: ReplyLen integers at these indexes, and for a peek
// ReplyPerRule more per rule (see ReplyRuleLeft).
const (
	ReplyFlags   = 0 // allowed, binding rule, wait rule, shadow denials and remaining, packed as the Flags* constants say
	ReplyWait    = 1 // ms until an identical request could be allowed, rounded up; the retry-after when denied
	ReplyReset   = 2 // ms until every rule is full, rounded up
	ReplyNow     = 3 // the Redis TIME of the decision, in microseconds
	ReplyLen     = 4
	ReplyPerRule = 2
	// With a hold, two more: ReplyReplayed 1 when the answer is a first decision or
	// outcome given again (nothing written), ReplyHeld a settle's actual cost (0
	// otherwise).
	ReplyReplayed = 4
	ReplyHeld     = 5
	ReplyHoldLen  = 6
)

// ReplyRuleLeft is the index in a peek's reply of rule r's tokens (floor), or a quota's
// room (its limit less its count, 0 at least).
func ReplyRuleLeft(r int) int { return ReplyLen + ReplyPerRule*r }

// ReplyRuleReset is the index in a peek's reply of the ms until rule r is full again,
// or until a quota's window ends, rounded up.
func ReplyRuleReset(r int) int { return ReplyRuleLeft(r) + 1 }

// The fields of ReplyFlags, from its lowest bit: each is (flags >> Shift) & (1<<Bits - 1).
// The bits from FlagsReservedShift on are 0: kept for notices of later versions.
const (
	FlagsAllowedShift   = 0  // 1 allowed, 0 denied
	FlagsAllowedBits    = 1  //
	FlagsBindingShift   = 1  // 1-based index of the binding rule; 0 when every rule is shadow
	FlagsBindingBits    = 4  //
	FlagsWaitRuleShift  = 5  // 1-based index of the rule ReplyWait is for; 0 when the wait is 0
	FlagsWaitRuleBits   = 4  //
	FlagsDenialsShift   = 9  // the shadow rules that lacked cost tokens for an allowed check: bit r for rule r (0-based)
	FlagsDenialsBits    = 8  //
	FlagsRemainingShift = 17 // floor of the fewest tokens left after the decision (a quota's room)
	FlagsRemainingBits  = 30 //
	FlagsCrossedShift   = 47 // 1: the reply holds the crossings (ReplyCrossings)
	FlagsReservedShift  = 48 // 0
)

// ReplyCrossings is the index, in a reply with FlagsCrossedShift's bit set, of what the
// check crossed: bit CrossLimitedShift+r for rule r's first denial in its window,
// Cross80Shift+r and Cross100Shift+r for a quota's count reaching 80% and 100% of its
// limit; then ReplyPerRule integers per rule (see ReplyCrossingCount).
const (
	ReplyCrossings     = ReplyLen
	CrossLimitedShift  = 0
	Cross80Shift       = 16
	Cross100Shift      = 32
	CrossingsLenFixed  = 1 // the bits, before the rules' figures
	crossingsFirstRule = ReplyCrossings + CrossingsLenFixed
)

// ReplyCrossingCount is the index, in a reply with crossings, of rule r's first figure:
// a quota's count in its window, a bucket's floor of tokens (below 0 for a settle's
// debt); 0 for a rule that crossed nothing.
func ReplyCrossingCount(r int) int { return crossingsFirstRule + ReplyPerRule*r }

// ReplyCrossingEnd is the index, in a reply with crossings, of rule r's second figure:
// a quota's window's end (Unix seconds), the ms until a bucket is full (rounded up); 0
// for a rule that crossed nothing.
func ReplyCrossingEnd(r int) int { return ReplyCrossingCount(r) + 1 }

// Error replies of bucket.lua start with one of these, after Redis's "ERR ".
const (
	// ErrorPrefix starts the error reply for a bad argument: nothing was written.
	ErrorPrefix = "bucketgate:"
	// StateErrorPrefix starts the error reply for stored fields of the identity that the
	// script did not write (not finite numbers, half a rule): nothing was written.
	StateErrorPrefix = "bucketgate-state:"
	// HoldErrorPrefix starts the error reply for a reservation that expired, or a
	// requestId used first for another request: nothing was written.
	HoldErrorPrefix = "bucketgate-hold:"
)

// ArithmeticErrors are the texts by which Lua reports arithmetic on a value that is not
// a number: Redis's and Valkey's Lua 5.1, then miniredis's gopher-lua. bucket.lua's
// arithmetic reads the stored fields themselves, so that such an error is a stored
// field that is not a number, met before any write: like a StateErrorPrefix reply.
var ArithmeticErrors = []string{"attempt to perform arithmetic on", "cannot perform"}
