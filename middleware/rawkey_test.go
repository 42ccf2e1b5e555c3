package middleware_test

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/bucketgate/bucketgate"
	"github.com/bucketgate/bucketgate/internal/testkit/redistest"
	"github.com/bucketgate/bucketgate/middleware"
)

// The raw API key is nowhere the Limiter writes, at LOG_LEVEL=debug, on a real
// redis-server: not in its log lines, its metrics, Redis, the answers, nor the errors of
// Settle and Release, whether the key is known, unknown, given twice with another, in
// the '_' spelling, on a route that reserves, with a concurrency rule, or with Redis
// down; nor is a prefix of it long enough to narrow a search.
func TestRawKeyNeverAppears(t *testing.T) {
	const (
		known   = "sk_live_KNOWN_4f7b2c9e1d8a6b3f0e5c7a9d2b4f6e8a"
		unknown = "sk_live_UNKNOWN_9c1e7a3f5b2d8e6c4a0f9b7d5e3c1a2b"
		prefix  = 16 // bytes of a key that must not appear either
	)
	cfg := "defaultPlan: free\nplans: {free: [{name: burst, capacity: 1000, refill: 100, per: day}], " +
		"pro: [{name: tokens, capacity: 1000, refillPerSecond: 0.001}, {name: conc, concurrency: 2}]}\n" +
		"keys: {" + bucketgate.KeyDigest(known) + ": pro}\nroutes: [{method: POST, path: /v1/chat, reserve: 400}]"
	srv := redistest.Start(t)
	var logs, metrics bytes.Buffer
	l, err := middleware.New(middleware.Options{Getenv: env(map[string]string{"REDIS_ADDR": srv.Addr, "RATE_LIMIT_CONFIG": cfg,
		"REDIS_TIMEOUT_MS": "2000", "LOG_LEVEL": "debug", "METRICS_FLUSH_MS": "0"}), Metrics: &metrics, LogOutput: &logs})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	var seen strings.Builder
	note := func(_ any, err error) {
		if err != nil {
			seen.WriteString(err.Error() + "\n")
		}
	}
	backend := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		note(l.Settle(r.Context(), r, 100))
		note(l.Settle(r.Context(), r, -1))
		note(l.Release(r.Context(), r))
		io.WriteString(w, "ok")
	})
	requests := []struct {
		name, method, path string
		header             http.Header
	}{
		{"a known key on a route that reserves", "POST", "/v1/chat", http.Header{"X-Api-Key": {known}}},
		{"a known key", "GET", "/orders", http.Header{"X-Api-Key": {known}}},
		{"a known key, spelled with '_'", "GET", "/orders", http.Header{"X_Api_Key": {known}}},
		{"an unknown key", "GET", "/orders", http.Header{"X-Api-Key": {unknown}}},
		{"two keys", "GET", "/orders", http.Header{"X-Api-Key": {known, unknown}}},
		{"two keys joined", "POST", "/v1/chat", http.Header{"X-Api-Key": {known + ", " + unknown}}},
	}
	serveAll := func() {
		for _, rq := range requests {
			r := httptest.NewRequest(rq.method, rq.path, strings.NewReader(`{}`))
			r.Header = rq.header.Clone()
			w := httptest.NewRecorder()
			l.Handler(backend).ServeHTTP(w, r)
			seen.WriteString(rq.name + ": " + w.Body.String() + "\n")
			for name, vs := range w.Header() {
				seen.WriteString(name + ": " + strings.Join(vs, ", ") + "\n")
			}
		}
	}
	serveAll()
	dump, err := srv.Dump(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	seen.WriteString(dump)
	srv.Stop()
	serveAll()
	seen.Write(logs.Bytes())
	seen.Write(metrics.Bytes())
	all := seen.String()
	for _, key := range []string{known, unknown} {
		if strings.Contains(all, key[:prefix]) {
			t.Errorf("the first %d bytes of a raw key, %q, are in what the Limiter wrote:\n%s", prefix, key[:prefix], all)
		}
	}
	if !strings.Contains(all, bucketgate.KeyDigest(known)) || !strings.Contains(all, bucketgate.KeyDigest(unknown)) {
		t.Fatalf("the keys' digests are not there either: did anything run?\n%s", all)
	}
}
