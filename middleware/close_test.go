package middleware_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/bucketgate/bucketgate"
	"github.com/bucketgate/bucketgate/internal/testkit"
	"github.com/bucketgate/bucketgate/internal/testkit/redistest"
	"github.com/bucketgate/bucketgate/middleware"
)

// reserveAndStream reserves 4 tokens on POST /v1/chat and holds a lease of a concurrency
// rule on every request: each request the Limiter admits carries both.
const reserveAndStream = "defaultPlan: free\nplans: {free: [{name: tokens, capacity: 1000000, refillPerSecond: 1000}, {name: streams, concurrency: 1000}]}\nroutes: [{method: POST, path: /v1/chat, reserve: 4}]"

// held serves one request through l and returns it as the next handler saw it, with
// its reservation and its lease.
func held(t *testing.T, l *middleware.Limiter) *http.Request {
	t.Helper()
	var kept *http.Request
	w := httptest.NewRecorder()
	l.Handler(http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) { kept = r })).ServeHTTP(w, httptest.NewRequest("POST", "/v1/chat", nil))
	if w.Code != http.StatusOK || kept == nil {
		t.Fatalf("POST /v1/chat: %d, want 200 with a reservation and a lease", w.Code)
	}
	return kept
}

// settleCalls are the Limiter's calls on a request it admitted: Settle, Cancel and
// Release, by name.
var settleCalls = []struct {
	name string
	call func(*middleware.Limiter, *http.Request) (bucketgate.Decision, error)
}{
	{"settle", func(l *middleware.Limiter, r *http.Request) (bucketgate.Decision, error) {
		return l.Settle(r.Context(), r, 1)
	}},
	{"cancel", func(l *middleware.Limiter, r *http.Request) (bucketgate.Decision, error) {
		return l.Cancel(r.Context(), r)
	}},
	{"release", func(l *middleware.Limiter, r *http.Request) (bucketgate.Decision, error) {
		return l.Release(r.Context(), r)
	}},
}

// After Close, Settle, Cancel and Release fail with ErrClosed, whatever the failure
// policy: an error that says trying again will not help, not the unavailable limiter's,
// which says it might.
func TestSettleAfterClose(t *testing.T) {
	addr := redistest.Start(t).Addr
	for _, mode := range []string{"closed", "open"} {
		for _, c := range settleCalls {
			t.Run(c.name+" failing "+mode, func(t *testing.T) {
				l := newLimiter(t, map[string]string{"REDIS_ADDR": addr, "RATE_LIMIT_CONFIG": reserveAndStream, "FAIL_MODE": mode}, middleware.Options{})
				r := held(t, l)
				l.Close()
				if _, err := c.call(l, r); !errors.Is(err, middleware.ErrClosed) || errors.Is(err, middleware.ErrUnavailable) {
					t.Fatalf("%s after Close: %v, want ErrClosed, not ErrUnavailable", c.name, err)
				}
			})
		}
	}
}

// Many goroutines serve requests through one Limiter, each settling its reservation and
// releasing its lease, while Close comes, twice: nothing panics or races (go test -race), every
// answer is the service's or the 503 of a limiter failing closed, and every settle and
// release either succeeds or, once Close has come, fails with ErrClosed, never with
// ErrUnavailable as well (which would say trying again may help).
func TestCloseWhileCallsAreInFlight(t *testing.T) {
	l := newLimiter(t, map[string]string{"REDIS_ADDR": redistest.Start(t).Addr, "RATE_LIMIT_CONFIG": reserveAndStream}, middleware.Options{})
	const workers, each, closeAfter = 8, 40, 100
	var (
		served atomic.Int64
		mu     sync.Mutex
		bad    []error
	)
	next := http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) {
		_, settleErr := l.Settle(r.Context(), r, 2)
		_, releaseErr := l.Release(r.Context(), r)
		for _, err := range []error{settleErr, releaseErr} {
			if err != nil && (!errors.Is(err, middleware.ErrClosed) || errors.Is(err, middleware.ErrUnavailable)) {
				mu.Lock()
				bad = append(bad, err)
				mu.Unlock()
			}
		}
	})
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range each {
				w := httptest.NewRecorder()
				l.Handler(next).ServeHTTP(w, httptest.NewRequest("POST", "/v1/chat", nil))
				if w.Code != http.StatusOK && w.Code != http.StatusServiceUnavailable {
					t.Errorf("answer %d, want 200 or 503", w.Code)
				}
				if n := served.Add(1); n == closeAfter || n == closeAfter+1 { // two Closes, maybe at once
					l.Close()
				}
			}
		}()
	}
	wg.Wait()
	if len(bad) > 0 {
		t.Fatalf("%d settles and releases failed with another error than ErrClosed alone, the first: %v", len(bad), bad[0])
	}
}

