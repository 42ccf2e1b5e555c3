package bucket_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/rueidis"

	"github.com/bucketgate/bucketgate"
	"github.com/bucketgate/bucketgate/internal/bucket"
	"github.com/bucketgate/bucketgate/internal/testkit/redistest"
)

// clock is a test's clock for a Limiter's reads of its secret (bucket.Clock), safe for
// concurrent use.
type clock struct{ elapsed atomic.Int64 } // since epoch, ns

func (k *clock) now() time.Time          { return epoch.Add(time.Duration(k.elapsed.Load())) }
func (k *clock) advance(d time.Duration) { k.elapsed.Add(int64(d)) }

// secretFleet is one Redis, a clock, and Limiters on both, as the instances of a fleet.
type secretFleet struct {
	t     *testing.T
	c     rueidis.Client
	clock *clock
	mini  *mini // the Redis when it is miniredis, whose clock is the fleet's; else nil
}

// slowRules never refill within a test: what a reserve took stays taken.
var slowRules = []bucketgate.Rule{{Name: "tokens", Capacity: 1000, RefillPerSecond: 0.001}}

func newSecretFleet(t *testing.T) *secretFleet {
	t.Helper()
	srv := redistest.Start(t)
	return &secretFleet{t: t, c: redistest.Client(t, srv.Addr), clock: new(clock)}
}

// instance is a Limiter on f's Redis and clock, as an instance started now.
func (f *secretFleet) instance(opts ...bucket.Option) *bucket.Limiter {
	return bucket.New(f.c, append(opts, bucket.Clock(f.clock.now))...)
}

// reserve reserves 10 tokens of identity "a" through l and returns the id.
func (f *secretFleet) reserve(l *bucket.Limiter) string {
	f.t.Helper()
	d, err := l.Decide(context.Background(), bucketgate.Request{Identity: "a", Rules: slowRules, Op: bucketgate.OpReserve, Cost: 10, TTL: bucketgate.MaxTTL})
	if err != nil || !d.Allowed || d.Reservation == "" {
		f.t.Fatalf("reserve: %+v, %v", d, err)
	}
	return d.Reservation
}

// settle settles id at 1 through l.
func (f *secretFleet) settle(l *bucket.Limiter, id string) error {
	_, err := l.Decide(context.Background(), bucketgate.Request{Identity: "a", Rules: slowRules, Op: bucketgate.OpSettle, Cost: 1, ID: id})
	return err
}

// settles fails the test unless l settles id.
func (f *secretFleet) settles(who string, l *bucket.Limiter, id string) {
	f.t.Helper()
	if err := f.settle(l, id); err != nil {
		f.t.Errorf("%s: settle: %v", who, err)
	}
}

// refuses fails the test unless l refuses id as not its own.
func (f *secretFleet) refuses(who string, l *bucket.Limiter, id string) {
	f.t.Helper()
	if err := f.settle(l, id); !errors.Is(err, bucketgate.ErrConflict) || !strings.Contains(err.Error(), "not an id this limiter made") {
		f.t.Errorf("%s: settle: %v, want ErrConflict: not an id this limiter made", who, err)
	}
}

// secret is Redis's secret, "" when it has none.
func (f *secretFleet) secret() string {
	f.t.Helper()
	s, err := f.c.Do(context.Background(), f.c.B().Get().Key(bucket.SecretKey).Build()).ToString()
	if rueidis.IsRedisNil(err) {
		return ""
	} else if err != nil {
		f.t.Fatalf("GET %s: %v", bucket.SecretKey, err)
	}
	return s
}

// run sends cmd to f's Redis.
func (f *secretFleet) run(cmd rueidis.Completed) {
	f.t.Helper()
	do(f.t, f.c, cmd)
}

