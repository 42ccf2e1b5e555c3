package config_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/bucketgate/bucketgate"
	"github.com/bucketgate/bucketgate/internal/config"
)

// A 0 written for a rule's concurrency, limit or refillPerSecond beside the numbers of
// another kind of rule was read as left out by an earlier bucketgate, whose config put
// stored such a document: it loads as that rule still, each 0 named by Legacy (and
// Caveats, which the functions log at warn); refusing it failed every cold start of
// the upgraded functions. A 0 that leaves no valid rule without it is the error it was.
func TestZerosOfAnEarlierRelease(t *testing.T) {
	plan := func(rule string) string { return "defaultPlan: free\nplans: {free: [" + rule + "]}\n" }
	bucket := bucketgate.Rule{Name: "b", Capacity: 5, RefillPerSecond: 1}
	for _, tc := range []struct {
		name, doc string
		want      bucketgate.Rule // plan free's rule
		legacy    []string        // what Legacy names
	}{
		{"concurrency 0 beside a bucket", plan("{name: b, capacity: 5, refillPerSecond: 1, concurrency: 0}"), bucket,
			[]string{"plans.free[0].concurrency (line 2, column 72): 0 beside the rule's other numbers"}},
		{"limit 0 beside a bucket", plan("{name: b, capacity: 5, refillPerSecond: 1, limit: 0}"), bucket,
			[]string{"plans.free[0].limit (line 2, column 66): 0 beside"}},
		{"refillPerSecond 0 beside a refill", plan("{name: b, capacity: 5, refill: 60, per: minute, refillPerSecond: 0}"), bucket,
			[]string{"plans.free[0].refillPerSecond (line 2, column 81): 0 beside"}},
		{"all three beside a bucket", plan("{name: b, capacity: 5, refill: 60, per: minute, refillPerSecond: 0, limit: 0, concurrency: 0}"), bucket,
			[]string{"plans.free[0].concurrency", "plans.free[0].limit", "plans.free[0].refillPerSecond"}},
		{"concurrency 0 beside a quota", plan("{name: q, limit: 5, period: day, concurrency: 0}"), bucketgate.Rule{Name: "q", Limit: 5, Period: bucketgate.PeriodDay},
			[]string{"plans.free[0].concurrency (line 2, column 62): 0 beside"}},
		{"limit 0 beside a concurrency", plan("{name: c, concurrency: 3, limit: 0}"), bucketgate.Rule{Name: "c", Concurrency: 3},
			[]string{"plans.free[0].limit (line 2, column 49): 0 beside"}},
		{"refillPerSecond 0 beside a refill, in a plan written as a mapping", "defaultPlan: free\nplans:\n  free: {rules: [{name: b, capacity: 5, refill: 60, per: minute, refillPerSecond: 0}]}\n", bucket,
			[]string{"plans.free[0].refillPerSecond (line 3, column 83): 0 beside"}},
		{"refillPerSecond that rounds to 0 beside a refill", plan("{name: b, capacity: 5, refill: 60, per: minute, refillPerSecond: 1e-400}"), bucket,
			[]string{`plans.free[0].refillPerSecond (line 2, column 81): "1e-400", which rounds to 0, beside the rule's other numbers`}},
		{"refill that rounds to 0 beside a rate", plan("{name: b, capacity: 5, refillPerSecond: 1, refill: -0.5e-330}"), bucket,
			[]string{`plans.free[0].refill (line 2, column 67): "-0.5e-330", which rounds to 0, beside`}},
		{"both beside a bucket", plan("{name: b, capacity: 5, refill: 60, per: minute, refillPerSecond: 1e-400, concurrency: 0}"), bucket,
			[]string{"plans.free[0].refillPerSecond (line 2, column 81): \"1e-400\", which rounds to 0", "plans.free[0].concurrency (line 2, column 102): 0 beside"}},
		{"none", plan("{name: b, capacity: 5, refillPerSecond: 1}"), bucket, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := config.Parse([]byte(tc.doc))
			if err != nil {
				t.Fatalf("Parse: %v; want it loaded as before", err)
			}
			free, _ := c.Plan("free")
			if len(free.Rules) != 1 || free.Rules[0] != tc.want {
				t.Errorf("rules %+v, want %+v", free.Rules, tc.want)
			}
			legacy := c.Legacy()
			if len(legacy) != len(tc.legacy) || !slices.Equal(legacy, c.Caveats()) {
				t.Fatalf("Legacy() = %q (Caveats %q), want %q", legacy, c.Caveats(), tc.legacy)
			}
			for i, want := range tc.legacy {
				if !strings.HasPrefix(legacy[i], want) {
					t.Errorf("Legacy()[%d] = %q, want %q first", i, legacy[i], want)
				}
			}
		})
	}
	for _, tc := range []struct{ name, doc, want string }{
		{"concurrency 0 alone", plan("{name: c, concurrency: 0}"), "concurrency 0: want 1 to 10000"},
		{"limit 0 of a quota", plan("{name: q, limit: 0, period: day}"), "limit 0: want 1 to 1000000000"},
		{"concurrency 0 beside a bucket without a rate", plan("{name: b, capacity: 5, concurrency: 0}"), "a concurrency rule has a concurrency alone"},
		// 0.2 read these as 0, and refused the rule so (the refill's rate beside refillPerSecond).
		{"a refill that rounds to 0 beside both rates", plan("{name: b, capacity: 5, refillPerSecond: 1, refill: 1e-400, per: minute}"), `plans.free[0].refill (line 2, column 67): "1e-400": too close to 0, which it would round to`},
		{"a rate that rounds to 0 beside a refill that does", plan("{name: b, capacity: 5, refillPerSecond: 1e-400, refill: 1e-400, per: minute}"), `plans.free[0].refillPerSecond (line 2, column 56): "1e-400": too close to 0`},
		{"a rate that rounds to 0 in a route beside a bad capacity", "defaultPlan: free\nplans: {free: [{name: b, capacity: 5, refillPerSecond: 1}]}\nroutes: [{path: /x, rules: [{name: r, capacity: 0, refillPerSecond: 1e-400, refill: 1, per: day}]}]\n", `routes[0].rules[0].refillPerSecond (line 3, column 69): "1e-400": too close to 0`},
		{"a 0 in a route beside a bad capacity", "defaultPlan: free\nplans: {free: [{name: b, capacity: 5, refillPerSecond: 1}]}\nroutes: [{path: /x, rules: [{name: r, capacity: 0, refillPerSecond: 1, limit: 0}]}]\n", "routes[0].rules[0]"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := config.Parse([]byte(tc.doc)); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Parse: %v, want an error mentioning %q", err, tc.want)
			}
		})
	}
}
