package middleware_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/redis/rueidis"

	"github.com/bucketgate/bucketgate"
	"github.com/bucketgate/bucketgate/internal/bucket"
	"github.com/bucketgate/bucketgate/internal/lua"
	"github.com/bucketgate/bucketgate/internal/testkit/redistest"
	"github.com/bucketgate/bucketgate/middleware"
	"github.com/bucketgate/bucketgate/ratelimitheaders"
)

// llm reserves 400 tokens (max_tokens) for POST /v1/chat; other requests take 1. The
// bucket refills so slowly that a test's own duration changes no floor of it.
const llm = "defaultPlan: free\nplans: {free: [{name: tokens, capacity: 1000, refillPerSecond: 0.001}]}\nroutes: [{method: POST, path: /v1/chat, reserve: 400}]"

// On a route that reserves, the next handler finds the Limiter's reservation in
// X-RateLimit-Reservation (a client's own, in any spelling, is replaced, or removed where the route
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
		spelled []string // the header as its constant spells it, as the other rate-limit headers are
		copies  int      // the names of the header the next handler sees, '_' for '-'
		settled bucketgate.Decision
		again   bucketgate.Decision
		errs    []error
	)
	backend := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		seen, spelled, copies = ratelimitheaders.Reservation(r), r.Header[ratelimitheaders.HeaderReservation], 0
		for name := range r.Header {
			if strings.EqualFold(strings.ReplaceAll(name, "_", "-"), ratelimitheaders.HeaderReservation) {
				copies++
			}
		}
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
		r.Header["X_RateLimit_Reservation"] = []string{"r2.forged-by-the-client"} // HTTP_X_RATELIMIT_RESERVATION to CGI
		w := httptest.NewRecorder()
		l.Handler(backend).ServeHTTP(w, r)
		return w
	}

	w := serve("POST", "/v1/chat")
	if w.Code != 200 || remaining(w) != "600" || !strings.HasPrefix(seen, "r3.") || seen == "r2.forged-by-the-client" || copies != 1 || !slices.Equal(spelled, []string{seen}) {
		t.Fatalf("POST /v1/chat: %d %v, reservation %q in %d headers, %q as the constant spells it: want 200 with 600 left and the Limiter's reservation", w.Code, w.Header(), seen, copies, spelled)
	}
	if errs[0] != nil || errs[1] != nil || settled.Settled != 100 || settled.Remaining != 900 || !again.Replayed || again.Settled != 100 {
		t.Fatalf("Settle: %+v then %+v, %v: want 300 back (900 left), then the first outcome", settled, again, errs)
	}

	errs = nil
	w = serve("GET", "/v1/models")
	if remaining(w) != "899" || seen != "" || copies != 0 || !errors.Is(errs[0], ratelimitheaders.ErrNoReservation) {
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
// free again at once; a request that holds none is ErrNoLease; with Redis down, the
// error says the lease is not released (no reservation).
func TestReleaseThroughTheMiddleware(t *testing.T) {
	srv := redistest.Start(t)
	l, err := middleware.New(middleware.Options{Getenv: env(map[string]string{"REDIS_ADDR": srv.Addr, "RATE_LIMIT_CONFIG": oneStream, "REDIS_TIMEOUT_MS": "2000"}),
		Metrics: io.Discard, LogOutput: io.Discard})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	var released []bool
	var errs []error
	release := true
	kept, hold := make(chan *http.Request, 1), make(chan struct{}) // a stream that goes on while release is false
	defer close(hold)
	backend := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !release {
			kept <- r
			<-hold
			return
		}
		d, err := l.Release(r.Context(), r)
		released, errs = append(released, d.Released), append(errs, err)
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
	go serve()
	held := <-kept
	if code := serve(); code != http.StatusTooManyRequests {
		t.Fatalf("a second stream while one is held: %d, want 429", code)
	}
	if _, err := l.Release(t.Context(), httptest.NewRequest("GET", "/", nil)); !errors.Is(err, ratelimitheaders.ErrNoLease) {
		t.Fatalf("Release without a lease: %v, want ErrNoLease", err)
	}
	srv.Stop()
	if _, err := l.Release(t.Context(), held); err == nil || !strings.Contains(err.Error(), "lease is not released") || strings.Contains(err.Error(), "reservation") {
		t.Fatalf("Release with Redis down: %v, want an error saying the lease is not released", err)
	}
}

// A route's ttlMs is how long its requests' leases hold, through the authorizer (an API
// Gateway event) and the middleware alike, on one real redis-server: each lease's score
// in its concurrency rule's sorted set (its expiry, by Redis's clock) is the route's ttl
// after the decision; a route with a concurrency rule and no ttlMs holds the default.
func TestLeaseTTLOfTheRoute(t *testing.T) {
	srv := redistest.Start(t)
	doc := "defaultPlan: free\nplans: {free: [{name: burst, capacity: 100, refillPerSecond: 0.001}]}\nroutes:\n" +
		"  - {method: GET, path: /v1/stream, ttlMs: 90000, rules: [{name: streams, concurrency: 2}]}\n" +
		"  - {method: GET, path: /v1/export, rules: [{name: exports, concurrency: 2}]}\n"
	auth, l := authorizerAndLimiter(t, srv.Addr, doc)
	const source = "127.0.0.1" // both ways: one identity's leases
	viaGateway := func(path string) string {
		out, err := auth.Invoke(context.Background(), gatewayEvent(t, path, source))
		if err != nil {
			t.Fatal(err)
		}
		var a struct{ Context map[string]any }
		if err := json.Unmarshal(out, &a); err != nil {
			t.Fatal(err)
		}
		return ratelimitheaders.ContextLease(a.Context)
	}
	// viaService's request is in flight, its lease held, until the test ends.
	hold := make(chan struct{})
	defer close(hold)
	viaService := func(path string) string {
		r := httptest.NewRequest("GET", path, nil)
		r.RemoteAddr = source + ":5000"
		lease := make(chan string, 1)
		go l.Handler(http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) {
			lease <- ratelimitheaders.Lease(r)
			<-hold
		})).ServeHTTP(httptest.NewRecorder(), r)
		return <-lease
	}
	c := redistest.Client(t, srv.Addr)
	redisNow := func() int64 {
		tm, err := c.Do(context.Background(), c.B().Time().Build()).AsIntSlice()
		if err != nil || len(tm) != 2 {
			t.Fatalf("TIME: %v, %v", tm, err)
		}
		return tm[0]*1000 + tm[1]/1000
	}
	for _, tt := range []struct {
		path, rule string
		ttl        time.Duration
	}{
		{"/v1/stream", "streams", 90 * time.Second},
		{"/v1/export", "exports", bucketgate.DefaultTTL},
	} {
		before := redisNow()
		leases := []string{viaGateway(tt.path), viaService(tt.path)}
		after := redisNow() + 1 // TIME's millisecond rounds down; an expiry's up
		all, err := c.Do(context.Background(), c.B().Zrange().Key(bucket.LeaseKey(bucketgate.IPPrefix+source, tt.rule)).Min("0").Max("-1").Withscores().Build()).AsZScores()
		var zs []rueidis.ZScore // the leases: the set's mark is none
		for _, z := range all {
			if z.Member != lua.LeaseSetMark {
				zs = append(zs, z)
			}
		}
		if err != nil || len(zs) != 2 || !strings.HasPrefix(leases[0], "r3.") || !strings.HasPrefix(leases[1], "r3.") {
			t.Fatalf("%s: leases %q, sorted set %v (%v): want one lease through each", tt.path, leases, zs, err)
		}
		for _, z := range zs {
			if at := int64(z.Score); at < before+tt.ttl.Milliseconds() || at > after+tt.ttl.Milliseconds() {
				t.Errorf("%s: a lease expires %d ms after the first decision's time, want %d (%d to %d)", tt.path, at-before, tt.ttl.Milliseconds(), before, after)
			}
		}
	}
}

