package bucket_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/rueidis"

	"github.com/bucketgate/bucketgate"
	"github.com/bucketgate/bucketgate/internal/bucket"
	"github.com/bucketgate/bucketgate/internal/testkit/redistest"
)

// TestSecretRecheckWhileItsMasterStalls: in a cluster whose master of the secrets
// (bucket.SecretSlot, bucket.SecretsKeptSlot) stalls, an instance that holds them goes
// on reserving for the identities of the other masters: its read of them again
// (SecretRecheck), which that master does not answer, leaves the reserve half its time,
// as the idle check of a connection does. It took all of it, and the reserve failed
// at its deadline once a minute on each instance.
func TestSecretRecheckWhileItsMasterStalls(t *testing.T) {
	const masters = 3
	cluster := redistest.StartCluster(t, masters, 0)
	c := connect(t, map[string]string{"REDIS_ADDR": strings.Join(cluster.Seeds(), ",")})
	master := func(slot int) int { return slot * masters / bucket.Slots } // redistest gives each master an equal range
	stalled := master(bucket.SecretSlot)
	identity := ""
	for k := 0; identity == ""; k++ {
		if id := fmt.Sprintf("elsewhere-%d", k); master(bucket.Slot(id)) != stalled && master(bucket.Slot(id)) != master(bucket.SecretsKeptSlot) {
			identity = id
		}
	}
	k := new(clock)
	l := bucket.New(c, bucket.Clock(k.now))
	reserve := bucketgate.Request{Identity: identity, Rules: slowRules, Op: bucketgate.OpReserve, Cost: 1}
	if _, err := l.Decide(context.Background(), reserve); err != nil { // the secrets read
		t.Fatal(err)
	}
	cluster.Masters[stalled].Pause()
	defer cluster.Masters[stalled].Resume()
	k.advance(bucket.SecretRecheck)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second) // no timing: half of it is ample for one reserve
	defer cancel()
	if d, err := l.Decide(ctx, reserve); err != nil || !d.Allowed {
		t.Errorf("a reserve of %s, on a healthy master, while the secrets' master stalls: %+v, %v", identity, d, err)
	}
}

// TestRefusedIDWhileRedisFails: an instance that has not read a secret changed within
// the last minute (SecretRecheck), and whose read of it again at the refused id
// (RefusedRecheck) Redis does not answer, answers a settle of an id signed under it as
// Redis's failure (ErrNoSecret: retryable, unavailable), not as a conflict, which a
// client does not retry, leaving the reservation charged at its estimate; so does a
// settle within the second after that failed read, which reads nothing, and Signed
// with its context done (the circuit breaker's open circuit). Once Redis answers, the
// id settles.
func TestRefusedIDWhileRedisFails(t *testing.T) {
	tests := []struct {
		name    string
		outage  func(*redistest.Server)
		recover func(*redistest.Server)
	}{
		{"paused", (*redistest.Server).Pause, (*redistest.Server).Resume},
		{"stopped", (*redistest.Server).Stop, nil}, // a restart loses the dataset, its secret with it
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := redistest.Start(t)
			f := &secretFleet{t: t, c: redistest.Client(t, srv.Addr), clock: new(clock)}
			a := f.instance()
			f.reserve(a) // A reads Redis's secret
			f.run(f.c.B().Del().Key(bucket.SecretKey).Build())
			fromC := f.reserve(f.instance()) // a new instance writes another one
			tt.outage(srv)
			defer srv.Resume()
			f.clock.advance(bucket.RefusedRecheck)
			settle := bucketgate.Request{Identity: "a", Rules: slowRules, Op: bucketgate.OpSettle, Cost: 1, ID: fromC}
			for _, what := range []string{"the first settle, whose read fails", "a settle within the second after"} {
				ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
				_, err := a.Decide(ctx, settle)
				cancel()
				if errors.Is(err, bucketgate.ErrConflict) || !errors.Is(err, bucket.ErrNoSecret) {
					t.Errorf("%s: %v, want Redis's failure (ErrNoSecret), not a conflict", what, err)
				}
			}
			done, cancel := context.WithCancel(context.Background())
			cancel()
			if err := a.Signed(done, "a", fromC, false); errors.Is(err, bucketgate.ErrConflict) || err == nil {
				t.Errorf("Signed, its context done: %v, want an error that is not a conflict", err)
			}
			if tt.recover == nil {
				return
			}
			tt.recover(srv)
			f.clock.advance(bucket.RefusedRecheck)
			f.settles("A, of the id, Redis back", a, fromC)
		})
	}
}

