package config_test

import (
	"errors"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/bucketgate/bucketgate"
	"github.com/bucketgate/bucketgate/internal/config"
)

// An override replaces the plan's or a route's rule of the same name and adds any other
// name to every request; the plan keeps its name and the document's plan is untouched.
func TestOverride(t *testing.T) {
	c, err := config.Parse([]byte(sample))
	if err != nil {
		t.Fatal(err)
	}
	pro, _ := c.Plan("pro")
	tests := []struct {
		name      string
		overrides []bucketgate.Rule
		method    string
		path      string
		want      string // name:capacity per rule, in order
	}{
		{"none is the plan", nil, "GET", "/", "burst:100 daily:100000"},
		{"replace a plan rule", []bucketgate.Rule{{Name: "burst", Capacity: 7, RefillPerSecond: 1}}, "GET", "/", "burst:7 daily:100000"},
		{"add a rule", []bucketgate.Rule{{Name: "hourly", Capacity: 50, RefillPerSecond: 1}}, "GET", "/", "burst:100 daily:100000 hourly:50"},
		{"added rule on a route too", []bucketgate.Rule{{Name: "hourly", Capacity: 50, RefillPerSecond: 1}}, "POST", "/uploads/1", "burst:100 daily:100000 hourly:50 uploads:20"},
		{"replace a route rule", []bucketgate.Rule{{Name: "uploads", Capacity: 200, RefillPerSecond: 1}}, "POST", "/uploads/1", "burst:100 daily:100000 uploads:200"},
		{"a route rule stays off other routes", []bucketgate.Rule{{Name: "uploads", Capacity: 200, RefillPerSecond: 1}}, "GET", "/", "burst:100 daily:100000"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p, err := c.Override(pro, tc.overrides)
			if err != nil {
				t.Fatal(err)
			}
			l := c.Limits(p, tc.method, tc.path)
			var got []string
			for _, r := range l.Rules {
				got = append(got, r.Name+":"+itoa(r.Capacity))
			}
			if strings.Join(got, " ") != tc.want || l.Plan != "pro" {
				t.Errorf("Limits = %s plan %s, want %s plan pro", strings.Join(got, " "), l.Plan, tc.want)
			}
		})
	}
	if l := c.Limits(pro, "GET", "/"); l.Rules[0].Capacity != 100 || len(l.Rules) != 2 {
		t.Errorf("the document's plan changed: %+v", l.Rules)
	}
}

// A replaced rule keeps its shadow mark, on the plan and on a route; an added one is
// enforced.
func TestOverrideShadow(t *testing.T) {
	c, err := config.Parse([]byte(`
defaultPlan: free
plans:
  free: [{name: burst, capacity: 10, refillPerSecond: 1}, {name: trial, capacity: 50, refillPerSecond: 1, shadow: true}]
routes:
  - {path: /uploads, shadow: true, rules: [{name: uploads, capacity: 20, refillPerSecond: 1}]}
`))
	if err != nil {
		t.Fatal(err)
	}
	p, err := c.Override(c.DefaultPlan(), []bucketgate.Rule{
		{Name: "trial", Capacity: 5, RefillPerSecond: 1},
		{Name: "uploads", Capacity: 2, RefillPerSecond: 1},
		{Name: "extra", Capacity: 5, RefillPerSecond: 1, Shadow: true},
	})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range c.Limits(p, "GET", "/uploads").Rules {
		got = append(got, r.Name+":"+itoa(r.Capacity)+":"+strconv.FormatBool(r.Shadow))
	}
	if want := "burst:10:false trial:5:true extra:5:false uploads:2:true"; strings.Join(got, " ") != want {
		t.Errorf("rules %s, want %s", strings.Join(got, " "), want)
	}
}

