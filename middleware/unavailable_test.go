package middleware_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/bucketgate/bucketgate/internal/authorizer"
	"github.com/bucketgate/bucketgate/internal/guard"
	"github.com/bucketgate/bucketgate/internal/testkit/redistest"
	"github.com/bucketgate/bucketgate/middleware"
)

// With Redis stopped, Settle, Cancel and Release fail with an error that errors.Is finds
// ErrUnavailable in (the authorizer's own value, the same), whatever the failure policy:
// a caller can tell "try again" from a conflict, bad input or a closed Limiter, on a
// real redis-server.
func TestSettleWhileRedisIsDown(t *testing.T) {
	for _, mode := range []string{"closed", "open"} {
		for _, c := range settleCalls {
			t.Run(c.name+" failing "+mode, func(t *testing.T) {
				srv := redistest.Start(t)
				l := newLimiter(t, map[string]string{"REDIS_ADDR": srv.Addr, "RATE_LIMIT_CONFIG": reserveAndStream, "FAIL_MODE": mode}, middleware.Options{})
				r := held(t, l)
				srv.Stop()
				_, err := c.call(l, r)
				if !errors.Is(err, middleware.ErrUnavailable) || !errors.Is(err, authorizer.ErrUnavailable) || errors.Is(err, middleware.ErrClosed) {
					t.Fatalf("%s with Redis stopped: %v, want an error wrapping ErrUnavailable (not ErrClosed)", c.name, err)
				}
			})
		}
	}
}

// TestSettleOfALimiterStartedDuringAnOutage: a Limiter started while Redis does not
// answer (its connection not made yet), settling a reservation that another one made
// (the request's X-RateLimit-Reservation), fails once: its circuit breaker counts one
// failure, so that guard.DefaultFailuresToOpen-1 requests after it are sent to Redis
// before the breaker answers the next, telling Redis is failing. The settle's decision,
// after its check of the id had failed to connect, waited for the connection again and
// counted a second failure.
func TestSettleOfALimiterStartedDuringAnOutage(t *testing.T) {
	srv := redistest.Start(t)
	vars := map[string]string{"REDIS_ADDR": srv.Addr, "RATE_LIMIT_CONFIG": reserveAndStream, "REDIS_TIMEOUT_MS": "100", "METRICS_FLUSH_MS": "0"}
	r := held(t, newLimiter(t, vars, middleware.Options{})) // another process's
	srv.Pause()
	t.Cleanup(srv.Resume)
	var logs bytes.Buffer
	cold, err := middleware.New(middleware.Options{Getenv: env(vars), Metrics: io.Discard, LogOutput: &logs})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cold.Close)
	if _, err := cold.Settle(context.Background(), r, 1); !errors.Is(err, middleware.ErrUnavailable) {
		t.Fatalf("settle with Redis paused: %v, want ErrUnavailable", err)
	}
	sent := 0 // the requests after it that Redis was asked, each counting a failure
	for ; sent <= guard.DefaultFailuresToOpen; sent++ {
		if w := serve(cold, httptest.NewRequest("GET", "/", nil)); w.Code != http.StatusServiceUnavailable {
			t.Fatalf("a request with Redis paused: %d, want 503", w.Code)
		}
		if strings.Contains(logs.String(), guard.ErrCircuitOpen.Error()) {
			break
		}
	}
	if want := guard.DefaultFailuresToOpen - 1; sent != want {
		t.Errorf("%d requests sent to Redis after the settle before the circuit opened, want %d: the settle counted %d failures, want 1",
			sent, want, guard.DefaultFailuresToOpen-sent)
	}
}