// TestRefusedIDWhileAnotherReadIsInFlight: an instance whose secrets refuse an id while
// another call's read of them again is in flight (another refused id's, RefusedRecheck
// after the last one, which Redis has not answered yet) waits for that read and decides with its result, within its own
// deadline: answered as Redis's failure (ErrNoSecret: retryable) when the deadline
// comes first, the id verified once the read brings the secret that signed it. It was
// refused as a conflict at once, which a client does not retry, leaving the
// reservation charged at its estimate. Each step waits for the one before, bounded by
// its call: the read has left A (on its one connection: see oneConnection), the id was
// refused under the secrets A holds (bucket.AtRefusal) before Redis answers.
func TestRefusedIDWhileAnotherReadIsInFlight(t *testing.T) {
	srv := redistest.Start(t)
	p := redistest.StartProxy(t, srv.Addr) // tells when the read has left the instance
	f := &secretFleet{t: t, c: redistest.Client(t, srv.Addr), clock: new(clock)}
	refused := make(chan struct{}, 4) // A refused an id under the secrets it holds
	a := bucket.New(oneConnection(t, p.Addr), bucket.Clock(f.clock.now), bucket.AtRefusal(func() {
		select {
		case refused <- struct{}{}:
		default:
		}
	}))
	f.reserve(a) // A reads Redis's secret, and connects
	f.run(f.c.B().Del().Key(bucket.SecretKey).Build())
	fromC := f.reserve(f.instance()) // a new instance writes another one
	srv.Pause()
	defer srv.Resume()
	f.clock.advance(bucket.SecretRecheck)
	signed := func(ctx context.Context, id string) chan error {
		done := make(chan error, 1)
		go func() { done <- a.Signed(ctx, "a", id, false) }()
		return done
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute) // bounds each wait below
	defer cancel()
	sent := len(p.Sent())
	reading := signed(ctx, fromC) // refused under the secrets held: its read of them again waits for Redis
	awaitRead(t, p, sent, reading)
	<-refused // its refusal came before its read
	request := bucket.OneRead(context.Background())
	short, cancelShort := context.WithTimeout(request, 200*time.Millisecond)
	err := a.Signed(short, "a", fromC, false)
	cancelShort()
	if errors.Is(err, bucketgate.ErrConflict) || !errors.Is(err, bucket.ErrNoSecret) {
		t.Errorf("the id of a new secret, its deadline before the read's end: %v, want Redis's failure (ErrNoSecret), not a conflict", err)
	}
	if failed := bucket.FailedRead(request); !errors.Is(failed, bucket.ErrNoSecret) { // it waited for Redis: its decision must not
		t.Errorf("FailedRead of the request that waited = %v, want its failure", failed)
	}
	select {
	case <-refused: // the short call's, sent before it returned
	default:
		t.Fatal("the id of a new secret was never refused under the secrets A holds")
	}
	waiting := signed(ctx, fromC)
	select { // refused while the read is in flight: Redis answers nothing before Resume
	case <-refused:
	case err := <-waiting:
		t.Fatalf("the id of a new secret, while the read was in flight: ended before its refusal under the secrets A holds: %v", err)
	}
	srv.Resume()
	if err := <-reading; err != nil {
		t.Fatalf("the call whose read was in flight: %v", err)
	}
	if err := <-waiting; err != nil {
		t.Errorf("the id of a new secret while the read was in flight, Redis back: %v, want it verified", err)
	}
	f.settles("A, of the id, Redis back", a, fromC)
}