// TestSecretAfterLoss: a Redis that loses its secret (FLUSHALL) gets the fleet's back,
// or the fleet converges on the one a new instance wrote, within SecretRecheck or at
// the first refused id (RefusedRecheck), keeping what it signed before verifiable;
// forged ids are refused under every secret and read Redis once a second at most; a
// Secret option is never read again. (A kept secret's time is Redis's clock's, which
// the tests of secretclock_test.go move.)
func TestSecretAfterLoss(t *testing.T) {
	tests := []struct {
		name string
		run  func(f *secretFleet)
	}{
		{"a new instance after the flush: the fleet signs with its secret after the recheck, and verifies its own earlier ids", func(f *secretFleet) {
			a, b := f.instance(), f.instance()
			before, beforeB, forC, forE := f.reserve(a), f.reserve(b), f.reserve(a), f.reserve(b)
			old := f.secret()
			f.run(f.c.B().Flushall().Build())
			c := f.instance()
			fromC := f.reserve(c)
			if f.secret() == old || f.secret() == "" {
				t.Fatalf("the new instance's secret %q: want a new one", f.secret())
			}
			f.refuses("A before its recheck", a, fromC) // split, and no read again within RefusedRecheck
			f.clock.advance(bucket.SecretRecheck)
			fromA, fromB := f.reserve(a), f.reserve(b) // each reads Redis's secret again
			f.settles("C, of A's id after the recheck", c, fromA)
			f.settles("C, of B's id after the recheck", c, fromB)
			f.settles("A, of its id before the flush", a, before)
			f.settles("B, of its id before the flush", b, beforeB)
			f.settles("A, of C's id", a, fromC)
			f.settles("C, of A's id before the flush (A wrote its secret as kept)", c, forC)
			f.settles("E, started after, of B's id before the flush", f.instance(), forE)
			if s := f.secret(); s == old {
				t.Errorf("Redis's secret is the old one again: the new instance's ids are refused")
			}
		}},
		{"a refused id reads the new secret at once", func(f *secretFleet) {
			a := f.instance()
			before, forC := f.reserve(a), f.reserve(a)
			f.run(f.c.B().Flushall().Build())
			c := f.instance()
			fromC := f.reserve(c)
			f.clock.advance(bucket.RefusedRecheck)
			f.settles("A, of C's id at its first refusal", a, fromC)
			f.settles("A, of its id before the flush", a, before)
			f.settles("C, of A's id before the flush at its first refusal", c, forC)
			f.settles("C, of A's id after", c, f.reserve(a))
		}},
		{"a flush and no new instance: the recheck writes the old secret back", func(f *secretFleet) {
			a := f.instance()
			before := f.reserve(a)
			old := f.secret()
			f.run(f.c.B().Flushall().Build())
			f.clock.advance(bucket.SecretRecheck)
			f.reserve(a)
			if s := f.secret(); s != old {
				t.Fatalf("Redis's secret after A's recheck: %q, want A's %q", s, old)
			}
			f.settles("D, started after, of A's id before the flush", f.instance(), before)
		}},
		{"a forged id: refused under every secret held, nothing written, Redis read once a second at most", func(f *secretFleet) {
			a := f.instance()
			first := f.reserve(a)
			f.run(f.c.B().Set().Key(bucket.SecretKey).Value(strings.Repeat("7", 64)).Build()) // another instance's
			f.clock.advance(bucket.SecretRecheck)
			second := f.reserve(a) // A signs with the other secret and keeps its own
			f.settles("A, of its id under the kept secret", a, first)
			peek := func() int64 {
				d, err := a.Decide(context.Background(), bucketgate.Request{Identity: "a", Rules: slowRules})
				if err != nil {
					t.Fatal(err)
				}
				return d.Rules[0].Remaining
			}
			remaining, keys := peek(), f.keys()
			f.clock.advance(bucket.RefusedRecheck)
			f.run(f.c.B().Del().Key(bucket.SecretKey).Build())
			f.refuses("A, of a forged id under its kept secret", a, forge(first))
			if f.secret() == "" {
				t.Errorf("the first refused id did not read Redis's secret again (nothing written back)")
			}
			f.run(f.c.B().Del().Key(bucket.SecretKey).Build())
			f.refuses("A, of a forged id under the secret it signs with", a, forge(second))
			if s := f.secret(); s != "" {
				t.Errorf("a second refused id within RefusedRecheck read Redis again: it wrote %q back", s)
			}
			f.clock.advance(bucket.RefusedRecheck)
			f.refuses("A, a second later", a, forge(second))
			if f.secret() == "" {
				t.Errorf("a refused id RefusedRecheck later did not read Redis's secret again")
			}
			if got, k := peek(), f.keys(); got != remaining || strings.Join(k, " ") != strings.Join(keys, " ") {
				t.Errorf("after the forged ids: %d remaining, keys %q; want %d, %q", got, k, remaining, keys)
			}
		}},
		{"checks that sign nothing never read the secret", func(f *secretFleet) {
			a := f.instance()
			for _, q := range []bucketgate.Request{{Cost: 1}, {Cost: 1, RequestID: "r1"}, {Op: bucketgate.OpRefund, Cost: 1}} {
				q.Identity, q.Rules = "a", slowRules
				decide(t, a, q)
				f.clock.advance(bucket.SecretRecheck)
			}
			if s := f.secret(); s != "" {
				t.Errorf("Redis's secret %q: a check that signs nothing read it", s)
			}
		}},
		{"a Secret option: never read from Redis, nothing written", func(f *secretFleet) {
			a := f.instance(bucket.Secret([]byte("the fixed secret, 32 bytes long.")))
			id := f.reserve(a)
			f.run(f.c.B().Set().Key(bucket.SecretKey).Value(strings.Repeat("7", 64)).Build())
			f.clock.advance(bucket.SecretRecheck)
			f.reserve(a)
			f.settles("A, of its id after the minute", a, id)
			f.refuses("A, of a forged id", a, forge(id))
			f.run(f.c.B().Del().Key(bucket.SecretKey).Build())
			f.clock.advance(bucket.SecretRecheck)
			f.reserve(a)
			f.refuses("A, of a forged id", a, forge(id))
			if s := f.secret(); s != "" {
				t.Errorf("Redis's secret %q: a Limiter with a Secret option wrote one", s)
			}
		}},
		{"concurrent calls while the secret changes: each settles its own ids", func(f *secretFleet) {
			a := f.instance()
			f.reserve(a)
			var wg sync.WaitGroup
			for g := range 4 {
				wg.Go(func() {
					for i := range 40 {
						if g == 0 && i == 20 {
							if err := f.c.Do(context.Background(), f.c.B().Set().Key(bucket.SecretKey).Value(strings.Repeat("7", 64)).Build()).Error(); err != nil {
								t.Error(err)
							}
						}
						f.clock.advance(bucket.SecretRecheck / 10)
						d, err := a.Decide(context.Background(), bucketgate.Request{Identity: "a", Rules: slowRules, Op: bucketgate.OpReserve, Cost: 10})
						if err != nil || !d.Allowed { // no Fatal outside the test's goroutine
							t.Errorf("reserve: %+v, %v", d, err)
							return
						}
						f.settles("A, of its id", a, d.Reservation)
					}
				})
			}
			wg.Wait()
			f.settles("another instance, of A's id", f.instance(), f.reserve(a))
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.run(newSecretFleet(t))
		})
	}
}

