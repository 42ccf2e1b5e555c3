package middleware_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"maps"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bucketgate/bucketgate"
	"github.com/bucketgate/bucketgate/internal/localgw"
	"github.com/bucketgate/bucketgate/internal/testkit/redistest"
	"github.com/bucketgate/bucketgate/middleware"
	"github.com/bucketgate/bucketgate/ratelimitheaders"
)

// templatePath is the SAM template whose gateway responses the middleware answers as.
const templatePath = "../template.yaml"

// ok is the service behind the middleware.
var ok = http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, "ok") })

// newLimiter returns a Limiter on a fresh miniredis with the settings vars (which may
// set REDIS_ADDR themselves) and opts.
func newLimiter(t *testing.T, vars map[string]string, opts middleware.Options) *middleware.Limiter {
	t.Helper()
	m, _ := redistest.Mini(t)
	all := map[string]string{"REDIS_ADDR": m.Addr(), "REDIS_TIMEOUT_MS": "2000"}
	for k, v := range vars {
		all[k] = v
	}
	opts.Getenv, opts.Metrics, opts.LogOutput = env(all), io.Discard, io.Discard
	l, err := middleware.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(l.Close)
	return l
}

// serve sends r through l to ok and returns the answer.
func serve(l *middleware.Limiter, r *http.Request) *httptest.ResponseRecorder {
	w := httptest.NewRecorder()
	l.Handler(ok).ServeHTTP(w, r)
	return w
}

// The answers are template.yaml's gateway responses, filled as API Gateway fills them
// (the local gateway renders the template): the rate-limit headers on allowed answers,
// 429 with Retry-After and the same JSON body when limited, 401 when refused, 503 with
// Retry-After: 1 when failing closed, X-RateLimit-Degraded: true and RateLimit-Policy
// alone when failing open.
func TestAnswersAreTheGateways(t *testing.T) {
	rs, err := localgw.LoadResponses(templatePath)
	if err != nil {
		t.Fatal(err)
	}
	l := newLimiter(t, map[string]string{"RATE_LIMIT_CONFIG": tenTokens}, middleware.Options{})
	for i := range 10 {
		w := serve(l, httptest.NewRequest("GET", "/orders/42", nil))
		if w.Code != http.StatusOK || w.Body.String() != "ok" || header(w.Header(), ratelimitheaders.HeaderRemaining) != string(rune('9'-i)) ||
			header(w.Header(), ratelimitheaders.HeaderRateLimitPolicy) != `"burst";q=10;w=864000` || header(w.Header(), ratelimitheaders.HeaderRetryAfter) != "" {
			t.Fatalf("request %d: %d %q, headers %v", i+1, w.Code, w.Body, w.Header())
		}
	}
	w := serve(l, httptest.NewRequest("GET", "/orders/42", nil))
	want := httptest.NewRecorder()
	context := map[string]any{}
	for _, key := range []string{ratelimitheaders.KeyLimit, ratelimitheaders.KeyRemaining, ratelimitheaders.KeyRetryAfter, ratelimitheaders.KeyReset} {
		context[key] = whole(t, w.Header(), key)
	}
	context[ratelimitheaders.KeyRetryAfterText] = header(w.Header(), ratelimitheaders.HeaderRetryAfter) + " seconds"
	context[ratelimitheaders.KeyRateLimit] = header(w.Header(), ratelimitheaders.HeaderRateLimit)
	context[ratelimitheaders.KeyRateLimitPolicy] = header(w.Header(), ratelimitheaders.HeaderRateLimitPolicy)
	context[ratelimitheaders.KeyResetAt], context[ratelimitheaders.KeyRule], context[ratelimitheaders.KeyPlan] = resetAt(t, w.Body.String()), "burst", "free"
	rs.Lookup(localgw.AccessDenied).Write(want, httptest.NewRequest("GET", "/orders/42", nil), context)
	same(t, "limited", w, want)

	refusing := newLimiter(t, map[string]string{"RATE_LIMIT_CONFIG": tenTokens + "\nanonymous: refuse"}, middleware.Options{})
	want = httptest.NewRecorder()
	rs.Lookup(localgw.Unauthorized).Write(want, httptest.NewRequest("GET", "/", nil), nil)
	same(t, "refused", serve(refusing, httptest.NewRequest("GET", "/", nil)), want)

	closed, err := net.Listen("tcp", "127.0.0.1:0") // an address nothing answers on once closed
	if err != nil {
		t.Fatal(err)
	}
	closed.Close()
	down := newLimiter(t, map[string]string{"REDIS_ADDR": closed.Addr().String(), "REDIS_TIMEOUT_MS": "50"}, middleware.Options{})
	want = httptest.NewRecorder()
	rs.Lookup(localgw.AuthorizerFailure).Write(want, httptest.NewRequest("GET", "/", nil), nil)
	same(t, "failing closed", serve(down, httptest.NewRequest("GET", "/", nil)), want)

	open := newLimiter(t, map[string]string{"REDIS_ADDR": closed.Addr().String(), "REDIS_TIMEOUT_MS": "50", "FAIL_MODE": "open"}, middleware.Options{})
	if w := serve(open, httptest.NewRequest("GET", "/", nil)); w.Code != http.StatusOK || header(w.Header(), ratelimitheaders.HeaderRateLimit) != "" ||
		header(w.Header(), ratelimitheaders.HeaderLimit) != "" || header(w.Header(), ratelimitheaders.HeaderDegraded) != "true" ||
		header(w.Header(), ratelimitheaders.HeaderRateLimitPolicy) != `"burst";q=10;w=10` {
		t.Fatalf("failing open: %d, headers %v; want the service's answer with X-RateLimit-Degraded: true and RateLimit-Policy only (docs/library.md)", w.Code, w.Header())
	}
}

