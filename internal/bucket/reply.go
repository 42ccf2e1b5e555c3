package bucket

import (
	"errors"
	"fmt"
	"time"

	"github.com/redis/rueidis"

	"github.com/bucketgate/bucketgate"
	"github.com/bucketgate/bucketgate/internal/lua"
)

// ErrBadReply is wrapped by every error about a script reply of the wrong shape or
// with values out of range. Such a reply is never taken as a decision.
var ErrBadReply = errors.New("malformed reply from redis")

// replyVals are the first integers of one script reply, at the indexes lua.Reply* names.
type replyVals [lua.ReplyLen]int64

// peek reports whether q is a peek: the script's reply to it has lua.ReplyPerRule more
// integers per rule.
func peek(q bucketgate.Request) bool { return q.Op == bucketgate.OpCheck && q.Cost == 0 }

// checks reports whether q is decided as a check: allowed or denied, with a wait.
func checks(q bucketgate.Request) bool {
	return q.Op == bucketgate.OpCheck || q.Op == bucketgate.OpReserve
}

// replyInts checks that reply is exactly the integers the script answers q with:
// lua.ReplyLen; for a peek lua.ReplyPerRule more per rule; with a hold two more
// (lua.ReplyHoldLen); with the crossed flag, the crossings and lua.ReplyPerRule more per
// rule (after a hold's two). It returns the first lua.ReplyLen, and the others.
func replyInts(reply []rueidis.RedisMessage, q bucketgate.Request) (replyVals, []int64, error) {
	var vals replyVals
	want := lua.ReplyLen
	switch {
	case holds(q):
		want = lua.ReplyHoldLen
	case peek(q):
		want += lua.ReplyPerRule * len(q.Rules)
	}
	if len(reply) > 0 {
		if flags, err := reply[lua.ReplyFlags].ToInt64(); err == nil && flag(flags, lua.FlagsCrossedShift, 1) == 1 {
			want = lua.ReplyCrossingCount(len(q.Rules) - leases(q.Rules))
			if holds(q) {
				want += lua.ReplyHoldLen - lua.ReplyLen
			}
		}
	}
	if len(reply) != want {
		return vals, nil, fmt.Errorf("%w: %d elements, want %d", ErrBadReply, len(reply), want)
	}
	var rest []int64
	if want > lua.ReplyLen {
		rest = make([]int64, want-lua.ReplyLen)
	}
	for i := range reply {
		v, err := reply[i].ToInt64()
		if err != nil {
			return vals, nil, fmt.Errorf("%w: element %d is not an integer: %w", ErrBadReply, i, err)
		}
		if i < lua.ReplyLen {
			vals[i] = v
		} else {
			rest[i-lua.ReplyLen] = v
		}
	}
	return vals, rest, nil
}

// flag returns the field of flags at shift, bits wide.
func flag(flags int64, shift, bits int) int64 { return flags >> shift & (1<<bits - 1) }

// maxWaitMillis is the latest, in milliseconds from now, that a reply's wait, reset, or
// a rule's time until full or until its window ends can be: a bucket's debt of its
// capacity refilled, twice the longest fill time (and a millisecond of rounding). A
// quota's window ends within a month, or later when a server whose clock was ahead
// began it (a failover to a replica behind): bucket.lua keeps a month's count until the
// end stored, however far, so the window is held to this bound too, not to a month.
const maxWaitMillis = 2*int64(bucketgate.MaxFillTime/time.Millisecond) + 1