// TestSecretKeptExpiry: instances of different idempotency times (the functions and a
// middleware on one Redis) write the secret they no longer sign with to the kept ones,
// each with its own keptFor: whatever their order, the key lives as long as the longest
// needs (an instance started later verifies the re-sent settle of an old id until
// then), and it has an expiry.
func TestSecretKeptExpiry(t *testing.T) {
	long, short := bucket.KeptFor(bucket.MaxIdempotency), bucket.KeptFor(bucket.MinIdempotency)
	tests := []struct {
		name  string
		order []time.Duration // the idempotency of each instance, in the order they write
		want  time.Duration
	}{
		{"the longer writes first, then the shorter", []time.Duration{bucket.MaxIdempotency, bucket.MinIdempotency}, long},
		{"the shorter writes first, then the longer", []time.Duration{bucket.MinIdempotency, bucket.MaxIdempotency}, long},
		{"one instance", []time.Duration{bucket.MinIdempotency}, short},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newSecretFleet(t)
			var fleet []*bucket.Limiter
			var ids []string
			for _, idempotency := range tt.order {
				l := f.instance(bucket.Idempotency(idempotency))
				fleet, ids = append(fleet, l), append(ids, f.reserve(l))
			}
			f.run(f.c.B().Set().Key(bucket.SecretKey).Value(strings.Repeat("7", 64)).Build()) // another instance's
			f.clock.advance(bucket.SecretRecheck)
			for _, l := range fleet {
				f.reserve(l) // signs with the other secret, and writes its own as kept
			}
			ttl, err := f.c.Do(context.Background(), f.c.B().Pttl().Key(bucket.SecretsKeptKey).Build()).AsInt64()
			if err != nil {
				t.Fatal(err)
			}
			// The times differ by a day: half of it is no timing margin.
			if got := time.Duration(ttl) * time.Millisecond; got < tt.want-(long-short)/2 || got > tt.want {
				t.Errorf("%s expires in %v (PTTL %d), want %v", bucket.SecretsKeptKey, got, ttl, tt.want)
			}
			later := f.instance(bucket.Idempotency(bucket.MaxIdempotency))
			for i, id := range ids {
				f.settles(fmt.Sprintf("an instance started later, of instance %d's id", i), later, id)
			}
		})
	}
}

