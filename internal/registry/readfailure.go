package registry

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"time"

	"github.com/aws/smithy-go"

	"github.com/bucketgate/bucketgate"
	"github.com/bucketgate/bucketgate/internal/telemetry"
	"github.com/bucketgate/bucketgate/internal/wallclock"
)

// ReadFailureLogEvery is how often, at most, a Cache logs a failed read of one cause
// (MsgReadFailed): a flood of reads failing alike (made-up keys while DynamoDB throttles
// the table) writes a line a period, not a line a read, which each request's decision
// line, naming the error already, would only repeat.
const ReadFailureLogEvery = time.Minute

// readFailures are the failed reads of a Cache, by cause (see causeOf): when the last
// was logged, and how many failed since, unlogged.
type readFailures struct {
	mu     sync.Mutex
	causes map[string]*failures
}

type failures struct {
	logged   time.Time
	unlogged int
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
		c.unlogged++
		f.mu.Unlock()
		return
	}
	unlogged := c.unlogged
	c.logged, c.unlogged = now, 0
	f.mu.Unlock()
	log.LogAttrs(ctx, slog.LevelWarn, MsgReadFailed, slog.String(AttrItem, bucketgate.LogForm(id)),
		slog.String(telemetry.AttrError, err.Error()), slog.Int(AttrUnlogged, unlogged))
}
