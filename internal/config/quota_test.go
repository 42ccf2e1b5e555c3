package config_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/bucketgate/bucketgate"
	"github.com/bucketgate/bucketgate/internal/config"
)

// quotas is a document with quotas of every period in plans and a route.
const quotas = `
defaultPlan: free
plans:
  free:
    - {name: burst, capacity: 10, refillPerSecond: 1}
    - {name: monthly, limit: 1000, period: month}
  pro:
    - {name: burst, capacity: 100, refillPerSecond: 50}
    - {name: monthly, limit: 100000, period: month, anchor: 15}
    - {name: daily, limit: 5000, period: day, shadow: true}
routes:
  - {method: POST, path: /reports, cost: 10, rules: [{name: reports, limit: 50, period: week}]}
`

// Quotas load from plans and routes, with their period and anchor, and travel with the
// plan's buckets to Limits.
func TestQuotasInTheDocument(t *testing.T) {
	c, err := config.Parse([]byte(quotas))
	if err != nil {
		t.Fatal(err)
	}
	pro, _ := c.Plan("pro")
	l := c.Limits(pro, "POST", "/reports")
	want := []bucketgate.Rule{
		{Name: "burst", Capacity: 100, RefillPerSecond: 50},
		{Name: "monthly", Limit: 100000, Period: bucketgate.PeriodMonth, Anchor: 15},
		{Name: "daily", Limit: 5000, Period: bucketgate.PeriodDay, Shadow: true},
		{Name: "reports", Limit: 50, Period: bucketgate.PeriodWeek},
	}
	if len(l.Rules) != len(want) || l.Cost != 10 {
		t.Fatalf("Limits = %+v, want %+v at cost 10", l, want)
	}
	for i := range want {
		if l.Rules[i] != want[i] {
			t.Errorf("rule %d: %+v, want %+v", i, l.Rules[i], want[i])
		}
	}
	// An override of a quota's name may move its billing day, or its limit.
	own, err := c.Override(pro, []bucketgate.Rule{{Name: "monthly", Limit: 200000, Period: bucketgate.PeriodMonth, Anchor: 3}})
	if err != nil {
		t.Fatal(err)
	}
	if got := c.Limits(own, "GET", "/").Rules[1]; got != (bucketgate.Rule{Name: "monthly", Limit: 200000, Period: bucketgate.PeriodMonth, Anchor: 3}) {
		t.Errorf("overridden quota: %+v", got)
	}
}

