package middleware_test

import (
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/bucketgate/bucketgate/internal/testkit/redistest"
	"github.com/bucketgate/bucketgate/middleware"
	"github.com/bucketgate/bucketgate/ratelimitheaders"
)

// Two Limiters in one chain, each on a real redis-server of its own, one reserving (llm)
// and one holding a lease (oneStream), in either order: the handler inside both settles
// the reservation with the Limiter that reserved it and releases the lease with the
// Limiter that acquired it, though the inner Limiter replaced the request's
// X-RateLimit-Reservation and X-RateLimit-Lease headers with its own (none); and each
// Limiter answers that it holds nothing of the other's kind.
func TestTwoLimitersInOneChain(t *testing.T) {
	for name, reserveOutside := range map[string]bool{"reserve outside, lease inside": true, "lease outside, reserve inside": false} {
		t.Run(name, func(t *testing.T) {
			reserver := newLimiter(t, map[string]string{"REDIS_ADDR": redistest.Start(t).Addr, "RATE_LIMIT_CONFIG": llm}, middleware.Options{})
			leaser := oneStreamLimiter(t)
			var (
				settled, released    bool
				noLease, noReserving error
				errs                 []error
			)
			backend := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				s, err := reserver.Settle(r.Context(), r, 100)
				settled, errs = s.Settled == 100 && s.Remaining == 900, append(errs, err)
				d, err := leaser.Release(r.Context(), r)
				released, errs = d.Released, append(errs, err)
				_, noLease = reserver.Release(r.Context(), r)
				_, noReserving = leaser.Settle(r.Context(), r, 100)
				io.WriteString(w, "ok")
			})
			chain := reserver.Handler(leaser.Handler(backend))
			if !reserveOutside {
				chain = leaser.Handler(reserver.Handler(backend))
			}
			w := httptest.NewRecorder()
			chain.ServeHTTP(w, httptest.NewRequest("POST", "/v1/chat", strings.NewReader(`{"max_tokens":400}`)))
			if w.Code != http.StatusOK || !settled || !released || errors.Join(errs...) != nil {
				t.Fatalf("%d: settled %v (100 of 400, 900 left), released %v, errors %v: want the reservation settled and the lease released by the Limiters that hold them", w.Code, settled, released, errs)
			}
			if !errors.Is(noLease, ratelimitheaders.ErrNoLease) || !errors.Is(noReserving, ratelimitheaders.ErrNoReservation) {
				t.Fatalf("the reserving Limiter's Release: %v; the leasing Limiter's Settle: %v: want ErrNoLease and ErrNoReservation", noLease, noReserving)
			}
		})
	}
}
