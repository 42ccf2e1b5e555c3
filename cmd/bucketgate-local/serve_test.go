package main

import (
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"

	"github.com/bucketgate/bucketgate/internal/testkit"
)

// templatePath is the repository's SAM template, from this package's directory.
const templatePath = "../../template.yaml"

// testTimeout is the decision deadline in tests (REDIS_TIMEOUT_MS): generous for a
// loaded 2-core machine, it only bounds how long a dead Redis is waited for.
const testTimeout = "2000"

// t0 is the Redis clock of the tests that hold it still, a whole second.
var t0 = time.Date(2025, 12, 11, 16, 15, 0, 0, time.UTC)

// gateway is a running `serve` with its output captured.
type gateway struct {
	url            string
	stdout, stderr *testkit.SyncBuffer
	// stop stops serve as Ctrl-C does and returns its error; it may be called again.
	stop func() error
}

// startGateway runs serve with the sample backend on a free loopback port with the
// environment env (plus a generous decision deadline) until the test ends, and fails
// the test if serve fails.
func startGateway(t *testing.T, env map[string]string) *gateway {
	t.Helper()
	return startGatewayWith(t, serveOptions{template: templatePath}, env)
}

// startGatewayWith is startGateway with the options o.
func startGatewayWith(t *testing.T, o serveOptions, env map[string]string) *gateway {
	t.Helper()
	return startGatewayOn(t, "127.0.0.1:0", o, env)
}

// startGatewayOn is startGatewayWith listening on addr.
func startGatewayOn(t *testing.T, addr string, o serveOptions, env map[string]string) *gateway {
	t.Helper()
	l, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	g := &gateway{url: "http://" + l.Addr().String(), stdout: &testkit.SyncBuffer{}, stderr: &testkit.SyncBuffer{}}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- serve(ctx, l, o, getenvOf(env), g.stdout, g.stderr)
	}()
	g.stop = sync.OnceValue(func() error {
		cancel()
		return <-done
	})
	t.Cleanup(func() {
		if err := g.stop(); err != nil {
			t.Errorf("serve: %v\nstderr: %s", err, g.stderr)
		}
	})
	return g
}

// getenvOf reads env, with REDIS_TIMEOUT_MS defaulting to testTimeout.
func getenvOf(env map[string]string) func(string) string {
	return func(k string) string {
		if v, ok := env[k]; ok {
			return v
		}
		if k == "REDIS_TIMEOUT_MS" {
			return testTimeout
		}
		return ""
	}
}

// reply is one answer of the gateway.
type reply struct {
	status int
	header http.Header
	body   map[string]any
}

