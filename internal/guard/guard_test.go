package guard_test

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"

	"github.com/bucketgate/bucketgate"
	"github.com/bucketgate/bucketgate/internal/bucket"
	"github.com/bucketgate/bucketgate/internal/guard"
	"github.com/bucketgate/bucketgate/internal/testkit/redistest"
)

// epoch is where the test clocks start.
var epoch = time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)

// clock is a test clock shared by a Guard (Options.Now) and miniredis (its TIME).
type clock struct {
	mu  sync.Mutex
	now time.Time
	mr  *miniredis.Miniredis
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// Advance moves both clocks forward by d.
func (c *clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
	c.mr.SetTime(c.now)
}

// counting is the engine with a count of the calls that reach it.
type counting struct {
	next     *bucket.Limiter
	calls    atomic.Int64
	clockFor atomic.Value // the identity of the last clock read
}

func (c *counting) Decide(ctx context.Context, q bucketgate.Request) (bucketgate.Decision, error) {
	c.calls.Add(1)
	return c.next.Decide(ctx, q)
}

// DecideBatch counts one call for the batch.
func (c *counting) DecideBatch(ctx context.Context, qs []bucketgate.Request) ([]bucketgate.Decision, []error) {
	c.calls.Add(1)
	return c.next.DecideBatch(ctx, qs)
}

// Usage counts one call for the read.
func (c *counting) Usage(ctx context.Context, identity string, first, last time.Time) ([]bucketgate.DayUsage, error) {
	c.calls.Add(1)
	return c.next.Usage(ctx, identity, first, last)
}

// Signed counts one call for the verification.
func (c *counting) Signed(ctx context.Context, identity, id string, lease bool) error {
	c.calls.Add(1)
	return c.next.Signed(ctx, identity, id, lease)
}

// Time counts one call for the read.
func (c *counting) Time(ctx context.Context, identity string) (time.Time, error) {
	c.calls.Add(1)
	c.clockFor.Store(identity)
	return c.next.Time(ctx, identity)
}

// miniEngine is a real Limiter on miniredis whose TIME follows a test clock.
func miniEngine(t *testing.T) (*miniredis.Miniredis, *clock, *counting) {
	t.Helper()
	mr := miniredis.RunT(t)
	clk := &clock{now: epoch, mr: mr}
	mr.SetTime(epoch)
	return mr, clk, &counting{next: bucket.New(redistest.Client(t, mr.Addr()))}
}

var burst = []bucketgate.Rule{{Name: "burst", Capacity: 10, RefillPerSecond: 10}}

func request(id string) bucketgate.Request {
	return bucketgate.Request{Identity: id, Rules: burst, Cost: 1}
}

func decide(t *testing.T, g *guard.Guard, q bucketgate.Request) guard.Result {
	t.Helper()
	r, err := g.Decide(context.Background(), q)
	if err != nil {
		t.Fatalf("Decide: %v", err)
	}
	return r
}

func TestFailurePolicy(t *testing.T) {
	tests := []struct {
		name     string
		failOpen bool
		want     bucketgate.Decision
	}{
		{"fail closed", false, bucketgate.Decision{Reason: bucketgate.ReasonUnavailable, RetryAfter: guard.FailureRetryAfter, Rule: "burst", Limit: 10}},
		{"fail open", true, bucketgate.Decision{Allowed: true, Reason: bucketgate.ReasonDegraded, Rule: "burst", Limit: 10}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			mr, clk, engine := miniEngine(t)
			g := guard.New(engine, guard.Options{FailOpen: tc.failOpen, Now: clk.Now})
			if r := decide(t, g, request("a")); r.Reason != bucketgate.ReasonOK || r.Failure != guard.FailureNone {
				t.Fatalf("healthy: %+v", r)
			}
			mr.Close()
			r := decide(t, g, request("a"))
			if !reflect.DeepEqual(r.Decision, tc.want) || r.Failure != guard.FailureRedisError || r.Err == nil {
				t.Fatalf("Redis gone: %+v, want %+v with redis_error", r, tc.want)
			}
			if _, err := g.Decide(context.Background(), bucketgate.Request{Identity: "a", Rules: burst, Cost: 11}); !errors.Is(err, bucketgate.ErrInvalid) {
				t.Fatalf("invalid request while Redis is gone: %v, want ErrInvalid", err)
			}
		})
	}
}

