package redisconn

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/rueidis"
	"github.com/redis/rueidis/mock"
)

// RetryInterval is the least time between two connection attempts of a client that has
// never connected. Once connected, rueidis reconnects by itself.
const RetryInterval = time.Second

// ModeNotConnected is the Mode of a client that has not connected yet.
const ModeNotConnected rueidis.ClientMode = "not connected"

// ErrNotConnected is wrapped by the error of every command sent before the client first
// connected; it also wraps why the last attempt failed.
var ErrNotConnected = errors.New("not connected to Redis")

// clusterBuilder is rueidis's cluster command builder, the one builder whose commands
// every rueidis client accepts (standalone clients ignore the slot it computes; cluster
// clients need it). rueidis exports it only through its mock package.
var clusterBuilder = mock.NewClient(nil, mock.WithSlotCheck()).B()

// lazy is a rueidis.Client that connects on first use instead of at construction.
// Callers waiting for a connection attempt stop waiting when their context ends; the
// attempt goes on in the background, and its client serves later calls.
type lazy struct {
	connect func() (rueidis.Client, error)
	client  atomic.Pointer[rueidis.Client] // set once, by the first attempt that succeeds

	mu      sync.Mutex
	pending chan struct{} // closed when the attempt in flight ends; nil when none is
	lastTry time.Time     // when the last attempt started
	lastErr error         // why the last attempt failed
	closed  bool
}

func newLazy(connect func() (rueidis.Client, error)) *lazy { return &lazy{connect: connect} }

// get returns the connected client, starting a connection attempt when none is under
// way and the last one is at least RetryInterval old, and waiting for it until ctx ends.
func (l *lazy) get(ctx context.Context) (rueidis.Client, error) {
	if c := l.client.Load(); c != nil {
		return *c, nil
	}
	l.mu.Lock()
	switch {
	case l.closed:
		l.mu.Unlock()
		return nil, rueidis.ErrClosing
	case l.pending == nil && time.Since(l.lastTry) < RetryInterval:
		err := l.lastErr
		l.mu.Unlock()
		return nil, fmt.Errorf("%w: %w", ErrNotConnected, err)
	case l.pending == nil:
		l.attempt()
	}
	pending := l.pending
	l.mu.Unlock()
	select {
	case <-pending:
	case <-ctx.Done():
		return nil, fmt.Errorf("%w: still connecting: %w", ErrNotConnected, ctx.Err())
	}
	if c := l.client.Load(); c != nil {
		return *c, nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	return nil, fmt.Errorf("%w: %w", ErrNotConnected, l.lastErr)
}

// attempt starts a connection attempt in the background. l.mu must be held.
func (l *lazy) attempt() {
	done := make(chan struct{})
	l.pending, l.lastTry = done, time.Now()
	go func() {
		c, err := l.connect()
		l.mu.Lock()
		defer l.mu.Unlock()
		switch {
		case err != nil:
			l.lastErr = err
		case l.closed:
			c.Close()
			l.lastErr = rueidis.ErrClosing
		default:
			l.client.Store(&c)
		}
		l.pending = nil
		close(done)
	}()
}

// B returns the connected client's builder, or the cluster builder before that.
func (l *lazy) B() rueidis.Builder {
	if c := l.client.Load(); c != nil {
		return (*c).B()
	}
	return clusterBuilder
}

func (l *lazy) Do(ctx context.Context, cmd rueidis.Completed) rueidis.RedisResult {
	c, err := l.get(ctx)
	if err != nil {
		return rueidis.NewErrorResult(err)
	}
	return c.Do(ctx, cmd)
}

func (l *lazy) DoMulti(ctx context.Context, multi ...rueidis.Completed) []rueidis.RedisResult {
	c, err := l.get(ctx)
	if err != nil {
		return errorResults(len(multi), err)
	}
	return c.DoMulti(ctx, multi...)
}

func (l *lazy) DoCache(ctx context.Context, cmd rueidis.Cacheable, ttl time.Duration) rueidis.RedisResult {
	c, err := l.get(ctx)
	if err != nil {
		return rueidis.NewErrorResult(err)
	}
	return c.DoCache(ctx, cmd, ttl)
}

func (l *lazy) DoMultiCache(ctx context.Context, multi ...rueidis.CacheableTTL) []rueidis.RedisResult {
	c, err := l.get(ctx)
	if err != nil {
		return errorResults(len(multi), err)
	}
	return c.DoMultiCache(ctx, multi...)
}

func (l *lazy) DoStream(ctx context.Context, cmd rueidis.Completed) rueidis.RedisResultStream {
	c, err := l.get(ctx)
	if err != nil {
		return rueidis.NewErrorResultStream(err)
	}
	return c.DoStream(ctx, cmd)
}

func (l *lazy) DoMultiStream(ctx context.Context, multi ...rueidis.Completed) rueidis.MultiRedisResultStream {
	c, err := l.get(ctx)
	if err != nil {
		return rueidis.NewErrorResultStream(err)
	}
	return c.DoMultiStream(ctx, multi...)
}

func (l *lazy) Receive(ctx context.Context, subscribe rueidis.Completed, fn func(msg rueidis.PubSubMessage)) error {
	c, err := l.get(ctx)
	if err != nil {
		return err
	}
	return c.Receive(ctx, subscribe, fn)
}

func (l *lazy) Dedicated(fn func(rueidis.DedicatedClient) error) error {
	c, err := l.get(context.Background())
	if err != nil {
		return err
	}
	return c.Dedicated(fn)
}

// Dedicate waits until the client is connected, attempting once per RetryInterval; on
// a client closed before it ever connected, it returns a nil DedicatedClient.
func (l *lazy) Dedicate() (rueidis.DedicatedClient, func()) {
	for {
		c, err := l.get(context.Background())
		switch {
		case err == nil:
			return c.Dedicate()
		case errors.Is(err, rueidis.ErrClosing):
			return nil, func() {}
		}
		time.Sleep(RetryInterval)
	}
}

// Nodes returns the connected client's nodes; none before it connected.
func (l *lazy) Nodes() map[string]rueidis.Client {
	if c := l.client.Load(); c != nil {
		return (*c).Nodes()
	}
	return map[string]rueidis.Client{}
}

// Mode returns the connected client's mode, or ModeNotConnected.
func (l *lazy) Mode() rueidis.ClientMode {
	if c := l.client.Load(); c != nil {
		return (*c).Mode()
	}
	return ModeNotConnected
}

// Close closes the connected client, or the one an attempt under way will make.
func (l *lazy) Close() {
	l.mu.Lock()
	l.closed = true
	l.mu.Unlock()
	if c := l.client.Load(); c != nil {
		(*c).Close()
	}
}

func errorResults(n int, err error) []rueidis.RedisResult {
	rs := make([]rueidis.RedisResult, n)
	for i := range rs {
		rs[i] = rueidis.NewErrorResult(err)
	}
	return rs
}