// keys is every key in f's Redis but the secret, sorted.
func (f *secretFleet) keys() []string {
	f.t.Helper()
	keys, err := f.c.Do(context.Background(), f.c.B().Keys().Pattern("*").Build()).AsStrSlice()
	if err != nil {
		f.t.Fatal(err)
	}
	out := keys[:0]
	for _, k := range keys {
		if k != bucket.SecretKey {
			out = append(out, k)
		}
	}
	slices.Sort(out)
	return out
}

// TestSecretBadState: a secret or a kept secret that bucketgate did not write (too
// short, or a key of another type) fails the calls that sign as bad state (Redis
// answered), not as a secret Redis did not give, with an error that names its key, and
// writes nothing.
func TestSecretBadState(t *testing.T) {
	tests := []struct {
		name, want string
		write      func(c rueidis.Client) rueidis.Completed
	}{
		{"a short secret", bucket.SecretKey, func(c rueidis.Client) rueidis.Completed {
			return c.B().Set().Key(bucket.SecretKey).Value("short").Build()
		}},
		{"a short kept secret", bucket.SecretsKeptKey, func(c rueidis.Client) rueidis.Completed {
			return c.B().Zadd().Key(bucket.SecretsKeptKey).ScoreMember().ScoreMember(1e15, "short").Build()
		}},
		{"a secret of another type", bucket.SecretKey, func(c rueidis.Client) rueidis.Completed {
			return c.B().Hset().Key(bucket.SecretKey).FieldValue().FieldValue("secret", strings.Repeat("7", 64)).Build()
		}},
		{"kept secrets of another type", bucket.SecretsKeptKey, func(c rueidis.Client) rueidis.Completed {
			return c.B().Set().Key(bucket.SecretsKeptKey).Value(strings.Repeat("7", 64)).Build()
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newSecretFleet(t)
			f.run(tt.write(f.c))
			_, err := f.instance().Decide(context.Background(), bucketgate.Request{Identity: "a", Rules: slowRules, Op: bucketgate.OpReserve, Cost: 10})
			if !errors.Is(err, bucket.ErrBadState) || errors.Is(err, bucket.ErrNoSecret) || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("reserve: %v; want ErrBadState naming %s", err, tt.want)
			}
			if n := mustInt(t, do(t, f.c, f.c.B().Exists().Key(bucket.Key("a")).Build())); n != 0 {
				t.Errorf("the identity's state was written")
			}
		})
	}
}

