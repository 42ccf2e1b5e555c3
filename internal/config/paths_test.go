package config_test

import (
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/bucketgate/bucketgate/internal/config"
	"github.com/bucketgate/bucketgate/internal/testkit/samples"
)

// Routes match the path as a backend resolves it, in any case (docs/configuration.md, "How routes
// match"): the table of samples.PathVariants, and more patterns.
func TestRoutesMatchNormalizedPaths(t *testing.T) {
	c, err := config.Parse([]byte(`
defaultPlan: free
plans: {free: [{name: burst, capacity: 10, refillPerSecond: 1}]}
routes:
  - {path: /export, cost: 5}
  - {path: "/uploads/{id}", cost: 2}
  - {path: "/reports/**", cost: 3}
  - {path: "/files/{proxy+}", cost: 4}
`))
	if err != nil {
		t.Fatal(err)
	}
	p := c.DefaultPlan()
	for _, v := range samples.PathVariants(t) {
		if got := c.Limits(p, "GET", v.Path).Cost == 5; got != v.Match {
			t.Errorf("%q: matches /export %v, want %v", v.Path, got, v.Match)
		}
	}
	for _, tt := range []struct {
		path string
		cost int64
	}{
		{"/uploads/42", 2},
		{"/uploads//42/", 2},
		{"/Uploads/a%2Fb", 2}, // an encoded slash stays inside its segment
		{"/uploads/42/../43", 2},
		{"/uploads/42/x", 1},
		{"/uploads", 1},
		{"/uploads/%20", 2}, // a segment of spaces is one, as Go, Node and Python serve it
		{"/uploads/;x", 2},  // and so is a segment of ;parameters alone
		{"/uploads/%20;x", 2},
		{"/uploads/ ", 1},    // trailing spaces of the whole path, as an HTTP API hands it decoded, go: a URL parser trims them
		{"/uploads/;x/y", 2}, // three segments to Go, Node and Python; /uploads/y to a servlet container, which drops ;x and then the empty segment
		{"/reports/%20/../;x", 3},
		{"/reports", 3},
		{"/REPORTS/2026/../x/./y", 3},
		{"/reports/../export", 5},
		{"/files", 4}, // a greedy parameter matches no segment too, unlike API Gateway's
		{"/files/a/b", 4},
	} {
		if got := c.Limits(p, "GET", tt.path).Cost; got != tt.cost {
			t.Errorf("%q: cost %d, want %d", tt.path, got, tt.cost)
		}
	}
}

// A plain path is matched without allocating.
func TestLimitsDoesNotAllocate(t *testing.T) {
	c, err := config.Parse([]byte("defaultPlan: free\nplans: {free: [{name: b, capacity: 10, refillPerSecond: 1}]}\nroutes: [{path: /export, cost: 5}, {path: /a/b/c/d/e/f, cost: 2}]"))
	if err != nil {
		t.Fatal(err)
	}
	p := c.DefaultPlan()
	if n := testing.AllocsPerRun(100, func() { c.Limits(p, "GET", "/orders/42/items") }); n != 0 {
		t.Errorf("Limits allocates %v times for a plain path", n)
	}
}

// A route matches its method in any case, and a GET route HEAD requests too: backends
// answer HEAD with their GET handler (net/http, Express, Flask, Spring, Rails), so HEAD
// must not reach a GET route's work at the default cost. A HEAD route listed first
// gives HEAD its own.
func TestRouteMethods(t *testing.T) {
	c, err := config.Parse([]byte(`
defaultPlan: free
plans: {free: [{name: burst, capacity: 10, refillPerSecond: 1}]}
routes:
  - {method: HEAD, path: /status, cost: 2}
  - {method: GET, path: /status, cost: 3}
  - {method: GET, path: /export, cost: 5}
  - {method: POST, path: /uploads, cost: 4}
  - {method: "*", path: /any, cost: 6}
`))
	if err != nil {
		t.Fatal(err)
	}
	p := c.DefaultPlan()
	for _, tt := range []struct {
		name, method, path string
		cost               int64
	}{
		{"GET route, GET", "GET", "/export", 5},
		{"GET route, HEAD", "HEAD", "/export", 5},
		{"GET route, head in lower case", "head", "/export", 5},
		{"GET route, POST", "POST", "/export", 1},
		{"GET route, OPTIONS", "OPTIONS", "/export", 1},
		{"HEAD route listed first wins for HEAD", "HEAD", "/status", 2},
		{"GET route after a HEAD route, GET", "GET", "/status", 3},
		{"POST route, HEAD", "HEAD", "/uploads", 1},
		{"POST route, post in lower case", "post", "/uploads", 4},
		{"any method, HEAD", "HEAD", "/any", 6},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := c.Limits(p, tt.method, tt.path).Cost; got != tt.cost {
				t.Errorf("%s %s: cost %d, want %d", tt.method, tt.path, got, tt.cost)
			}
		})
	}
}