// A client that hangs up mid-stream cancels its request's context, and the next handler
// returns what the request holds with that context, as the docs show
// (Limiter.Release(r.Context(), r), Settle likewise): on a real redis-server, the lease
// is released at once (the next stream is allowed) and the reservation is settled (its
// difference back), not left to their ttl.
func TestSettledAfterTheClientHungUp(t *testing.T) {
	srv := redistest.Start(t)
	doc := "defaultPlan: free\nplans: {free: [{name: tokens, capacity: 1000, refillPerSecond: 0.001}, {name: streams, concurrency: 1}]}\n" +
		"routes: [{method: POST, path: /v1/chat, reserve: 400}]"
	l := newLimiter(t, map[string]string{"REDIS_ADDR": srv.Addr, "RATE_LIMIT_CONFIG": doc}, middleware.Options{})
	type outcome struct {
		released, settled error
		d                 bucketgate.Decision
	}
	started, done := make(chan struct{}), make(chan outcome, 1)
	service := httptest.NewServer(l.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusOK)
		w.(http.Flusher).Flush()
		close(started)
		<-r.Context().Done() // the client hung up mid-stream
		var o outcome
		o.d, o.settled = l.Settle(r.Context(), r, 100)
		_, o.released = l.Release(r.Context(), r)
		done <- o
	})))
	defer service.Close()

	ctx, hangUp := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, "POST", service.URL+"/v1/chat", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	<-started
	hangUp()
	resp.Body.Close()
	o := <-done
	if o.settled != nil || o.d.Settled != 100 || o.d.Remaining != 900 || o.released != nil {
		t.Fatalf("after the client hung up: Settle %+v, %v; Release %v: want 300 back (900 left) and the lease released", o.d, o.settled, o.released)
	}
	next := httptest.NewRecorder()
	r := httptest.NewRequest("GET", "/v1/models", nil)
	r.RemoteAddr = "127.0.0.1:5000"
	l.Handler(ok).ServeHTTP(next, r)
	if next.Code != http.StatusOK {
		t.Fatalf("the next stream: %d, want 200: the one whose client hung up was released", next.Code)
	}
}