func TestOverrideErrorsNameTheRule(t *testing.T) {
	c, err := config.Parse([]byte(sample))
	if err != nil {
		t.Fatal(err)
	}
	pro, _ := c.Plan("pro")
	nine := make([]bucketgate.Rule, bucketgate.MaxRules+1)
	for i := range nine {
		nine[i] = bucketgate.Rule{Name: "r" + itoa(int64(i)), Capacity: 10, RefillPerSecond: 1}
	}
	tests := []struct {
		name      string
		overrides []bucketgate.Rule
		want      string
	}{
		{"too many", nine, "rules: 9 overrides: want at most 8"},
		{"bad capacity", []bucketgate.Rule{{Name: "burst", Capacity: 0, RefillPerSecond: 1}}, "rules[0]: rule burst: capacity 0"},
		{"bad rate", []bucketgate.Rule{{Name: "a", Capacity: 1, RefillPerSecond: 1}, {Name: "b", Capacity: 1, RefillPerSecond: -1}}, "rules[1]: rule b: refillPerSecond -1"},
		{"bad name", []bucketgate.Rule{{Name: "a b", Capacity: 1, RefillPerSecond: 1}}, `rules[0]: name "a b"`},
		{"duplicate", []bucketgate.Rule{{Name: "a", Capacity: 1, RefillPerSecond: 1}, {Name: "a", Capacity: 2, RefillPerSecond: 1}}, `rules[1]: name "a" given twice`},
		{"route cost above the new capacity", []bucketgate.Rule{{Name: "burst", Capacity: 2, RefillPerSecond: 1}}, "rules: routes[0]: with plans.pro: cost 5 exceeds capacity 2 of rule burst"},
		{"too many with a route", nine[:7], "rules: routes[0]: with plans.pro: 10 rules: want at most 8"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := c.Override(pro, tc.overrides)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Override = %v, want an error mentioning %q", err, tc.want)
			}
			if tc.name == "bad capacity" && !errors.Is(err, bucketgate.ErrInvalid) {
				t.Errorf("error %v does not wrap bucketgate.ErrInvalid", err)
			}
			if strings.Contains(err.Error(), "invalid: ") { // the path names the source: rules[0], routes[0]
				t.Errorf("error %v: want no \"invalid: \" in it", err)
			}
		})
	}
}

// OverrideAlone, a tenant's: its rules replace the plan's of their names and add any
// other, a route's rule name too, checked against the plan alone, routes apart.
func TestOverrideAlone(t *testing.T) {
	c, err := config.Parse([]byte(sample))
	if err != nil {
		t.Fatal(err)
	}
	pro, _ := c.Plan("pro")
	for _, tc := range []struct {
		name      string
		overrides []bucketgate.Rule
		want      string // name:capacity per rule, in order; or the error
	}{
		{"none is the plan", nil, "burst:100 daily:100000"},
		{"below a route's cost", []bucketgate.Rule{{Name: "burst", Capacity: 2, RefillPerSecond: 1}}, "burst:2 daily:100000"},
		{"a route rule's name is added", []bucketgate.Rule{{Name: "uploads", Capacity: 3, RefillPerSecond: 1}}, "burst:100 daily:100000 uploads:3"},
		{"eight in all, a route's ninth apart", []bucketgate.Rule{{Name: "a", Capacity: 1, RefillPerSecond: 1}, {Name: "b", Capacity: 1, RefillPerSecond: 1},
			{Name: "c", Capacity: 1, RefillPerSecond: 1}, {Name: "d", Capacity: 1, RefillPerSecond: 1}, {Name: "e", Capacity: 1, RefillPerSecond: 1}, {Name: "f", Capacity: 1, RefillPerSecond: 1}},
			"burst:100 daily:100000 a:1 b:1 c:1 d:1 e:1 f:1"},
		{"nine with the plan's", []bucketgate.Rule{{Name: "a", Capacity: 1, RefillPerSecond: 1}, {Name: "b", Capacity: 1, RefillPerSecond: 1},
			{Name: "c", Capacity: 1, RefillPerSecond: 1}, {Name: "d", Capacity: 1, RefillPerSecond: 1}, {Name: "e", Capacity: 1, RefillPerSecond: 1}, {Name: "f", Capacity: 1, RefillPerSecond: 1},
			{Name: "g", Capacity: 1, RefillPerSecond: 1}}, "rules: plans.pro: 9 rules: want at most 8"},
		{"another kind", []bucketgate.Rule{{Name: "daily", Limit: 5, Period: bucketgate.PeriodDay}}, "rules[0]: rule daily is a quota, and a bucket of plan pro"},
		{"bad capacity", []bucketgate.Rule{{Name: "burst", Capacity: 0, RefillPerSecond: 1}}, "rules[0]: rule burst: capacity 0"},
	} {
		p, err := c.OverrideAlone(pro, tc.overrides)
		var got string
		if err != nil {
			got = err.Error()
		} else {
			var names []string
			for _, r := range p.Rules {
				names = append(names, r.Name+":"+itoa(r.Capacity))
			}
			got = strings.Join(names, " ")
		}
		if !strings.Contains(got, tc.want) || err == nil && got != tc.want {
			t.Errorf("%s: %s, want %s", tc.name, got, tc.want)
		}
	}
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

// A key's own rules in an account add to the account's plan under the key's names,
// on every route, enforced, replacing nothing: the account's rule of the same name
// stays, and so do the account's overrides.
func TestWithKeyRules(t *testing.T) {
	c, err := config.Parse([]byte(sample))
	if err != nil {
		t.Fatal(err)
	}
	pro, _ := c.Plan("pro")
	digest := bucketgate.KeyDigest("a key")
	if p, err := c.WithKeyRules(pro, digest, nil); err != nil || p != pro {
		t.Fatalf("no own rules: %p, %v; want the plan itself", p, err)
	}
	account, err := c.Override(pro, []bucketgate.Rule{{Name: "uploads", Capacity: 200, RefillPerSecond: 1}})
	if err != nil {
		t.Fatal(err)
	}
	own := []bucketgate.Rule{{Name: "burst", Capacity: 5, RefillPerSecond: 1, Shadow: true}}
	tests := []struct {
		name   string
		plan   *config.Plan
		method string
		path   string
		want   string // name:capacity:shadow per rule, in order
	}{
		{"the plan's", pro, "GET", "/", "burst:100:false daily:100000:false " + digest + "/burst:5:false"},
		{"with a route's", pro, "POST", "/uploads/1", "burst:100:false daily:100000:false " + digest + "/burst:5:false uploads:20:false"},
		{"with the account's override of a route's", account, "POST", "/uploads/1", "burst:100:false daily:100000:false " + digest + "/burst:5:false uploads:200:false"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p, err := c.WithKeyRules(tc.plan, digest, own)
			if err != nil {
				t.Fatal(err)
			}
			l := c.Limits(p, tc.method, tc.path)
			var got []string
			for _, r := range l.Rules {
				got = append(got, r.Name+":"+itoa(r.Capacity)+":"+strconv.FormatBool(r.Shadow))
			}
			if strings.Join(got, " ") != tc.want || l.Plan != "pro" {
				t.Errorf("Limits = %s plan %s, want %s plan pro", strings.Join(got, " "), l.Plan, tc.want)
			}
		})
	}
	if l := c.Limits(pro, "GET", "/"); len(l.Rules) != 2 {
		t.Errorf("the document's plan changed: %+v", l.Rules)
	}
	quota := bucketgate.Rule{Name: "monthly", Limit: 50, Period: bucketgate.PeriodMonth, Anchor: 15}
	p, err := c.WithKeyRules(pro, digest, []bucketgate.Rule{quota})
	if err != nil || len(p.Rules) != 3 || p.Rules[2].Name != digest+"/monthly" || !p.Rules[2].IsQuota() || p.Rules[2].Limit != 50 {
		t.Errorf("a key's own quota: %+v, %v", p, err)
	}
}

