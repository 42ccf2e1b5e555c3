package bucket

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/redis/rueidis"

	"github.com/bucketgate/bucketgate"
	"github.com/bucketgate/bucketgate/internal/lua"
)

// Usage returns identity's usage of every UTC day from first's to last's, in order, a
// day with no checks as zeros: the current day's from the state hash and earlier days'
// from the usage archive (UsageKey), read together in one transaction, so that a day
// moving from one to the other meanwhile is counted once. It reads what Redis holds,
// whatever the Limiter's Usage days: a day past them may still be there, or not. Its
// error wraps ErrInvalid for a range of more than MaxUsageDays days or reversed,
// ErrBadState for a stored count that is not the script's, ErrBadReply for an answer of
// the wrong shape, or whatever rueidis returned.
func (l *Limiter) Usage(ctx context.Context, identity string, first, last time.Time) ([]bucketgate.DayUsage, error) {
	from, to := dayNumber(first), dayNumber(last)
	switch {
	case identity == "" || len(identity) > bucketgate.MaxIdentity:
		return nil, fmt.Errorf("%w: identity of %d bytes: want 1 to %d", bucketgate.ErrInvalid, len(identity), bucketgate.MaxIdentity)
	case to < from:
		return nil, fmt.Errorf("%w: usage from %s to %s: the first day is after the last", bucketgate.ErrInvalid, first.UTC().Format(time.DateOnly), last.UTC().Format(time.DateOnly))
	case to-from >= MaxUsageDays:
		return nil, fmt.Errorf("%w: usage of %d days: want at most %d", bucketgate.ErrInvalid, to-from+1, MaxUsageDays)
	}
	c, err := l.redis(ctx, bucketgate.Request{Identity: identity})
	if err != nil {
		return nil, fmt.Errorf("usage: %w", err)
	}
	n := int(to - from + 1)
	current := make([]string, 0, 3*n) // the state hash's fields of each day: a, x, l
	archived := make([]string, 0, n)  // the archive's field of each day
	for d := from; d <= to; d++ {
		current = append(current, lua.UsageField(d, lua.UsageAllowed), lua.UsageField(d, lua.UsageExtra), lua.UsageField(d, lua.UsageLimited))
		archived = append(archived, strconv.FormatInt(d, 10))
	}
	results := readUsage(ctx, c, identity, current, archived)
	for _, r := range results {
		if err := r.Error(); err != nil {
			return nil, usageError(err)
		}
	}
	replies, err := results[len(results)-1].ToArray()
	if err != nil || len(replies) != 2 {
		return nil, fmt.Errorf("%w: usage transaction: %d replies (%v), want 2", ErrBadReply, len(replies), err)
	}
	for _, r := range replies {
		if err := r.Error(); err != nil {
			return nil, usageError(err)
		}
	}
	now, err := replies[0].ToArray()
	if err != nil || len(now) != len(current) {
		return nil, fmt.Errorf("%w: usage of the state hash: %d values (%v), want %d", ErrBadReply, len(now), err, len(current))
	}
	past, err := replies[1].ToArray()
	if err != nil || len(past) != len(archived) {
		return nil, fmt.Errorf("%w: usage archive: %d values (%v), want %d", ErrBadReply, len(past), err, len(archived))
	}
	days := make([]bucketgate.DayUsage, n)
	for i := range days {
		u := &days[i]
		u.Day = time.Unix((from+int64(i))*86400, 0).UTC()
		var counts [3]int64 // allowed, extra, limited
		for k := range counts {
			if counts[k], err = storedCount(now[3*i+k], current[3*i+k], k == 1); err != nil {
				return nil, err
			}
		}
		u.Allowed, u.Cost, u.Limited = counts[0], counts[0]+counts[1], counts[2]
		a, c, lim, err := archivedDay(past[i], identity, archived[i])
		if err != nil {
			return nil, err
		}
		u.Allowed, u.Cost, u.Limited = u.Allowed+a, u.Cost+c, u.Limited+lim
	}
	return days, nil
}

// readUsage reads the fields current of identity's state hash and archived of its
// usage archive in one transaction, sent again after TryAgainWait while Redis refuses it
// with TRYAGAIN (the slot moving, the archive on neither master yet) or a cluster
// redirects its EXEC (see errRedirected), as a batch sends a script call again: it
// reads, so sending it again is always safe.
func readUsage(ctx context.Context, c rediser, identity string, current, archived []string) []rueidis.RedisResult {
	for n := 0; ; n++ {
		results := c.DoMulti(ctx,
			c.B().Multi().Build(),
			c.B().Hmget().Key(Key(identity)).Field(current...).Build(),
			c.B().Hmget().Key(UsageKey(identity)).Field(archived...).Build(),
			c.B().Exec().Build())
		exec := results[len(results)-1].Error()
		moved := results[0].Error() == nil && execWithoutMulti(exec) // MULTI refused: never a transaction
		if moved {
			results[len(results)-1] = rueidis.NewErrorResult(fmt.Errorf("%w: %w", errRedirected, exec))
		}
		if !moved && !slices.ContainsFunc(results, tryAgain) || n == maxTryAgains || !wait(ctx, TryAgainWait) {
			return results
		}
	}
}