// A decision without figures answers with the next handler's answer and no figure, as
// the gateway does (docs/library.md, Answers): every rule shadow, decided by Redis, has
// no rate-limit header at all; every rule shadow with Redis down is degraded, with
// X-RateLimit-Degraded: true alone (a shadow rule is no policy), whatever FAIL_MODE
// says. Either way the next handler's own rate-limit headers are removed.
func TestAnswersWithoutFigures(t *testing.T) {
	closed, err := net.Listen("tcp", "127.0.0.1:0") // an address nothing answers on once closed
	if err != nil {
		t.Fatal(err)
	}
	closed.Close()
	shadowOnly := "defaultPlan: trial\nplans: {trial: {shadow: true, rules: [{name: burst, capacity: 1, refillPerSecond: 0.001}]}}"
	next := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("X-RateLimit-Remaining", "4999")
		w.Header().Set("RateLimit-Policy", `"upstream";q=5000;w=60`)
		io.WriteString(w, "ok")
	})
	for _, tc := range []struct {
		name string
		vars map[string]string
		want http.Header
	}{
		{"every rule shadow, decided by Redis", map[string]string{"RATE_LIMIT_CONFIG": shadowOnly}, http.Header{}},
		{"every rule shadow, Redis down", map[string]string{"RATE_LIMIT_CONFIG": shadowOnly, "REDIS_ADDR": closed.Addr().String(), "REDIS_TIMEOUT_MS": "50"}, http.Header{"X-Ratelimit-Degraded": {"true"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l := newLimiter(t, tc.vars, middleware.Options{})
			for i := range 3 { // the shadow bucket holds 1: the second and third lack it
				w := httptest.NewRecorder()
				l.Handler(next).ServeHTTP(w, httptest.NewRequest("GET", "/orders/42", nil))
				got := http.Header{}
				for name, v := range w.Result().Header {
					if ratelimitheaders.Owned(name) {
						got[http.CanonicalHeaderKey(name)] = v
					}
				}
				if w.Code != http.StatusOK || w.Body.String() != "ok" || !maps.EqualFunc(got, tc.want, slices.Equal) {
					t.Fatalf("request %d: %d %q, rate-limit headers %v: want the handler's 200 with %v", i+1, w.Code, w.Body, got, tc.want)
				}
			}
		})
	}
}

// same fails t unless got has want's status, body and headers.
func same(t *testing.T, what string, got, want *httptest.ResponseRecorder) {
	t.Helper()
	if got.Code != want.Code || got.Body.String() != want.Body.String() {
		t.Fatalf("%s: %d %s\nwant %d %s", what, got.Code, got.Body, want.Code, want.Body)
	}
	for name := range want.Header() {
		if header(got.Header(), name) != header(want.Header(), name) {
			t.Errorf("%s: header %s %q, want %q", what, name, header(got.Header(), name), header(want.Header(), name))
		}
	}
}

// whole returns the value of the header that key's context value fills, as a number.
func whole(t *testing.T, h http.Header, key string) float64 {
	t.Helper()
	name := map[string]string{ratelimitheaders.KeyLimit: ratelimitheaders.HeaderLimit, ratelimitheaders.KeyRemaining: ratelimitheaders.HeaderRemaining,
		ratelimitheaders.KeyRetryAfter: ratelimitheaders.HeaderRetryAfter, ratelimitheaders.KeyReset: ratelimitheaders.HeaderReset}[key]
	v := header(h, name)
	var n float64
	for _, c := range v {
		if c < '0' || c > '9' {
			t.Fatalf("header %s %q: want a whole number", name, v)
		}
		n = n*10 + float64(c-'0')
	}
	if v == "" {
		t.Fatalf("no header %s", name)
	}
	return n
}

// resetAt returns the resetAt of a 429 body.
func resetAt(t *testing.T, body string) string {
	t.Helper()
	_, rest, found := strings.Cut(body, `"resetAt": "`)
	at, _, _ := strings.Cut(rest, `"`)
	if !found || len(at) != len("2006-01-02T15:04:05Z") {
		t.Fatalf("no resetAt in %s", body)
	}
	return at
}

