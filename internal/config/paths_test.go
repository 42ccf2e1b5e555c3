package config_test

import (
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
		{"/uploads/%20", 1}, // a segment of spaces is no segment
		{"/reports", 3},
		{"/REPORTS/2026/../x/./y", 3},
		{"/reports/../export", 5},
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