func TestWithKeyRulesErrorsNameTheRule(t *testing.T) {
	c, err := config.Parse([]byte(sample))
	if err != nil {
		t.Fatal(err)
	}
	pro, _ := c.Plan("pro")
	digest := bucketgate.KeyDigest("a key")
	rules := func(n int) []bucketgate.Rule {
		rs := make([]bucketgate.Rule, n)
		for i := range rs {
			rs[i] = bucketgate.Rule{Name: "r" + itoa(int64(i)), Capacity: 10, RefillPerSecond: 1}
		}
		return rs
	}
	tests := []struct {
		name string
		own  []bucketgate.Rule
		want string
	}{
		{"too many", rules(9), "rules: 9 rules of the key's own: want at most 8"},
		{"bad name", []bucketgate.Rule{{Name: "a/b", Capacity: 1, RefillPerSecond: 1}}, `rules[0]: name "a/b"`},
		{"duplicate", []bucketgate.Rule{{Name: "a", Capacity: 1, RefillPerSecond: 1}, {Name: "a", Capacity: 2, RefillPerSecond: 1}}, `rules[1]: name "a" given twice`},
		{"too many with the plan's and a route's", rules(7), "rules: routes[0]: with plans.pro: 10 rules: want at most 8"},
		{"route cost above its capacity", []bucketgate.Rule{{Name: "burst", Capacity: 2, RefillPerSecond: 1}}, "rules: routes[0]: with plans.pro: cost 5 exceeds capacity 2 of rule " + digest + "/burst"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := c.WithKeyRules(pro, digest, tc.own); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("WithKeyRules = %v, want an error mentioning %q", err, tc.want)
			}
		})
	}
}