// The API key header is read in any case, with '_' for '-', and every copy counts, joined
// by commas or not, as the authorizer reads it; Options.KeyHeader names it.
func TestKeyHeader(t *testing.T) {
	doc := "defaultPlan: free\nunknownKeys: refuse\nplans: {free: [{name: burst, capacity: 10, refill: 1, per: day}], pro: [{name: burst, capacity: 100, refill: 1, per: day}]}\nkeys: {" + digest("pro-key") + ": pro}"
	l := newLimiter(t, map[string]string{"RATE_LIMIT_CONFIG": doc}, middleware.Options{KeyHeader: "X-Tenant-Key"})
	for _, tc := range []struct {
		name    string
		headers [][2]string
		code    int
		limit   string
	}{
		{"registered key", [][2]string{{"X-Tenant-Key", "pro-key"}}, http.StatusOK, "100"},
		{"lower-case header", [][2]string{{"x-tenant-key", "pro-key"}}, http.StatusOK, "100"},
		{"two equal copies", [][2]string{{"X-Tenant-Key", "pro-key"}, {"X-Tenant-Key", " pro-key"}}, http.StatusOK, "100"},
		{"two different copies", [][2]string{{"X-Tenant-Key", "pro-key"}, {"X-Tenant-Key", "other"}}, http.StatusUnauthorized, ""},
		// HTTP takes one line of comma-separated values as the lines apart (RFC 9110,
		// section 5.3): a client or a proxy in front may join them, as an HTTP API does.
		{"two equal copies joined", [][2]string{{"X-Tenant-Key", "pro-key, pro-key"}}, http.StatusOK, "100"},
		{"two equal copies joined, twice", [][2]string{{"X-Tenant-Key", "pro-key,pro-key"}, {"X-Tenant-Key", "pro-key,pro-key"}}, http.StatusOK, "100"},
		{"two different copies joined", [][2]string{{"X-Tenant-Key", "pro-key, other"}}, http.StatusUnauthorized, ""},
		// Empty list elements are ignored (RFC 9110, section 5.6.1).
		{"a trailing comma", [][2]string{{"X-Tenant-Key", "pro-key,"}}, http.StatusOK, "100"},
		{"an empty element between copies", [][2]string{{"X-Tenant-Key", "pro-key, ,pro-key"}}, http.StatusOK, "100"},
		{"a leading comma", [][2]string{{"X-Tenant-Key", ", pro-key"}}, http.StatusOK, "100"},
		{"an empty copy beside the key", [][2]string{{"X-Tenant-Key", "pro-key"}, {"X-Tenant-Key", ""}}, http.StatusOK, "100"},
		// CGI, WSGI and Rack read X_Tenant_Key as X-Tenant-Key: so does the limiter.
		{"spelled with underscores", [][2]string{{"X_Tenant_Key", "pro-key"}}, http.StatusOK, "100"},
		{"spelled with an underscore, lower case", [][2]string{{"x-tenant_key", "pro-key"}}, http.StatusOK, "100"},
		{"a different key spelled with underscores", [][2]string{{"X-Tenant-Key", "pro-key"}, {"X_Tenant_Key", "other"}}, http.StatusUnauthorized, ""},
		{"unknown key", [][2]string{{"X-Tenant-Key", "made-up"}}, http.StatusUnauthorized, ""},
		{"the default header is not the key header", [][2]string{{"X-API-Key", "pro-key"}}, http.StatusOK, "10"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := httptest.NewRequest("GET", "/", nil)
			for _, h := range tc.headers {
				r.Header[h[0]] = append(r.Header[h[0]], h[1])
			}
			if w := serve(l, r); w.Code != tc.code || header(w.Header(), ratelimitheaders.HeaderLimit) != tc.limit {
				t.Fatalf("%d with limit %q, want %d with %q", w.Code, header(w.Header(), ratelimitheaders.HeaderLimit), tc.code, tc.limit)
			}
		})
	}
}

