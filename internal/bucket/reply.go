package bucket

import (
	"errors"
	"fmt"

	"github.com/redis/rueidis"

	"github.com/bucketgate/bucketgate/internal/lua"
)

// ErrBadReply is wrapped by every error about a script reply of the wrong shape or
// with values out of range. Such a reply is never taken as a decision.
var ErrBadReply = errors.New("malformed reply from redis")

// replyInts checks that reply is exactly lua.ReplyLen integers and returns them.
func replyInts(reply []rueidis.RedisMessage) ([lua.ReplyLen]int64, error) {
	var vals [lua.ReplyLen]int64
	if len(reply) != lua.ReplyLen {
		return vals, fmt.Errorf("%w: %d elements, want %d", ErrBadReply, len(reply), lua.ReplyLen)
	}
	for i := range reply {
		v, err := reply[i].ToInt64()
		if err != nil {
			return vals, fmt.Errorf("%w: element %d is not an integer: %w", ErrBadReply, i, err)
		}
		vals[i] = v
	}
	return vals, nil
}

// decodeReply turns the script's integers into a Decision for q, checking every value
// against what the script can return for q.
func decodeReply(vals [lua.ReplyLen]int64, q Request) (Decision, error) {
	allowed, binding, remaining := vals[lua.ReplyAllowed], vals[lua.ReplyBinding], vals[lua.ReplyRemaining]
	wait, reset, now, waitRule := vals[lua.ReplyWait], vals[lua.ReplyReset], vals[lua.ReplyNow], vals[lua.ReplyWaitRule]
	n := int64(len(q.Rules))
	maxWait := MaxFillTime.Milliseconds() + 1
	switch {
	case allowed != 0 && allowed != 1:
		return Decision{}, fmt.Errorf("%w: allowed is %d, want 0 or 1", ErrBadReply, allowed)
	case binding < 1 || binding > n:
		return Decision{}, fmt.Errorf("%w: binding rule %d, want 1 to %d", ErrBadReply, binding, n)
	case remaining < 0 || remaining > MaxCapacity:
		return Decision{}, fmt.Errorf("%w: remaining %d out of range", ErrBadReply, remaining)
	case wait < 0 || wait > maxWait, allowed == 0 && wait == 0:
		return Decision{}, fmt.Errorf("%w: wait %d ms with allowed %d", ErrBadReply, wait, allowed)
	case (wait == 0) != (waitRule == 0), waitRule < 0 || waitRule > n, allowed == 0 && waitRule != binding:
		return Decision{}, fmt.Errorf("%w: wait rule %d with wait %d ms, binding rule %d and allowed %d", ErrBadReply, waitRule, wait, binding, allowed)
	case reset < 0 || reset > maxWait:
		return Decision{}, fmt.Errorf("%w: reset after %d ms out of range", ErrBadReply, reset)
	case now <= 0:
		return Decision{}, fmt.Errorf("%w: server time %d", ErrBadReply, now)
	}
	return newDecision(q, allowed == 1, int(binding-1), remaining, wait, reset, now, int(waitRule-1)), nil
}