// Routes are tried in the order written and the first that matches wins, not the most
// specific as in API Gateway: a route that an earlier one leaves no request to match
// (its method, or any, and a pattern that matches every path it would) would never add
// its cost or rules, so it is an error naming both. A route that still matches some
// request loads.
func TestRouteThatNeverMatches(t *testing.T) {
	const plans = "defaultPlan: free\nplans: {free: [{name: b, capacity: 10000, refillPerSecond: 1}]}\n"
	for _, tt := range []struct {
		name, routes, want string
	}{
		{"greedy first", "routes:\n  - {path: '/{proxy+}'}\n  - {method: POST, path: /v1/chat, reserve: 4096}\n",
			`routes[1] (line 5, column 5): never matches: routes[0] (any method, path "/{proxy+}") comes first and matches every request it would`},
		{"the same pattern spelt another way", "routes: [{method: POST, path: '/v1/{id}'}, {method: post, path: /V1/*, cost: 5}]",
			`routes[1] (line 3, column 44): never matches: routes[0] (POST, path "/v1/{id}")`},
		{"a parameter before a literal", "routes: [{path: '/users/{id}'}, {path: /users/me, cost: 2}]", "routes[1] (line 3, column 33): never matches: routes[0]"},
		{"any method before one", "routes: [{path: /a}, {method: GET, path: /a, cost: 2}]", "routes[1] (line 3, column 22): never matches: routes[0]"},
		{"GET before HEAD", "routes: [{method: GET, path: /a}, {method: HEAD, path: /a, cost: 2}]", `routes[1] (line 3, column 35): never matches: routes[0] (GET, path "/a")`},
		{"rest before a longer rest", "routes: [{path: /a/**}, {path: '/a/b/{rest+}', cost: 2}]", "routes[1] (line 3, column 25): never matches: routes[0]"},
		{"the third behind the first", "routes: [{path: /a/**}, {path: /b}, {path: /a/b, cost: 2}]", "routes[2] (line 3, column 37): never matches: routes[0]"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := config.Parse([]byte(plans + tt.routes))
			if !errors.Is(err, config.ErrConfig) || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Parse() = %v, want ErrConfig mentioning %q", err, tt.want)
			}
		})
	}
	for _, tt := range []struct{ name, routes string }{
		{"specific first", "routes: [{method: POST, path: /v1/chat, reserve: 4096}, {path: '/{proxy+}'}]"},
		{"HEAD before GET", "routes: [{method: HEAD, path: /a}, {method: GET, path: /a, cost: 2}]"},
		{"one method before any", "routes: [{method: GET, path: /a}, {path: /a, cost: 2}]"},
		{"a literal before a parameter", "routes: [{path: /users/me, cost: 2}, {path: '/users/{id}'}]"},
		{"one segment before the rest", "routes: [{path: '/a/{id}'}, {path: /a/**, cost: 2}]"},
		{"a rest before its shorter prefix", "routes: [{path: /a/b/**}, {path: /a, cost: 2}]"},
		{"a longer pattern before a shorter one", "routes: [{path: /a/b}, {path: /a, cost: 2}]"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := config.Parse([]byte(plans + tt.routes)); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// A path segment that is "." or ".." only once its ;parameters are dropped or its
// spaces trimmed ("..;x", ".;x", "%2e%2e;x", "..%20") is a segment to Go, Node and
// Python (net/http's ServeMux, the WHATWG URL parser), not a dot segment, and so is
// "%2e%2e" to Go: a path pays at least what the route a real Go server (httptest,
// net/http's ServeMux) serves it by costs, so that "/a/..;x/admin" pays what
// "/a/{id}/admin" costs, never the cheaper "/admin" or the default route's. (More when
// another backend's reading matches a dearer route: TestDisguisedDotsTakeTheDearerRoute.)
func TestRoutesMatchWhatGoServes(t *testing.T) {
	c := adminRoutes(t)
	costs := map[string]int64{"/a/{id}/admin": 100, "/admin": 2}
	mux := http.NewServeMux()
	for pattern := range costs {
		mux.HandleFunc(pattern, func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, r.Pattern) })
	}
	backend := httptest.NewServer(mux)
	defer backend.Close()
	for _, tc := range []struct{ name, path string }{
		{"a segment", "/a/x/admin"},
		{"dots", "/a/../admin"},
		{"dots with a parameter", "/a/..;x/admin"},
		{"dots with an empty parameter", "/a/..;/admin"},
		{"a dot with a parameter", "/a/.;x/admin"},
		{"encoded dots with a parameter", "/a/%2e%2e;x/admin"},
		{"dots and a space", "/a/..%20/admin"},
		{"a space and a dot", "/a/%20./admin"},
		{"encoded dots", "/a/%2e%2e/admin"},
		{"encoded dots in capitals", "/a/%2E%2E/admin"},
		{"an encoded dot", "/a/%2e/admin"},
		{"a dot and an encoded dot", "/a/.%2e/admin"},
	} {
		t.Run(tc.name, func(t *testing.T) { chargesWhatIsServed(t, c, backend.URL, tc.path, costs, "Go") })
	}
}