// New's error names what to fix: the option the caller set, not only the variable it
// stands in for (which the caller may never have set), or the variable when no option
// set it.
func TestNewErrorsNameTheOption(t *testing.T) {
	for _, tc := range []struct {
		name string
		opts middleware.Options
		want string
	}{
		{"no Redis", middleware.Options{Getenv: env(nil)}, "REDIS_ADDR"},
		{"bad trusted proxy", middleware.Options{Getenv: env(nil), TrustedProxies: []string{"10.0.0.0/8", "proxy.internal"}}, `TrustedProxies: [1] "proxy.internal"`},
		// Every hop trusted, the source would be the leftmost, which the client writes.
		{"every IPv4 address trusted", middleware.Options{Getenv: env(nil), TrustedProxies: []string{"10.0.0.0/8", "0.0.0.0/0"}}, `TrustedProxies: [1] "0.0.0.0/0": trusts every address`},
		{"every IPv6 address trusted", middleware.Options{Getenv: env(nil), TrustedProxies: []string{"::/0"}}, `TrustedProxies: [0] "::/0": trusts every address`},
		{"every IPv4 address trusted, mapped", middleware.Options{Getenv: env(nil), TrustedProxies: []string{"::ffff:0.0.0.0/96"}}, `TrustedProxies: [0] "::ffff:0.0.0.0/96": trusts every address`},
		{"bad Redis address", middleware.Options{RedisAddr: "cache.internal", Getenv: env(nil)}, "RedisAddr (in place of REDIS_ADDR): "},
		{"bad key header", middleware.Options{RedisAddr: "127.0.0.1:1", KeyHeader: "X Key", Getenv: env(nil)}, "KeyHeader (in place of API_KEY_HEADER): "},
		{"bad document", middleware.Options{RedisAddr: "127.0.0.1:1", Config: "plans: {}", Getenv: env(nil)}, "Config (in place of RATE_LIMIT_CONFIG): "},
		{"bad registry table", middleware.Options{RedisAddr: "127.0.0.1:1", RegistryTable: "keys table", Getenv: env(nil)}, `middleware: RegistryTable "keys table" (in place of REGISTRY_TABLE): want a table name`},
		// The option is named once, in place of the variable, not before it too.
		{"bad document, from the field's name on", middleware.Options{RedisAddr: "127.0.0.1:1", Config: "plans: {}", Getenv: env(nil)}, "middleware: Config (in place of RATE_LIMIT_CONFIG): rate-limit configuration: plans"},
		{"bad Redis address, from the field's name on", middleware.Options{RedisAddr: "cache.internal", Getenv: env(nil)}, `middleware: RedisAddr (in place of REDIS_ADDR): "cache.internal": want host:port`},
		{"Redis seeds for one node", middleware.Options{RedisAddr: "127.0.0.1:1,127.0.0.1:2", Getenv: env(map[string]string{"REDIS_CLUSTER": "off"})}, "middleware: RedisAddr (in place of REDIS_ADDR) has 2 addresses and REDIS_CLUSTER=off talks to one"},
		// A file's name given for the document: the error says where a file's name goes.
		{"a file's name for the document", middleware.Options{RedisAddr: "127.0.0.1:1", Config: "config.yaml", Getenv: env(nil)}, `got the string "config.yaml", want a mapping of defaultPlan, unknownKeys, anonymous, plans, keys, tenants, routes (a file's path? RATE_LIMIT_CONFIG holds the document itself; RATE_LIMIT_CONFIG_FILE names its file)`},
		{"bad key header variable", middleware.Options{RedisAddr: "127.0.0.1:1", Getenv: env(map[string]string{"API_KEY_HEADER": "X Key"})}, "middleware: API_KEY_HEADER: "},
		{"bad document variable, with a good option beside it", middleware.Options{KeyHeader: "X-Key", Getenv: env(map[string]string{"REDIS_ADDR": "127.0.0.1:1", "RATE_LIMIT_CONFIG": "plans: {}"})}, "middleware: RATE_LIMIT_CONFIG: "},
		// The bound is the functions', told so that it is true of the middleware too.
		{"registry timeout beyond the bound", middleware.Options{RedisAddr: "127.0.0.1:1", Getenv: env(map[string]string{"REGISTRY_TIMEOUT_MS": "60000"})}, "the functions and the middleware alike"},
		// One environment is checked whole wherever it is loaded, a variable the
		// middleware does not use included (docs/library.md#options).
		{"operator function it does not use", middleware.Options{RedisAddr: "127.0.0.1:1", Getenv: env(map[string]string{"OPERATOR_FUNCTION": "bucketgate operator"})}, "middleware: settings: OPERATOR_FUNCTION="},
		// CloudWatch drops, silently, the metrics of a line whose dimension it refuses.
		{"name not ASCII", middleware.Options{RedisAddr: "127.0.0.1:1", Name: "commandes-café", Getenv: env(nil)}, `Name: "commandes-café"`},
		{"name of spaces", middleware.Options{RedisAddr: "127.0.0.1:1", Name: "  ", Getenv: env(nil)}, `Name: "  "`},
		{"name with a control character", middleware.Options{RedisAddr: "127.0.0.1:1", Name: "orders\n", Getenv: env(nil)}, `Name: "orders\n"`},
		{"name too long", middleware.Options{RedisAddr: "127.0.0.1:1", Name: strings.Repeat("a", 1025), Getenv: env(nil)}, "Name: 1025 bytes"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.opts.Metrics, tc.opts.LogOutput = io.Discard, io.Discard
			l, err := middleware.New(tc.opts)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				if l != nil {
					l.Close()
				}
				t.Fatalf("New = %v, want an error naming %q", err, tc.want)
			}
			if strings.Contains(err.Error(), "settings: settings") || strings.Contains(err.Error(), "): settings: ") {
				t.Errorf("New = %v: want its source named once", err)
			}
			for _, v := range []string{"REDIS_ADDR", "API_KEY_HEADER", "RATE_LIMIT_CONFIG", "REGISTRY_TABLE"} {
				if strings.Contains(err.Error(), "(in place of "+v+"): "+v) {
					t.Errorf("New = %v: want %s named once", err, v)
				}
			}
		})
	}
}

// digest is an API key's digest, as the document lists it.
func digest(key string) string { return bucketgate.KeyDigest(key) }