// Reach names the routes whose rule an own rule replaces by their ids, which stay
// theirs wherever they are listed: a route moved, or another added before it, is the
// same reach; a rule of the plan, or of no route, is every request.
func TestReach(t *testing.T) {
	const plans = "defaultPlan: free\nplans:\n  free: [{name: burst, capacity: 10, refillPerSecond: 1}]\n  pro: [{name: burst, capacity: 100, refillPerSecond: 50}, {name: uploads, capacity: 20, refill: 1, per: minute}]\n"
	const uploads = "{method: POST, path: /uploads, rules: [{name: uploads, capacity: 20, refill: 1, per: minute}]}"
	const imports = "{method: POST, path: /imports, rules: [{name: uploads, capacity: 20, refill: 1, per: minute}]}"
	for _, tc := range []struct {
		name, plan, routes string
		where              string
		same               bool // whether its routes are the /uploads route's alone
	}{
		{"a route's rule", "free", "[" + uploads + "]", "routes[0]", true},
		{"another route before it", "free", "[{method: GET, path: /x}, " + uploads + "]", "routes[1]", true},
		{"on two routes", "free", "[" + uploads + ", " + imports + "]", "routes[0], routes[1]", false},
		{"on another route", "free", "[{method: POST, path: /uploads}, " + imports + "]", "routes[1]", false},
		{"a rule of the plan", "pro", "[" + uploads + "]", "", false},
		{"no route's", "free", "[]", "", false},
	} {
		c, err := config.Parse([]byte(plans + "routes: " + tc.routes + "\n"))
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		p, _ := c.Plan(tc.plan)
		where, routes := c.Reach(p, "uploads")
		first := c.Limits(p, "POST", "/uploads").Route
		if where != tc.where || (routes == first && routes != "") != tc.same || (where == "") != (routes == "") {
			t.Errorf("%s: Reach = %q, %q; want %q, the /uploads route's id (%s) alone: %v", tc.name, where, routes, tc.where, first, tc.same)
		}
	}
}

// TestShadows: Shadows says whether an identity's own rule would be shadow somewhere, as
// Override and OverrideAlone make it: the shadow mark of the plan's rule it replaces, or
// with none, of a route's (a tenant's own rules, which no route applies to, never).
func TestShadows(t *testing.T) {
	const own = "{name: daily, limit: 5000, period: day"
	for _, tc := range []struct {
		name, plan, route string
		want, tenant      bool
	}{
		{"the plan's rule shadow", own + ", shadow: true}", "", true, true},
		{"the plan's rule enforced, a route's shadow", own + "}", own + ", shadow: true}", false, false},
		{"a route's rule shadow alone", "", own + ", shadow: true}", true, false},
		{"a route's rule enforced", "", own + "}", false, false},
		{"no rule of its name", "", "", false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			doc := "defaultPlan: free\nplans:\n  free: [{name: burst, capacity: 10, refillPerSecond: 1}"
			if tc.plan != "" {
				doc += ", " + tc.plan
			}
			doc += "]\n"
			if tc.route != "" {
				doc += "routes: [{method: POST, path: /uploads, rules: [" + tc.route + "]}]\n"
			}
			c, err := config.Parse([]byte(doc))
			if err != nil {
				t.Fatal(err)
			}
			p, _ := c.Plan("free")
			rule := bucketgate.Rule{Name: "daily", Limit: 10, Period: bucketgate.PeriodDay}
			key, err := c.Override(p, []bucketgate.Rule{rule})
			if err != nil {
				t.Fatal(err)
			}
			tenant, err := c.OverrideAlone(p, []bucketgate.Rule{rule})
			if err != nil {
				t.Fatal(err)
			}
			shadow := func(rules []bucketgate.Rule) bool {
				return slices.ContainsFunc(rules, func(r bucketgate.Rule) bool { return r.Name == "daily" && r.Shadow })
			}
			made := shadow(c.Limits(key, "GET", "/").Rules) || shadow(c.Limits(key, "POST", "/uploads").Rules)
			if got := c.Shadows(p, "daily", true); got != tc.want || made != tc.want {
				t.Errorf("Shadows = %v, Override made it shadow: %v; want %v", got, made, tc.want)
			}
			if got := c.Shadows(p, "daily", false); got != tc.tenant || shadow(tenant.Rules) != tc.tenant {
				t.Errorf("a tenant's: Shadows = %v, OverrideAlone made it shadow: %v; want %v", got, shadow(tenant.Rules), tc.tenant)
			}
		})
	}
}