// TestOneReadOnAColdLimiter: on a limiter that has never read the secrets, during an
// outage, the calls of one request (bucket.OneRead: a settle by id's Signed, then its
// decision, or a batch's) read them once: the first one's read fails, and the calls
// after it ask Redis nothing and fail with its error, as calls that did not make the
// read (NotAsked: a breaker does not count them again). A request after it reads them
// again. Each call read them, each waiting the whole deadline.
func TestOneReadOnAColdLimiter(t *testing.T) {
	for _, tc := range []struct {
		name   string
		outage func(*redistest.Server)
	}{
		{"paused", (*redistest.Server).Pause},
		{"stopped", (*redistest.Server).Stop},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := redistest.Start(t)
			reserve := bucketgate.Request{Identity: "a", Rules: slowRules, Op: bucketgate.OpReserve, Cost: 4}
			signed, err := bucket.New(redistest.Client(t, srv.Addr)).Decide(context.Background(), reserve) // another instance's
			if err != nil || signed.Reservation == "" {
				t.Fatalf("reserve: %+v, %v", signed, err)
			}
			c := &counting{Client: redistest.Client(t, srv.Addr)}
			l := bucket.New(c)
			if _, err := l.Decide(context.Background(), bucketgate.Request{Identity: "a", Rules: slowRules}); err != nil { // connected, the secrets never read
				t.Fatal(err)
			}
			tc.outage(srv)
			defer srv.Resume()
			settle := bucketgate.Request{Identity: "a", Rules: slowRules, Op: bucketgate.OpSettle, Cost: 1, ID: signed.Reservation}
			request := bucket.OneRead(context.Background())
			for _, step := range []struct {
				what     string
				ctx      context.Context
				call     func(ctx context.Context) []error
				notAsked bool // else its own read
			}{
				{"Signed", request, func(ctx context.Context) []error { return []error{l.Signed(ctx, "a", signed.Reservation, false)} }, false},
				{"the settle after it", request, func(ctx context.Context) []error { _, err := l.Decide(ctx, settle); return []error{err} }, true},
				{"a batch after it", request, func(ctx context.Context) []error {
					_, errs := l.DecideBatch(ctx, []bucketgate.Request{settle, reserve})
					return errs
				}, true},
				{"the settle of another request", context.Background(), func(ctx context.Context) []error { _, err := l.Decide(ctx, settle); return []error{err} }, false},
			} {
				reads := c.secretReads()
				ctx, cancel := context.WithTimeout(step.ctx, 200*time.Millisecond)
				errs := step.call(ctx)
				cancel()
				for i, err := range errs {
					if !errors.Is(err, bucket.ErrNoSecret) || bucket.NotAsked(err) != step.notAsked {
						t.Errorf("%s, request %d: %v (not asked: %v), want ErrNoSecret, not asked: %v", step.what, i, err, bucket.NotAsked(err), step.notAsked)
					}
				}
				want := 1 // its own read
				if step.notAsked {
					want = 0
				}
				if n := c.secretReads() - reads; n != want {
					t.Errorf("%s: %d reads of the secrets, want %d", step.what, n, want)
				}
			}
		})
	}
}

