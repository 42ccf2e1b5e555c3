package middleware_test

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/bucketgate/bucketgate"
	"github.com/bucketgate/bucketgate/internal/testkit/redistest"
	"github.com/bucketgate/bucketgate/middleware"
	"github.com/bucketgate/bucketgate/ratelimitheaders"
)

// llm reserves 400 tokens (max_tokens) for POST /v1/chat; other requests take 1. The
// bucket refills so slowly that a test's own duration changes no floor of it.
const llm = "defaultPlan: free\nplans: {free: [{name: tokens, capacity: 1000, refillPerSecond: 0.001}]}\nroutes: [{method: POST, path: /v1/chat, reserve: 400}]"

// On a route that reserves, the next handler finds the Limiter's reservation in
// X-RateLimit-Reservation (a client's own is replaced, or removed where the route
// reserves nothing) and settles the tokens it used with Settle, on a real redis-server:
// the difference goes back; settling again answers the first outcome; a request with no
// reservation is ErrNoReservation, a forged one a conflict.
func TestSettleThroughTheMiddleware(t *testing.T) {
	srv := redistest.Start(t)
	l, err := middleware.New(middleware.Options{Getenv: env(map[string]string{"REDIS_ADDR": srv.Addr, "RATE_LIMIT_CONFIG": llm, "REDIS_TIMEOUT_MS": "2000"}),
		Metrics: io.Discard, LogOutput: io.Discard})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	var (
		seen    string
		settled bucketgate.Decision
		again   bucketgate.Decision
		errs    []error
	)
	backend := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		seen = ratelimitheaders.Reservation(r)
		var err error
		settled, err = l.Settle(r.Context(), r, 100) // the model used 100 tokens
		errs = append(errs, err)
		again, err = l.Settle(r.Context(), r, 999)
		errs = append(errs, err)
		io.WriteString(w, "ok")
	})
	serve := func(method, path string) *httptest.ResponseRecorder {
		r := httptest.NewRequest(method, path, strings.NewReader(`{"max_tokens":400}`))
		r.Header.Set(ratelimitheaders.HeaderReservation, "r2.forged-by-the-client")
		w := httptest.NewRecorder()
		l.Handler(backend).ServeHTTP(w, r)
		return w
	}

	w := serve("POST", "/v1/chat")
	if w.Code != 200 || remaining(w) != "600" || !strings.HasPrefix(seen, "r2.") || seen == "r2.forged-by-the-client" {
		t.Fatalf("POST /v1/chat: %d %v, reservation %q: want 200 with 600 left and the Limiter's reservation", w.Code, w.Header(), seen)
	}
	if errs[0] != nil || errs[1] != nil || settled.Settled != 100 || settled.Remaining != 900 || !again.Replayed || again.Settled != 100 {
		t.Fatalf("Settle: %+v then %+v, %v: want 300 back (900 left), then the first outcome", settled, again, errs)
	}

	errs = nil
	w = serve("GET", "/v1/models")
	if remaining(w) != "899" || seen != "" || !errors.Is(errs[0], ratelimitheaders.ErrNoReservation) {
		t.Fatalf("GET /v1/models: %v, reservation %q, %v: want a check of 1 (899 left), the client's header removed, ErrNoReservation", w.Header(), seen, errs)
	}

	forged := httptest.NewRequest("POST", "/v1/chat", nil)
	forged.Header.Set(ratelimitheaders.HeaderReservation, seen+"r2.AAAA.BBBB")
	if _, err := l.Cancel(forged.Context(), forged); !errors.Is(err, bucketgate.ErrConflict) {
		t.Fatalf("Cancel of a forged reservation: %v, want ErrConflict", err)
	}
	if w := serve("GET", "/v1/models"); remaining(w) != fmt.Sprint(898) {
		t.Fatalf("after the forged cancel: %v, want nothing given back (898 left)", w.Header())
	}
}

// remaining is the X-RateLimit-Remaining of an answer, spelled as the Limiter sets it.
func remaining(w *httptest.ResponseRecorder) string {
	return strings.Join(w.Header()[ratelimitheaders.HeaderRemaining], ",")
}

// On a request with a concurrency rule, the next handler finds the Limiter's lease in
// X-RateLimit-Lease and returns it with Release, on a real redis-server: the stream is
// free again at once; a request that holds none is ErrNoLease.
func TestReleaseThroughTheMiddleware(t *testing.T) {
	srv := redistest.Start(t)
	doc := "defaultPlan: free\nplans: {free: [{name: burst, capacity: 100, refillPerSecond: 0.001}, {name: streams, concurrency: 1}]}"
	l, err := middleware.New(middleware.Options{Getenv: env(map[string]string{"REDIS_ADDR": srv.Addr, "RATE_LIMIT_CONFIG": doc, "REDIS_TIMEOUT_MS": "2000"}),
		Metrics: io.Discard, LogOutput: io.Discard})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	var released []bool
	var errs []error
	release := true
	backend := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if release {
			d, err := l.Release(r.Context(), r)
			released, errs = append(released, d.Released), append(errs, err)
		}
		io.WriteString(w, "ok")
	})
	serve := func() int {
		w := httptest.NewRecorder()
		l.Handler(backend).ServeHTTP(w, httptest.NewRequest("GET", "/stream", nil))
		return w.Code
	}
	for i := range 3 { // one stream at most, released each time
		if code := serve(); code != 200 {
			t.Fatalf("stream %d: %d, want 200: the previous one was released", i+1, code)
		}
	}
	if len(errs) != 3 || errs[0] != nil || !released[0] || !released[2] {
		t.Fatalf("Release: %v, %v: want each lease released", released, errs)
	}
	release = false
	if code := serve(); code != 200 {
		t.Fatalf("a stream kept: %d", code)
	}
	if code := serve(); code != http.StatusTooManyRequests {
		t.Fatalf("a second stream while one is held: %d, want 429", code)
	}
	if _, err := l.Release(t.Context(), httptest.NewRequest("GET", "/", nil)); !errors.Is(err, ratelimitheaders.ErrNoLease) {
		t.Fatalf("Release without a lease: %v, want ErrNoLease", err)
	}
}