// oneStream is a plan of one stream in flight at most (and a bucket beside it).
const oneStream = "defaultPlan: free\nplans: {free: [{name: burst, capacity: 100, refillPerSecond: 0.001}, {name: streams, concurrency: 1}]}"

// oneStreamLimiter returns a Limiter of oneStream on a real redis-server of its own.
func oneStreamLimiter(t *testing.T) *middleware.Limiter {
	t.Helper()
	return newLimiter(t, map[string]string{"REDIS_ADDR": redistest.Start(t).Addr, "RATE_LIMIT_CONFIG": oneStream}, middleware.Options{})
}

// A next handler that panics (http.ErrAbortHandler included) ends its request: the
// Limiter returns the lease the request held as the panic passes (a stream of a
// concurrency: 1 rule is free again at once, not at its ttl), and the panic goes on up
// as it was.
func TestLeaseReleasedWhenTheHandlerPanics(t *testing.T) {
	l := oneStreamLimiter(t)
	released := http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) { // a stream that ends well
		if _, err := l.Release(r.Context(), r); err != nil {
			t.Error(err)
		}
	})
	for _, tc := range []struct {
		name  string
		value any
	}{
		{"a bug", "index out of range"},
		{"an aborted response", http.ErrAbortHandler},
	} {
		t.Run(tc.name, func(t *testing.T) {
			panicking := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if ratelimitheaders.Lease(r) == "" {
					t.Error("no lease reached the handler")
				}
				panic(tc.value)
			})
			var got any
			func() {
				defer func() { got = recover() }()
				l.Handler(panicking).ServeHTTP(httptest.NewRecorder(), httptest.NewRequest("GET", "/stream", nil))
			}()
			if got != tc.value {
				t.Fatalf("recovered %v, want the handler's panic %v", got, tc.value)
			}
			next := httptest.NewRecorder()
			l.Handler(released).ServeHTTP(next, httptest.NewRequest("GET", "/stream", nil))
			if next.Code != http.StatusOK {
				t.Fatalf("the next stream: %d, want 200: the panicked one's lease released", next.Code)
			}
		})
	}
}