// decodeReply turns the script's integers into a Decision for q, checking every value
// against what the script can return for q: vals, and a peek's rules' figures (rest).
func decodeReply(vals replyVals, rest []int64, q bucketgate.Request) (bucketgate.Decision, error) {
	flags := vals[lua.ReplyFlags]
	if flags < 0 || flags>>lua.FlagsReservedShift != 0 {
		return bucketgate.Decision{}, fmt.Errorf("%w: flags %d below zero or with reserved bits", ErrBadReply, flags)
	}
	allowed := flag(flags, lua.FlagsAllowedShift, lua.FlagsAllowedBits)
	binding := flag(flags, lua.FlagsBindingShift, lua.FlagsBindingBits)
	waitRule := flag(flags, lua.FlagsWaitRuleShift, lua.FlagsWaitRuleBits)
	denials := flag(flags, lua.FlagsDenialsShift, lua.FlagsDenialsBits)
	remaining := flag(flags, lua.FlagsRemainingShift, lua.FlagsRemainingBits)
	wait, reset, now := vals[lua.ReplyWait], vals[lua.ReplyReset], vals[lua.ReplyNow]
	n := int64(len(q.Rules))
	// An answer given again (replayed) is the first decision or outcome, whose rules a
	// plan may have made shadow or enforced since (same names, kinds and order: a
	// request's fingerprint), or, a settle's, changed otherwise (see bucket.lua's
	// Holds): its binding and wait rule may be shadow rules now, its shadow denials
	// enforced ones, and a settle's binding rule none, gone from q.
	replayed := holds(q) && rest[lua.ReplyReplayed-lua.ReplyLen] == 1
	enforced := func(r int64) bool { return r >= 1 && r <= n && (replayed || !q.Rules[r-1].Shadow) }
	var shadow int64 // the shadow rules of q, as the script's bit set
	for i, r := range q.Rules {
		if r.Shadow || replayed {
			shadow |= 1 << i
		}
	}
	if replayed && binding >= 1 && binding <= n {
		remaining = min(remaining, q.Rules[binding-1].Max()) // the first answer, under a larger plan
	}
	switch {
	case !checks(q) && allowed != 1:
		return bucketgate.Decision{}, fmt.Errorf("%w: allowed is %d for a %v", ErrBadReply, allowed, q.Op)
	case binding == 0 && shadow != 1<<n-1, binding != 0 && !enforced(binding):
		return bucketgate.Decision{}, fmt.Errorf("%w: binding rule %d, want an enforced rule from 1 to %d", ErrBadReply, binding, n)
	case binding != 0 && remaining > q.Rules[binding-1].Max() || binding == 0 && remaining != 0:
		return bucketgate.Decision{}, fmt.Errorf("%w: remaining %d out of range", ErrBadReply, remaining)
	case wait < 0 || wait > maxWaitMillis, allowed == 0 && wait == 0, !checks(q) && wait != 0:
		return bucketgate.Decision{}, fmt.Errorf("%w: wait %d ms with allowed %d for a %v", ErrBadReply, wait, allowed, q.Op)
	case (wait == 0) != (waitRule == 0), waitRule != 0 && !enforced(waitRule), allowed == 0 && waitRule != binding:
		return bucketgate.Decision{}, fmt.Errorf("%w: wait rule %d with wait %d ms, binding rule %d and allowed %d", ErrBadReply, waitRule, wait, binding, allowed)
	case reset < 0 || reset > maxWaitMillis, q.Op == bucketgate.OpReset && reset != 0:
		return bucketgate.Decision{}, fmt.Errorf("%w: reset after %d ms out of range", ErrBadReply, reset)
	case now <= 0:
		return bucketgate.Decision{}, fmt.Errorf("%w: server time %d", ErrBadReply, now)
	case denials&^shadow != 0, denials != 0 && (allowed == 0 || !checks(q) || q.Cost == 0):
		return bucketgate.Decision{}, fmt.Errorf("%w: shadow denials %b for shadow rules %b, allowed %d", ErrBadReply, denials, shadow, allowed)
	}
	d := newDecision(q, allowed == 1, int(binding-1), remaining, wait, reset, now, int(waitRule-1), bucketgate.RuleSet(denials))
	if holds(q) {
		d, err := heldReply(d, q, rest[lua.ReplyReplayed-lua.ReplyLen], rest[lua.ReplyHeld-lua.ReplyLen])
		if err != nil || flag(flags, lua.FlagsCrossedShift, 1) == 0 {
			return d, err
		}
		return decodeCrossings(d, rest[lua.ReplyHoldLen-lua.ReplyLen:], withoutLeases(q))
	}
	if flag(flags, lua.FlagsCrossedShift, 1) == 1 {
		return decodeCrossings(d, rest, withoutLeases(q))
	}
	if rest == nil {
		return d, nil
	}
	if allowed != 1 {
		return bucketgate.Decision{}, fmt.Errorf("%w: a peek denied", ErrBadReply)
	}
	d.Rules = make([]bucketgate.RuleState, len(q.Rules))
	for i, r := range q.Rules {
		left, full := rest[lua.ReplyRuleLeft(i)-lua.ReplyLen], rest[lua.ReplyRuleReset(i)-lua.ReplyLen]
		var bad bool
		if r.IsQuota() {
			bad = left < 0 || left > r.Limit || full < 1 || full > maxWaitMillis
		} else {
			bad = left < 0 || left > r.Capacity || full < 0 || full > maxWaitMillis || (left == r.Capacity) != (full == 0)
		}
		if bad {
			return bucketgate.Decision{}, fmt.Errorf("%w: rule %d (%s) left %d, full in %d ms", ErrBadReply, i+1, r.Name, left, full)
		}
		d.Rules[i] = bucketgate.RuleState{Remaining: left, ResetAfter: millisToDuration(full)}
	}
	return d, nil
}