// header returns the value of the header called name as it is spelled: the
// rate-limit headers are spelled as API Gateway sends them ("RateLimit-Policy"), which
// http.Header.Get, canonicalizing the name, does not find.
func header(h http.Header, name string) string {
	if v := h[name]; len(v) > 0 {
		return v[0]
	}
	return h.Get(name)
}

// metricsLimiter returns a Limiter of tenTokens on a fresh miniredis, writing its
// metrics to the builder it returns; the caller closes it.
func metricsLimiter(t *testing.T) (*middleware.Limiter, *strings.Builder) {
	t.Helper()
	m, _ := redistest.Mini(t)
	var metrics strings.Builder
	l, err := middleware.New(middleware.Options{
		Getenv:  env(map[string]string{"REDIS_ADDR": m.Addr(), "REDIS_TIMEOUT_MS": "2000", "RATE_LIMIT_CONFIG": tenTokens}),
		Metrics: &metrics, LogOutput: io.Discard,
	})
	if err != nil {
		t.Fatal(err)
	}
	return l, &metrics
}

// The metrics of a service's requests are added up and written at most once a second
// (METRICS_FLUSH_MS); Close writes what waits, so that a service that stops loses none.
func TestCloseWritesTheMetrics(t *testing.T) {
	l, metrics := metricsLimiter(t)
	for range 12 {
		serve(l, httptest.NewRequest("GET", "/orders/42", nil))
	}
	l.Close()
	l.Close() // a second Close writes nothing more
	decisions := map[string]float64{}
	for line := range strings.Lines(metrics.String()) {
		var doc map[string]any
		if err := json.Unmarshal([]byte(line), &doc); err != nil {
			t.Fatalf("metrics line %s: %v", line, err)
		}
		o, _ := doc["Outcome"].(string)
		n, _ := doc["Decisions"].(float64)
		decisions[o] += n
	}
	if want := map[string]float64{"allowed": 10, "limited": 2}; !maps.Equal(decisions, want) {
		t.Fatalf("decisions %v written, want %v:\n%s", decisions, want, metrics)
	}
}

// One writer given for both the metrics and the log lines (a test's bytes.Buffer, which
// is not safe for concurrent use) is written by one goroutine at a time, though the
// metrics and the logs are written from many, each under a lock of its own (go test
// -race): every line of it is whole, and every decision's log line is there.
func TestOneWriterForMetricsAndLogs(t *testing.T) {
	m, _ := redistest.Mini(t)
	var out bytes.Buffer
	l, err := middleware.New(middleware.Options{
		Getenv:  env(map[string]string{"REDIS_ADDR": m.Addr(), "REDIS_TIMEOUT_MS": "2000", "METRICS_FLUSH_MS": "0", "LOG_LEVEL": "debug"}),
		Metrics: &out, LogOutput: &out,
	})
	if err != nil {
		t.Fatal(err)
	}
	const workers, each = 4, 20
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for range each {
				serve(l, httptest.NewRequest("GET", "/orders/42", nil))
			}
		})
	}
	wg.Wait()
	l.Close()
	decisions := 0
	for line := range strings.Lines(out.String()) {
		var doc map[string]any
		if err := json.Unmarshal([]byte(line), &doc); err != nil {
			t.Fatalf("line %q: %v", line, err)
		}
		if doc["msg"] == "decision" {
			decisions++
		}
	}
	if decisions != workers*each {
		t.Fatalf("%d decision lines, want %d", decisions, workers*each)
	}
}

// writerFunc is a writer of a type == cannot compare (a func).
type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }

// Writers of a type that cannot be compared, given for both, are taken as they are:
// New does not panic comparing them.
func TestUncomparableWriters(t *testing.T) {
	discard := writerFunc(io.Discard.Write)
	l, err := middleware.New(middleware.Options{Getenv: env(map[string]string{"REDIS_ADDR": "127.0.0.1:1"}), Metrics: discard, LogOutput: discard})
	if err != nil {
		t.Fatal(err)
	}
	l.Close()
}

// The zero Limiter has no Redis: it answers as a limiter failing closed, its settles
// fail naming New, and Close does nothing; none of it panics.
func TestZeroLimiter(t *testing.T) {
	var l middleware.Limiter
	w := serve(&l, httptest.NewRequest("GET", "/orders/42", nil))
	if w.Code != http.StatusServiceUnavailable || w.Header().Get("Retry-After") != "1" {
		t.Errorf("the zero Limiter answered %d, Retry-After %q; want 503 and 1", w.Code, w.Header().Get("Retry-After"))
	}
	r := httptest.NewRequest("POST", "/v1/chat", nil)
	r.Header.Set(ratelimitheaders.HeaderReservation, "r1")
	if _, err := l.Settle(t.Context(), r, 1); err == nil || !strings.Contains(err.Error(), "New") {
		t.Errorf("Settle on the zero Limiter: %v, want an error naming New", err)
	}
	l.Close()
}

