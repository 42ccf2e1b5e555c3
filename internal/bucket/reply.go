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
	allowed, binding := vals[lua.ReplyAllowed], vals[lua.ReplyBinding]
	remaining, retry, reset, now := vals[lua.ReplyRemaining], vals[lua.ReplyRetryAfter], vals[lua.ReplyResetAfter], vals[lua.ReplyNow]
	if allowed != 0 && allowed != 1 {
		return Decision{}, fmt.Errorf("%w: allowed is %d, want 0 or 1", ErrBadReply, allowed)
	}
	if binding < 1 || binding > int64(len(q.Rules)) {
		return Decision{}, fmt.Errorf("%w: binding rule %d, want 1 to %d", ErrBadReply, binding, len(q.Rules))
	}
	rule := q.Rules[binding-1]
	maxWait := MaxFillTime.Milliseconds() + 1
	switch {
	case remaining < 0 || remaining > MaxCapacity:
		return Decision{}, fmt.Errorf("%w: remaining %d out of range", ErrBadReply, remaining)
	case allowed == 1 && retry != 0, allowed == 0 && (retry <= 0 || retry > maxWait):
		return Decision{}, fmt.Errorf("%w: retry after %d ms with allowed %d", ErrBadReply, retry, allowed)
	case reset < 0 || reset > maxWait:
		return Decision{}, fmt.Errorf("%w: reset after %d ms out of range", ErrBadReply, reset)
	case now <= 0:
		return Decision{}, fmt.Errorf("%w: server time %d", ErrBadReply, now)
	}
	d := Decision{
		Allowed:    allowed == 1,
		Reason:     ReasonLimited,
		Rule:       rule.Name,
		Limit:      rule.Capacity,
		Remaining:  remaining,
		RetryAfter: millisToDuration(retry),
		ResetAfter: millisToDuration(reset),
		At:         microsToTime(now),
	}
	if d.Allowed {
		d.Reason = ReasonOK
	}
	return d, nil
}
