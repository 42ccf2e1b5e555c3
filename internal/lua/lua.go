// Package lua holds bucketgate's Redis script, bucket.lua, embedded at build time, and
// names the positions of its KEYS, ARGV and reply. What each position means is written
// once, in bucket.lua's header; this file gives the positions the Go side reads and
// writes, and nothing on the Go side indexes the script's arguments or reply otherwise.
package lua

import (
	"crypto/sha1"
	_ "embed"
	"encoding/hex"
)

// BucketSource is the text of bucket.lua, the token-bucket decision script.
//
//go:embed bucket.lua
var BucketSource string

// BucketSHA1 is the SHA-1 of BucketSource in hex: the name EVALSHA runs it by.
var BucketSHA1 = func() string {
	sum := sha1.Sum([]byte(BucketSource))
	return hex.EncodeToString(sum[:])
}()

// OpReset is ARGV's operation that removes every rule's state.
const OpReset = "reset"

// Args is the layout of ARGV for a call on Rules rules: the operation (left out when Op
// is false: a check of cost 1), then two hash field names per rule (its tokens, its
// stamp), then two numbers per rule (its capacity, negated for a shadow rule, and its
// refill per second), each group in the order of the rules. Indexes are 0-based, as a Go
// slice holds ARGV; r is the index of a rule, from 0 to Rules-1.
type Args struct {
	// Rules is how many rules the call decides.
	Rules int
	// Op reports whether ARGV starts with the operation; false for a check of cost 1.
	Op bool
}

// ArgOp is the index in ARGV of the operation, when Args.Op: a check's cost (a whole
// number >= 0), a refund's tokens negated, or OpReset.
const ArgOp = 0

// Len is the length of ARGV.
func (a Args) Len() int { return a.fixed() + ArgsPerRule*a.Rules }

// fixed is how many values precede the rules' fields: the operation, or none.
func (a Args) fixed() int {
	if a.Op {
		return 1
	}
	return 0
}

// TokensField is the index of rule r's tokens field name (its name + TokensSuffix).
func (a Args) TokensField(r int) int { return a.fixed() + fieldsPerRule*r }

// StampField is the index of rule r's stamp field name (its name + StampSuffix).
func (a Args) StampField(r int) int { return a.TokensField(r) + 1 }

// Capacity is the index of rule r's capacity, in whole tokens, negated for a shadow rule.
func (a Args) Capacity(r int) int { return a.fixed() + fieldsPerRule*a.Rules + numbersPerRule*r }

// Rate is the index of rule r's refill per second.
func (a Args) Rate(r int) int { return a.Capacity(r) + 1 }

// How many values ARGV holds: at most ArgsFixed for the call (the operation), and
// ArgsPerRule for each rule (two field names, two numbers).
const (
	ArgsFixed      = 1
	ArgsPerRule    = fieldsPerRule + numbersPerRule
	fieldsPerRule  = 2
	numbersPerRule = 2
)

// TokensSuffix and StampSuffix follow a rule's name in its two fields of the identity's
// hash: its tokens (a double) and the Redis TIME of its last write (microseconds).
const (
	TokensSuffix = ":tokens"
	StampSuffix  = ":ts"
)

// ExpiryMarginMillis is how long after every bucket written is full again bucket.lua
// lets a key expire, in milliseconds: the 1000 written in the script.
const ExpiryMarginMillis = 1000

// Reply layout of bucket.lua: ReplyLen integers at these indexes.
const (
	ReplyFlags = 0 // allowed, binding rule, wait rule, shadow denials and remaining, packed as the Flags* constants say
	ReplyWait  = 1 // ms until an identical request could be allowed, rounded up; the retry-after when denied
	ReplyReset = 2 // ms until every rule is full, rounded up
	ReplyNow   = 3 // the Redis TIME of the decision, in microseconds
	ReplyLen   = 4
)

// The fields of ReplyFlags, from its lowest bit: each is (flags >> Shift) & (1<<Bits - 1),
// remaining takes every bit from FlagsRemainingShift on.
const (
	FlagsAllowedShift   = 0  // 1 allowed, 0 denied
	FlagsAllowedBits    = 1  //
	FlagsBindingShift   = 1  // 1-based index of the binding rule; 0 when every rule is shadow
	FlagsBindingBits    = 4  //
	FlagsWaitRuleShift  = 5  // 1-based index of the rule ReplyWait is for; 0 when the wait is 0
	FlagsWaitRuleBits   = 4  //
	FlagsDenialsShift   = 9  // the shadow rules that lacked cost tokens for an allowed check: bit r for rule r (0-based)
	FlagsDenialsBits    = 8  //
	FlagsRemainingShift = 17 // floor of the fewest tokens left after the decision
)

// Error replies of bucket.lua start with one of these, after Redis's "ERR ".
const (
	// ErrorPrefix starts the error reply for a bad argument: nothing was written.
	ErrorPrefix = "bucketgate:"
	// StateErrorPrefix starts the error reply for stored fields of the identity that the
	// script did not write (not finite numbers, half a rule): nothing was written.
	StateErrorPrefix = "bucketgate-state:"
)

// ArithmeticErrors are the texts by which Lua reports arithmetic on a value that is not
// a number: Redis's and Valkey's Lua 5.1, then miniredis's gopher-lua. bucket.lua's
// arithmetic reads the stored fields themselves, so that such an error is a stored
// field that is not a number, met before any write: like a StateErrorPrefix reply.
var ArithmeticErrors = []string{"attempt to perform arithmetic on", "cannot perform"}
