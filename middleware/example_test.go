package middleware_test

import (
	"io"
	"log"
	"net/http"

	"github.com/bucketgate/bucketgate/middleware"
)

// A service limits its requests against the limiter's Redis: the same plans, keys and
// buckets as the API Gateway authorizer. The other settings (FAIL_MODE,
// RATE_LIMIT_CONFIG, REGISTRY_TABLE, ...) come from the environment, as the functions'
// do.
func Example() {
	limiter, err := middleware.New(middleware.Options{
		RedisAddr:      "cache.internal:6379",
		TrustedProxies: []string{"10.0.0.0/8"}, // the load balancer's subnet
	})
	if err != nil {
		log.Fatal(err)
	}
	defer limiter.Close()

	mux := http.NewServeMux()
	mux.HandleFunc("GET /orders/{id}", func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "order "+r.PathValue("id")) })
	log.Fatal(http.ListenAndServe(":8080", limiter.Handler(mux)))
}

// An LLM service reserves the most tokens a completion may use (its route in the
// configuration: {method: POST, path: /v1/chat, reserve: 4096}, max_tokens) and, once
// the model has answered, settles the tokens it used: the difference goes back.
func ExampleLimiter_Settle() {
	limiter, err := middleware.New(middleware.Options{RedisAddr: "cache.internal:6379"})
	if err != nil {
		log.Fatal(err)
	}
	defer limiter.Close()

	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/chat", func(w http.ResponseWriter, r *http.Request) {
		used := int64(1234) // the completion's usage.total_tokens, at most 4096
		if _, err := limiter.Settle(r.Context(), r, used); err != nil {
			log.Print(err) // unsettled, the reservation stays charged at 4096
		}
		io.WriteString(w, `{"usage":{"total_tokens":1234}}`)
	})
	log.Fatal(http.ListenAndServe(":8080", limiter.Handler(mux)))
}
