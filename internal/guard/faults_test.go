package guard_test

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/bucketgate/bucketgate"
	"github.com/bucketgate/bucketgate/internal/app"
	"github.com/bucketgate/bucketgate/internal/bucket"
	"github.com/bucketgate/bucketgate/internal/guard"
	"github.com/bucketgate/bucketgate/internal/lua"
	"github.com/bucketgate/bucketgate/internal/redisconn"
	"github.com/bucketgate/bucketgate/internal/testkit/redistest"
)

// Fault tests run the production chain (settings, redisconn, bucket, guard with
// production's options) against real server processes and real faults.
const (
	// faultTimeoutMS is the decision deadline of the fault tests: longer than
	// production's, so that a healthy decision on a loaded machine never misses it.
	faultTimeoutMS = "200"
	// slack bounds how long a decision during a fault may take: the deadline plus a
	// generous margin for a loaded machine. It catches waiting for the wrong thing,
	// not slowness.
	slack = 10 * time.Second
	// recoveryWithin bounds how long service takes to come back after a fault heals:
	// one probe interval plus the same margin.
	recoveryWithin = guard.DefaultProbeInterval + slack
)

// chain returns the production Guard for a Redis at addr, with extra settings.
func chain(t *testing.T, addr string, env map[string]string) *guard.Guard {
	t.Helper()
	all := map[string]string{"REDIS_ADDR": addr, "REDIS_TIMEOUT_MS": faultTimeoutMS}
	for k, v := range env {
		all[k] = v
	}
	s := redistest.Settings(t, all)
	c, err := redisconn.New(s)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return guard.New(bucket.NewLazy(c.Client), app.GuardOptions(s))
}

// timed decides q and returns the result and how long it took.
func timed(t *testing.T, g *guard.Guard, q bucketgate.Request) (guard.Result, time.Duration) {
	t.Helper()
	start := time.Now()
	r := decide(t, g, q)
	return r, time.Since(start)
}