// Handler(nil) is a mistake of the service's set-up (ListenAndServe's nil handler is
// http.DefaultServeMux; Handler's is none): it panics there and then, as http.Handle
// does, with a message that says what to pass, rather than returning a handler whose
// every admitted request spends its tokens and then panics on a nil pointer.
func TestHandlerOfNil(t *testing.T) {
	for _, tc := range []struct {
		name    string
		limiter func(*testing.T) *middleware.Limiter
	}{
		{"made by New", func(t *testing.T) *middleware.Limiter {
			return newLimiter(t, map[string]string{"RATE_LIMIT_CONFIG": tenTokens}, middleware.Options{})
		}},
		{"zero", func(*testing.T) *middleware.Limiter { return new(middleware.Limiter) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l := tc.limiter(t)
			defer func() {
				if msg, _ := recover().(string); !strings.Contains(msg, "http.DefaultServeMux") {
					t.Fatalf("Handler(nil) panicked with %q, want a message naming what to pass", msg)
				}
			}()
			l.Handler(nil)
		})
	}
}

// A request whose client hung up, or whose context's deadline passed (an
// http.TimeoutHandler's around the limiter), is decided all the same, within
// REDIS_TIMEOUT_MS: Redis may have taken its tokens already, so it is counted as what it
// was, never as a fail-closed timeout (which pages the operator about a Redis that is
// fine).
func TestDecidedAfterTheClientHungUp(t *testing.T) {
	for _, tc := range []struct {
		name string
		ctx  func() (context.Context, context.CancelFunc)
	}{
		{"client hung up", func() (context.Context, context.CancelFunc) {
			ctx, hangUp := context.WithCancel(context.Background())
			hangUp()
			return ctx, hangUp
		}},
		{"deadline passed", func() (context.Context, context.CancelFunc) {
			return context.WithDeadline(context.Background(), time.Now().Add(-time.Second))
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l, metrics := metricsLimiter(t)
			ctx, cancel := tc.ctx()
			defer cancel()
			gone := serve(l, httptest.NewRequest("GET", "/orders/42", nil).WithContext(ctx))
			next := serve(l, httptest.NewRequest("GET", "/orders/42", nil))
			l.Close()
			if gone.Code != http.StatusOK || header(gone.Header(), "X-RateLimit-Remaining") != "9" || header(next.Header(), "X-RateLimit-Remaining") != "8" {
				t.Fatalf("the request whose context ended: %d, %s left; the next: %s left; want 200, 9 and 8",
					gone.Code, header(gone.Header(), "X-RateLimit-Remaining"), header(next.Header(), "X-RateLimit-Remaining"))
			}
			if strings.Contains(metrics.String(), "FailClosed") {
				t.Errorf("an ended context counted as failing closed:\n%s", metrics)
			}
		})
	}
}

// The rate-limit headers of an answer are the limiter's alone, as behind the gateway:
// the ones the next handler writes (its own, or an upstream's that it proxies, added or
// set, in any case, any X-RateLimit-*) are replaced or removed, whether it writes a
// status, a body or nothing, and it can still flush a stream.
func TestNextHandlersRateLimitHeadersReplaced(t *testing.T) {
	l := newLimiter(t, map[string]string{"RATE_LIMIT_CONFIG": tenTokens}, middleware.Options{})
	upstream := func(h http.Header) {
		h.Add("X-RateLimit-Remaining", "4999")
		h.Set("ratelimit", `"upstream";r=4999;t=60`)
		h["X-Ratelimit-Remaining-Tokens"] = []string{"150000"}
		h.Set("RateLimit-Policy", `"upstream";q=5000;w=60`)
	}
	for i, tc := range []struct {
		name string
		next http.HandlerFunc
	}{
		{"status", func(w http.ResponseWriter, _ *http.Request) { upstream(w.Header()); w.WriteHeader(http.StatusCreated) }},
		{"body", func(w http.ResponseWriter, _ *http.Request) { upstream(w.Header()); io.WriteString(w, "ok") }},
		{"nothing", func(w http.ResponseWriter, _ *http.Request) { upstream(w.Header()) }},
		{"flushed", func(w http.ResponseWriter, _ *http.Request) { upstream(w.Header()); w.(http.Flusher).Flush() }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := httptest.NewRecorder()
			l.Handler(tc.next).ServeHTTP(w, httptest.NewRequest("GET", "/orders/42", nil))
			left := string(rune('9' - i))
			got := http.Header{}
			for name, v := range w.Result().Header {
				if ratelimitheaders.Owned(name) {
					key := http.CanonicalHeaderKey(name)
					got[key] = append(got[key], v...)
				}
			}
			rl, reset := got["Ratelimit"], got["X-Ratelimit-Reset"]
			delete(got, "Ratelimit")
			delete(got, "X-Ratelimit-Reset")
			want := http.Header{"Ratelimit-Policy": {`"burst";q=10;w=864000`}, "X-Ratelimit-Limit": {"10"}, "X-Ratelimit-Remaining": {left}}
			if len(rl) != 1 || !strings.HasPrefix(rl[0], `"burst";r=`+left+";") || len(reset) != 1 || !maps.EqualFunc(got, want, slices.Equal) {
				t.Fatalf("rate-limit headers %v, RateLimit %q, X-RateLimit-Reset %q: want the limiter's alone: %v, RateLimit \"burst\";r=%s;..., one reset", got, rl, reset, want, left)
			}
		})
	}
}

