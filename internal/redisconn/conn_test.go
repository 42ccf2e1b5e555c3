package redisconn

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/redis/rueidis"
)

// TestConnRetryByWallClock: a Conn that never connected tries again RetryInterval
// after its last attempt by the wall clock. The clock's times come with a monotonic
// reading (time.Now's), which may stand still while a Lambda environment is frozen
// between invocations: kept, an instance whose first attempt failed would refuse every
// call after a freeze, without trying, until it had run for RetryInterval. The time of
// the attempt keeps none (a Time's String shows " m=" when it does), and a clock that
// went back since the attempt tries again at once.
func TestConnRetryByWallClock(t *testing.T) {
	if !strings.Contains(time.Now().String(), " m=") {
		t.Fatal("time.Now has no monotonic reading here: this test proves nothing")
	}
	refused := errors.New("connection refused")
	tests := []struct {
		name      string
		lastTry   time.Duration // from now, set after the first attempt; 0: as it was
		wantTries int
	}{
		{"just after the attempt: no other", 0, 1},
		{"RetryInterval after it: another", -RetryInterval, 2},
		{"the clock went back an hour since: another", time.Hour, 2},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tries := 0
			c := newConn(func() (rueidis.Client, error) { tries++; return nil, refused }, func(err error) error { return err })
			if _, err := c.Client(context.Background()); !errors.Is(err, refused) {
				t.Fatalf("first call: %v, want the attempt's failure", err)
			}
			c.mu.Lock()
			if strings.Contains(c.lastTry.String(), " m=") {
				t.Errorf("the attempt's time %v keeps a monotonic reading: a freeze would not count", c.lastTry)
			}
			if tc.lastTry != 0 {
				c.lastTry = time.Now().Round(0).Add(tc.lastTry)
			}
			c.mu.Unlock()
			if _, err := c.Client(context.Background()); !errors.Is(err, refused) || tries != tc.wantTries {
				t.Fatalf("second call: %v after %d attempts, want %d", err, tries, tc.wantTries)
			}
		})
	}
}
