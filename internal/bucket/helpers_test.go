package bucket_test

import (
	"context"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/rueidis"

	"github.com/bucketgate/bucketgate"
	"github.com/bucketgate/bucketgate/internal/bucket"
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