// A request is in flight while the next handler serves it: the Limiter releases its
// lease when the handler returns, whether or not the handler released it itself (once:
// a handler's Release leaves the Limiter nothing to do), so that a concurrency: 1 rule
// never holds a finished request's lease to its ttl.
func TestLeaseReleasedWhenTheHandlerReturns(t *testing.T) {
	l := oneStreamLimiter(t)
	var released []bool // what each of the handler's own Releases found
	handlers := map[string]http.HandlerFunc{
		"returns": func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, "done") },
		"releases": func(_ http.ResponseWriter, r *http.Request) {
			d, err := l.Release(r.Context(), r)
			if err != nil {
				t.Error(err)
			}
			released = append(released, d.Released)
		},
	}
	for _, name := range []string{"returns", "returns", "releases", "releases", "returns"} {
		w := httptest.NewRecorder()
		l.Handler(handlers[name]).ServeHTTP(w, httptest.NewRequest("GET", "/stream", nil))
		if w.Code != http.StatusOK {
			t.Fatalf("a request after one whose handler %s: %d, want 200: the lease was released", name, w.Code)
		}
	}
	if !slices.Equal(released, []bool{true, true}) {
		t.Errorf("the handler's own Releases found %v, want the lease held each time", released)
	}
}

// A lease holds for its route's ttlMs and no longer, a stream's in the middleware too:
// on a real redis-server, a handler that serves past the ttl no longer holds its
// stream, and a second stream of a concurrency: 1 rule is admitted beside it (as the
// docs say: the route's ttlMs must outlast its longest request).
func TestLeaseFreesItselfMidStreamAtItsTTL(t *testing.T) {
	doc := "defaultPlan: free\nplans: {free: [{name: burst, capacity: 100, refillPerSecond: 0.001}, {name: streams, concurrency: 1}]}\n" +
		"routes: [{method: GET, path: /stream, ttlMs: 50}]"
	l := newLimiter(t, map[string]string{"REDIS_ADDR": redistest.Start(t).Addr, "RATE_LIMIT_CONFIG": doc}, middleware.Options{})
	streaming, ends, ended := make(chan struct{}), make(chan struct{}), make(chan struct{})
	go func() {
		defer close(ended)
		l.Handler(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {
			close(streaming)
			<-ends // still streaming while the second stream asks
		})).ServeHTTP(httptest.NewRecorder(), httptest.NewRequest("GET", "/stream", nil))
	}()
	<-streaming
	time.Sleep(100 * time.Millisecond) // past the ttl, mid-stream
	w := httptest.NewRecorder()
	l.Handler(ok).ServeHTTP(w, httptest.NewRequest("GET", "/stream", nil))
	close(ends)
	<-ended
	if w.Code != http.StatusOK {
		t.Fatalf("a second stream past the first's ttl: %d, want 200: a lease frees itself at its ttl, mid-stream too", w.Code)
	}
}

// A request built by hand with no Header (nil, which a server never passes) is served
// as one with no header, never a panic writing to a nil map: the next handler finds the
// rate-limit headers, the reservation and the lease on it, and settles and releases.
func TestRequestWithNilHeader(t *testing.T) {
	cases := []struct{ name, config string }{
		{"plain route", "defaultPlan: free\nplans: {free: [{name: tokens, capacity: 100, refillPerSecond: 1}]}"},
		{"reserving route with a concurrency rule", reserveAndStream},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			l := newLimiter(t, map[string]string{"RATE_LIMIT_CONFIG": c.config}, middleware.Options{})
			r := httptest.NewRequest("POST", "/v1/chat", nil)
			r.Header = nil
			var settleErr, releaseErr error
			reached := false
			w := httptest.NewRecorder()
			l.Handler(http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) {
				reached = true
				if r.Header[ratelimitheaders.HeaderRemaining] == nil {
					t.Errorf("next got no %s header", ratelimitheaders.HeaderRemaining)
				}
				if ratelimitheaders.Reservation(r) != "" {
					_, settleErr = l.Settle(r.Context(), r, 1)
				}
				if ratelimitheaders.Lease(r) != "" {
					_, releaseErr = l.Release(r.Context(), r)
				}
			})).ServeHTTP(w, r)
			if w.Code != http.StatusOK || !reached || settleErr != nil || releaseErr != nil {
				t.Fatalf("answer %d, next reached %v, settle %v, release %v; want 200, reached, no error", w.Code, reached, settleErr, releaseErr)
			}
		})
	}
}