// Every mistake in a quota is an error naming the field, and so is a rule name that is
// a bucket in one place and a quota in another: one name is one state of an identity.
func TestQuotaErrorsNameTheField(t *testing.T) {
	plan := func(rule string) string { return "defaultPlan: free\nplans: {free: [" + rule + "]}\n" }
	tests := []struct{ name, doc, want string }{
		{"period outside the set", plan("{name: q, limit: 5, period: monthly}"), `plans.free[0] (line 2, column 16): period "monthly": want day, week or month`},
		{"period in another case", plan("{name: q, limit: 5, period: Day}"), `period "Day": want day, week or month`},
		{"no limit", plan("{name: q, period: day}"), "plans.free[0] (line 2, column 16): limit is required for a quota: 1 to 1000000000 tokens a day"},
		// A limit of 0 written is not one left out ("limit is required"), and never a bucket's.
		{"limit 0", plan("{name: q, limit: 0, period: day}"), "plans.free[0] (line 2, column 16): rule q: limit 0: want 1 to 1000000000"},
		{"limit above 1e9", plan("{name: q, limit: 1000000001, period: week}"), "plans.free[0] (line 2, column 16): rule q: limit 1000000001: want 1 to 1000000000"},
		{"fractional limit", plan("{name: q, limit: 1.5, period: week}"), `plans.free[0].limit (line 2, column 33): "1.5": want a whole decimal number`},
		{"anchor 0", plan("{name: q, limit: 5, period: month, anchor: 0}"), "anchor 0: want a day of the month from 1 to 28"},
		{"anchor 29", plan("{name: q, limit: 5, period: month, anchor: 29}"), "plans.free[0] (line 2, column 16): anchor 29: want a day of the month from 1 to 28"},
		{"anchor of a week", plan("{name: q, limit: 5, period: week, anchor: 2}"), "anchor 2 with period week: only a monthly quota has an anchor"},
		{"limit without a period", plan("{name: q, limit: 5}"), "a limit or an anchor without a period: a quota needs period: day, week or month"},
		{"a quota with a capacity", plan("{name: q, limit: 5, period: day, capacity: 5}"), "a quota (period day) has a limit, not a capacity, refillPerSecond, refill or per"},
		{"a quota with a refill", plan("{name: q, limit: 5, period: day, refill: 5, per: day}"), "a quota (period day) has a limit"},
		{"a quota and a bucket of one name in two plans", "defaultPlan: free\nplans:\n  free: [{name: daily, capacity: 10, refill: 10, per: day}]\n  pro: [{name: daily, limit: 100, period: day}]\n",
			"plans.pro[0] (line 4, column 9): rule daily is a quota, and a bucket of plans.free[0]: a rule name is one bucket, quota or concurrency rule of an identity"},
		{"a route quota of a plan bucket's name", "defaultPlan: free\nplans: {free: [{name: b, capacity: 5, refillPerSecond: 1}]}\nroutes: [{path: /x, rules: [{name: b, limit: 5, period: day}]}]\n",
			"routes[0].rules[0] (line 3, column 29): rule b (limit 5 a day) has other numbers than the rule b of plans.free (capacity 5, refillPerSecond 1)"},
		{"a route quota with another anchor than the plan's", "defaultPlan: free\nplans: {free: [{name: m, limit: 5, period: month}]}\nroutes: [{path: /x, rules: [{name: m, limit: 5, period: month, anchor: 2}]}]\n",
			"rule m (limit 5 a month from day 2) has other numbers than the rule m of plans.free (limit 5 a month from day 1)"},
		{"a route cost above a quota's limit", "defaultPlan: free\nplans: {free: [{name: m, limit: 5, period: month}]}\nroutes: [{path: /x, cost: 6}]\n",
			"routes[0] (line 3, column 10): with plans.free: cost 6 exceeds limit 5 of rule m"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := config.Parse([]byte(tc.doc))
			if !errors.Is(err, config.ErrConfig) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Parse() = %v, want ErrConfig mentioning %q", err, tc.want)
			}
		})
	}
	// The first anchor written out counts as the one left out.
	if _, err := config.Parse([]byte("defaultPlan: free\nplans: {free: [{name: m, limit: 5, period: month}]}\nroutes: [{path: /x, rules: [{name: m, limit: 5, period: month, anchor: 1}]}]\n")); err != nil {
		t.Errorf("anchor 1 and none: %v", err)
	}
}

// An override must keep its namesake's kind.
func TestOverrideKeepsTheKind(t *testing.T) {
	c, err := config.Parse([]byte(quotas))
	if err != nil {
		t.Fatal(err)
	}
	pro, _ := c.Plan("pro")
	for _, tc := range []struct {
		override bucketgate.Rule
		want     string
	}{
		{bucketgate.Rule{Name: "monthly", Capacity: 10, RefillPerSecond: 1}, "rules[0]: rule monthly is a bucket, and a quota of plan pro"},
		{bucketgate.Rule{Name: "burst", Limit: 10, Period: bucketgate.PeriodDay}, "rules[0]: rule burst is a quota, and a bucket of plan pro"},
		{bucketgate.Rule{Name: "reports", Capacity: 60, RefillPerSecond: 1}, "rules[0]: rule reports is a bucket, and a quota of routes[0]"},
	} {
		if _, err := c.Override(pro, []bucketgate.Rule{tc.override}); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Override(%+v) = %v, want %q", tc.override, err, tc.want)
		}
	}
}
