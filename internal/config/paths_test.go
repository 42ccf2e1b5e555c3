package config_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/bucketgate/bucketgate/internal/config"
)

// pathVariants returns testdata/path-variants.json: spellings of request paths and
// whether each falls under the route pattern /export. The authorizer's tests send the
// same table through the real handler.
func pathVariants(t *testing.T) []struct {
	Path  string `json:"path"`
	Match bool   `json:"match"`
} {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join("testdata", "path-variants.json"))
	if err != nil {
		t.Fatal(err)
	}
	var table struct {
		Variants []struct {
			Path  string `json:"path"`
			Match bool   `json:"match"`
		} `json:"variants"`
	}
	if err := json.Unmarshal(raw, &table); err != nil {
		t.Fatal(err)
	}
	return table.Variants
}

// Routes match the path as a backend resolves it, in any case (README, "Plans, routes
// and keys").
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
	for _, v := range pathVariants(t) {
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