func TestCircuitBreaker(t *testing.T) {
	const failuresToOpen = 3
	mr, clk, engine := miniEngine(t)
	g := guard.New(engine, guard.Options{Now: clk.Now, FailuresToOpen: failuresToOpen, ProbeInterval: time.Second})
	step := func(name string, wantCall bool, wantReason bucketgate.Reason, wantOpen bool) {
		t.Helper()
		before := engine.calls.Load()
		r := decide(t, g, request("a"))
		called := engine.calls.Load() > before
		if called != wantCall || r.Reason != wantReason || r.CircuitOpen != wantOpen {
			t.Fatalf("%s: asked Redis %v (want %v), %+v (want reason %s, circuit open %v)", name, called, wantCall, r, wantReason, wantOpen)
		}
		if r.CircuitOpen && (r.Failure != guard.FailureRedisError || !errors.Is(r.Err, guard.ErrCircuitOpen) || r.Latency != 0) {
			t.Fatalf("%s: open circuit's result %+v: want the failure that opened it, ErrCircuitOpen, no latency", name, r)
		}
	}

	step("healthy", true, bucketgate.ReasonOK, false)
	mr.Close()
	for i := range failuresToOpen {
		step("failure "+string(rune('1'+i)), true, bucketgate.ReasonUnavailable, false)
	}
	step("open", false, bucketgate.ReasonUnavailable, true)
	clk.Advance(999 * time.Millisecond)
	step("open just before the probe", false, bucketgate.ReasonUnavailable, true)
	clk.Advance(time.Millisecond)
	step("probe while still down", true, bucketgate.ReasonUnavailable, false)
	step("open again after the failed probe", false, bucketgate.ReasonUnavailable, true)
	if _, err := g.Decide(context.Background(), bucketgate.Request{Identity: "a", Rules: burst, Cost: -1}); !errors.Is(err, bucketgate.ErrInvalid) {
		t.Fatalf("invalid request while open: %v, want ErrInvalid", err)
	}

	if err := mr.Restart(); err != nil {
		t.Fatal(err)
	}
	step("Redis back, circuit still open", false, bucketgate.ReasonUnavailable, true)
	clk.Advance(time.Second)
	step("probe succeeds", true, bucketgate.ReasonOK, false)
	step("closed", true, bucketgate.ReasonOK, false)
}

// The default probe interval keeps the promise: an open circuit lets a request probe
// Redis a second after it opened at the latest, so service resumes within a second of
// Redis coming back.
func TestDefaultProbeWithinASecond(t *testing.T) {
	mr, clk, engine := miniEngine(t)
	g := guard.New(engine, guard.Options{Now: clk.Now, FailuresToOpen: guard.DefaultFailuresToOpen})
	mr.Close()
	for range guard.DefaultFailuresToOpen {
		decide(t, g, request("a"))
	}
	if r := decide(t, g, request("a")); !r.CircuitOpen {
		t.Fatalf("after %d failures: %+v, want the circuit open", guard.DefaultFailuresToOpen, r)
	}
	if err := mr.Restart(); err != nil {
		t.Fatal(err)
	}
	clk.Advance(time.Second)
	if r := decide(t, g, request("a")); r.Reason != bucketgate.ReasonOK || r.CircuitOpen {
		t.Fatalf("a second after the circuit opened, Redis back: %+v, want a probe that decides", r)
	}
}

