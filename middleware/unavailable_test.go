package middleware_test

import (
	"errors"
	"testing"

	"github.com/bucketgate/bucketgate/internal/authorizer"
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
