package middleware_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/bucketgate/bucketgate/internal/testkit/redistest"
	"github.com/bucketgate/bucketgate/middleware"
)

// BenchmarkLongPath decides, on a real redis-server, requests whose path is as long as
// Go's default header limit lets one be: segments apart by '/', which every backend
// reads alike, and by '%2F', which backends read two ways.
func BenchmarkLongPath(b *testing.B) {
	srv := redistest.Start(b)
	doc := "defaultPlan: free\nplans: {free: [{name: burst, capacity: 1000000000, refillPerSecond: 1000000}]}\n" +
		"routes: [{path: /a/*/admin, cost: 100}, {path: /admin, cost: 2}]"
	vars := map[string]string{"REDIS_ADDR": srv.Addr, "RATE_LIMIT_CONFIG": doc, "REDIS_TIMEOUT_MS": "2000"}
	l, err := middleware.New(middleware.Options{Getenv: env(vars), Metrics: io.Discard, LogOutput: io.Discard})
	if err != nil {
		b.Fatal(err)
	}
	defer l.Close()
	h := l.Handler(ok)
	for _, size := range []struct {
		name string
		n    int
	}{{"64KB", 64 << 10}, {"1MB", 1 << 20}} {
		for _, sep := range []struct{ name, sep string }{{"slashes", "/"}, {"encoded", "%2F"}} {
			r := httptest.NewRequest(http.MethodGet, "/"+strings.Repeat("a"+sep.sep, size.n/(1+len(sep.sep))), nil)
			b.Run(size.name+"/"+sep.name, func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					w := httptest.NewRecorder()
					h.ServeHTTP(w, r)
					if w.Code != http.StatusOK {
						b.Fatalf("%d: want 200", w.Code)
					}
				}
			})
		}
	}
}
