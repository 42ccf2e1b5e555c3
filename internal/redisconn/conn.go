package redisconn

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/rueidis"

	"github.com/bucketgate/bucketgate/internal/wallclock"
)

// RetryInterval is the least time between two connection attempts of a Conn that has
// never connected. Once connected, rueidis reconnects by itself.
const RetryInterval = time.Second

// ModeNotConnected is the Mode of a Conn that has not connected yet.
const ModeNotConnected rueidis.ClientMode = "not connected"

// ErrNotConnected is wrapped by the error of Client before the first connection; it also
// wraps why the last attempt failed.
var ErrNotConnected = errors.New("not connected to Redis")

// Conn is the Redis connection of an execution environment, made on first use instead
// of at construction: Client hands out the connected rueidis client, or says why there
// is none. Callers waiting for a connection attempt stop waiting when their context
// ends; the attempt goes on in the background, and its client serves later calls. It is
// safe for concurrent use.
type Conn struct {
	connect func() (rueidis.Client, error)
	explain func(error) error              // says where a configuration error came from
	client  atomic.Pointer[rueidis.Client] // set once, by the first attempt that succeeds

	mu      sync.Mutex
	pending chan struct{} // closed when the attempt in flight ends; nil when none is
	lastTry time.Time     // when the last attempt started, by the wall clock
	lastErr error         // why the last attempt failed
	closed  bool
}

func newConn(connect func() (rueidis.Client, error), explain func(error) error) *Conn {
	return &Conn{connect: connect, explain: explain}
}

// Explain returns err saying what to check when it is Redis refusing the credentials
// (WRONGPASS, NOAUTH) or a command to the user's ACL (NOPERM), once connected: the
// addresses, the user, and the settings the credentials came from or the least ACL;
// never the password. Any other error, or one of Client's, is returned as it is.
func (c *Conn) Explain(err error) error {
	if err == nil || errors.Is(err, ErrNotConnected) || !isAuthError(err) {
		return err
	}
	return c.explain(err)
}

// Client returns the connected client, starting a connection attempt when none is
// under way and the last one is at least RetryInterval old, and waiting for it until
// ctx ends. The age is told by the wall clock (see wallclock): Go's monotonic clock may
// stand still while a Lambda environment is frozen, and would refuse to try again after
// a freeze that outlasted RetryInterval; a clock that went back since the attempt tries
// again. Its error wraps ErrNotConnected, or is rueidis.ErrClosing after Close; when
// ctx ends first, it wraps ctx's error and quotes why the last attempt failed.
func (c *Conn) Client(ctx context.Context) (rueidis.Client, error) {
	if cl := c.client.Load(); cl != nil {
		return *cl, nil
	}
	c.mu.Lock()
	switch {
	case c.closed:
		c.mu.Unlock()
		return nil, rueidis.ErrClosing
	case c.pending == nil && wallclock.Young(wallclock.Now(), c.lastTry, RetryInterval):
		err := c.lastErr
		c.mu.Unlock()
		return nil, fmt.Errorf("%w: %w", ErrNotConnected, err)
	case c.pending == nil:
		c.attempt()
	}
	pending := c.pending
	c.mu.Unlock()
	select {
	case <-pending:
	case <-ctx.Done():
		c.mu.Lock()
		last := c.lastErr
		c.mu.Unlock()
		if last != nil { // an attempt that takes longer than ctx: say why the last one failed
			return nil, fmt.Errorf("%w: still connecting, the last attempt failed (%v): %w", ErrNotConnected, last, ctx.Err())
		}
		return nil, fmt.Errorf("%w: still connecting: %w", ErrNotConnected, ctx.Err())
	}
	if cl := c.client.Load(); cl != nil {
		return *cl, nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return nil, fmt.Errorf("%w: %w", ErrNotConnected, c.lastErr)
}

// attempt starts a connection attempt in the background. c.mu must be held.
func (c *Conn) attempt() {
	done := make(chan struct{})
	c.pending, c.lastTry = done, wallclock.Now() // (see Client)
	go func() {
		cl, err := c.connect()
		c.mu.Lock()
		defer c.mu.Unlock()
		switch {
		case err != nil:
			c.lastErr = err
		case c.closed:
			cl.Close()
			c.lastErr = rueidis.ErrClosing
		default:
			c.client.Store(&cl)
		}
		c.pending = nil
		close(done)
	}()
}

// Mode returns the connected client's mode, or ModeNotConnected.
func (c *Conn) Mode() rueidis.ClientMode {
	if cl := c.client.Load(); cl != nil {
		return (*cl).Mode()
	}
	return ModeNotConnected
}

// Cluster reports whether the connected client talks to a Redis cluster; false before
// the first connection.
func (c *Conn) Cluster() bool { return c.Mode() == rueidis.ClientModeCluster }

// Close closes the connected client, or the one an attempt under way will make.
func (c *Conn) Close() {
	c.mu.Lock()
	c.closed = true
	c.mu.Unlock()
	if cl := c.client.Load(); cl != nil {
		(*cl).Close()
	}
}
