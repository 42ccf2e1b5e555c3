package bucket_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/rueidis"

	"github.com/bucketgate/bucketgate"
	"github.com/bucketgate/bucketgate/internal/bucket"
	"github.com/bucketgate/bucketgate/internal/testkit/redistest"
)

// free is the built-in free plan: burst 10, 1 token per second.
var free = []bucketgate.Rule{{Name: "burst", Capacity: 10, RefillPerSecond: 1}}

// still is a bucket of 10 that gets nothing back while a test on real servers runs (a
// token per 1000 s): what counts the charges of calls that a loaded machine may space
// a second or more apart (free would give one back each second).
var still = []bucketgate.Rule{{Name: "still", Capacity: 10, RefillPerSecond: 0.001}}

// epoch is the fixed start of every controlled clock.
var epoch = time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)

// mini is a miniredis server with its clock under the test's control.
type mini struct {
	*miniredis.Miniredis
	client rueidis.Client
	now    time.Time
}

func newMini(t *testing.T) *mini {
	t.Helper()
	m := miniredis.RunT(t)
	c, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{m.Addr()}, DisableCache: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	mr := &mini{Miniredis: m, client: c, now: epoch}
	m.SetTime(epoch)
	return mr
}

// advance moves both of miniredis's clocks: TIME and key expiry.
func (m *mini) advance(d time.Duration) {
	m.now = m.now.Add(d)
	m.SetTime(m.now)
	m.FastForward(d)
}

// decide runs q and fails the test on an error.
func decide(t *testing.T, l *bucket.Limiter, q bucketgate.Request) bucketgate.Decision {
	t.Helper()
	d, err := l.Decide(context.Background(), q)
	if err != nil {
		t.Fatalf("Decide(%+v): %v", q, err)
	}
	return d
}

// expectRun asserts that n requests in a row get allowed.
func expectRun(t *testing.T, l *bucket.Limiter, q bucketgate.Request, n int, allowed bool) bucketgate.Decision {
	t.Helper()
	var d bucketgate.Decision
	for i := range n {
		if d = decide(t, l, q); d.Allowed != allowed {
			t.Fatalf("request %d of %d: allowed %v, want %v (%+v)", i+1, n, d.Allowed, allowed, d)
		}
	}
	return d
}

// oneConnection is a client of addr on one connection, which rueidis keeps for a minute
// while the server answers nothing (ConnWriteTimeout; 10 s by default): a command sent
// while a test pauses the server leaves at once, on the connection a call made before
// the pause. A client of several (redistest.Client's) sends each command on one of them
// at random, and one it has not made yet waits for a handshake that a paused server
// does not answer, until rueidis gives up (its dial timeout, 5 s) without sending it.
func oneConnection(t *testing.T, addr string) rueidis.Client {
	t.Helper()
	c, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{addr}, DisableCache: true, PipelineMultiplex: -1, ConnWriteTimeout: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c
}

// awaitRead waits until p has passed on a read of the reservations' secrets
// (bucket.SecretKey) after the first from bytes clients sent through it, and fails t if
// call, the call that is to make the read, ends first: its read did not leave (or
// failed), and nothing would. The call's own deadline bounds the wait.
func awaitRead(t *testing.T, p *redistest.Proxy, from int, call <-chan error) {
	t.Helper()
	for !strings.Contains(p.Sent()[from:], bucket.SecretKey) {
		select {
		case err := <-call:
			t.Fatalf("the call ended before its read of the secrets left (sent since: %q): %v", p.Sent()[from:], err)
		case <-time.After(time.Millisecond):
		}
	}
}

// onRealAndMiniPassing runs run as two subtests: "real", on a real server (real), its
// time passing by time.Sleep, and "miniredis", its clock moved by mini.advance (pass).
func onRealAndMiniPassing(t *testing.T, run func(t *testing.T, c rueidis.Client, pass func(time.Duration))) {
	t.Run("real", func(t *testing.T) {
		_, c := real(t)
		run(t, c, time.Sleep)
	})
	t.Run("miniredis", func(t *testing.T) {
		m := newMini(t)
		run(t, m.client, m.advance)
	})
}