// TestSecretByHand: what an operator's write of the secret does to a running fleet, as
// docs/check.md and docs/operations.md say. A new secret SET by hand is signed with from
// every instance's next read, the ids signed before still settle, and the old secret
// never comes back; a bad one (too short) fails only the instances that never read a
// secret, and once deleted, the running instance writes its own back.
func TestSecretByHand(t *testing.T) {
	replacement := strings.Repeat("5", 64)
	tests := []struct {
		name string
		run  func(f *secretFleet)
	}{
		{"a new secret replaces the old one", func(f *secretFleet) {
			a := f.instance()
			before := f.reserve(a)
			old := f.secret()
			f.run(f.c.B().Set().Key(bucket.SecretKey).Value(replacement).Build())
			f.clock.advance(bucket.SecretRecheck)
			after := f.reserve(a)
			if s := f.secret(); s != replacement {
				f.t.Fatalf("Redis's secret after A's recheck: %q, want the replacement", s)
			}
			f.settles("A, of its id before the replacement", a, before)
			f.settles("B, started after, of A's id before the replacement", f.instance(), before)
			f.settles("B, started after, of A's id after the replacement", f.instance(), after)
			if f.secret() == old {
				f.t.Errorf("the old secret came back")
			}
		}},
		{"a short secret, then deleted", func(f *secretFleet) {
			a := f.instance()
			before := f.reserve(a)
			old := f.secret()
			f.run(f.c.B().Set().Key(bucket.SecretKey).Value("short").Build())
			f.clock.advance(bucket.SecretRecheck)
			f.settles("A, running, of its id", a, f.reserve(a))
			if _, err := f.instance().Decide(context.Background(), bucketgate.Request{Identity: "a", Rules: slowRules, Op: bucketgate.OpReserve, Cost: 1}); !errors.Is(err, bucket.ErrBadState) {
				f.t.Errorf("a reserve of an instance started since: %v, want ErrBadState", err)
			}
			f.run(f.c.B().Del().Key(bucket.SecretKey).Build())
			f.clock.advance(bucket.SecretRecheck)
			f.reserve(a)
			if s := f.secret(); s != old {
				f.t.Fatalf("Redis's secret after the deletion and A's recheck: %q, want A's %q", s, old)
			}
			f.settles("B, started after, of A's id before", f.instance(), before)
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { tt.run(newSecretFleet(t)) })
	}
}

// TestSecretWriteRefused: a Redis that refuses to write the secret (full, with
// noeviction: OOM) fails the first call that signs with its own error, which names the
// cause, not with the empty read that follows the refused write.
func TestSecretWriteRefused(t *testing.T) {
	f := newSecretFleet(t)
	f.run(f.c.B().ConfigSet().ParameterValue().ParameterValue("maxmemory", "1").Build())
	_, err := f.instance().Decide(context.Background(), bucketgate.Request{Identity: "a", Rules: slowRules, Op: bucketgate.OpReserve, Cost: 10})
	if !errors.Is(err, bucket.ErrNoSecret) || !strings.Contains(err.Error(), "OOM") {
		t.Errorf("reserve on a full Redis: %v; want ErrNoSecret naming OOM", err)
	}
}

// TestSecretRecheckByWallClock: a Limiter tells SecretRecheck (and a kept secret's time)
// by the wall clock. time.Now's times come with a monotonic reading, which may stand
// still while a Lambda instance is frozen between invocations: kept, an instance that is
// mostly frozen would go on signing with a secret Redis lost for as long as its
// invocations themselves take to add up to SecretRecheck, and the instances started
// since, which never knew that secret, refuse the settles of its reservations (charged
// at their estimates). The time of its read carries none (a Time's String shows " m="
// when it does).
func TestSecretRecheckByWallClock(t *testing.T) {
	if !strings.Contains(time.Now().String(), " m=") {
		t.Fatal("time.Now has no monotonic reading here: this test proves nothing")
	}
	f := newSecretFleet(t)
	l := bucket.New(f.c) // the clock of production
	f.reserve(l)
	if at := bucket.SecretReadOf(l); at.IsZero() || strings.Contains(at.String(), " m=") {
		t.Errorf("the secret's read at %v: want a time without a monotonic reading (a freeze would not count)", at)
	}
}

// TestSecretRecheckClockWentBack: a clock that steps back (NTP) reads Redis's secrets
// again at the next call, rather than signing with what it has for as long as the step.
func TestSecretRecheckClockWentBack(t *testing.T) {
	f := newSecretFleet(t)
	l := f.instance()
	f.reserve(l)
	before := bucket.SecretReadOf(l)
	f.clock.advance(-time.Hour)
	f.reserve(l)
	if after := bucket.SecretReadOf(l); !after.Before(before) {
		t.Fatalf("the secrets last read at %v after the clock went back an hour from %v: want read again", after, before)
	}
}

// TestSecretFirstReadWaiterDeadline: a call that waits for another call's first read of
// the reservations' secret, which a stalled Redis does not answer, ends at its own
// context's deadline with ErrNoSecret, not at the end of the other call's read (a
// REDIS_TIMEOUT_MS more, or its invocation's deadline).
func TestSecretFirstReadWaiterDeadline(t *testing.T) {
	srv := redistest.Start(t)
	p := redistest.StartProxy(t, srv.Addr)                         // tells when the first read has left
	fixed := func() time.Time { return epoch }                     // no idle check: each call's first commands are its read's
	l := bucket.New(oneConnection(t, p.Addr), bucket.Clock(fixed)) // connected by the peek
	reserve := bucketgate.Request{Identity: "a", Rules: slowRules, Op: bucketgate.OpReserve, Cost: 1}
	if _, err := l.Decide(context.Background(), bucketgate.Request{Identity: "a", Rules: slowRules, Cost: 0}); err != nil {
		t.Fatalf("peek, connecting: %v", err)
	}
	srv.Pause()
	firstDone := make(chan error, 1)
	go func() {
		_, err := l.Decide(context.Background(), reserve) // no deadline: its read waits for Redis
		firstDone <- err
	}()
	awaitRead(t, p, 0, firstDone)
	waiting, stop := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer stop()
	waited := make(chan error, 1)
	go func() {
		_, err := l.Decide(waiting, reserve)
		waited <- err
	}()
	select {
	case err := <-waited:
		if !errors.Is(err, context.DeadlineExceeded) || !errors.Is(err, bucket.ErrNoSecret) {
			t.Errorf("the waiting reserve: %v, want ErrNoSecret and its own deadline", err)
		}
	case <-time.After(10 * time.Second): // no timing: 200 times its deadline, it waits for the first read
		t.Errorf("the waiting reserve still waits, past its deadline, for the first read, which Redis does not answer")
	}
	srv.Resume()
	if err := <-firstDone; err != nil {
		t.Errorf("the first reserve once Redis answers: %v", err)
	}
}

// TestSecretKeptPastAFastClock: an instance whose clock is far ahead that writes the
// secret it no longer signs with leaves the secrets other instances keep as they are: an
// instance started later still verifies the ids signed under them. Its write dropped
// every kept secret whose time had passed by its own clock.
func TestSecretKeptPastAFastClock(t *testing.T) {
	f := newSecretFleet(t)
	ahead := 2 * bucket.KeptFor(bucket.DefaultIdempotency)
	fast := bucket.New(f.c, bucket.Clock(func() time.Time { return f.clock.now().Add(ahead) }))
	a := f.instance()
	old := f.reserve(a) // signed under a's secret, the first
	f.run(f.c.B().Flushall().Build())
	f.reserve(fast) // writes another secret, which a reads at its recheck
	f.clock.advance(bucket.SecretRecheck)
	f.reserve(a)                                                                      // keeps its own secret, for KeptFor by its clock
	f.run(f.c.B().Set().Key(bucket.SecretKey).Value(strings.Repeat("7", 64)).Build()) // a third, by hand
	f.reserve(fast)                                                                   // keeps its own, by its clock
	f.settles("an instance started later, of a's old id", f.instance(), old)
}

// TestSigned: Signed tells an id the limiter (any instance of the fleet) signed for an
// identity, whatever rules it prints, from any other: another identity's, the other
// kind's, one altered or made up, each a conflict; an id of the previous format, whose
// MAC covers the rules of the request, is left to the settle that names them.
func TestSigned(t *testing.T) {
	f := newSecretFleet(t)
	first := f.instance()
	id := f.reserve(first)
	forged := id[:len(id)-1] + "A"
	if forged == id {
		forged = id[:len(id)-1] + "B"
	}
	for _, tc := range []struct {
		name, identity, id string
		lease              bool
		conflict           bool
	}{
		{"its own", "a", id, false, false},
		{"another identity's", "b", id, false, true},
		{"a reservation's as a lease", "a", id, true, true},
		{"altered", "a", forged, false, true},
		{"made up", "a", "r3.AAAA.AAAAAAAAAAAAAAAAAAAAAA", false, true},
		{"of the previous format", "a", "r2.AAAA.AAAAAAAAAAAAAAAAAAAAAA", false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for who, l := range map[string]*bucket.Limiter{"the signer": first, "another instance": f.instance()} {
				err := l.Signed(context.Background(), tc.identity, tc.id, tc.lease)
				if tc.conflict != errors.Is(err, bucketgate.ErrConflict) || !tc.conflict && err != nil {
					t.Errorf("%s: Signed = %v, want a conflict: %v", who, err, tc.conflict)
				}
			}
		})
	}
}