// A handler behind the Limiter can still take the connection over (a WebSocket's
// upgrade asserts http.Hijacker).
func TestNextHandlerHijacks(t *testing.T) {
	l := newLimiter(t, map[string]string{"RATE_LIMIT_CONFIG": tenTokens}, middleware.Options{})
	service := httptest.NewServer(l.Handler(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		conn, buf, err := w.(http.Hijacker).Hijack()
		if err != nil {
			t.Error(err)
			return
		}
		defer conn.Close()
		buf.WriteString("HTTP/1.1 101 Switching Protocols\r\nUpgrade: echo\r\nConnection: Upgrade\r\n\r\n")
		buf.Flush()
	})))
	defer service.Close()
	resp, err := http.Get(service.URL)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusSwitchingProtocols {
		t.Fatalf("%d, want the hijacking handler's 101", resp.StatusCode)
	}
}

// A next handler that proxies a service sending 103 Early Hints before its answer
// still gets the limiter's headers on that answer: httputil.ReverseProxy clears the
// header after passing a 1xx on, so they go on the final header, not only on the hint.
func TestNextHandlerPassesEarlyHints(t *testing.T) {
	l := newLimiter(t, map[string]string{"RATE_LIMIT_CONFIG": tenTokens}, middleware.Options{})
	upstream := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Link", "</app.css>; rel=preload")
		w.WriteHeader(http.StatusEarlyHints)
		w.WriteHeader(http.StatusCreated)
	}))
	defer upstream.Close()
	u, err := url.Parse(upstream.URL)
	if err != nil {
		t.Fatal(err)
	}
	service := httptest.NewServer(l.Handler(httputil.NewSingleHostReverseProxy(u)))
	defer service.Close()
	resp, err := http.Get(service.URL + "/orders/42")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusCreated || resp.Header.Get("X-RateLimit-Remaining") != "9" || resp.Header.Get("RateLimit-Policy") == "" {
		t.Fatalf("%d with %v: want the upstream's 201 with the limiter's headers", resp.StatusCode, resp.Header)
	}
}

// plainWriter is a ResponseWriter that can neither flush nor hand over its connection:
// a wrapper of another middleware's, or an HTTP/2 stream (which cannot be hijacked).
type plainWriter struct{ http.ResponseWriter }

// brokenWriter is a ResponseWriter whose flushes fail, as net/http's do once the client
// is gone.
type brokenWriter struct{ http.ResponseWriter }

// errBroken is brokenWriter's flush error.
var errBroken = errors.New("write: broken pipe")

func (brokenWriter) FlushError() error { return errBroken }

// A next handler sees what the writer underneath the Limiter can do, as without it:
// http.ResponseController's Flush and Hijack report its errors (a client gone, a writer
// that cannot), and an answer the handler writes after a Hijack or a Flush that did
// nothing still carries the limiter's rate-limit headers in place of its own.
func TestNextHandlerSeesTheWritersErrors(t *testing.T) {
	l := newLimiter(t, map[string]string{"RATE_LIMIT_CONFIG": tenTokens}, middleware.Options{})
	for i, tc := range []struct {
		name string
		wrap func(http.ResponseWriter) http.ResponseWriter
		call func(*http.ResponseController) error
		want error
	}{
		{"flush, client gone", func(w http.ResponseWriter) http.ResponseWriter { return brokenWriter{w} },
			(*http.ResponseController).Flush, errBroken},
		{"flush, cannot", func(w http.ResponseWriter) http.ResponseWriter { return plainWriter{w} },
			(*http.ResponseController).Flush, http.ErrNotSupported},
		{"hijack, cannot", func(w http.ResponseWriter) http.ResponseWriter { return w },
			func(rc *http.ResponseController) error { _, _, err := rc.Hijack(); return err }, http.ErrNotSupported},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got error
			next := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
				got = tc.call(http.NewResponseController(w))
				w.Header().Set("X-RateLimit-Remaining", "4999") // an upstream's, proxied after
				w.WriteHeader(http.StatusBadGateway)
			})
			rec := httptest.NewRecorder()
			l.Handler(next).ServeHTTP(tc.wrap(rec), httptest.NewRequest("GET", "/orders/42", nil))
			if !errors.Is(got, tc.want) {
				t.Errorf("the handler's %s: %v, want %v", tc.name, got, tc.want)
			}
			var remaining []string // in any spelling
			for name, v := range rec.Header() {
				if strings.EqualFold(name, ratelimitheaders.HeaderRemaining) {
					remaining = append(remaining, v...)
				}
			}
			if left := string(rune('9' - i)); tc.want == http.ErrNotSupported && !slices.Equal(remaining, []string{left}) {
				t.Errorf("X-RateLimit-Remaining %q, want the limiter's alone, %s", remaining, left)
			}
		})
	}
}