// A backend that routes on the decoded path, as gorilla/mux does by default and WSGI
// servers (Flask, Django) do, splits a path at an encoded slash: "/a%2Fx%2Fadmin" is
// "/a/{id}/admin" to it, a single segment to Go's ServeMux and Node. And Flask (Werkzeug)
// removes no dot segment: it serves "/a/../admin" by "/a/{id}/admin" with the id "..",
// where Node reads "/admin". A request takes the dearer route of every reading; here a
// real net/http server whose handler matches the decoded path's segments as they are,
// as Flask does.
func TestRoutesMatchWhatADecodingBackendServes(t *testing.T) {
	c := adminRoutes(t)
	backend := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch segs := strings.Split(strings.Trim(r.URL.Path, "/"), "/"); {
		case len(segs) == 3 && segs[0] == "a" && segs[2] == "admin":
			io.WriteString(w, "/a/{id}/admin")
		case len(segs) == 1 && segs[0] == "admin":
			io.WriteString(w, "/admin")
		default:
			http.NotFound(w, r)
		}
	}))
	defer backend.Close()
	costs := map[string]int64{"/a/{id}/admin": 100, "/admin": 2}
	for _, tc := range []struct{ name, path string }{
		{"a segment", "/a/x/admin"},
		{"encoded slashes", "/a%2Fx%2Fadmin"},
		{"encoded slashes in lower case", "/a%2fx%2fadmin"},
		{"an encoded slash after a segment", "/a/x%2Fadmin"},
		{"an encoded slash at the end", "/admin%2F"},
		{"encoded dots between encoded slashes", "/a%2F%2e%2e%2Fadmin"},
		{"dots", "/a/../admin"},
		{"a dot", "/a/./admin"},
		{"dots between encoded slashes", "/a%2F..%2Fadmin"},
	} {
		t.Run(tc.name, func(t *testing.T) { chargesWhatIsServed(t, c, backend.URL, tc.path, costs, "the backend") })
	}
}

// adminRoutes is a document of two routes a backend may serve one path by: /a/*/admin
// (cost 100) and /admin (cost 2).
func adminRoutes(t *testing.T) *config.Config {
	t.Helper()
	c, err := config.Parse([]byte(`
defaultPlan: free
plans: {free: [{name: burst, capacity: 1000, refillPerSecond: 1}]}
routes:
  - {path: /a/*/admin, cost: 100}
  - {path: /admin, cost: 2}
`))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// chargesWhatIsServed asks backend (which answers with the pattern it serves a request
// by) for path, and checks that c charges it at least that pattern's cost in costs.
func chargesWhatIsServed(t *testing.T, c *config.Config, backend, path string, costs map[string]int64, who string) {
	t.Helper()
	resp, err := http.Get(backend + path)
	if err != nil {
		t.Fatal(err)
	}
	served, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	want, ok := costs[string(served)]
	if err != nil || resp.StatusCode != http.StatusOK || !ok {
		t.Fatalf("GET %s: %d %q, %v: want one of the backend's patterns", path, resp.StatusCode, served, err)
	}
	if got := c.Limits(c.DefaultPlan(), "GET", path).Cost; got < want {
		t.Errorf("GET %s: cost %d, want %d or more: %s serves it by %s", path, got, want, who, served)
	}
}

// BenchmarkLimits matches a plain path, the common case, and one that backends read
// two ways.
func BenchmarkLimits(b *testing.B) {
	c, err := config.Parse([]byte("defaultPlan: free\nplans: {free: [{name: b, capacity: 1000, refillPerSecond: 1}]}\nroutes: [{path: /export, cost: 5}, {path: /a/*/admin, cost: 100}, {path: /admin, cost: 2}]"))
	if err != nil {
		b.Fatal(err)
	}
	p := c.DefaultPlan()
	for _, path := range []string{"/orders/42/items", "/a/%2e%2e/admin"} {
		b.Run(path, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				c.Limits(p, "GET", path)
			}
		})
	}
}