// After Close, Handler answers every request 503 with Retry-After: 1, as the zero
// Limiter does, whatever the failure policy: a closed Limiter decides nothing, counts
// nothing and writes no metrics, so failing open it would admit every request unlimited
// and unseen.
func TestHandlerAfterClose(t *testing.T) {
	addr := redistest.Start(t).Addr
	for _, mode := range []string{"closed", "open"} {
		t.Run("failing "+mode, func(t *testing.T) {
			l := newLimiter(t, map[string]string{"REDIS_ADDR": addr, "RATE_LIMIT_CONFIG": reserveAndStream, "FAIL_MODE": mode}, middleware.Options{})
			held(t, l)
			l.Close()
			reached := false
			w := httptest.NewRecorder()
			l.Handler(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { reached = true })).ServeHTTP(w, httptest.NewRequest("POST", "/v1/chat", nil))
			if w.Code != http.StatusServiceUnavailable || reached || w.Header().Get("Retry-After") != "1" {
				t.Fatalf("after Close: %d (Retry-After %q), next reached %v; want 503 with Retry-After 1, next not reached", w.Code, w.Header().Get("Retry-After"), reached)
			}
		})
	}
}

// A stream still served at Close (one the shutdown's deadline did not wait for, cut
// when the process ends right after) gives its lease back: the next instance, on the
// same Redis, admits the caller's next stream of a concurrency: 1 rule at once, not
// after the route's ttlMs (an hour here, as the docs advise for streams).
func TestCloseReleasesTheLeasesInFlight(t *testing.T) {
	vars := map[string]string{"REDIS_ADDR": redistest.Start(t).Addr, "RATE_LIMIT_CONFIG": oneStream + "\nroutes: [{method: GET, path: /stream, ttlMs: 3600000}]"}
	old := newLimiter(t, vars, middleware.Options{})
	streaming, ends, ended := make(chan struct{}), make(chan struct{}), make(chan struct{})
	go func() {
		defer close(ended)
		old.Handler(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {
			close(streaming)
			<-ends // the process ends mid-stream
		})).ServeHTTP(httptest.NewRecorder(), httptest.NewRequest("GET", "/stream", nil))
	}()
	<-streaming
	old.Close()
	w := serve(newLimiter(t, vars, middleware.Options{}), httptest.NewRequest("GET", "/stream", nil))
	close(ends)
	<-ended
	if w.Code != http.StatusOK {
		t.Fatalf("the next instance's stream after Close cut the first: %d, want 200: the first stream's lease is held until its ttlMs", w.Code)
	}
}

// A decision in flight at Close (Redis slow to answer: its script sent, its answer not
// back) is made whole before Close returns the leases and writes the metrics: its lease
// is returned with the others, not left held until its route's ttlMs (the next
// instance admits the caller's next stream of a concurrency: 1 rule at once), and the
// metrics Close writes count it.
func TestCloseWaitsForTheDecisionsInFlight(t *testing.T) {
	srv := redistest.Start(t)
	proxy := redistest.StartProxy(t, srv.Addr)
	config := oneStream + "\nroutes: [{method: GET, path: /stream, ttlMs: 3600000}]"
	var metrics strings.Builder
	old, err := middleware.New(middleware.Options{
		Getenv:  env(map[string]string{"REDIS_ADDR": proxy.Addr, "REDIS_TIMEOUT_MS": "2000", "RATE_LIMIT_CONFIG": config}),
		Metrics: &metrics, LogOutput: io.Discard,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(old.Close)
	if w := serve(old, httptest.NewRequest("GET", "/stream", nil)); w.Code != http.StatusOK { // connected, the script loaded, the lease back
		t.Fatalf("the first stream: %d, want 200", w.Code)
	}
	before := len(proxy.Sent())
	proxy.SetDelay(100 * time.Millisecond)
	streaming, ends, ended := make(chan struct{}), make(chan struct{}), make(chan struct{})
	go func() {
		defer close(ended)
		old.Handler(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {
			close(streaming)
			<-ends // the process ends mid-stream
		})).ServeHTTP(httptest.NewRecorder(), httptest.NewRequest("GET", "/stream", nil))
	}()
	// The decision is in flight once its script has left the client: 10 s at most, a
	// loaded machine's slack that catches a decision never sent, not slowness.
	for deadline := time.Now().Add(10 * time.Second); !strings.Contains(proxy.Sent()[before:], "EVALSHA"); time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the stream's decision was not sent to Redis within 10 s")
		}
	}
	old.Close()
	proxy.SetDelay(0)
	<-streaming // decided by Redis and served, as one in flight at Close
	w := serve(newLimiter(t, map[string]string{"REDIS_ADDR": srv.Addr, "RATE_LIMIT_CONFIG": config}, middleware.Options{}), httptest.NewRequest("GET", "/stream", nil))
	close(ends)
	<-ended
	if w.Code != http.StatusOK {
		t.Errorf("the next instance's stream: %d, want 200: the lease of the decision in flight at Close is held until its ttlMs", w.Code)
	}
	decided := 0.0 // the first stream's decision and release, the second's decision and Close's release
	for line := range strings.Lines(metrics.String()) {
		var doc map[string]any
		if err := json.Unmarshal([]byte(line), &doc); err != nil {
			t.Fatalf("metrics line %s: %v", line, err)
		}
		n, _ := doc["Decisions"].(float64)
		decided += n
	}
	if decided != 4 {
		t.Errorf("%v decisions written, want 4 (the decision in flight at Close and its release among them):\n%s", decided, metrics.String())
	}
}