// Time returns Redis's clock (TIME) on the master of identity's slot, on a cluster (any
// node for ""): the clock of identity's decisions and of the days of its usage, which
// the script reads there. Each node of a cluster has a clock of its own: another's,
// seconds apart, would put a report's day on the wrong side of midnight. It asks
// through a script on identity's key (nodeTime), which the cluster redirects to the
// slot's master when the client's map of slots is stale (a reshard, a failover). A read
// on identity's key is a call on its keys: after IdleCheck without one, the connection
// is checked first (see IdleCheck), as it is for the usage read after it.
func (l *Limiter) Time(ctx context.Context, identity string) (time.Time, error) {
	var on []bucketgate.Request // the identity whose key the read is on
	if identity != "" {
		on = append(on, bucketgate.Request{Identity: identity})
	}
	c, err := l.redis(ctx, on...)
	if err != nil {
		return time.Time{}, fmt.Errorf("time: %w", err)
	}
	cmd := c.B().Time().Build()
	if identity != "" {
		cmd = c.B().Eval().Script(nodeTime).Numkeys(1).Key(Key(identity)).Build()
	}
	parts, err := c.Do(ctx, cmd).AsStrSlice()
	if err != nil {
		return time.Time{}, fmt.Errorf("time: %w", err)
	}
	return parseTime(parts)
}

// nodeTime is the script that answers the TIME of the node that holds its key. TIME on
// no key goes to whichever node the client's map of slots names, which answers it with
// its own clock after the slot moved (no MOVED corrects a command on no key); a script
// on a key is redirected (MOVED, ASK) to the node that holds it.
const nodeTime = "return redis.call('TIME')"

// parseTime returns the time of parts, TIME's answer: seconds and microseconds.
func parseTime(parts []string) (time.Time, error) {
	var (
		sec, usec int64
		err       error
	)
	if len(parts) == 2 {
		sec, err = strconv.ParseInt(parts[0], 10, 64)
		if err == nil {
			usec, err = strconv.ParseInt(parts[1], 10, 64)
		}
	}
	if len(parts) != 2 || err != nil || sec <= 0 || usec < 0 || usec >= 1_000_000 {
		return time.Time{}, fmt.Errorf("%w: TIME answered %q", ErrBadReply, parts)
	}
	return time.Unix(sec, usec*1000), nil
}

// dayNumber is t's UTC day: days since 1970-01-01.
func dayNumber(t time.Time) int64 { return floorDiv(t.Unix(), 86400) }

// usageError is the error of a usage read that failed with err: bad state for a key of
// another type, else Redis's.
func usageError(err error) error {
	if strings.Contains(err.Error(), "WRONGTYPE") {
		return fmt.Errorf("%w: usage: %w", ErrBadState, err)
	}
	return fmt.Errorf("usage: %w", err)
}

// storedCount reads a day's count from the state hash's field: absent is 0, else a
// whole number from 0 below 2^53, or above -2^53 when signed (the cost above one each,
// which a settle giving back lowers: see Usage).
func storedCount(m rueidis.RedisMessage, field string, signed bool) (int64, error) {
	if m.IsNil() {
		return 0, nil
	}
	s, err := m.ToString()
	if err != nil {
		return 0, fmt.Errorf("%w: usage field %s: %w", ErrBadReply, field, err)
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n < 0 && (!signed || n <= -1<<53) || n >= 1<<53 {
		return 0, fmt.Errorf("%w: usage field %s holds %.32q, not a count", ErrBadState, field, s)
	}
	return n, nil
}

// archivedDay reads a day of identity's archive, field day: absent is zeros, else
// "<allowed> <cost> <limited>", whole numbers below 2^53 in magnitude, the counts of
// checks from 0; the cost may be below the checks allowed, or below zero, when settles
// gave back what reserves took (on an earlier day, for a cost below zero).
func archivedDay(m rueidis.RedisMessage, identity, day string) (allowed, cost, limited int64, err error) {
	if m.IsNil() {
		return 0, 0, 0, nil
	}
	s, err := m.ToString()
	if err != nil {
		return 0, 0, 0, fmt.Errorf("%w: usage archive day %s: %w", ErrBadReply, day, err)
	}
	var counts [3]int64
	fields := strings.Split(s, " ")
	bad := len(fields) != len(counts)
	for i := 0; !bad && i < len(counts); i++ {
		counts[i], err = strconv.ParseInt(fields[i], 10, 64)
		bad = err != nil || counts[i] < 0 && (i != 1 || counts[i] <= -1<<53) || counts[i] >= 1<<53 || strconv.FormatInt(counts[i], 10) != fields[i]
	}
	if bad {
		return 0, 0, 0, fmt.Errorf("%w: %s's usage archive: day %s holds %.40q, not \"<allowed> <cost> <limited>\"", ErrBadState, bucketgate.LogForm(identity), day, s)
	}
	return counts[0], counts[1], counts[2], nil
}