// readerFromWriter is a ResponseWriter that copies a body with ReadFrom, as net/http's
// does with sendfile, and counts the bodies it copied so.
type readerFromWriter struct {
	*httptest.ResponseRecorder
	readFroms *int
}

func (w readerFromWriter) ReadFrom(src io.Reader) (int64, error) {
	*w.readFroms++
	return io.Copy(w.ResponseRecorder, src)
}

// A next handler that copies a body (http.ServeContent, io.Copy) reaches the ReadFrom
// of the writer underneath, net/http's sendfile, and its answer still carries the
// limiter's rate-limit headers in place of its own; a writer without ReadFrom gets
// the body written.
func TestNextHandlerCopiesWithReadFrom(t *testing.T) {
	l := newLimiter(t, map[string]string{"RATE_LIMIT_CONFIG": tenTokens}, middleware.Options{})
	const body = "the file's bytes"
	file := filepath.Join(t.TempDir(), "f.txt")
	if err := os.WriteFile(file, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	for i, tc := range []struct {
		name      string
		readFrom  bool // the writer underneath has ReadFrom
		next      http.HandlerFunc
		readFroms int
	}{
		{"ServeContent", true, func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("X-RateLimit-Remaining", "4999") // an upstream's
			http.ServeContent(w, r, "f.txt", time.Time{}, strings.NewReader(body))
		}, 1},
		{"io.Copy of a file", true, func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("X-RateLimit-Remaining", "4999")
			copyFile(t, w, file)
		}, 1},
		{"io.Copy of a file, a writer without ReadFrom", false, func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("X-RateLimit-Remaining", "4999")
			copyFile(t, w, file)
		}, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec, readFroms := httptest.NewRecorder(), 0
			var w http.ResponseWriter = plainWriter{rec}
			if tc.readFrom {
				w = readerFromWriter{rec, &readFroms}
			}
			l.Handler(tc.next).ServeHTTP(w, httptest.NewRequest("GET", "/orders/42", nil))
			left := string(rune('9' - i))
			if readFroms != tc.readFroms || rec.Body.String() != body || !slices.Equal(rec.Header()[ratelimitheaders.HeaderRemaining], []string{left}) ||
				rec.Header()["X-Ratelimit-Remaining"] != nil {
				t.Fatalf("%d ReadFroms, body %q, headers %v: want %d, %q, the limiter's %s remaining alone", readFroms, rec.Body, rec.Header(), tc.readFroms, body, left)
			}
		})
	}
}

// copyFile copies the file at path to w with io.Copy, as a handler serving it does.
func copyFile(t *testing.T, w io.Writer, path string) {
	f, err := os.Open(path)
	if err != nil {
		t.Error(err)
		return
	}
	defer f.Close()
	if _, err := io.Copy(w, f); err != nil {
		t.Error(err)
	}
}

// The rate-limit headers of the request the next handler gets are the limiter's alone,
// as behind the gateway (the REST API's HTTP integration, the local gateway): a
// client's own RateLimit, RateLimit-Policy or X-RateLimit-* (in any case, '_' for '-'
// too, as a CGI backend reads them) never reaches the handler, nor an upstream it
// proxies to, which may trust them; the decision's are there in their place.
func TestNextHandlerGetsTheLimitersRequestHeaders(t *testing.T) {
	l := newLimiter(t, map[string]string{"RATE_LIMIT_CONFIG": tenTokens}, middleware.Options{})
	var seen http.Header
	service := httptest.NewServer(l.Handler(http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) { seen = r.Header.Clone() })))
	defer service.Close()
	for _, tc := range []struct{ name, header, value string }{
		{"remaining", "X-RateLimit-Remaining", "999999"},
		{"ratelimit in lower case", "ratelimit", `"burst";r=999999;t=1`},
		{"policy", "RateLimit-Policy", `"burst";q=999999;w=1`},
		{"degraded spelled with underscores", "X_RateLimit_Degraded", "true"},
		{"limit spelled with underscores", "X_RATELIMIT_LIMIT", "999999"},
		{"another X-RateLimit-*", "X-RateLimit-Remaining-Tokens", "999999"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, err := http.NewRequest("GET", service.URL+"/orders/42", nil)
			if err != nil {
				t.Fatal(err)
			}
			r.Header[tc.header] = []string{tc.value}
			resp, err := http.DefaultClient.Do(r)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			got, want := http.Header{}, http.Header{}
			for name, v := range seen {
				if ratelimitheaders.Owned(name) {
					key := http.CanonicalHeaderKey(name)
					got[key] = append(got[key], v...)
				}
			}
			for name, v := range resp.Header {
				if ratelimitheaders.Owned(name) {
					want[name] = v
				}
			}
			if resp.StatusCode != http.StatusOK || len(want) == 0 || !maps.EqualFunc(got, want, slices.Equal) {
				t.Fatalf("%d; the handler got the rate-limit headers %v, want the limiter's alone, as on the answer: %v", resp.StatusCode, got, want)
			}
		})
	}
}