// recovers polls until g decides q with Redis, and fails t if that takes too long.
func recovers(t *testing.T, g *guard.Guard, q bucketgate.Request) {
	t.Helper()
	deadline := time.Now().Add(recoveryWithin)
	for {
		r := decide(t, g, q)
		if r.Failure == guard.FailureNone && r.Reason == bucketgate.ReasonOK {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("not recovered %v after the fault healed: %+v", recoveryWithin, r)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// evalReply is a well-formed bucket.lua reply: allowed, rule 1, 9 left, no wait,
// full in 100 ms, at now.
func evalReply(now time.Time) string {
	flags := 1<<lua.FlagsAllowedShift | 1<<lua.FlagsBindingShift | 9<<lua.FlagsRemainingShift
	return fmt.Sprintf("*%d\r\n:%d\r\n:0\r\n:100\r\n:%d\r\n", lua.ReplyLen, flags, now.UnixMicro())
}

func TestFaults(t *testing.T) {
	type fault struct {
		inject, heal func(t *testing.T)
	}
	tests := []struct {
		name     string
		failOpen bool
		want     guard.Failure
		setup    func(t *testing.T) (addr string, f fault)
	}{
		{"paused (SIGSTOP): timeout", false, guard.FailureTimeout, func(t *testing.T) (string, fault) {
			srv := redistest.Start(t)
			return srv.Addr, fault{func(*testing.T) { srv.Pause() }, func(*testing.T) { srv.Resume() }}
		}},
		{"paused, fail open: degraded", true, guard.FailureTimeout, func(t *testing.T) (string, fault) {
			srv := redistest.Start(t)
			return srv.Addr, fault{func(*testing.T) { srv.Pause() }, func(*testing.T) { srv.Resume() }}
		}},
		{"killed: connection refused", false, guard.FailureRedisError, func(t *testing.T) (string, fault) {
			srv := redistest.Start(t)
			return srv.Addr, fault{func(*testing.T) { srv.Stop() }, func(t *testing.T) {
				if err := srv.Restart(); err != nil {
					t.Fatal(err)
				}
			}}
		}},
		{"error reply (OOM)", false, guard.FailureRedisError, func(t *testing.T) (string, fault) {
			srv := redistest.Start(t)
			return srv.Addr, fault{
				func(t *testing.T) { run(t, srv, "CONFIG", "SET", "maxmemory", "1") },
				func(t *testing.T) { run(t, srv, "CONFIG", "SET", "maxmemory", "0") },
			}
		}},
		{"wrong-shape reply", false, guard.FailureBadResponse, func(t *testing.T) (string, fault) {
			fake := redistest.StartFake(t, func([]string) string { return evalReply(time.Now()) })
			return fake.Addr, fault{
				func(*testing.T) { fake.SetReply(func([]string) string { return "*2\r\n:1\r\n:1\r\n" }) },
				func(*testing.T) { fake.SetReply(func([]string) string { return evalReply(time.Now()) }) },
			}
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel() // each case has its own server; most of the time is the probe interval
			addr, f := tc.setup(t)
			env := map[string]string{}
			if tc.failOpen {
				env["FAIL_MODE"] = "open"
			}
			g := chain(t, addr, env)
			q := request("victim")
			if r := decide(t, g, q); r.Reason != bucketgate.ReasonOK {
				t.Fatalf("before the fault: %+v", r)
			}

			f.inject(t)
			for i := range guard.DefaultFailuresToOpen + 1 { // the last one meets an open circuit
				r, took := timed(t, g, q)
				wantReason, wantAllowed, wantRetry := bucketgate.ReasonUnavailable, false, guard.FailureRetryAfter
				if tc.failOpen {
					wantReason, wantAllowed, wantRetry = bucketgate.ReasonDegraded, true, 0
				}
				if r.Failure != tc.want || r.Reason != wantReason || r.Allowed != wantAllowed || r.RetryAfter != wantRetry || r.Err == nil {
					t.Fatalf("decision %d during the fault: %+v, want %s with failure %s", i+1, r, wantReason, tc.want)
				}
				if took > slack {
					t.Fatalf("decision %d during the fault took %v", i+1, took)
				}
				if open := i == guard.DefaultFailuresToOpen; r.CircuitOpen != open {
					t.Fatalf("decision %d: circuit open %v, want %v", i+1, r.CircuitOpen, open)
				}
			}

			f.heal(t)
			recovers(t, g, q)
		})
	}
}

// TestBadStateIsOneIdentitysFailure: stored state that bucket.lua did not write (a
// stray writer's NaN, garbage, a key of another type) fails its own identity by the
// failure policy, as bad_response, however often it is asked, and never opens the
// circuit for the others; a reset through the guard clears the fields.
func TestBadStateIsOneIdentitysFailure(t *testing.T) {
	srv := redistest.Start(t)
	g := chain(t, srv.Addr, nil)
	tests := []struct {
		name   string
		inject []string
		reset  bool // a reset clears it; else the key must be deleted
	}{
		{"NaN tokens", []string{"HSET", bucket.Key("victim-nan"), "burst:tokens", "nan", "burst:ts", "1"}, true},
		{"garbage stamp", []string{"HSET", bucket.Key("victim-garbage"), "burst:tokens", "5", "burst:ts", "garbage"}, true},
		{"key of another type", []string{"SET", bucket.Key("victim-type"), "not a hash"}, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			victim := strings.TrimPrefix(strings.TrimSuffix(tc.inject[1], "}"), bucket.KeyPrefix+"{")
			run(t, srv, tc.inject...)
			for i := range 3 * guard.DefaultFailuresToOpen {
				r := decide(t, g, request(victim))
				if r.Failure != guard.FailureBadResponse || r.Reason != bucketgate.ReasonUnavailable || r.CircuitOpen ||
					!errors.Is(r.Err, bucket.ErrBadState) {
					t.Fatalf("decision %d on the victim: %+v, want unavailable, bad_response, circuit closed", i+1, r)
				}
				if other := decide(t, g, request("bystander-"+tc.name)); other.Failure != guard.FailureNone || other.Reason != bucketgate.ReasonOK {
					t.Fatalf("decision %d on another identity: %+v", i+1, other)
				}
			}
			if !tc.reset {
				run(t, srv, "DEL", tc.inject[1])
			} else if r := decide(t, g, bucketgate.Request{Identity: victim, Rules: burst, Op: bucketgate.OpReset}); r.Failure != guard.FailureNone {
				t.Fatalf("reset: %+v", r)
			}
			if r := decide(t, g, request(victim)); r.Reason != bucketgate.ReasonOK || r.Remaining != burst[0].Capacity-1 {
				t.Fatalf("after the repair: %+v", r)
			}
		})
	}
}

// TestBadSecretFailsOnlyWhatSigns: a reservations' secret (bucket.SecretKey) or kept
// secrets (bucket.SecretsKeptKey) that bucketgate did not write, too short or a key of
// another type, fail the calls that sign or verify an id as bad_response, with an error
// naming the key, however often they are asked, and never open the circuit for the
// checks, which sign nothing; deleting the key ends it.
func TestBadSecretFailsOnlyWhatSigns(t *testing.T) {
	srv := redistest.Start(t)
	tests := []struct {
		name   string
		inject []string
	}{
		{"a short secret", []string{"SET", bucket.SecretKey, "short"}},
		{"a secret of another type", []string{"HSET", bucket.SecretKey, "secret", strings.Repeat("7", 64)}},
		{"a short kept secret", []string{"ZADD", bucket.SecretsKeptKey, "1e15", "short"}},
		{"kept secrets of another type", []string{"SET", bucket.SecretsKeptKey, strings.Repeat("7", 64)}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			run(t, srv, "FLUSHALL")
			run(t, srv, tc.inject...)
			g := chain(t, srv.Addr, nil)
			reserve := bucketgate.Request{Identity: "reserver", Rules: burst, Op: bucketgate.OpReserve, Cost: 1}
			for i := range 3 * guard.DefaultFailuresToOpen {
				r := decide(t, g, reserve)
				if r.Failure != guard.FailureBadResponse || r.CircuitOpen || !errors.Is(r.Err, bucket.ErrBadState) ||
					!strings.Contains(r.Err.Error(), tc.inject[1]) || !strings.Contains(r.Err.Error(), "delete it") {
					t.Fatalf("reserve %d: %+v, want bad_response, circuit closed, an error naming %s and its repair", i+1, r, tc.inject[1])
				}
				if other := decide(t, g, request("checker")); other.Failure != guard.FailureNone || other.Reason != bucketgate.ReasonOK {
					t.Fatalf("check %d after as many reserves: %+v", i+1, other)
				}
			}
			run(t, srv, "DEL", tc.inject[1])
			if r := decide(t, g, reserve); r.Failure != guard.FailureNone || r.Reason != bucketgate.ReasonOK {
				t.Fatalf("reserve after the key's deletion: %+v", r)
			}
		})
	}
}

// TestNoScriptRecovery: Redis losing its script cache (SCRIPT FLUSH, or a restart)
// costs no decision: rueidis answers NOSCRIPT with EVAL.
func TestNoScriptRecovery(t *testing.T) {
	srv := redistest.Start(t)
	g := chain(t, srv.Addr, nil)
	q := request("flushed")
	if r := decide(t, g, q); r.Reason != bucketgate.ReasonOK {
		t.Fatalf("before: %+v", r)
	}
	run(t, srv, "SCRIPT", "FLUSH")
	if r := decide(t, g, q); r.Failure != guard.FailureNone || r.Reason != bucketgate.ReasonOK {
		t.Fatalf("after SCRIPT FLUSH: %+v", r)
	}
	if n := run(t, srv, "SCRIPT", "EXISTS", lua.BucketSHA1); n != "1" {
		t.Fatalf("script not loaded again after SCRIPT FLUSH")
	}

	// After a restart the connection to the old process is dead: the first decision
	// may meet it (EOF; the consuming script is never retried), the next reconnects.
	// The empty script cache costs nothing.
	if err := srv.Restart(); err != nil {
		t.Fatal(err)
	}
	for failed := 0; ; failed++ {
		r := decide(t, g, q)
		if r.Failure == guard.FailureNone {
			if r.Remaining != burst[0].Capacity-1 {
				t.Fatalf("first decision on the restarted (empty) server: %+v", r)
			}
			break
		}
		if failed == 1 || r.Failure != guard.FailureRedisError || strings.Contains(r.Err.Error(), "NOSCRIPT") {
			t.Fatalf("decision %d after the restart: %+v, want at most one connection error", failed+1, r)
		}
	}
}

func TestColdStartDuringOutage(t *testing.T) {
	srv := redistest.Start(t)
	srv.Stop()
	start := time.Now()
	g := chain(t, srv.Addr, nil)
	q := request("cold")
	for i := range guard.DefaultFailuresToOpen + 1 {
		if r := decide(t, g, q); r.Reason != bucketgate.ReasonUnavailable || r.Failure != guard.FailureRedisError {
			t.Fatalf("decision %d during the outage: %+v", i+1, r)
		}
	}
	if took := time.Since(start); took > slack {
		t.Fatalf("init and %d decisions during the outage took %v", guard.DefaultFailuresToOpen+1, took)
	}
	if err := srv.Restart(); err != nil {
		t.Fatal(err)
	}
	recovers(t, g, q)
}

// TestNoGoroutineGrowth makes thousands of failed decisions of every kind and checks
// that the goroutine count comes back to where it was.
func TestNoGoroutineGrowth(t *testing.T) {
	const (
		refused   = 1000
		timeouts  = 200
		shortCuts = 2000
		leeway    = 10 // goroutines that may come and go (timers, reconnects)
		// quickTimeout makes the timeouts cheap; only the paused server meets it.
		quickTimeout = 5 * time.Millisecond
	)
	srv := redistest.Start(t)
	// Guards without a breaker: every decision reaches rueidis and fails there.
	s := redistest.Settings(t, map[string]string{"REDIS_ADDR": srv.Addr, "REDIS_TIMEOUT_MS": strconv.FormatInt(slack.Milliseconds(), 10)})
	c, err := redisconn.New(s)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	engine := bucket.NewLazy(c.Client)
	quick := guard.New(engine, guard.Options{Timeout: quickTimeout})
	patient := guard.New(engine, guard.Options{Timeout: s.Timeout})
	withBreaker := guard.New(engine, app.GuardOptions(s))
	q := request("leak")
	if r := decide(t, patient, q); r.Reason != bucketgate.ReasonOK {
		t.Fatalf("before: %+v", r)
	}
	baseline := runtime.NumGoroutine()

	srv.Pause()
	countFailures(t, quick, q, timeouts, guard.FailureTimeout)
	srv.Resume()
	srv.Stop()
	countFailures(t, patient, q, refused, guard.FailureRedisError)
	countFailures(t, withBreaker, q, shortCuts, guard.FailureRedisError)
	if err := srv.Restart(); err != nil {
		t.Fatal(err)
	}
	recovers(t, patient, q)

	deadline := time.Now().Add(slack)
	for runtime.NumGoroutine() > baseline+leeway && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	if n := runtime.NumGoroutine(); n > baseline+leeway {
		buf := make([]byte, 1<<16)
		t.Fatalf("%d goroutines after %d failed decisions, %d before:\n%s", n, refused+timeouts+shortCuts, baseline, buf[:runtime.Stack(buf, true)])
	}
}

// countFailures makes n decisions and checks that each one failed with want.
func countFailures(t *testing.T, g *guard.Guard, q bucketgate.Request, n int, want guard.Failure) {
	t.Helper()
	for i := range n {
		if r := decide(t, g, q); r.Failure != want || r.Reason != bucketgate.ReasonUnavailable {
			t.Fatalf("failed decision %d of %d: %+v, want %s", i+1, n, r, want)
		}
	}
}

// run sends a command to srv and returns its reply as text.
func run(t *testing.T, srv *redistest.Server, args ...string) string {
	t.Helper()
	v, err := srv.Command(context.Background(), args...)
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(v)
}

// TestOneStallCountsOnce: a stall longer than the deadline met by many concurrent
// requests (Redis paused while they are in flight) counts as one failure, as it does on
// a Lambda instance serving one request at a time; the circuit opens only after
// DefaultFailuresToOpen failures one after another.
func TestOneStallCountsOnce(t *testing.T) {
	srv := redistest.Start(t)
	g := chain(t, srv.Addr, nil)
	if r := decide(t, g, request("victim")); r.Reason != bucketgate.ReasonOK {
		t.Fatalf("before the stall: %+v", r)
	}
	srv.Pause()
	defer srv.Resume()
	const concurrent = 2 * guard.DefaultFailuresToOpen
	results := make(chan guard.Result, concurrent)
	start := make(chan struct{})
	for i := range concurrent {
		go func() {
			<-start
			r, err := g.Decide(context.Background(), request(fmt.Sprintf("caller-%d", i)))
			if err != nil {
				t.Errorf("Decide: %v", err)
			}
			results <- r
		}()
	}
	close(start)
	for range concurrent {
		if r := <-results; r.Failure != guard.FailureTimeout || r.CircuitOpen {
			t.Fatalf("a request in flight during the stall: %+v, want a timeout that asked Redis", r)
		}
	}
	// The stall was one failure: the circuit opens after DefaultFailuresToOpen - 1 more.
	for i := 1; i <= guard.DefaultFailuresToOpen; i++ {
		r := decide(t, g, request("victim"))
		if open := i == guard.DefaultFailuresToOpen; r.CircuitOpen != open || r.Failure != guard.FailureTimeout {
			t.Fatalf("decision %d after the stall: %+v, want circuit open %v", i, r, open)
		}
	}
}

// TestStalledConnectionConcurrent: a connection the network dropped silently (nothing
// answers, no reset) under a long-running process's concurrent requests, whose
// commands share it (rueidis's pipelining), is given up within a couple of seconds, and
// service resumes on a new connection, as it does at once for Lambda's one request at
// a time.
func TestStalledConnectionConcurrent(t *testing.T) {
	srv := redistest.Start(t)
	path := redistest.StartProxy(t, srv.Addr)
	g := chain(t, path.Addr, nil)
	results := make(chan guard.Result, concurrentCallers)
	for i := range concurrentCallers { // requests in flight together: the connection pipelines from now on
		go func() {
			r, _ := g.Decide(context.Background(), request(fmt.Sprintf("caller-%d", i)))
			results <- r
		}()
	}
	for range concurrentCallers {
		if r := <-results; r.Failure != guard.FailureNone {
			t.Fatalf("before the stall: %+v", r)
		}
	}
	path.Stall()
	recovers(t, g, request("after"))
}

// concurrentCallers is how many requests TestStalledConnectionConcurrent sends at once.
const concurrentCallers = 8

// TestDenyCacheForgetsOnAnUnansweredGiveBack: a refund or reset that Redis did not
// answer in time may have given the tokens back all the same (Redis paused with it in
// its input, ran it on resuming): the instance that sent it forgets the identity's
// cached denials as it does after one Redis answered, so that its next check is
// Redis's to decide. The Guard's clock stands still: only a give-back ends the
// cached denial.
func TestDenyCacheForgetsOnAnUnansweredGiveBack(t *testing.T) {
	daily := []bucketgate.Rule{{Name: "daily", Capacity: 10, RefillPerSecond: 10.0 / 86400}}
	tests := []struct {
		name string
		op   bucketgate.Op
		cost int64
	}{
		{"refund", bucketgate.OpRefund, 1},
		{"reset", bucketgate.OpReset, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			srv := redistest.Start(t)
			s := redistest.Settings(t, map[string]string{"REDIS_ADDR": srv.Addr, "REDIS_TIMEOUT_MS": faultTimeoutMS})
			c, err := redisconn.New(s)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(c.Close)
			opts := app.GuardOptions(s)
			opts.Now, opts.DenyCacheSize = func() time.Time { return epoch }, 100
			g := guard.New(bucket.NewLazy(c.Client), opts)

			one := bucketgate.Request{Identity: "giver", Rules: daily, Cost: 1}
			drain := one
			drain.Cost = 10
			if r := decide(t, g, drain); !r.Allowed {
				t.Fatalf("draining: %+v", r)
			}
			for i, wantHit := range []bool{false, true} {
				if r := decide(t, g, one); r.Allowed || r.CacheHit != wantHit {
					t.Fatalf("check %d after draining: %+v, want denied, from the cache %v", i+1, r, wantHit)
				}
			}
			srv.Pause()
			r := decide(t, g, bucketgate.Request{Identity: "giver", Rules: daily, Cost: tc.cost, Op: tc.op})
			srv.Resume()
			if r.Failure != guard.FailureTimeout {
				t.Fatalf("%s while Redis is paused: %+v, want a timeout", tc.name, r)
			}
			// The connection may still be recovering from the pause on a loaded machine: a
			// check that times out again is tried once more; one the cache answers never is.
			r = decide(t, g, one)
			for try := 1; try < 5 && r.Failure == guard.FailureTimeout && !r.CacheHit; try++ {
				r = decide(t, g, one)
			}
			if !r.Allowed || r.CacheHit {
				t.Fatalf("a check after the %s Redis ran late: %+v, want allowed by Redis", tc.name, r)
			}
		})
	}
}

