package config_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/bucketgate/bucketgate"
	"github.com/bucketgate/bucketgate/internal/config"
)

// A concurrency rule is written in a plan, a route and an override as {name,
// concurrency}; each mistake in one is an error naming the field, and so is a name that
// is a concurrency rule in one place and a bucket or a quota in another.
func TestConcurrencyRules(t *testing.T) {
	doc := "defaultPlan: free\nplans:\n  free: [{name: burst, capacity: 10, refillPerSecond: 1}, {name: streams, concurrency: 2}]\n" +
		"routes: [{path: /chat, rules: [{name: chats, concurrency: 1}]}]\n"
	c, err := config.Parse([]byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	free, _ := c.Plan("free")
	if want := (bucketgate.Rule{Name: "streams", Concurrency: 2}); len(free.Rules) != 2 || free.Rules[1] != want {
		t.Fatalf("plan free's rules %+v, want %+v second", free.Rules, want)
	}
	over, err := c.Override(free, []bucketgate.Rule{{Name: "streams", Concurrency: 5}})
	if err != nil || over.Rules[1].Concurrency != 5 {
		t.Fatalf("override of streams: %+v, %v", over, err)
	}
	if _, err := c.Override(free, []bucketgate.Rule{{Name: "streams", Capacity: 5, RefillPerSecond: 1}}); err == nil || !strings.Contains(err.Error(), "rules[0]: rule streams is a bucket, and a concurrency rule of plan free") {
		t.Errorf("a bucket overriding a concurrency rule: %v", err)
	}
	plan := func(rule string) string { return "defaultPlan: free\nplans: {free: [" + rule + "]}\n" }
	for _, tc := range []struct{ name, doc, want string }{
		{"concurrency below 1", plan("{name: c, concurrency: -1}"), "plans.free[0] (line 2, column 16): concurrency -1: want 1 to 10000 requests in flight"},
		// A concurrency of 0 written alone is not one left out: it asked for a bucket's
		// refillPerSecond. (Beside a bucket's numbers: TestZerosOfAnEarlierRelease.)
		{"concurrency 0", plan("{name: c, concurrency: 0}"), "plans.free[0] (line 2, column 16): concurrency 0: want 1 to 10000 requests in flight"},
		{"concurrency above the most", plan("{name: c, concurrency: 10001}"), "concurrency 10001: want 1 to 10000"},
		{"concurrency a fraction", plan("{name: c, concurrency: 1.5}"), `plans.free[0].concurrency (line 2, column 39): "1.5": want a whole decimal number`},
		{"concurrency with a capacity", plan("{name: c, concurrency: 2, capacity: 5}"), "a concurrency rule has a concurrency alone, not a capacity"},
		{"concurrency with a period", plan("{name: c, concurrency: 2, limit: 5, period: day}"), "a concurrency rule has a concurrency alone"},
		{"shadow concurrency", plan("{name: c, concurrency: 2, shadow: true}"), "rule c: a concurrency rule cannot be shadow"},
		{"a concurrency rule of a shadow route", "defaultPlan: free\nplans: {free: [{name: b, capacity: 5, refillPerSecond: 1}]}\nroutes: [{path: /x, shadow: true, rules: [{name: u, capacity: 5, refillPerSecond: 1}, {name: c, concurrency: 2}]}]\n",
			"routes[0].rules[1] (line 3, column 87): rule c: a concurrency rule is never shadow, and the shadow: true of routes[0] makes every rule of it shadow"},
		{"a concurrency rule of a shadow plan", "defaultPlan: free\nplans: {free: {shadow: true, rules: [{name: b, capacity: 5, refillPerSecond: 1}, {name: c, concurrency: 2}]}}\n",
			"plans.free[1] (line 2, column 82): rule c: a concurrency rule is never shadow, and the shadow: true of plans.free makes every rule of it shadow"},
		{"a concurrency rule and a bucket of one name in two plans", "defaultPlan: free\nplans:\n  free: [{name: s, capacity: 10, refill: 10, per: day}]\n  pro: [{name: s, concurrency: 3}]\n",
			"plans.pro[0] (line 4, column 9): rule s is a concurrency rule, and a bucket of plans.free[0]"},
		{"a route's concurrency rule of a plan bucket's name", "defaultPlan: free\nplans: {free: [{name: b, capacity: 5, refillPerSecond: 1}]}\nroutes: [{path: /x, rules: [{name: b, concurrency: 2}]}]\n",
			"routes[0].rules[0] (line 3, column 29): rule b (concurrency 2) has other numbers than the rule b of plans.free (capacity 5, refillPerSecond 1)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := config.Parse([]byte(tc.doc))
			if !errors.Is(err, config.ErrConfig) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Parse() = %v, want ErrConfig mentioning %q", err, tc.want)
			}
		})
	}
}
