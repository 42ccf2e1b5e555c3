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
