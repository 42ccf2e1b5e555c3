package middleware_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/alicebob/miniredis/v2"

	"github.com/bucketgate/bucketgate/middleware"
	"github.com/bucketgate/bucketgate/ratelimitheaders"
)

// A service limits its requests against the limiter's Redis: the same plans, keys and
// buckets as the API Gateway authorizer. The other settings (FAIL_MODE,
// RATE_LIMIT_CONFIG, REGISTRY_TABLE, ...) come from the environment, as the functions'
// do. At SIGTERM (ECS, App Runner) or Ctrl-C the requests in flight finish, then Close
// writes the metrics that wait: a process that ends by log.Fatal before it, or by a
// signal it does not handle, loses up to METRICS_FLUSH_MS of them. A server that cannot
// listen (a port in use) closes the Limiter and exits with status 1, for a service
// manager's on-failure restart to see.
func Example() {
	limiter, err := middleware.New(middleware.Options{
		RedisAddr:      "cache.internal:6379",
		TrustedProxies: []string{"10.0.0.0/8"}, // the load balancer's subnet
	})
	if err != nil {
		log.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /orders/{id}", func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "order "+r.PathValue("id")) })
	srv := &http.Server{Addr: ":8080", Handler: limiter.Handler(mux)}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	served := make(chan error, 1)
	go func() { served <- srv.ListenAndServe() }()
	select {
	case err := <-served: // a port in use: nothing was served
		limiter.Close()
		log.Fatal(err) // exit status 1, for a service manager to restart it
	case <-ctx.Done():
	}
	// From here on, a second signal ends the process at once.
	stop()
	shutdown, cancel := context.WithTimeout(context.Background(), 10*time.Second) // within the stop timeout
	defer cancel()
	if err := srv.Shutdown(shutdown); err != nil { // the requests in flight finish, or 10 s pass (a longer stream runs on until the process ends),
		log.Print(err)
	}
	closing, cancelClosing := context.WithTimeout(context.Background(), 5*time.Second) // 15 s in all, within ECS's 30 s
	defer cancelClosing()
	if err := limiter.Shutdown(closing); err != nil { // then the leases still held are returned and the metrics that wait are written (the metrics alone after 5 s of a silent Redis)
		log.Print(err)
	}
}

// A service's own test of its limits, on miniredis in the process (the same Lua as
// Redis): a caller's first 3 requests pass, with the rate-limit headers, and the 4th
// is answered 429 with Retry-After and the gateway's JSON body. The rate-limit headers
// are spelled as API Gateway sends them: read them by their constants, since
// http.Header.Get, which looks for the canonical spelling (X-Ratelimit-Remaining), does
// not find them.
func ExampleLimiter_Handler() {
	redis, err := miniredis.Run()
	if err != nil {
		log.Fatal(err)
	}
	limiter, err := middleware.New(middleware.Options{
		RedisAddr: redis.Addr(),
		Config:    "defaultPlan: free\nplans: {free: [{name: burst, capacity: 3, refill: 1, per: day}]}",
		Getenv: func(name string) string {
			if name == "REDIS_TIMEOUT_MS" {
				return "2000" // miniredis runs the Lua in Go: slower than Redis's 50 ms default allows
			}
			return os.Getenv(name)
		},
		Metrics:   io.Discard, // not on stdout, the example's output
		LogOutput: io.Discard,
	})
	if err != nil {
		redis.Close()
		log.Fatal(err)
	}
	service := limiter.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok") }))
	for range 4 {
		w := httptest.NewRecorder()
		service.ServeHTTP(w, httptest.NewRequest("GET", "/orders/42", nil))
		h := w.Header()
		fmt.Printf("%d remaining %v, Retry-After %v, h.Get finds %q\n", w.Code, h[ratelimitheaders.HeaderRemaining], h.Get("Retry-After") != "", h.Get(ratelimitheaders.HeaderRemaining))
	}
	limiter.Close()
	redis.Close()
	// Output:
	// 200 remaining [2], Retry-After false, h.Get finds ""
	// 200 remaining [1], Retry-After false, h.Get finds ""
	// 200 remaining [0], Retry-After false, h.Get finds ""
	// 429 remaining [0], Retry-After true, h.Get finds ""
}

// A load balancer's health check carries no API key: behind the limiter it would spend
// the balancer's tokens, be refused under anonymous: refuse, and be answered 503 while
// Redis is down (failing closed), taking every task out of service. It is served beside
// the limiter. The zero Limiter answers as one failing closed does.
func Example_healthCheck() {
	var limiter middleware.Limiter // as with Redis down: every request 503
	mux := http.NewServeMux()      // the service
	mux.HandleFunc("GET /orders/{id}", func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "order "+r.PathValue("id")) })

	root := http.NewServeMux()
	root.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusNoContent) })
	root.Handle("/", limiter.Handler(mux)) // every other path, limited

	for _, path := range []string{"/healthz", "/orders/42"} {
		w := httptest.NewRecorder()
		root.ServeHTTP(w, httptest.NewRequest("GET", path, nil))
		fmt.Println(path, w.Code)
	}
	// Output:
	// /healthz 204
	// /orders/42 503
}

// An LLM service reserves the most tokens a completion may use (its route in the
// configuration: {method: POST, path: /v1/chat, reserve: 4096}, max_tokens) and, once
// the model has answered, settles the tokens it used: the difference goes back.
func ExampleLimiter_Settle() {
	limiter, err := middleware.New(middleware.Options{RedisAddr: "cache.internal:6379"})
	if err != nil {
		log.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/chat", func(w http.ResponseWriter, r *http.Request) {
		used := int64(1234) // the completion's usage.total_tokens, at most 4096
		switch _, err := limiter.Settle(r.Context(), r, used); {
		case errors.Is(err, ratelimitheaders.ErrNoReservation): // degraded (failing open): nothing reserved
		case err != nil:
			log.Print(err) // unsettled, the reservation stays charged at 4096
		}
		io.WriteString(w, `{"usage":{"total_tokens":1234}}`)
	})
	// Served, and the limiter closed at shutdown, as in Example.
	http.Handle("/", limiter.Handler(mux))
}