// TestCircuitBreakerClockWentBack: the probe interval is told by the wall clock (see
// breaker), which may step back (NTP): once it is before the time the next probe was
// scheduled at, a request probes Redis at once, not when the clock is back there.
func TestCircuitBreakerClockWentBack(t *testing.T) {
	tests := []struct {
		name     string
		back     time.Duration
		wantOpen bool
	}{
		{"no step: open", 0, true},
		{"back a millisecond: a probe", time.Millisecond, false},
		{"back an hour: a probe", time.Hour, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			mr, clk, engine := miniEngine(t)
			var back time.Duration
			g := guard.New(engine, guard.Options{Now: func() time.Time { return clk.Now().Add(-back) }, FailuresToOpen: 1, ProbeInterval: time.Second})
			mr.Close()
			decide(t, g, request("a"))
			if err := mr.Restart(); err != nil {
				t.Fatal(err)
			}
			back = tc.back
			if r := decide(t, g, request("a")); r.CircuitOpen != tc.wantOpen || !tc.wantOpen && !r.Allowed {
				t.Fatalf("%+v, want circuit open %v", r, tc.wantOpen)
			}
		})
	}
}

// TestWholeClusterCircuit: when every master of a cluster fails (miniredis stands in,
// with Options.Cluster true), the whole cluster's circuit opens after
// ClusterFailuresToOpen x FailuresToOpen failures in a row, before the ranges' circuits
// have, and then one request per ProbeInterval reaches Redis, not one per range.
func TestWholeClusterCircuit(t *testing.T) {
	const failuresToOpen = 3
	mr, clk, engine := miniEngine(t)
	g := guard.New(engine, guard.Options{Now: clk.Now, FailuresToOpen: failuresToOpen, ProbeInterval: time.Second, Cluster: func() bool { return true }})
	ids := make([]string, bucket.Slots/guard.CircuitSlots) // ids[r]: an identity of range r
	for k, found := 0, 0; found < len(ids); k++ {
		id := fmt.Sprintf("id-%d", k)
		if r := bucket.Slot(id) / guard.CircuitSlots; ids[r] == "" {
			ids[r], found = id, found+1
		}
	}
	// asks decides every identity in turn, rounds times, and returns how many of the
	// decisions reached Redis and how many the breaker answered.
	asks := func(rounds int) (calls, open int64) {
		before := engine.calls.Load()
		for i := range rounds * len(ids) {
			if r := decide(t, g, request(ids[i%len(ids)])); r.CircuitOpen {
				open++
			}
		}
		return engine.calls.Load() - before, open
	}
	if calls, open := asks(1); calls != int64(len(ids)) || open != 0 {
		t.Fatalf("healthy: %d calls, %d answered by the breaker", calls, open)
	}
	mr.Close()
	want := int64(guard.ClusterFailuresToOpen * failuresToOpen)
	if calls, open := asks(2); calls != want || open != int64(2*len(ids))-want {
		t.Fatalf("every master down: %d of %d requests reached Redis, want %d; %d answered by the breaker", calls, 2*len(ids), want, open)
	}
	clk.Advance(time.Second)
	if calls, _ := asks(1); calls != 1 {
		t.Fatalf("a probe interval later: %d requests reached Redis, want 1 probe", calls)
	}
	if rs := decideBatch(t, g, context.Background(), request(ids[0]), request(ids[len(ids)-1])); !rs[0].CircuitOpen || !rs[1].CircuitOpen {
		t.Fatalf("a batch while the cluster's circuit is open: %+v", rs)
	}

	if err := mr.Restart(); err != nil {
		t.Fatal(err)
	}
	clk.Advance(time.Second)
	if calls, open := asks(1); calls != int64(len(ids)) || open != 0 {
		t.Fatalf("Redis back: %d of %d requests reached Redis, %d answered by the breaker", calls, len(ids), open)
	}
}