// Shutdown is Close within a deadline, as http.Server.Shutdown is the server's: with
// Redis answering it returns nil having done what Close does (the lease of a stream
// still served returned: the next instance admits the caller's next stream of a
// concurrency: 1 rule at once). With Redis silent (the network dropped the
// connection, REDIS_TIMEOUT_MS at its most, a minute, so that Close would wait a minute
// for the release before it writes the metrics), it returns the context's error once
// the context ends, having written the metrics that wait (a request's release and a
// stream's decision, held for METRICS_FLUSH_MS, a minute here, after the request's
// decision, written at once as the first); the rest goes on in the background, and a
// Close after it writes no decision a second time.
func TestShutdown(t *testing.T) {
	tests := []struct {
		name    string
		silent  bool    // Redis stops answering before Shutdown
		want    error   // Shutdown's error
		written float64 // decisions written when Shutdown returns
	}{
		{"Redis answers", false, nil, 4}, // the request's decision and release, the stream's decision and release
		{"Redis silent, the context ends", true, context.Canceled, 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := redistest.Start(t)
			proxy := redistest.StartProxy(t, srv.Addr)
			config := oneStream + "\nroutes: [{method: GET, path: /stream, ttlMs: 3600000}]"
			metrics := new(testkit.SyncBuffer)
			l, err := middleware.New(middleware.Options{
				Getenv:  env(map[string]string{"REDIS_ADDR": proxy.Addr, "REDIS_TIMEOUT_MS": "60000", "METRICS_FLUSH_MS": "60000", "RATE_LIMIT_CONFIG": config}),
				Metrics: metrics, LogOutput: io.Discard,
			})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { // on a failure, before the proxy's own cleanup: the release in the background fails at once
				proxy.Close()
				l.Close()
			})
			if w := serve(l, httptest.NewRequest("GET", "/stream", nil)); w.Code != http.StatusOK { // connected, the script loaded, the lease back
				t.Fatalf("the first request: %d, want 200", w.Code)
			}
			streaming, ends, ended := make(chan struct{}), make(chan struct{}), make(chan struct{})
			go func() {
				defer close(ended)
				l.Handler(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {
					close(streaming)
					<-ends // the process ends mid-stream
				})).ServeHTTP(httptest.NewRecorder(), httptest.NewRequest("GET", "/stream", nil))
			}()
			<-streaming
			before := len(proxy.Sent())
			if tt.silent {
				proxy.Stall()
			}
			ctx, cancel := context.WithCancel(context.Background())
			returned := make(chan error, 1)
			go func() { returned <- l.Shutdown(ctx) }()
			if tt.silent {
				for !strings.Contains(proxy.Sent()[before:], "EVALSHA") { // the release is sent, unanswered
					time.Sleep(time.Millisecond)
				}
				cancel()
			}
			select {
			case err = <-returned:
			case <-time.After(30 * time.Second): // a bound for a test that would otherwise hang two minutes, not a measure
				t.Fatal("Shutdown has not returned 30 s after its context ended: it waits for a silent Redis as Close does")
			}
			cancel()
			if !errors.Is(err, tt.want) {
				t.Errorf("Shutdown: %v, want %v", err, tt.want)
			}
			written := decisionsIn(t, metrics.String())
			if written != tt.written {
				t.Errorf("%v decisions written when Shutdown returned, want %v:\n%s", written, tt.written, metrics.String())
			}
			if !tt.silent {
				w := serve(newLimiter(t, map[string]string{"REDIS_ADDR": srv.Addr, "RATE_LIMIT_CONFIG": config}, middleware.Options{}), httptest.NewRequest("GET", "/stream", nil))
				if w.Code != http.StatusOK {
					t.Errorf("the next instance's stream after Shutdown: %d, want 200: the first stream's lease is held until its ttlMs", w.Code)
				}
			}
			proxy.Close() // the release in the background fails at once
			l.Close()     // returns when the background has done
			close(ends)
			<-ended
			if all := decisionsIn(t, metrics.String()); all < written || all > written+1 {
				t.Errorf("%v decisions written in all, %v when Shutdown returned: want the release's at most beside them, none twice:\n%s", all, written, metrics.String())
			}
		})
	}
}

// decisionsIn sums the Decisions of the EMF lines in out.
func decisionsIn(t *testing.T, out string) float64 {
	t.Helper()
	sum := 0.0
	for line := range strings.Lines(out) {
		var doc map[string]any
		if err := json.Unmarshal([]byte(line), &doc); err != nil {
			t.Fatalf("metrics line %s: %v", line, err)
		}
		n, _ := doc["Decisions"].(float64)
		sum += n
	}
	return sum
}
