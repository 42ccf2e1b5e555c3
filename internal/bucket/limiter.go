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
// key expires, so that expiry is never visible to a decision. The script holds it.
const ExpiryMargin = lua.ExpiryMarginMillis * time.Millisecond

// Limiter decides requests with one atomic script call each. It is safe for concurrent
// use; make one per process and share it.
type Limiter struct {
	client rueidis.Client
	script *rueidis.Lua
}

// New returns a Limiter that keeps its buckets in the Redis (or Valkey) behind client.
// The client should be made with DisableCache: ElastiCache does not support tracking.
func New(client rueidis.Client) *Limiter {
	return &Limiter{client: client, script: lua.NewBucket()}
}

// Decide decides q against Redis. Its error wraps ErrInvalid for a request that can
// never be decided (nothing is written), ErrBadReply for an answer of the wrong shape,
// or whatever rueidis returned (ctx's deadline, a connection error, a Redis error).
// On any error the Decision is the zero Decision: what to do is the caller's policy.
func (l *Limiter) Decide(ctx context.Context, q Request) (Decision, error) {
	if err := q.Validate(); err != nil {
		return Decision{}, err
	}
	var argv [lua.ArgFirstField + (lua.FieldsPerRule+lua.NumbersPerRule)*MaxRules]string
	key, args := scriptCall(q, argv[:0])
	reply, err := l.script.Exec(ctx, l.client, []string{key}, args).ToArray()
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

// scriptCall lays q out as bucket.lua's key and ARGV, appending the ARGV to args. The
// key, every field name and every number are cut from one string, so that a decision
// allocates once for its arguments however many rules it has. q must be valid (at most
// MaxRules rules).
func scriptCall(q Request, args []string) (key string, _ []string) {
	var buf [512]byte
	var ends [2 + 4*MaxRules]int // key, cost, two fields per rule, then two numbers per rule
	b := appendKey(buf[:0], q.Identity)
	ends[0] = len(b)
	b = strconv.AppendInt(b, q.Cost, 10)
	ends[1] = len(b)
	n := len(q.Rules)
	for i, r := range q.Rules {
		b = append(append(b, r.Name...), lua.TokensSuffix...)
		ends[2+2*i] = len(b)
		b = append(append(b, r.Name...), lua.StampSuffix...)
		ends[3+2*i] = len(b)
	}
	for i, r := range q.Rules {
		b = strconv.AppendInt(b, r.Capacity, 10)
		ends[2+2*n+2*i] = len(b)
		b = strconv.AppendFloat(b, r.RefillPerSecond, 'f', -1, 64) // plain decimal: miniredis's Lua reads no exponent
		ends[3+2*n+2*i] = len(b)
	}
	s := string(b)
	for i := 1; i < 2+4*n; i++ {
		args = append(args, s[ends[i-1]:ends[i]])
	}
	return s[:ends[0]], args
}