func TestCircuitBreakerFailOpen(t *testing.T) {
	mr, clk, engine := miniEngine(t)
	g := guard.New(engine, guard.Options{FailOpen: true, Now: clk.Now, FailuresToOpen: 1})
	mr.Close()
	decide(t, g, request("a"))
	before := engine.calls.Load()
	r := decide(t, g, request("a"))
	if !r.CircuitOpen || !r.Allowed || r.Reason != bucketgate.ReasonDegraded || engine.calls.Load() != before {
		t.Fatalf("open circuit failing open: %+v", r)
	}
}

// Usage reads the engine's clock (the identity's master's), then the usage of the days
// span gives for it, within the guard's deadline; span's error is its error, the days not read; a failure is its
// error, whatever the failure policy, and tells the circuit breaker nothing.
func TestUsage(t *testing.T) {
	mr, clk, engine := miniEngine(t)
	g := guard.New(engine, guard.Options{FailOpen: true, Now: clk.Now, FailuresToOpen: 1, Timeout: time.Second})
	var told time.Time
	days, err := g.Usage(context.Background(), "u", func(now time.Time) (time.Time, time.Time, error) {
		told = now
		return now, now, nil
	})
	if err != nil || !told.Equal(epoch) || len(days) != 1 || days[0] != (bucketgate.DayUsage{Day: bucketgate.UTCDay(epoch)}) {
		t.Fatalf("Usage = %+v, %v (the span told %v, want %v)", days, err, told, epoch)
	}
	if id := engine.clockFor.Load(); id != "u" {
		t.Fatalf("Usage read the clock of %q's master, want u's", id)
	}
	refused := errors.New("not kept")
	calls := engine.calls.Load()
	if _, err := g.Usage(context.Background(), "u", func(time.Time) (time.Time, time.Time, error) { return epoch, epoch, refused }); err != refused || engine.calls.Load() != calls+1 {
		t.Fatalf("Usage of a span refused: %v after %d calls, want %v after the clock's alone", err, engine.calls.Load()-calls, refused)
	}
	ctx, cancel := context.WithDeadline(context.Background(), time.Now().Add(guard.DefaultMargin/2))
	defer cancel()
	g = guard.New(engine, guard.Options{Now: clk.Now, Margin: guard.DefaultMargin})
	if _, err := g.Usage(ctx, "u", today); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Usage past the margin: %v, want the deadline", err)
	}
	mr.Close()
	g = guard.New(engine, guard.Options{FailOpen: true, Now: clk.Now, FailuresToOpen: 1, Timeout: time.Second})
	if _, err := g.Usage(context.Background(), "u", today); err == nil {
		t.Fatal("Usage with Redis gone: no error")
	}
	if r, err := g.Decide(context.Background(), request("u")); err != nil || r.CircuitOpen {
		t.Fatalf("the decision after a failed read: %+v, %v: the read told the breaker", r, err)
	}
}

// today is the span of today's usage alone.
func today(now time.Time) (time.Time, time.Time, error) { return now, now, nil }

// A request whose caller stopped waiting (its context canceled: an HTTP client of the
// middleware that hung up) fails by the policy as the timeout it is to that caller, and
// tells the circuit breaker nothing: Redis did not fail, so however many callers hang up,
// the next caller is still decided by Redis.
func TestCallerCancelIsNoRedisFailure(t *testing.T) {
	_, clk, engine := miniEngine(t)
	g := guard.New(engine, guard.Options{Now: clk.Now, FailuresToOpen: 1, Timeout: time.Second})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	for range 3 {
		r, err := g.Decide(ctx, request("a"))
		if err != nil || r.Reason != bucketgate.ReasonUnavailable || r.Failure != guard.FailureTimeout || !errors.Is(r.Err, context.Canceled) {
			t.Fatalf("caller gone: %+v, %v; want unavailable, timeout, the cancellation", r, err)
		}
	}
	if r := decide(t, g, request("a")); r.CircuitOpen || r.Reason != bucketgate.ReasonOK {
		t.Fatalf("the next caller after three that hung up: %+v, want decided by Redis", r)
	}
}
