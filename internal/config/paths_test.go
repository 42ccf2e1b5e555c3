package config_test

import (
	"testing"

	"github.com/bucketgate/bucketgate/internal/config"
	"github.com/bucketgate/bucketgate/internal/testkit/samples"
)

// Routes match the path as a backend resolves it, in any case (README, "How routes
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