// A path whose dot segment is disguised ("%2e%2e", "..;x") is read two ways by
// backends (Go and Node, servlet containers and Go), each reading matching its own
// route: it takes the Limits of the route that charges at least what every reading's
// does (as many tokens or more, every rule of every other), so that no backend serves a
// route at a cheaper one's price. When no route does, the most tokens any takes from
// the rules of all (Route the route of those tokens, the first reading's, Node's, on a
// tie); when that is not a check the engine decides (a route holds something, more than
// 8 rules, a rule that never allows the cost), the route of the most tokens alone, whose
// others' rules a backend owner adds (docs/configuration.md, "How routes match").
func TestDisguisedDotsTakeTheDearerRoute(t *testing.T) {
	c, err := config.Parse([]byte(`
defaultPlan: free
plans: {free: [{name: burst, capacity: 1000, refillPerSecond: 1}]}
routes:
  - {path: /servlet/*/admin, cost: 2}
  - {path: /admin, cost: 100}
  - {path: /go/*/x, cost: 5, rules: [{name: gox, capacity: 10, refillPerSecond: 1}]}
  - {path: /x, cost: 5}
  - {path: /shadow/*/s, cost: 7, rules: [{name: s, capacity: 10, refillPerSecond: 1}]}
  - {path: /s, cost: 7, rules: [{name: s, capacity: 10, refillPerSecond: 1, shadow: true}]}
  - {path: /apart/*/y, cost: 3, rules: [{name: ay, capacity: 10, refillPerSecond: 1}]}
  - {path: /y, cost: 4, rules: [{name: yy, capacity: 10, refillPerSecond: 1}]}
  - {path: /tie/*/z, cost: 6, rules: [{name: tz, capacity: 10, refillPerSecond: 1}]}
  - {path: /z, cost: 6, rules: [{name: zz, capacity: 10, refillPerSecond: 1}]}
  - {path: /reserve/*/r, reserve: 50}
  - {path: /r, cost: 10}
  - {path: /lease/*/l, cost: 3, rules: [{name: ll, concurrency: 2}]}
  - {path: /l, cost: 4, rules: [{name: l4, capacity: 10, refillPerSecond: 1}]}
  - {path: /small/*/b, cost: 3, rules: [{name: sb, capacity: 3, refillPerSecond: 1}]}
  - {path: /b, cost: 4, rules: [{name: b4, capacity: 10, refillPerSecond: 1}]}
  - path: /many/*/m
    cost: 3
    rules: [{name: m1, capacity: 10, refillPerSecond: 1}, {name: m2, capacity: 10, refillPerSecond: 1}, {name: m3, capacity: 10, refillPerSecond: 1}, {name: m4, capacity: 10, refillPerSecond: 1}]
  - path: /m
    cost: 4
    rules: [{name: n1, capacity: 10, refillPerSecond: 1}, {name: n2, capacity: 10, refillPerSecond: 1}, {name: n3, capacity: 10, refillPerSecond: 1}, {name: n4, capacity: 10, refillPerSecond: 1}]
`))
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name, path string
		tokens     int64  // Cost, or Reserve
		rules      string // the enforced rules beyond the plan's
		union      bool   // the rules are more than those of its Route
	}{
		{"dots with a parameter: a servlet's /admin", "/servlet/..;x/admin", 100, "", false},
		{"encoded dots with a parameter: a servlet's /admin", "/servlet/%2e%2e;/admin", 100, "", false},
		{"a segment of ;parameters alone: a servlet's /admin", "/;x/admin", 100, "", false},
		{"a last segment of ;parameters alone: a servlet's /admin/", "/admin/;jsessionid=1", 100, "", false},
		{"a segment of ;parameters alone: Go's route, dearer than the servlet's none", "/servlet/;x/admin", 2, "", false},
		{"encoded dots: Go's route and its rule", "/go/%2e%2e/x", 5, "gox", false},
		{"an encoded dot and a dot: Go's route and its rule", "/go/.%2E/x", 5, "gox", false},
		{"the enforced rule over its shadow", "/shadow/%2e%2e/s", 7, "s", false},
		{"a reserve's estimate over a cost", "/reserve/%2e%2e/r", 50, "", false},
		{"neither has the other's rule: both rules, more tokens", "/apart/%2e%2e/y", 4, "yy,ay", true},
		{"neither has the other's rule, a tie: both rules, Node's reading's route", "/tie/%2e%2e/z", 6, "zz,tz", true},
		{"neither, one takes a lease: more tokens alone", "/lease/%2e%2e/l", 4, "l4", false},
		{"neither, a rule never allows the cost: more tokens alone", "/small/%2e%2e/b", 4, "b4", false},
		{"neither, more than 8 rules: more tokens alone", "/many/%2e%2e/m", 4, "n1,n2,n3,n4", false},
		{"plain dots: Flask's route and its rule", "/go/../x", 5, "gox", false},
		{"a plain segment: one reading", "/go/1/x", 5, "gox", false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			l := c.Limits(c.DefaultPlan(), "GET", tt.path)
			var rules []string
			for _, r := range l.Rules[1:] {
				if !r.Shadow {
					rules = append(rules, r.Name)
				}
			}
			if got := max(l.Cost, l.Reserve); got != tt.tokens || strings.Join(rules, ",") != tt.rules {
				t.Errorf("GET %s: %d tokens, enforced route rules %q; want %d, %q", tt.path, got, rules, tt.tokens, tt.rules)
			}
			back, ok := c.LimitsOf(c.DefaultPlan(), l.Route)
			if !ok || back.Cost != l.Cost || back.Reserve != l.Reserve || (len(back.Rules) != len(l.Rules)) != tt.union {
				t.Errorf("GET %s: LimitsOf(%q) = %+v, %v: want the Limits of its route", tt.path, l.Route, back, ok)
			}
		})
	}
}