// TestCallersShortDeadlineIsNoRedisFailure: a decision left only a sliver of time by
// its caller (registry reads or a slow caller took the rest of the invocation) times
// out by the caller's deadline, through no fault of Redis's: it fails by the policy as a
// timeout, but however many do, a healthy Redis (here one 5 ms away, well within the
// decision deadline) is not shut out by the circuit breaker.
func TestCallersShortDeadlineIsNoRedisFailure(t *testing.T) {
	srv := redistest.Start(t)
	path := redistest.StartProxy(t, srv.Addr)
	g := chain(t, path.Addr, nil)
	if r := decide(t, g, request("warm")); r.Reason != bucketgate.ReasonOK {
		t.Fatalf("before: %+v", r)
	}
	path.SetDelay(5 * time.Millisecond)
	for i := range 3 * guard.DefaultFailuresToOpen {
		ctx, cancel := context.WithDeadline(context.Background(), time.Now().Add(guard.DefaultMargin+time.Millisecond))
		r, err := g.Decide(ctx, request(fmt.Sprintf("short-%d", i)))
		cancel()
		if err != nil || r.CircuitOpen || r.Failure != guard.FailureTimeout || r.Reason != bucketgate.ReasonUnavailable {
			t.Fatalf("decision %d with a sliver of time: %+v, %v; want unavailable, timeout, circuit closed", i+1, r, err)
		}
	}
	if r := decide(t, g, request("next")); r.CircuitOpen || r.Reason != bucketgate.ReasonOK {
		t.Fatalf("the next decision, with time: %+v, want decided by Redis", r)
	}
}
