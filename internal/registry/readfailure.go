package registry

import (
	"context"
	"errors"
	"log/slog"
	"maps"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/aws/smithy-go"

	"github.com/bucketgate/bucketgate"
	"github.com/bucketgate/bucketgate/internal/telemetry"
	"github.com/bucketgate/bucketgate/internal/wallclock"
)

// ReadFailureLogEvery is how often, at most, a Cache logs a failed read of one cause
// (MsgReadFailed): a flood of reads failing alike (made-up keys while DynamoDB throttles
// the table) writes a line a period, not a line a read, which each request's decision
// line, naming the error already, would only repeat. The reads a line leaves counted
// (AttrUnlogged) are said by the cause's next line, by the first lookup once the period
// has passed, or by Cache.Flush.
const ReadFailureLogEvery = time.Minute

// readFailures are the failed reads of a Cache, by cause (see causeOf): when the last
// was logged, and how many failed since, unlogged.
type readFailures struct {
	mu     sync.Mutex
	causes map[string]*failures
	// due is when the reads counted unlogged of the first cause may be said, its last
	// line's time plus ReadFailureLogEvery, in Unix nanoseconds; 0 while none are
	// counted. Written with mu held; read without, by say at every lookup.
	due atomic.Int64
}

type failures struct {
	logged   time.Time
	unlogged int
	last     error // the error of the last read counted unlogged
}

// causeOf is err's cause, for readFailures: the AWS error code of a refusal
// (ProvisionedThroughputExceededException, AccessDeniedException), "" for any other
// failure (a connection's, a timeout): a few causes, whatever the number of reads.
func causeOf(err error) string {
	if api := smithy.APIError(nil); errors.As(err, &api) {
		return api.ErrorCode()
	}
	return ""
}

// log logs the failed read of the item id with err, at warn, unless a read of err's
// cause failed and was logged less than ReadFailureLogEvery before now (the wall clock
// of clock, read as it fails: reads in flight together fail in any order, whenever they
// began): then it counts it, for the cause's next line (AttrUnlogged).
func (f *readFailures) log(ctx context.Context, log *slog.Logger, clock func() time.Time, id string, err error) {
	cause := causeOf(err)
	f.mu.Lock()
	now := clock().Round(0)
	if f.causes == nil {
		f.causes = map[string]*failures{}
	}
	c := f.causes[cause]
	if c == nil {
		c = &failures{}
		f.causes[cause] = c
	}
	if !c.logged.IsZero() && wallclock.Young(now, c.logged, ReadFailureLogEvery) {
		if c.unlogged++; c.unlogged == 1 {
			f.reckon()
		}
		c.last = err
		f.mu.Unlock()
		return
	}
	unlogged := c.said(now)
	f.reckon()
	f.mu.Unlock()
	log.LogAttrs(ctx, slog.LevelWarn, MsgReadFailed, slog.String(AttrItem, bucketgate.LogForm(id)),
		slog.String(telemetry.AttrError, err.Error()), slog.Int(AttrFailed, 1), slog.Int(AttrUnlogged, unlogged))
}

// say logs, at warn, a line with AttrFailed 0 and the error of the last of them for
// each cause whose reads counted unlogged are not said yet, once ReadFailureLogEvery
// has passed since its last line (at once with atOnce), by the wall clock of clock:
// after a flood that ended, or at an instance's end, no later failure of that cause
// would say them. While none are due it reads an atomic integer, and the clock only
// when some are counted.
func (f *readFailures) say(ctx context.Context, log *slog.Logger, clock func() time.Time, atOnce bool) {
	due := f.due.Load()
	if due == 0 {
		return
	}
	now := clock().Round(0)
	if !atOnce && wallclock.Pending(now, time.Unix(0, due), ReadFailureLogEvery) {
		return
	}
	type line struct {
		unlogged int
		err      error
	}
	var lines []line
	f.mu.Lock()
	for _, cause := range slices.Sorted(maps.Keys(f.causes)) {
		if c := f.causes[cause]; c.unlogged > 0 && (atOnce || !wallclock.Young(now, c.logged, ReadFailureLogEvery)) {
			err := c.last
			lines = append(lines, line{unlogged: c.said(now), err: err})
		}
	}
	f.reckon()
	f.mu.Unlock()
	for _, l := range lines {
		log.LogAttrs(ctx, slog.LevelWarn, MsgReadFailed, slog.String(telemetry.AttrError, l.err.Error()),
			slog.Int(AttrFailed, 0), slog.Int(AttrUnlogged, l.unlogged))
	}
}

// reckon sets due from the causes. The caller holds mu.
func (f *readFailures) reckon() {
	var due int64
	for _, c := range f.causes {
		if at := c.logged.Add(ReadFailureLogEvery).UnixNano(); c.unlogged > 0 && (due == 0 || at < due) {
			due = at
		}
	}
	f.due.Store(due)
}

// said returns the reads of c counted unlogged, now said in a line logged at now, and
// counts none from then on.
func (c *failures) said(now time.Time) int {
	n := c.unlogged
	c.logged, c.unlogged, c.last = now, 0, nil
	return n
}
