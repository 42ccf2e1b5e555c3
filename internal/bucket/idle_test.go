package bucket_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/bucketgate/bucketgate"
	"github.com/bucketgate/bucketgate/internal/bucket"
	"github.com/bucketgate/bucketgate/internal/testkit/redistest"
)

// TestFirstCallsAfterIdle: Redis closing the connections of a Lambda instance while it
// is frozen (a failover, maintenance, an idle timeout) costs the calls after the thaw
// nothing: the Limiter, idle for IdleCheck or more, checks the connections first and
// rueidis makes new ones; the calls' own commands go once, and a decision is charged
// once. Against a standalone server and a cluster (an identity on each master, one call
// after another), through the production connection.
func TestFirstCallsAfterIdle(t *testing.T) {
	standalone := redistest.Start(t)
	cluster := redistest.StartCluster(t, 3, 0)
	targets := []struct {
		name    string
		env     map[string]string
		servers []*redistest.Server
	}{
		{"standalone", map[string]string{"REDIS_ADDR": standalone.Addr}, []*redistest.Server{standalone}},
		{"cluster", map[string]string{"REDIS_ADDR": strings.Join(cluster.Seeds(), ",")}, cluster.Masters},
	}
	calls := []struct {
		name    string
		charges int64 // tokens the call takes
		call    func(l *bucket.Limiter, q bucketgate.Request) (remaining int64, err error)
	}{
		{"Decide", 1, func(l *bucket.Limiter, q bucketgate.Request) (int64, error) {
			d, err := l.Decide(context.Background(), q)
			return d.Remaining, err
		}},
		{"DecideBatch", 1, func(l *bucket.Limiter, q bucketgate.Request) (int64, error) {
			ds, errs := l.DecideBatch(context.Background(), []bucketgate.Request{q})
			return ds[0].Remaining, errs[0]
		}},
		{"Usage", 0, func(l *bucket.Limiter, q bucketgate.Request) (int64, error) {
			days, err := l.Usage(context.Background(), q.Identity, time.Now(), time.Now())
			if err != nil {
				return 0, err
			}
			return still[0].Capacity - days[0].Allowed, nil // as a decision would say
		}},
		{"Time", 0, func(l *bucket.Limiter, q bucketgate.Request) (int64, error) { // a usage report's first read
			_, err := l.Time(context.Background(), q.Identity)
			return still[0].Capacity - 1, err
		}},
	}
	for _, tg := range targets {
		for _, call := range calls {
			t.Run(tg.name+"/"+call.name, func(t *testing.T) {
				var k clock
				l := bucket.New(connect(t, tg.env), bucket.Usage(1), bucket.Clock(k.now))
				qs := make([]bucketgate.Request, len(tg.servers)) // one identity on each server
				for i := range qs {
					qs[i] = bucketgate.Request{Identity: onServer(t, i, len(tg.servers), tg.name+"-"+call.name), Rules: still, Cost: 1}
					if d := decide(t, l, qs[i]); d.Remaining != still[0].Capacity-1 {
						t.Fatalf("%s before the freeze: %+v", qs[i].Identity, d)
					}
				}
				k.advance(10 * time.Minute) // frozen
				for _, s := range tg.servers {
					if _, err := s.Command(context.Background(), "CLIENT", "KILL", "TYPE", "normal"); err != nil {
						t.Fatal(err)
					}
				}
				want := still[0].Capacity - 1 - call.charges
				for _, q := range qs {
					if remaining, err := call.call(l, q); err != nil || remaining != want {
						t.Fatalf("%s after the thaw: remaining %d, %v; want %d", q.Identity, remaining, err, want)
					}
				}
				for _, q := range qs {
					if d := decide(t, l, bucketgate.Request{Identity: q.Identity, Rules: still}); d.Remaining != want {
						t.Fatalf("%s charged %d times, want %d: %+v", q.Identity, still[0].Capacity-d.Remaining, 1+call.charges, d)
					}
				}
			})
		}
	}
}

// onServer returns an identity named for prefix whose slot lies on server i of n: in
// the i-th of n equal ranges of slots, as a redistest cluster of n masters has them.
func onServer(t *testing.T, i, n int, prefix string) string {
	t.Helper()
	for k := range 1000 {
		id := fmt.Sprintf("thawed-%s-%d", prefix, k)
		if s := bucket.Slot(id); s >= i*bucket.Slots/n && s < (i+1)*bucket.Slots/n {
			return id
		}
	}
	t.Fatalf("no identity on server %d of %d", i, n)
	return ""
}

// TestFirstCallAfterIdleRedisDown: the connection check after a thaw does not wait for
// a Redis that is down: the call fails at once with the connection's error, as it did
// without the check, not at its deadline (a timeout, in the FailClosed metric).
func TestFirstCallAfterIdleRedisDown(t *testing.T) {
	srv := redistest.Start(t)
	q := bucketgate.Request{Identity: "down", Rules: free, Cost: 1}
	l := frozen(t, srv.Addr, q)
	srv.Stop()
	// A deadline far longer than a refused connection takes, far shorter than
	// rueidis's retries of a read-only command.
	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancel()
	if _, err := l.Decide(ctx, q); err == nil || errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Redis down after the thaw: %v, want the connection's error", err)
	}
}

// TestFirstCallAfterIdleStalled: a connection that a network dropped silently while
// the instance was frozen (nothing answers, no error) costs the first call after the
// thaw half its deadline, not all of it: the connection check gives up then, rueidis
// drops the connection, and the call goes on a new one, once.
func TestFirstCallAfterIdleStalled(t *testing.T) {
	srv := redistest.Start(t)
	path := redistest.StartProxy(t, srv.Addr)
	q := bucketgate.Request{Identity: "stalled", Rules: still, Cost: 1}
	l := frozen(t, path.Addr, q)
	path.Stall()
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	if d, err := l.Decide(ctx, q); err != nil || d.Remaining != still[0].Capacity-2 {
		t.Fatalf("first call after the thaw on a stalled connection: %+v, %v", d, err)
	}
}

// frozen returns a Limiter on a production connection to addr that decided q, then
// went ten minutes without a call, as a Lambda instance frozen meanwhile.
func frozen(t *testing.T, addr string, q bucketgate.Request) *bucket.Limiter {
	t.Helper()
	var k clock
	l := bucket.New(connect(t, map[string]string{"REDIS_ADDR": addr}), bucket.Clock(k.now))
	decide(t, l, q)
	k.advance(10 * time.Minute)
	return l
}
