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

// rediser is the part of a rueidis client that a Limiter uses, declared here as small as
// it is: every rueidis.Client is one.
type rediser interface {
	B() rueidis.Builder
	Do(ctx context.Context, cmd rueidis.Completed) rueidis.RedisResult
}

// Limiter decides requests with one atomic script call each. It is safe for concurrent
// use; make one per process and share it.
type Limiter struct {
	client  rediser                                       // set by New
	connect func(context.Context) (rueidis.Client, error) // set by NewLazy
}

// New returns a Limiter that keeps its buckets in the Redis (or Valkey) behind client,
// a connected client. It should be made with DisableCache: ElastiCache does not support
// tracking.
func New(client rediser) *Limiter { return &Limiter{client: client} }

// NewLazy returns a Limiter that asks connect for the client of each call, so that it
// can be made before Redis is reachable: connect's error is the call's error.
// (*redisconn.Conn).Client, which connects on first use, is such a function.
func NewLazy(connect func(context.Context) (rueidis.Client, error)) *Limiter {
	return &Limiter{connect: connect}
}

// redis returns the client of one call.
func (l *Limiter) redis(ctx context.Context) (rediser, error) {
	if l.client != nil {
		return l.client, nil
	}
	c, err := l.connect(ctx)
	if err != nil {
		return nil, err
	}
	return c, nil
}

// Decide decides q against Redis. Its error wraps ErrInvalid for a request that can
// never be decided (nothing is written), ErrBadReply for an answer of the wrong shape,
// or whatever rueidis returned (ctx's deadline, a connection error, a Redis error).
// On any error the Decision is the zero Decision: what to do is the caller's policy.
func (l *Limiter) Decide(ctx context.Context, q Request) (Decision, error) {
	if err := q.Validate(); err != nil {
		return Decision{}, err
	}
	c, err := l.redis(ctx)
	if err != nil {
		return Decision{}, fmt.Errorf("bucket script: %w", err)
	}
	var argv [maxArgs]string
	key, args := scriptCall(q, &argv)
	reply, err := eval(ctx, c, key, args).ToArray()
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

// eval runs bucket.lua on key with args: EVALSHA, then EVAL when Redis does not know
// the script yet (NOSCRIPT: nothing ran). Never retried: a retried call could charge twice.
func eval(ctx context.Context, c rediser, key string, args []string) rueidis.RedisResult {
	r := c.Do(ctx, c.B().Evalsha().Sha1(lua.BucketSHA1).Numkeys(1).Key(key).Arg(args...).Build())
	if err, ok := rueidis.IsRedisErr(r.Error()); ok && err.IsNoScript() {
		r = c.Do(ctx, c.B().Eval().Script(lua.BucketSource).Numkeys(1).Key(key).Arg(args...).Build())
	}
	return r
}

// maxArgs is the longest ARGV of a valid request.
const maxArgs = lua.ArgsFixed + lua.ArgsPerRule*MaxRules

// scriptCall lays q out as bucket.lua's key and ARGV, the ARGV in argv, and returns the
// key and the ARGV. The key, every field name and
// every number are cut from one string, so that a decision allocates once for its
// arguments however many rules it has. q must be valid (at most MaxRules rules).
func scriptCall(q Request, argv *[maxArgs]string) (key string, args []string) {
	layout := lua.Args{Rules: len(q.Rules)}
	var buf [512]byte
	var cuts [maxArgs]cut // where each ARGV value lies in b, by its index in ARGV
	b := appendKey(buf[:0], q.Identity)
	keyEnd := len(b)
	at := len(b)
	b = strconv.AppendInt(b, q.Cost, 10)
	cuts[lua.ArgCost], at = cut{at, len(b)}, len(b)
	for i, r := range q.Rules {
		b = append(append(b, r.Name...), lua.TokensSuffix...)
		cuts[layout.TokensField(i)], at = cut{at, len(b)}, len(b)
		b = append(append(b, r.Name...), lua.StampSuffix...)
		cuts[layout.StampField(i)], at = cut{at, len(b)}, len(b)
		b = strconv.AppendInt(b, r.Capacity, 10)
		cuts[layout.Capacity(i)], at = cut{at, len(b)}, len(b)
		b = strconv.AppendFloat(b, r.RefillPerSecond, 'f', -1, 64) // plain decimal: miniredis's Lua reads no exponent
		cuts[layout.Rate(i)], at = cut{at, len(b)}, len(b)
	}
	s := string(b)
	args = argv[:layout.Len()]
	for i := range args {
		args[i] = s[cuts[i].from:cuts[i].to]
	}
	return s[:keyEnd], args
}

// cut is where one value lies in scriptCall's string.
type cut struct{ from, to int }
