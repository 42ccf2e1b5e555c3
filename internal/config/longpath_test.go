package config_test

import (
	"runtime"
	"strings"
	"testing"

	"github.com/bucketgate/bucketgate/internal/config"
)

// A path as long as a Go server lets one be (its default header limit is 1 MB) costs
// Limits a walk through it under each reading, not a list of its segments: what it
// allocates stays within some 20 times the path's length (a reading may decode a copy
// of it), and the answer is the one of the path's resolved segments, those after the
// first few included (a ".." far down the path takes the segment before it away).
func TestLongPathCostsAWalk(t *testing.T) {
	c, err := config.Parse([]byte("defaultPlan: free\nplans: {free: [{name: b, capacity: 1000, refillPerSecond: 1}]}\n" +
		"routes: [{path: /a/*/admin, cost: 100}, {path: /admin, cost: 2}, {path: /files/**, cost: 7}]"))
	if err != nil {
		t.Fatal(err)
	}
	const n = 1 << 18 // segments: a path of 1 MB for "a%2F"
	for _, tc := range []struct {
		name, path string
		cost       int64
	}{
		{"slashes", "/" + strings.Repeat("a/", 2*n), 1},
		{"encoded slashes", "/" + strings.Repeat("a%2F", n), 1},
		{"encoded slashes under a rest pattern", "/files/" + strings.Repeat("a%2F", n), 7},
		{"dots back to a route", "/a/x/" + strings.Repeat("b/", n) + strings.Repeat("../", n) + "admin", 100},
		{"encoded dots back to a route", "/a%2Fx%2F" + strings.Repeat("b%2F", n) + strings.Repeat("%2e%2e%2F", n) + "admin", 100},
		{"dots back past the start", "/x/" + strings.Repeat("b/", n) + strings.Repeat("../", n+2) + "admin", 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			l := c.Limits(c.DefaultPlan(), "GET", tc.path)
			runtime.ReadMemStats(&after)
			if l.Cost != tc.cost {
				t.Errorf("cost %d, want %d", l.Cost, tc.cost)
			}
			if most := 24 * uint64(len(tc.path)); after.TotalAlloc-before.TotalAlloc > most {
				t.Errorf("a path of %d bytes allocated %d, want %d at most", len(tc.path), after.TotalAlloc-before.TotalAlloc, most)
			}
		})
	}
}