// Settle refuses an actual cost it cannot take with an error naming actual, the
// argument the caller passed (not the engine's "cost"), that wraps bucketgate.ErrInvalid:
// on a request holding the Limiter's reservation, and on one holding none.
func TestSettleNamesActual(t *testing.T) {
	m, _ := redistest.Mini(t)
	l, err := middleware.New(middleware.Options{Getenv: env(map[string]string{"REDIS_ADDR": m.Addr(), "RATE_LIMIT_CONFIG": llm, "REDIS_TIMEOUT_MS": "2000"}),
		Metrics: io.Discard, LogOutput: io.Discard})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	tests := []struct {
		name   string
		actual int64
		path   string // POST /v1/chat reserves; others do not
		want   string
	}{
		{"below 0", -1, "/v1/chat", "actual -1"},
		{"below 0, no reservation", -5, "/v1/other", "actual -5"},
		{"above MaxSettle", bucketgate.MaxSettle + 1, "/v1/chat", fmt.Sprintf("actual %d", int64(bucketgate.MaxSettle)+1)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var err error
			backend := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				_, err = l.Settle(r.Context(), r, tt.actual)
			})
			l.Handler(backend).ServeHTTP(httptest.NewRecorder(), httptest.NewRequest("POST", tt.path, nil))
			if !errors.Is(err, bucketgate.ErrInvalid) || !strings.Contains(err.Error(), tt.want) || strings.Contains(err.Error(), "cost") {
				t.Fatalf("Settle(%d): %v, want an ErrInvalid naming %q, not cost", tt.actual, err, tt.want)
			}
		})
	}
}

// A settle, a cancel or a release of an id that is an API key bucketgate made (a
// service passing the key header by mistake, or a client's own header on a request
// that did not come through the Handler) is a conflict whose error, which the service
// logs, quotes no part of the key and names the id as what it was given as: a
// release's said "reservation".
func TestSettleOfAKeyQuotesNoKey(t *testing.T) {
	srv := redistest.Start(t)
	l, err := middleware.New(middleware.Options{Getenv: env(map[string]string{"REDIS_ADDR": srv.Addr, "RATE_LIMIT_CONFIG": "defaultPlan: free\nplans: {free: [{name: tokens, capacity: 1000, refillPerSecond: 1}, {name: streams, concurrency: 2}]}", "REDIS_TIMEOUT_MS": "2000"}),
		Metrics: io.Discard, LogOutput: io.Discard})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	key := "bg_" + strings.Repeat("Q", 42) + "w"
	r := httptest.NewRequest("POST", "/v1/chat", nil)
	r.Header.Set(ratelimitheaders.HeaderReservation, key)
	r.Header.Set(ratelimitheaders.HeaderLease, key)
	for _, tc := range []struct {
		name, want string
		op         func(context.Context, *http.Request) (bucketgate.Decision, error)
	}{
		{"settle", "conflict: reservation: not an id", func(ctx context.Context, r *http.Request) (bucketgate.Decision, error) { return l.Settle(ctx, r, 1) }},
		{"cancel", "conflict: reservation: not an id", l.Cancel},
		{"release", "conflict: lease: not an id", l.Release},
	} {
		if _, err := tc.op(r.Context(), r); !errors.Is(err, bucketgate.ErrConflict) || strings.Contains(err.Error(), key[:12]) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want a conflict saying %q, without the key", tc.name, err, tc.want)
		}
	}
}
