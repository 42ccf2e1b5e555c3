package bucket

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/redis/rueidis"

	"github.com/bucketgate/bucketgate/internal/lua"
)

// ExpiryMargin is added to the moment every bucket of a key is full again before the
// key expires, so that expiry is never visible to a decision.
const ExpiryMargin = time.Second

// Limiter decides requests with one atomic script call each. It is safe for concurrent
// use; make one per process and share it.
type Limiter struct {
	client rueidis.Client
	script *rueidis.Lua
	margin string
}

// New returns a Limiter that keeps its buckets in the Redis (or Valkey) behind client.
// The client should be made with DisableCache: ElastiCache does not support tracking.
func New(client rueidis.Client) *Limiter {
	return &Limiter{
		client: client,
		script: lua.NewBucket(),
		margin: strconv.FormatInt(ExpiryMargin.Milliseconds(), 10),
	}
}

// Decide decides q against Redis. Its error wraps ErrInvalid for a request that can
// never be decided (nothing is written), ErrBadReply for an answer of the wrong shape,
// or whatever rueidis returned (ctx's deadline, a connection error, a Redis error).
// On any error the Decision is the zero Decision: what to do is the caller's policy.
func (l *Limiter) Decide(ctx context.Context, q Request) (Decision, error) {
	if err := q.Validate(); err != nil {
		return Decision{}, err
	}
	reply, err := l.script.Exec(ctx, l.client, []string{Key(q.Identity)}, scriptArgs(q, l.margin)).ToArray()
	if err != nil {
		if strings.Contains(err.Error(), lua.ErrorPrefix) {
			return Decision{}, fmt.Errorf("%w: redis refused the request: %w", ErrInvalid, err)
		}
		return Decision{}, fmt.Errorf("bucket script: %w", err)
	}
	vals, err := replyInts(reply)
	if err != nil {
		return Decision{}, err
	}
	return decodeReply(vals, q)
}

// scriptArgs lays q out as bucket.lua's ARGV.
func scriptArgs(q Request, margin string) []string {
	args := make([]string, lua.ArgFirstRule, lua.ArgFirstRule+lua.ArgsPerRule*len(q.Rules))
	args[lua.ArgCost] = strconv.FormatInt(q.Cost, 10)
	args[lua.ArgMargin] = margin
	for _, r := range q.Rules {
		args = append(args, r.Name, strconv.FormatInt(r.Capacity, 10), strconv.FormatFloat(r.RefillPerSecond, 'f', -1, 64))
	}
	return args
}
