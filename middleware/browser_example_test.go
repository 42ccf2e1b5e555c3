package middleware_test

import (
	"io"
	"log"
	"net/http"

	"github.com/bucketgate/bucketgate/middleware"
	"github.com/bucketgate/bucketgate/ratelimitheaders"
)

// allowedOrigin is the one origin whose pages may call the service.
const allowedOrigin = "https://app.example.com"

// cors answers the CORS preflights of pages from allowedOrigin and passes every other
// request to next, adding to its answer the CORS headers that let the page read it: a
// browser hides a cross-origin answer without Access-Control-Allow-Origin (a 429 looks
// like a network error), and every header ExposeHeaders does not name, Retry-After
// included. Any CORS package does the same when it wraps the limiter.
func cors(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Add("Vary", "Origin")
		if r.Header.Get("Origin") != allowedOrigin {
			next.ServeHTTP(w, r)
			return
		}
		h.Set("Access-Control-Allow-Origin", allowedOrigin)
		if r.Method == http.MethodOptions && r.Header.Get("Access-Control-Request-Method") != "" {
			h.Set("Access-Control-Allow-Methods", "GET, POST")
			h.Set("Access-Control-Allow-Headers", "Content-Type, X-API-Key")
			h.Set("Access-Control-Max-Age", "600")
			w.WriteHeader(http.StatusNoContent)
			return
		}
		h.Set("Access-Control-Expose-Headers", ratelimitheaders.ExposeHeaders)
		next.ServeHTTP(w, r)
	})
}

// A service that pages of another origin call answers their CORS preflights before
// the limiter, so that the CORS handler wraps the limiter and not the other way round.
// A preflight carries no API key (a browser sends none), so a limiter in front of it
// would count it against the caller's address, or refuse it with 401 under
// anonymous: refuse; and the limiter's own 429, 401 and 503 get the CORS headers too.
func Example_browsers() {
	limiter, err := middleware.New(middleware.Options{RedisAddr: "cache.internal:6379"})
	if err != nil {
		log.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /scores", func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "scores") })
	err = http.ListenAndServe(":8080", cors(limiter.Handler(mux))) // not limiter.Handler(cors(mux)); shut down as in Example
	limiter.Close()                                                // before log.Fatal, which runs no deferred call
	log.Fatal(err)
}