// TestSignedReadsAgainOnlyForARefusedID: a minute after its last read of the secrets
// (SecretRecheck), while Redis does not answer, Signed asks Redis nothing for an id the
// secrets held verify (the read again is left to the calls that sign), and its read
// again for an id they refuse is its own: its failure is not NotAsked, so that a circuit
// breaker counts it. Signed read them again for every id, the first a minute after: of
// an id held, half the deadline, after which the settle's decision waited a whole one
// more; of an id refused, the read's failure was answered as NotAsked, a read Signed
// did not make, and the request's failure was counted nowhere.
func TestSignedReadsAgainOnlyForARefusedID(t *testing.T) {
	for _, tc := range []struct {
		name  string
		fresh bool // the id is signed under a secret the instance has not read
		reads int
	}{
		{"an id the secrets held verify", false, 0},
		{"an id of a secret not read yet", true, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := redistest.Start(t)
			f := &secretFleet{t: t, c: redistest.Client(t, srv.Addr), clock: new(clock)}
			c := &counting{Client: redistest.Client(t, srv.Addr)}
			a := bucket.New(c, bucket.Clock(f.clock.now))
			id := f.reserve(a) // A reads Redis's secret
			if tc.fresh {
				f.run(f.c.B().Del().Key(bucket.SecretKey).Build())
				id = f.reserve(f.instance()) // a new instance writes another one
			}
			srv.Pause()
			defer srv.Resume()
			f.clock.advance(bucket.SecretRecheck)
			reads := c.secretReads()
			ctx, cancel := context.WithTimeout(bucket.OneRead(context.Background()), 200*time.Millisecond)
			err := a.Signed(ctx, "a", id, false)
			cancel()
			switch {
			case !tc.fresh && err != nil:
				t.Errorf("Signed: %v, want nil", err)
			case tc.fresh && (!errors.Is(err, bucket.ErrNoSecret) || bucket.NotAsked(err)):
				t.Errorf("Signed: %v (not asked: %v), want its own read's failure (ErrNoSecret)", err, bucket.NotAsked(err))
			}
			if n := c.secretReads() - reads; n != tc.reads {
				t.Errorf("Signed read the secrets %d times, want %d", n, tc.reads)
			}
		})
	}
}

// TestOneReadWithoutAConnection: on a limiter whose connection is not made yet (a cold
// start during an outage: the attempt waits until the call's deadline), a settle's
// check of its id (Signed) that could not connect fails its request's calls after it,
// which ask nothing, no connection either (NotAsked): FailedRead tells the decision's
// guard not to wait again. Each call waited for the connection, the whole deadline.
func TestOneReadWithoutAConnection(t *testing.T) {
	var attempts atomic.Int64
	l := bucket.NewLazy(func(ctx context.Context) (rueidis.Client, error) {
		attempts.Add(1)
		<-ctx.Done() // a connection being made to a Redis that does not answer
		return nil, fmt.Errorf("still connecting: %w", ctx.Err())
	})
	id := "r3." + strings.Repeat("A", 60) + "." + strings.Repeat("A", 22) // spelled as an id: Signed needs the secrets
	request := bucket.OneRead(context.Background())
	for _, step := range []struct {
		what     string
		attempts int64
		notAsked bool
	}{
		{"the first id's Signed", 1, false},
		{"the second id's Signed", 0, true},
	} {
		before := attempts.Load()
		ctx, cancel := context.WithTimeout(request, 100*time.Millisecond)
		err := l.Signed(ctx, "a", id, false)
		cancel()
		if err == nil || errors.Is(err, bucketgate.ErrConflict) || bucket.NotAsked(err) != step.notAsked {
			t.Errorf("%s: %v (not asked: %v), want the connection's failure, not asked: %v", step.what, err, bucket.NotAsked(err), step.notAsked)
		}
		if n := attempts.Load() - before; n != step.attempts {
			t.Errorf("%s: %d connection attempts, want %d", step.what, n, step.attempts)
		}
	}
	if err := bucket.FailedRead(request); err == nil || !strings.Contains(err.Error(), "still connecting") {
		t.Errorf("FailedRead = %v, want the connection's failure", err)
	}
	if err := bucket.FailedRead(context.Background()); err != nil {
		t.Errorf("FailedRead of another request = %v, want nil", err)
	}
}