// heldReply completes d, the decision on q with a hold, with the reply's two more
// values: replayed (0 or 1) and held, a settle's actual cost, else 0.
func heldReply(d bucketgate.Decision, q bucketgate.Request, replayed, held int64) (bucketgate.Decision, error) {
	switch {
	case replayed != 0 && replayed != 1:
		return bucketgate.Decision{}, fmt.Errorf("%w: replayed %d", ErrBadReply, replayed)
	case settles(q) && (held < 0 || held > bucketgate.MaxSettle || replayed == 0 && held != q.Cost), !settles(q) && held != 0:
		return bucketgate.Decision{}, fmt.Errorf("%w: %d settled for a %v", ErrBadReply, held, q.Op)
	}
	d.Replayed = replayed == 1
	d.Settled = held
	return d, nil
}

// decodeCrossings adds to d, the decision on q, the crossings of the script's reply (rest:
// its integers after the first lua.ReplyLen), checking that each is one q could cross:
// a first denial by an enforced rule of a denied check, a threshold of an enforced
// quota of an allowed one, and figures for those rules alone.
func decodeCrossings(d bucketgate.Decision, rest []int64, q bucketgate.Request) (bucketgate.Decision, error) {
	n := len(q.Rules)
	if len(rest) != lua.ReplyCrossingCount(n)-lua.ReplyLen {
		return bucketgate.Decision{}, fmt.Errorf("%w: crossings in %d more elements for %d rules", ErrBadReply, len(rest), n)
	}
	bits := rest[lua.ReplyCrossings-lua.ReplyLen]
	var limited, reached80, reached100 bucketgate.RuleSet
	if bits >= 0 {
		limited = bucketgate.RuleSet(flag(bits, lua.CrossLimitedShift, n))
		reached80 = bucketgate.RuleSet(flag(bits, lua.Cross80Shift, n))
		reached100 = bucketgate.RuleSet(flag(bits, lua.Cross100Shift, n))
	}
	if bits <= 0 || int64(limited)<<lua.CrossLimitedShift|int64(reached80)<<lua.Cross80Shift|int64(reached100)<<lua.Cross100Shift != bits ||
		!checks(q) && q.Op != bucketgate.OpSettle || q.Cost == 0 || d.Allowed && limited != 0 || !d.Allowed && reached80|reached100 != 0 {
		return bucketgate.Decision{}, fmt.Errorf("%w: crossings %b for a %v of cost %d, allowed %v", ErrBadReply, bits, q.Op, q.Cost, d.Allowed)
	}
	figs := make([]int64, 2*n)
	for i, r := range q.Rules {
		count, end := rest[lua.ReplyCrossingCount(i)-lua.ReplyLen], rest[lua.ReplyCrossingEnd(i)-lua.ReplyLen]
		figs[2*i], figs[2*i+1] = count, end
		crossed := limited.Has(i) || reached80.Has(i) || reached100.Has(i)
		var bad bool
		switch {
		case !crossed:
			bad = count != 0 || end != 0
		case r.Shadow, !r.IsQuota() && (reached80 | reached100).Has(i):
			bad = true
		case r.IsQuota():
			// A window's end is within a month of now; the count reached the threshold
			// it crossed.
			nowS := d.At.Unix()
			bad = count < 1 || count > maxStoredCount || end <= nowS || end > nowS+maxWaitMillis/1000+1 ||
				reached100.Has(i) && count < r.Limit || reached80.Has(i) && 5*count < 4*r.Limit
		default:
			bad = count < -bucketgate.MaxCapacity || count >= r.Capacity || end < 1 || end > maxWaitMillis // below 0: a settle's debt, of a capacity at most
		}
		if bad {
			return bucketgate.Decision{}, fmt.Errorf("%w: rule %d (%s) crossed with figures %d and %d", ErrBadReply, i+1, r.Name, count, end)
		}
	}
	d.Crossings = newCrossings(q, d.At, limited, reached80, reached100, figs)
	return d, nil
}

// maxStoredCount is the most a quota's count can be: its limit under any plan, and as
// much again, a settle's debt.
const maxStoredCount = 2 * bucketgate.MaxCapacity
