// Package lua holds bucketgate's Redis scripts and their KEYS/ARGV contract.
//
// The scripts live in .lua files next to this one and are embedded at build time; the
// constants below name every position the Go side reads or writes, so the contract is
// spelled out once on each side (the script's header and this file).
package lua

import (
	_ "embed"

	"github.com/redis/rueidis"
)

// BucketSource is the text of bucket.lua, the token-bucket decision script.
//
//go:embed bucket.lua
var BucketSource string

// Argument layout of bucket.lua for n rules: ARGV[ArgCost], then from ArgFirstField the
// FieldsPerRule hash fields of each rule in turn (its name with TokensSuffix, then with
// StampSuffix), then NumbersPerRule numbers per rule in the same order (capacity, refill
// per second).
const (
	ArgCost        = 0 // whole tokens to take from every rule; 0 is a peek
	ArgFirstField  = 1 // index of the first rule's tokens field
	FieldsPerRule  = 2 // tokens field, stamp field
	NumbersPerRule = 2 // capacity, refill per second
)

// TokensSuffix and StampSuffix follow a rule's name in its two fields of the identity's
// hash: its tokens (a double) and the Redis TIME of its last write (microseconds).
const (
	TokensSuffix = ":tokens"
	StampSuffix  = ":ts"
)

// ExpiryMarginMillis is how long after every bucket written is full again bucket.lua
// lets a key expire, in milliseconds: the script's MARGIN.
const ExpiryMarginMillis = 1000

// Reply layout of bucket.lua: ReplyLen integers at these indexes.
const (
	ReplyAllowed   = 0 // 1 allowed, 0 denied
	ReplyBinding   = 1 // 1-based index of the binding rule
	ReplyRemaining = 2 // floor of the fewest tokens left after the decision
	ReplyWait      = 3 // ms until an identical request could be allowed, rounded up; the retry-after when denied
	ReplyReset     = 4 // ms until every rule is full, rounded up
	ReplyNow       = 5 // the Redis TIME of the decision, in microseconds
	ReplyWaitRule  = 6 // 1-based index of the rule ReplyWait is for; 0 when the wait is 0
	ReplyLen       = 7
)

// ErrorPrefix starts every error reply that bucket.lua returns for a bad argument.
const ErrorPrefix = "bucketgate:"

// NewBucket returns the decision script for rueidis: EVALSHA, then EVAL on NOSCRIPT.
// It is deliberately not a retrying variant: a retried consuming call could charge twice.
func NewBucket() *rueidis.Lua { return rueidis.NewLuaScript(BucketSource) }