// get requests path with the API key (none when key is "") and decodes the JSON body.
func (g *gateway) get(t *testing.T, path, key string) reply {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, g.url+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	if key != "" {
		req.Header.Set("X-API-Key", key)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("GET %s: %v\nstderr: %s", path, err, g.stderr)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	r := reply{status: resp.StatusCode, header: resp.Header}
	if err := json.Unmarshal(raw, &r.body); err != nil {
		t.Fatalf("GET %s: %d with a body that is not JSON: %v\n%s", path, resp.StatusCode, err, raw)
	}
	return r
}

// miniAt starts a miniredis whose clock is held at t0.
func miniAt(t *testing.T) *miniredis.Miniredis {
	t.Helper()
	m := miniredis.RunT(t)
	m.SetTime(t0)
	return m
}

// The free-plan scenario over HTTP, on a Redis whose clock the test holds: a newcomer's
// eleven curls get 10 x 200 and then 429 with Retry-After, the RateLimit headers and
// the 429's JSON body; 5 s later 5 more pass and the next is limited again.
func TestFreePlanOverHTTP(t *testing.T) {
	m := miniAt(t)
	// The deny cache runs on the local clock, which this test does not move with miniredis.
	g := startGateway(t, map[string]string{"REDIS_ADDR": m.Addr(), "DENY_CACHE_SIZE": "0"})
	for i := range 10 {
		r := g.get(t, "/scores", "k")
		if r.status != http.StatusOK || r.body["ok"] != true || r.body["path"] != "/scores" {
			t.Fatalf("request %d: %d %v", i+1, r.status, r.body)
		}
	}
	r := g.get(t, "/scores", "k")
	if r.status != http.StatusTooManyRequests {
		t.Fatalf("11th: %d %v, want 429", r.status, r.body)
	}
	wantHeaders := map[string]string{
		"Retry-After":      "1",
		"RateLimit":        `"burst";r=0;t=1`,
		"RateLimit-Policy": `"burst";q=10;w=10`,
		"Content-Type":     "application/json",
	}
	for name, want := range wantHeaders {
		if got := r.header.Get(name); got != want {
			t.Errorf("11th: %s %q, want %q", name, got, want)
		}
	}
	wantBody := map[string]any{
		"error":      "Rate limit exceeded",
		"message":    "Too many requests. A retry after 1 second (plus a random jitter) will be accepted.",
		"limit":      10.0,
		"remaining":  0.0,
		"retryAfter": 1.0,
		"resetAt":    "2025-12-11T16:15:10Z", // t0 + 10 s: the bucket is full again
		"rule":       "burst",
		"plan":       "free",
	}
	for k, want := range wantBody {
		if r.body[k] != want {
			t.Errorf("11th: body %s = %#v, want %#v", k, r.body[k], want)
		}
	}
	if len(r.body) != len(wantBody) {
		t.Errorf("11th: body %v has fields beyond %v", r.body, wantBody)
	}
	m.SetTime(t0.Add(5 * time.Second))
	for i := range 5 {
		if r := g.get(t, "/scores", "k"); r.status != http.StatusOK {
			t.Fatalf("5 s later, request %d: %d %v", i+1, r.status, r.body)
		}
	}
	if r := g.get(t, "/scores", "k"); r.status != http.StatusTooManyRequests {
		t.Fatalf("5 s later, 6th: %d, want 429", r.status)
	}
	out := g.stdout.String()
	for _, want := range []string{"curl -i -H 'X-API-Key: k' " + g.url + "/scores", "GET /scores -> 200", "GET /scores -> 429 Retry-After: 1"} {
		if !strings.Contains(out, want) {
			t.Errorf("stdout lacks %q:\n%s", want, out)
		}
	}
	if n := strings.Count(out, "GET /scores -> "); n != 17 {
		t.Errorf("%d access log lines for 17 requests", n)
	}
}

// The embedded Redis runs on the wall clock: after the burst, waiting Retry-After
// seconds lets a request through again.
func TestEmbeddedRedisRefillsInRealTime(t *testing.T) {
	g := startGateway(t, map[string]string{})
	var limited reply
	for i := 0; limited.status == 0; i++ {
		r := g.get(t, "/scores", "k")
		switch {
		case r.status == http.StatusTooManyRequests:
			limited = r
		case r.status != http.StatusOK:
			t.Fatalf("request %d: %d %v", i+1, r.status, r.body)
		case i == 30: // refill (1/s) cannot keep up with 30 back-to-back requests
			t.Fatal("30 requests and no 429")
		}
		if i < 10 && r.status != http.StatusOK {
			t.Fatalf("request %d of the burst: %d, want 200", i+1, r.status)
		}
	}
	wait, err := strconv.Atoi(limited.header.Get("Retry-After"))
	if err != nil || wait < 1 {
		t.Fatalf("Retry-After %q", limited.header.Get("Retry-After"))
	}
	if out := g.stdout.String(); !strings.Contains(out, "embedded Redis (miniredis)") { // printed before the first answer
		t.Errorf("banner does not say the Redis is embedded:\n%s", out)
	}
	time.Sleep(time.Duration(wait) * time.Second)
	if r := g.get(t, "/scores", "k"); r.status != http.StatusOK {
		t.Fatalf("after Retry-After: %d %v, want 200", r.status, r.body)
	}
}

// When Redis stops answering, the limiter fails closed (503, Retry-After: 1) by
// default, with none of the rate-limit headers, and lets requests through with
// FAIL_MODE=open.
func TestRedisDown(t *testing.T) {
	tests := []struct {
		failMode   string
		wantStatus int
	}{
		{"", http.StatusServiceUnavailable},
		{"closed", http.StatusServiceUnavailable},
		{"open", http.StatusOK},
	}
	for _, tc := range tests {
		t.Run("FAIL_MODE="+tc.failMode, func(t *testing.T) {
			m := miniAt(t)
			g := startGateway(t, map[string]string{"REDIS_ADDR": m.Addr(), "FAIL_MODE": tc.failMode})
			if r := g.get(t, "/scores", "k"); r.status != http.StatusOK {
				t.Fatalf("Redis up: %d %v", r.status, r.body)
			}
			m.Close()
			r := g.get(t, "/scores", "k")
			if r.status != tc.wantStatus {
				t.Fatalf("Redis down: %d %v, want %d", r.status, r.body, tc.wantStatus)
			}
			if tc.wantStatus == http.StatusOK {
				return
			}
			if got := r.header.Get("Retry-After"); got != "1" || rateLimitHeader(r.header) != "" {
				t.Errorf("Retry-After %q, and %s: want 1, and none of the rate-limit headers (the banner says so)", got, rateLimitHeader(r.header))
			}
			if r.body["error"] != "Rate limiter unavailable" || r.body["retryAfter"] != 1.0 {
				t.Errorf("body %v", r.body)
			}
		})
	}
}

// With unknownKeys: refuse, an unknown key gets 401 and never reaches the backend;
// a request without a key is still limited by IP under the default plan.
func TestUnknownKeyRefused(t *testing.T) {
	g := startGateway(t, map[string]string{
		"REDIS_ADDR":        miniAt(t).Addr(),
		"RATE_LIMIT_CONFIG": "defaultPlan: free\nunknownKeys: refuse\nplans: {free: [{name: burst, capacity: 10, refillPerSecond: 1}]}",
	})
	if r := g.get(t, "/scores", "unknown-key"); r.status != http.StatusUnauthorized || r.body["error"] != "Unauthorized" {
		t.Fatalf("unknown key: %d %v, want 401", r.status, r.body)
	}
	if r := g.get(t, "/scores", ""); r.status != http.StatusOK {
		t.Fatalf("no key: %d %v, want 200", r.status, r.body)
	}
	if out := g.stdout.String(); strings.Contains(out, "Built-in plans") {
		t.Errorf("banner claims the built-in plans under RATE_LIMIT_CONFIG:\n%s", out)
	}
}

func TestServeInitErrors(t *testing.T) {
	tests := []struct {
		name     string
		template string
		backend  string
		env      map[string]string
		want     string
	}{
		{"no template", "nonexistent.yaml", "", nil, "nonexistent.yaml"},
		{"bad configuration", templatePath, "", map[string]string{"RATE_LIMIT_CONFIG": "plans: {}"}, "RATE_LIMIT_CONFIG"},
		{"bad fail mode", templatePath, "", map[string]string{"FAIL_MODE": "ajar"}, "FAIL_MODE"},
		{"backend without scheme", templatePath, "127.0.0.1:3000", nil, `-backend: backend "127.0.0.1:3000": want an absolute http:// or https:// URL`},
		{"backend with a query", templatePath, "http://127.0.0.1:3000/?a=1", nil, "without query"},
		{"backend of another scheme", templatePath, "ftp://127.0.0.1", nil, "want an absolute http:// or https:// URL"},
		{"backend with a user and password", templatePath, "https://alice:s3cret@127.0.0.1:3000", nil, `-backend: backend "https://alice:xxxxx@127.0.0.1:3000": a URL with credentials, which the gateway would not send`},
		{"backend with a user", templatePath, "http://alice@127.0.0.1:3000", nil, "a URL with credentials"},
		{"backend with credentials and a query", templatePath, "http://alice:s3cret@127.0.0.1:3000/?a=1", nil, "a URL with credentials"},
		// A URL that does not parse, or whose password Parse does not take for one, is
		// quoted with what comes before its "@" hidden.
		{"malformed backend with a password", templatePath, "http://alice:s3cret@127.0.0.1:30x0", nil, `-backend: backend "http://xxxxx@127.0.0.1:30x0": want an absolute http:// or https:// URL`},
		{"backend with a password, unclosed bracket", templatePath, "http://alice:s3cret@[::1", nil, `backend "http://xxxxx@[::1": want an absolute`},
		{"backend with a password, no scheme", templatePath, "alice:s3cret@127.0.0.1:3000", nil, `backend "xxxxx@127.0.0.1:3000": want an absolute`},
		// A query or a fragment, where a token may be, is quoted hidden too.
		{"backend with a token in its query", templatePath, "http://127.0.0.1:3000/?token=s3cret", nil, `-backend: backend "http://127.0.0.1:3000/?xxxxx": want an absolute http:// or https:// URL without query`},
		{"backend with a token in its fragment", templatePath, "http://127.0.0.1:3000/#token=s3cret", nil, `backend "http://127.0.0.1:3000/#xxxxx": want an absolute`},
		{"malformed backend with a token in its query", templatePath, "http://127.0.0.1:30x0/?token=s3cret", nil, `backend "http://127.0.0.1:30x0/?xxxxx": want an absolute`},
		{"backend with an @ in its query", templatePath, "http://127.0.0.1:3000/?mail=a@b&token=s3cret", nil, `backend "http://xxxxx": want an absolute`},
		{"backend with a ? in its password", templatePath, "http://alice:s?3cret@127.0.0.1:3000", nil, `backend "http://xxxxx": want an absolute`},
		{"backend with a password, a :// after it", templatePath, "alice:s3cret@127.0.0.1:3000/a://b", nil, `backend "xxxxx@127.0.0.1:3000/a://b": want an absolute`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			l, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithCancel(context.Background())
			cancel() // a serve that starts, which it should not, stops at once
			err = serve(ctx, l, serveOptions{template: tc.template, backend: tc.backend}, getenvOf(tc.env), io.Discard, io.Discard)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("serve error %v, want one naming %s", err, tc.want)
			}
			if strings.Contains(err.Error(), "s3cret") {
				t.Errorf("serve error %v quotes the backend's password", err)
			}
		})
	}
}

// The Invoke API at the gateway's address resets buckets and reads usage for whoever
// calls: serve warns when its address is reachable from other machines, and only then.
func TestServeWarnsBeyondLoopback(t *testing.T) {
	for _, tc := range []struct {
		name, addr string
		warn       bool
	}{
		{"loopback", "127.0.0.1:0", false},
		{"every address", "0.0.0.0:0", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := startGatewayOn(t, tc.addr, serveOptions{template: templatePath}, nil)
			if err := g.stop(); err != nil {
				t.Fatalf("serve: %v", err)
			}
			if got := strings.Contains(g.stderr.String(), "reachable from other machines"); got != tc.warn {
				t.Errorf("warned %v, want %v; stderr:\n%s", got, tc.warn, g.stderr)
			}
		})
	}
}