// A path whose last segment has an extension takes the route of the path without it
// when that is dearer: Rails serves POST /v1/chat.json by the route /v1/chat (every route
// ends in an optional (.:format)), and Spring's suffix matching /v1/chat.anything, so
// with the extension read as part of the segment a client reached the reserve of 400 at
// the catch-all's cost of 1.
func TestFormatSuffixTakesTheRoute(t *testing.T) {
	c, err := config.Parse([]byte(`
defaultPlan: free
plans: {free: [{name: tokens, capacity: 1000, refillPerSecond: 1}]}
routes:
  - {method: POST, path: /v1/chat, reserve: 400}
  - {path: "/v1/files/{name}", cost: 2}
  - {path: /v1/report.v2, cost: 3}
  - {path: "/{proxy+}", cost: 1}
`))
	if err != nil {
		t.Fatal(err)
	}
	p := c.DefaultPlan()
	for _, tt := range []struct {
		name, path    string
		reserve, cost int64
	}{
		{"the route", "/v1/chat", 400, 1},
		{"a format", "/v1/chat.json", 400, 1},
		{"a format, encoded dot", "/v1/chat%2ejson", 400, 1},
		{"two extensions", "/v1/chat.a.b", 400, 1},
		{"a format and a trailing slash", "/v1/chat.json/", 400, 1},
		{"an extension inside the path", "/v1.json/chat", 0, 1},
		{"a format after a literal with a dot (Rails's: after the last)", "/v1/report.v2.json", 0, 3},
		{"a file name under a parameter: the same route either way", "/v1/files/report.pdf", 0, 2},
		{"a dot first: no extension", "/v1/.chat", 0, 1},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if l := c.Limits(p, "POST", tt.path); l.Reserve != tt.reserve || l.Cost != tt.cost {
				t.Fatalf("POST %s: reserve %d, cost %d: want reserve %d, cost %d", tt.path, l.Reserve, l.Cost, tt.reserve, tt.cost)
			}
		})
	}
}
