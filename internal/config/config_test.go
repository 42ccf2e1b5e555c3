package config_test

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/bucketgate/bucketgate"
	"github.com/bucketgate/bucketgate/internal/config"
)

const sample = `
defaultPlan: free
unknownKeys: refuse
plans:
  free:
    - {name: burst, capacity: 10, refillPerSecond: 1}
  pro:
    - {name: burst, capacity: 100, refillPerSecond: 50}
    - {name: daily, capacity: 100000, refill: 100000, per: day}
keys:
  0123456789abcdef0123456789abcdef: pro
tenants:
  tenant-42: pro
routes:
  - {method: POST, path: "/uploads/{id}", cost: 5, rules: [{name: uploads, capacity: 20, refill: 1, per: minute}]}
  - {method: "*", path: /reports/**, cost: 3}
  - {method: GET, path: "/scores/*/rank", cost: 2}
`

func TestDefault(t *testing.T) {
	c := config.Default()
	want := map[string]bucketgate.Rule{
		"free":       {Name: "burst", Capacity: 10, RefillPerSecond: 1},
		"pro":        {Name: "burst", Capacity: 100, RefillPerSecond: 50},
		"enterprise": {Name: "burst", Capacity: 500, RefillPerSecond: 200},
	}
	for name, rule := range want {
		p, ok := c.Plan(name)
		if !ok || len(p.Rules) != 1 || p.Rules[0] != rule {
			t.Errorf("plan %s = %+v", name, p)
		}
	}
	if p, known := c.PlanForKey(bucketgate.KeyDigest("anything")); known || p.Name != "free" || c.RefuseUnknownKeys() || c.RefuseAnonymous() {
		t.Errorf("default: unknown key gets %s known=%v", p.Name, known)
	}
}

func TestLimits(t *testing.T) {
	c, err := config.Parse([]byte(sample))
	if err != nil {
		t.Fatal(err)
	}
	pro, _ := c.Plan("pro")
	tests := []struct {
		name, method, path string
		cost               int64
		rules              []string
	}{
		{"no route", "GET", "/scores", 1, []string{"burst", "daily"}},
		{"route with a parameter", "POST", "/uploads/7", 5, []string{"burst", "daily", "uploads"}},
		{"method must match", "GET", "/uploads/7", 1, []string{"burst", "daily"}},
		{"parameter is one segment", "POST", "/uploads/7/parts", 1, []string{"burst", "daily"}},
		{"rest matches many", "DELETE", "/reports/2026/11", 3, []string{"burst", "daily"}},
		{"rest matches none", "GET", "/reports", 3, []string{"burst", "daily"}},
		{"* is one segment", "GET", "/scores/7/rank", 2, []string{"burst", "daily"}},
		{"* is not none", "GET", "/scores/rank", 1, []string{"burst", "daily"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l := c.Limits(pro, tt.method, tt.path)
			var names []string
			for _, r := range l.Rules {
				names = append(names, r.Name)
			}
			if l.Plan != "pro" || l.Cost != tt.cost || strings.Join(names, ",") != strings.Join(tt.rules, ",") {
				t.Errorf("Limits = %+v", l)
			}
		})
	}
	daily := pro.Rules[1]
	if daily.RefillPerSecond != 100000.0/86400 {
		t.Errorf("daily refill %v", daily.RefillPerSecond)
	}
	if p, known := c.PlanForKey("0123456789abcdef0123456789abcdef"); !known || p.Name != "pro" {
		t.Errorf("mapped key: %v %v", p, known)
	}
	if p, known := c.PlanForTenant("tenant-42"); !known || p.Name != "pro" {
		t.Errorf("tenant: %v %v", p, known)
	}
	if !c.RefuseUnknownKeys() {
		t.Error("unknownKeys: refuse not honoured")
	}
}

// free is a valid plans mapping for documents that test something else.
const free = "plans: {free: [{name: b, capacity: 2, refillPerSecond: 1}]}"

func TestParseErrorsNameTheField(t *testing.T) {
	tests := []struct{ name, doc, want string }{
		{"empty", ``, "document is empty"},
		{"only a comment", "# nothing\n", "document is empty"},
		{"null", "~", "document is empty"},
		{"not a mapping", "[1, 2]", "document (line 1, column 1): got a list, want a mapping of defaultPlan, unknownKeys, anonymous, plans, keys, tenants, routes"},
		{"unknown field", "defaultPlan: free\nplanz: {}\n", "planz (line 2, column 1): unknown field; did you mean plans?"},
		{"unknown field far from any", "defaultPlan: free\nquota: 5\n", "quota (line 2, column 1): unknown field (want anonymous, defaultPlan, keys, plans, routes, tenants, unknownKeys)"},
		{"field in another case", "defaultPlan: free\nplans: {free: [{name: b, capacity: 1, RefillPerSecond: 1}]}", "plans.free[0].RefillPerSecond (line 2, column 39): unknown field; did you mean refillPerSecond?"},
		{"no plans", "defaultPlan: free\n", "plans: at least one plan"},
		{"no default plan", "plans: {free: [{name: b, capacity: 1, refillPerSecond: 1}]}", "defaultPlan: required"},
		{"unknown default plan", "defaultPlan: gold\n" + free, `defaultPlan (line 1, column 14): unknown plan "gold"`},
		{"plan without rules", "defaultPlan: free\nplans: {free: []}", "plans.free (line 2, column 15): at least one rule"},
		{"plan with too many rules", "defaultPlan: free\nplans: {free: [" + strings.Repeat("{name: b, capacity: 1, refillPerSecond: 1}, ", 9) + "]}", "plans.free (line 2, column 15): 9 rules: want at most 8"},
		{"plan name with a quote", "defaultPlan: 'a\"b'\nplans: {'a\"b': [{name: b, capacity: 1, refillPerSecond: 1}]}", `plans.a"b (line 2, column 16): plan name "a\"b": want printable ASCII`},
		{"plan name too long", "defaultPlan: free\nplans: {" + strings.Repeat("p", 65) + ": [{name: b, capacity: 1, refillPerSecond: 1}]}", "a plan name is 1 to 64 bytes"},
		{"bad capacity", "defaultPlan: free\nplans: {free: [{name: b, capacity: 0, refillPerSecond: 1}]}", "plans.free[0] (line 2, column 16): rule b: capacity 0"},
		{"a rule of a plan written as a mapping", "defaultPlan: free\nplans: {free: {shadow: true, rules: [{name: b, capacity: 0, refillPerSecond: 1}]}}", "plans.free[0] (line 2, column 38): rule b: capacity 0"},
		{"refillPerSecond that rounds to 0", "defaultPlan: free\nplans: {free: [{name: b, capacity: 1, refillPerSecond: 1e-400}]}", `plans.free[0].refillPerSecond (line 2, column 56): "1e-400": too close to 0, which it would round to`},
		{"refill that rounds to 0", "defaultPlan: free\nplans: {free: [{name: b, capacity: 1, refill: -0.5e-330, per: hour}]}", `plans.free[0].refill (line 2, column 47): "-0.5e-330": too close to 0, which it would round to`},
		{"fractional capacity", "defaultPlan: free\nplans: {free: [{name: b, capacity: 1.5, refillPerSecond: 1}]}", `plans.free[0].capacity (line 2, column 36): "1.5": want a whole decimal number`},
		{"capacity as a string", "defaultPlan: free\nplans: {free: [{name: b, capacity: '10', refillPerSecond: 1}]}", `plans.free[0].capacity (line 2, column 36): the string "10": want a whole number`},
		{"zero-padded capacity", "defaultPlan: free\nplans: {free: [{name: b, capacity: 0100, refillPerSecond: 1}]}", `plans.free[0].capacity (line 2, column 36): "0100": want a whole decimal number such as 100`},
		{"octal capacity", "defaultPlan: free\nplans: {free: [{name: b, capacity: 0o144, refillPerSecond: 1}]}", `"0o144": want a whole decimal number`},
		{"hexadecimal capacity", "defaultPlan: free\nplans: {free: [{name: b, capacity: 0x64, refillPerSecond: 1}]}", `"0x64": want a whole decimal number`},
		{"capacity with underscores", "defaultPlan: free\nplans: {free: [{name: b, capacity: 1_000, refillPerSecond: 1}]}", `"1_000": want a whole decimal number`},
		{"zero-padded rate", "defaultPlan: free\nplans: {free: [{name: b, capacity: 10, refillPerSecond: 010}]}", `plans.free[0].refillPerSecond (line 2, column 57): "010": want a decimal number`},
		{"infinite rate", "defaultPlan: free\nplans: {free: [{name: b, capacity: 10, refillPerSecond: .inf}]}", `".inf": want a decimal number`},
		{"rate as a list", "defaultPlan: free\nplans: {free: [{name: b, capacity: 10, refillPerSecond: [1]}]}", `plans.free[0].refillPerSecond (line 2, column 57): a list: want a number`},
		{"shadow tagged a boolean in YAML 1.1's words", "defaultPlan: free\nplans: {free: [{name: b, capacity: 10, refillPerSecond: 1, shadow: !!bool on}]}", `plans.free[0].shadow (line 2, column 68): "on": write true or false (an earlier bucketgate read it as false: enforced)`},
		{"shadow not a boolean", "defaultPlan: free\nplans: {free: [{name: b, capacity: 10, refillPerSecond: 1, shadow: yes}]}", `plans.free[0].shadow (line 2, column 68): the string "yes": want true or false`},
		{"no rate", "defaultPlan: free\nplans: {free: [{name: b, capacity: 1}]}", "plans.free[0] (line 2, column 16): refillPerSecond (or refill with per) is required"},
		{"both rates", "defaultPlan: free\nplans: {free: [{name: b, capacity: 1, refillPerSecond: 1, refill: 1, per: day}]}", "plans.free[0] (line 2, column 16): give refillPerSecond or refill with per, not both"},
		// A 0 written is not a field left out: it said "refillPerSecond (or refill with per)
		// is required", or took the refill's rate and dropped the 0.
		{"rate 0", "defaultPlan: free\nplans: {free: [{name: b, capacity: 1, refillPerSecond: 0}]}", "plans.free[0] (line 2, column 16): rule b: refillPerSecond 0: want a number above 0"},
		{"bad period", "defaultPlan: free\nplans: {free: [{name: b, capacity: 1, refill: 1, per: fortnight}]}", `plans.free[0] (line 2, column 16): per "fortnight"`},
		{"a field given twice", "defaultPlan: free\ndefaultPlan: pro\n" + free, "defaultPlan (line 2, column 1): given twice (first at line 1, column 1)"},
		{"a plan given twice", "defaultPlan: free\nplans:\n  free: [{name: b, capacity: 1, refillPerSecond: 1}]\n  free: [{name: b, capacity: 2, refillPerSecond: 1}]\n", "plans.free (line 4, column 3): given twice (first at line 3, column 3)"},
		{"merge key", "defaultPlan: free\nbase: &b {name: b, capacity: 1, refillPerSecond: 1}\nplans: {free: [{<<: *b}]}", "base (line 2, column 1): unknown field"},
		{"merge key in a rule", "defaultPlan: free\nplans: {free: [&b {name: b, capacity: 1, refillPerSecond: 1}], pro: [{<<: *b}]}", "plans.pro[0] (line 2, column 71): merge keys (<<) are not supported"},
		{"raw key", "defaultPlan: free\n" + free + "\nkeys: {my-secret: free}", "keys (line 3, column 19): an entry of 9 bytes is not a key digest: want 32 lowercase hex digits"},
		{"key to unknown plan", "defaultPlan: free\n" + free + "\nkeys: {0123456789abcdef0123456789abcdef: gold}", `keys.0123456789abcdef0123456789abcdef (line 3, column 42): unknown plan "gold"`},
		{"tenant to unknown plan", "defaultPlan: free\n" + free + "\ntenants: {t1: gold}", `tenants.t1 (line 3, column 15): unknown plan "gold"`},
		{"empty tenant id", "defaultPlan: free\n" + free + "\ntenants: {'': free}", `tenants. (line 3, column 15): a tenant id of 0 bytes: want 1 to 1000`},
		{"tenant id longer than a key", "defaultPlan: free\n" + free + "\ntenants: {" + strings.Repeat("t", 1001) + ": free}", `: a tenant id of 1001 bytes: want 1 to 1000, as the check function's keys are`},
		{"bad policy", "defaultPlan: free\nunknownKeys: maybe\n" + free, `unknownKeys (line 2, column 14): "maybe": want "ip" or "refuse"`},
		{"unknownKeys default is gone", "defaultPlan: free\nunknownKeys: default\n" + free, `unknownKeys (line 2, column 14): "default": want "ip" or "refuse": "default" gave every unknown key a bucket of its own`},
		{"anonymous ip is not a policy", "defaultPlan: free\nanonymous: ip\n" + free, `anonymous (line 2, column 12): "ip": want "default" or "refuse"`},
		{"route cost above capacity", "defaultPlan: free\n" + free + "\nroutes: [{path: /x, cost: 3}]", "routes[0] (line 3, column 10): with plans.free: cost 3 exceeds capacity 2 of rule b"},
		{"route cost 0", "defaultPlan: free\n" + free + "\nroutes: [{path: /x, cost: 0}]", "routes[0] (line 3, column 10): cost 0 would make the route a peek that enforces nothing: want 1 or more"},
		{"route cost negative", "defaultPlan: free\n" + free + "\nroutes: [{path: /x, cost: -1}]", "routes[0] (line 3, column 10): cost -1"},
		{"route rule with a plan rule's name and other numbers", "defaultPlan: free\n" + free + "\nroutes: [{path: /x, rules: [{name: b, capacity: 5, refillPerSecond: 1}]}]",
			"routes[0].rules[0] (line 3, column 29): rule b (capacity 5, refillPerSecond 1) has other numbers than the rule b of plans.free (capacity 2, refillPerSecond 1)"},
		{"route rule with the numbers of one of two plans' rules of its name", "defaultPlan: free\nplans:\n  free: [{name: b, capacity: 2, refillPerSecond: 1}]\n  pro: [{name: b, capacity: 4, refillPerSecond: 1}]\nroutes: [{path: /x, rules: [{name: b, capacity: 2, refillPerSecond: 1}]}]",
			"routes[0].rules[0] (line 5, column 29): rule b (capacity 2, refillPerSecond 1) has other numbers than the rule b of plans.pro (capacity 4, refillPerSecond 1): a rule name is one bucket (or quota) of an identity, and the plans give this one other numbers each, so give the route's rule another name"},
		{"route rule with other numbers than two plans' rules of its name", "defaultPlan: free\nplans:\n  free: [{name: b, capacity: 2, refillPerSecond: 1}]\n  pro: [{name: b, capacity: 4, refillPerSecond: 1}]\nroutes: [{path: /x, rules: [{name: b, capacity: 3, refillPerSecond: 1}]}]",
			"rule b (capacity 3, refillPerSecond 1) has other numbers than the rule b of plans.free (capacity 2, refillPerSecond 1), of plans.pro (capacity 4, refillPerSecond 1): "},
		{"two routes, one rule name, other numbers", "defaultPlan: free\n" + free + "\nroutes:\n  - {path: /a, rules: [{name: u, capacity: 20, refill: 1, per: minute}]}\n  - {path: /b, rules: [{name: u, capacity: 20, refill: 2, per: minute}]}",
			"routes[1].rules[0] (line 5, column 24): rule u (capacity 20, refillPerSecond 0.03333333333333333) has other numbers than routes[0].rules[0] (capacity 20, refillPerSecond 0.016666666666666666)"},
		{"a rule twice in a route", "defaultPlan: free\n" + free + "\nroutes: [{path: /x, rules: [{name: u, capacity: 5, refillPerSecond: 1}, {name: u, capacity: 6, refillPerSecond: 1}]}]",
			"routes[0].rules[1] (line 3, column 73): rule u appears twice in the route (first at routes[0].rules[0])"},
		{"shadow route with a cost", "defaultPlan: free\n" + free + "\nroutes: [{path: /x, cost: 2, shadow: true, rules: [{name: u, capacity: 5, refillPerSecond: 1}]}]", "routes[0].cost (line 3, column 27): a shadow route cannot set a cost"},
		{"too many route rules", "defaultPlan: free\n" + free + "\nroutes: [{path: /x, rules: [" + strings.Repeat("{name: u, capacity: 5, refillPerSecond: 1}, ", 9) + "]}]", "routes[0].rules (line 3, column 28): 9 rules: want at most 8"},
		{"route path", "defaultPlan: free\n" + free + "\nroutes: [{path: x}]", `routes[0] (line 3, column 10): path "x"`},
		{"route path with a backslash", "defaultPlan: free\n" + free + "\nroutes: [{path: '/a\\b'}]", `routes[0] (line 3, column 10): path "/a\\b": segment "a\\b": a pattern is written as requests are matched`},
		{"route path with a query", "defaultPlan: free\n" + free + "\nroutes: [{path: '/a?x=1'}]", `path "/a?x=1": segment "a?x=1"`},
		{"route path with a fragment", "defaultPlan: free\n" + free + "\nroutes: [{path: '/a#b'}]", `path "/a#b": segment "a#b"`},
		{"route rest not last", "defaultPlan: free\n" + free + "\nroutes: [{path: /a/**/b}]", "** must be the last segment"},
		{"route method", "defaultPlan: free\n" + free + "\nroutes: [{method: FETCH, path: /a}]", `routes[0] (line 3, column 10): method "FETCH"`},
		{"two documents", "defaultPlan: free\n" + free + "\n---\ndefaultPlan: x\n", "more than one document"},
		{"json unknown field", `{"defaultPlan":"free","plans":{"free":[{"name":"b","capacity":1,"refillPerSecond":1,"burst":2}]}}`, "plans.free[0].burst (line 1, column 85): unknown field"},
		{"json field given twice", `{"defaultPlan":"free","plans":{"free":[{"name":"b","capacity":1,"capacity":2,"refillPerSecond":1}]}}`, "plans.free[0].capacity (line 1, column 65): given twice (first at line 1, column 52)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := config.Parse([]byte(tt.doc))
			if !errors.Is(err, config.ErrConfig) || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Parse() = %v, want ErrConfig mentioning %q", err, tt.want)
			}
			if strings.Contains(err.Error(), "invalid: ") { // bucketgate.ErrInvalid's, which the field's path says already
				t.Errorf("Parse() = %v: want no \"invalid: \" in it", err)
			}
		})
	}
}

// An unknown field deep in an inline document (RATE_LIMIT_CONFIG is often one line) is
// named by its path, with the column it starts at and the close match.
func TestUnknownFieldInInlineDocument(t *testing.T) {
	doc := `{defaultPlan: pro, plans: {pro: [{name: burst, capacity: 100, refillPerSecond: 50}, {name: daily, capacity: 1000, refilPerSecond: 0.01}]}}`
	col := strings.Index(doc, "refilPerSecond") + 1
	_, err := config.Parse([]byte(doc))
	want := fmt.Sprintf("plans.pro[1].refilPerSecond (line 1, column %d): unknown field; did you mean refillPerSecond?", col)
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("Parse() = %v, want %q", err, want)
	}
}

// Limits on the document: each one exceeded is an error naming it, whatever the rest.
func TestParseLimits(t *testing.T) {
	many := func(n int, entry func(i int) string) string {
		var b strings.Builder
		for i := range n {
			if i > 0 {
				b.WriteString(", ")
			}
			b.WriteString(entry(i))
		}
		return b.String()
	}
	rule := "[{name: b, capacity: 1, refillPerSecond: 1}]"
	tests := []struct{ name, doc, want string }{
		{"plans", "defaultPlan: p0\nplans: {" + many(config.MaxPlans+1, func(i int) string { return fmt.Sprintf("p%d: %s", i, rule) }) + "}", "plans (line 2, column 8): 101 entries: want at most 100"},
		{"routes", "defaultPlan: free\n" + free + "\nroutes: [" + many(config.MaxRoutes+1, func(i int) string { return fmt.Sprintf("{path: /r%d}", i) }) + "]", "routes (line 3, column 9): 101 entries: want at most 100"},
		{"keys", "defaultPlan: free\n" + free + "\nkeys: {" + many(config.MaxKeys+1, func(i int) string { return fmt.Sprintf("%032x: free", i) }) + "}", "keys (line 3, column 7): 5001 entries: want at most 5000"},
		{"tenants", "defaultPlan: free\n" + free + "\ntenants: {" + many(config.MaxTenants+1, func(i int) string { return fmt.Sprintf("t%d: free", i) }) + "}", "tenants (line 3, column 10): 5001 entries: want at most 5000"},
		{"values", "defaultPlan: free\nplans: {free: [" + many(config.MaxValues, func(int) string { return "~" }) + "]}", "plans.free[49995] (line 2, column 150001): the document has more than 50000 values"},
		{"bytes", "defaultPlan: free\n" + free + "\n#" + strings.Repeat("x", config.MaxDocument), "bytes, want at most 262144"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := config.Parse([]byte(tt.doc))
			if !errors.Is(err, config.ErrConfig) || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Parse() = %.300v, want ErrConfig mentioning %q", err, tt.want)
			}
		})
	}
}

// aliasBomb returns a document of about size bytes whose aliases expand it a
// thousandfold if nothing stops them: one plan of a hundred rules, and every other plan
// an alias of it.
func aliasBomb(size int) []byte {
	var b strings.Builder
	b.WriteString("defaultPlan: p0\nplans:\n  p0: &r [" + strings.Repeat("{name: b, capacity: 1, refillPerSecond: 1}, ", 100) + "]\n")
	for i := 1; b.Len() < size-16; i++ {
		fmt.Fprintf(&b, "  p%d: *r\n", i)
	}
	return []byte(b.String())
}

// nestedAliases is the classic billion laughs: ten levels of lists of ten aliases of
// the level before.
func nestedAliases() []byte {
	var b strings.Builder
	b.WriteString("defaultPlan: free\n" + free + "\ntenants: {x0: &x0 [lol]")
	for i := 1; i < 10; i++ {
		fmt.Fprintf(&b, ", x%d: &x%d [%s]", i, i, strings.TrimSuffix(strings.Repeat(fmt.Sprintf("*x%d, ", i-1), 10), ", "))
	}
	b.WriteString("}\n")
	return []byte(b.String())
}

// Aliases cannot make a document expand beyond MaxValues: the largest alias bomb is
// refused like any other document over the limit, after visiting at most MaxValues
// values (BenchmarkParseAliasBomb measures what that costs), and the classic one is
// refused at its first value of the wrong kind.
func TestAliasesCannotExpandTheDocument(t *testing.T) {
	for _, size := range []int{1 << 10, config.MaxDocument} {
		_, err := config.Parse(aliasBomb(size))
		if size > 1<<10 && (!errors.Is(err, config.ErrConfig) || !strings.Contains(err.Error(), "more than 50000 values")) {
			t.Errorf("%d-byte alias bomb: Parse() = %.200v, want an error about the values", size, err)
		}
		if size == 1<<10 && (!errors.Is(err, config.ErrConfig) || !strings.Contains(err.Error(), "100 rules: want at most 8")) {
			t.Errorf("small alias bomb: Parse() = %.200v, want the first plan's rules refused", err)
		}
	}
	if _, err := config.Parse(nestedAliases()); !errors.Is(err, config.ErrConfig) || !strings.Contains(err.Error(), "tenants.x0 (line 3, column 15): got a list, want a string") {
		t.Errorf("nested aliases: Parse() = %.200v", err)
	}
	// An alias used where it belongs is fine, and counts as its values.
	c, err := config.Parse([]byte("defaultPlan: pro\nplans:\n  free: &base [{name: burst, capacity: 10, refillPerSecond: 1}]\n  pro: *base\n"))
	if err != nil {
		t.Fatal(err)
	}
	if pro, _ := c.Plan("pro"); len(pro.Rules) != 1 || pro.Rules[0].Capacity != 10 {
		t.Errorf("pro = %+v", pro)
	}
}

// BenchmarkParseAliasBomb measures the refusal of the largest alias bomb a document
// may be: bounded by MaxValues whatever the expansion.
func BenchmarkParseAliasBomb(b *testing.B) {
	doc := aliasBomb(config.MaxDocument)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := config.Parse(doc); err == nil {
			b.Fatal("accepted")
		}
	}
}

// BenchmarkParseLargest measures the largest document of small values (most nodes per
// byte) MaxDocument lets through to the decoder.
func BenchmarkParseLargest(b *testing.B) {
	doc := []byte("defaultPlan: free\n" + free + "\ntenants: [" + strings.Repeat("0,", config.MaxDocument/2-64) + "0]")
	b.ReportAllocs()
	for b.Loop() {
		if _, err := config.Parse(doc); err == nil {
			b.Fatal("accepted")
		}
	}
}

// Zero-padded numbers are refused, never read as octal: docs/configuration.md says so.
func TestNumbersAreDecimal(t *testing.T) {
	c, err := config.Parse([]byte("defaultPlan: free\nplans: {free: [{name: b, capacity: 100, refillPerSecond: 0.5}, {name: d, capacity: 1000, refillPerSecond: 1e-2}]}"))
	if err != nil {
		t.Fatal(err)
	}
	p, _ := c.Plan("free")
	if p.Rules[0].Capacity != 100 || p.Rules[0].RefillPerSecond != 0.5 || p.Rules[1].RefillPerSecond != 0.01 {
		t.Errorf("rules %+v", p.Rules)
	}
	for _, doc := range []string{
		"defaultPlan: free\nplans: {free: [{name: b, capacity: 0100, refillPerSecond: 1}]}",
		"defaultPlan: free\nroutes: [{path: /x, cost: 01}]\nplans: {free: [{name: b, capacity: 100, refillPerSecond: 1}]}",
		"defaultPlan: free\nplans: {free: [{name: b, capacity: 100, refill: 010, per: minute}]}",
	} {
		if _, err := config.Parse([]byte(doc)); err == nil || !strings.Contains(err.Error(), "decimal") {
			t.Errorf("Parse(%q) = %v, want a refusal saying decimal", doc, err)
		}
	}
}

// shadow: true on a rule, a plan or a route marks the rules it covers, and only those,
// as shadow rules (bucketgate.Rule.Shadow).
func TestShadow(t *testing.T) {
	c, err := config.Parse([]byte(`
defaultPlan: free
plans:
  free:
    - {name: burst, capacity: 10, refillPerSecond: 1}
    - {name: burst-v2, capacity: 5, refillPerSecond: 1, shadow: true}
  trial:
    shadow: true
    rules: [{name: burst, capacity: 20, refillPerSecond: 2}, {name: daily, capacity: 100, refill: 100, per: day}]
routes:
  - {method: POST, path: /uploads, shadow: true, rules: [{name: uploads, capacity: 20, refill: 1, per: minute}]}
  - {path: /exports, rules: [{name: exports, capacity: 2, refill: 1, per: hour}]}
`))
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		plan, method, path string
		want               map[string]bool // rule name -> shadow
	}{
		{"free", "GET", "/scores", map[string]bool{"burst": false, "burst-v2": true}},
		{"trial", "GET", "/scores", map[string]bool{"burst": true, "daily": true}},
		{"free", "POST", "/uploads", map[string]bool{"burst": false, "burst-v2": true, "uploads": true}},
		{"trial", "GET", "/exports", map[string]bool{"burst": true, "daily": true, "exports": false}},
	}
	for _, tt := range tests {
		p, _ := c.Plan(tt.plan)
		got := map[string]bool{}
		for _, r := range c.Limits(p, tt.method, tt.path).Rules {
			got[r.Name] = r.Shadow
		}
		if !maps.Equal(got, tt.want) {
			t.Errorf("%s %s %s: shadow by rule %v, want %v", tt.plan, tt.method, tt.path, got, tt.want)
		}
	}
}

// A route rule named like a plan's rule, with its numbers, is the same bucket: it counts
// once, enforced if either enforces it. A rule name used by two routes with the same
// numbers is one bucket too.
func TestRouteRuleSharedWithPlan(t *testing.T) {
	c, err := config.Parse([]byte(`
defaultPlan: free
plans:
  free: [{name: burst, capacity: 10, refillPerSecond: 1}]
  pro: [{name: burst, capacity: 100, refillPerSecond: 50}, {name: daily, capacity: 1000, refill: 1000, per: day}]
routes:
  - {path: /reports/**, rules: [{name: daily, capacity: 1000, refill: 1000, per: day, shadow: true}]}
  - {path: /exports/**, rules: [{name: daily, capacity: 1000, refill: 1000, per: day}]}
`))
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		plan, path string
		want       []string // name:shadow
	}{
		{"pro", "/reports/1", []string{"burst:false", "daily:false"}},
		{"free", "/reports/1", []string{"burst:false", "daily:true"}},
		{"free", "/exports/1", []string{"burst:false", "daily:false"}},
	} {
		p, _ := c.Plan(tt.plan)
		var got []string
		for _, r := range c.Limits(p, "GET", tt.path).Rules {
			got = append(got, fmt.Sprintf("%s:%v", r.Name, r.Shadow))
		}
		if !slices.Equal(got, tt.want) {
			t.Errorf("%s %s: rules %v, want %v", tt.plan, tt.path, got, tt.want)
		}
	}
}

func TestReadFile(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "limits.json")
	if err := os.WriteFile(file, []byte(`{"defaultPlan":"pro","plans":{"pro":[{"name":"b","capacity":5,"refillPerSecond":5}]}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	big := filepath.Join(dir, "big.yaml")
	if err := os.WriteFile(big, make([]byte, config.MaxDocument+1), 0o600); err != nil {
		t.Fatal(err)
	}
	if c, err := config.ReadFile(file); err != nil || c.DefaultPlan().Name != "pro" {
		t.Fatalf("ReadFile = %v, %v; want default plan pro", c, err)
	}
	for path, want := range map[string]string{filepath.Join(dir, "nope.yaml"): "no such file", big: "bytes, want at most"} {
		if _, err := config.ReadFile(path); !errors.Is(err, config.ErrConfig) || !strings.Contains(err.Error(), want) {
			t.Errorf("ReadFile(%s) = %v, want ErrConfig mentioning %q", path, err, want)
		}
	}
}

// TestKeyDigest matches the shell recipe of docs/keys.md: sha256sum, first 32 hex digits.
func TestKeyDigest(t *testing.T) {
	sum := sha256.Sum256([]byte("k"))
	if got, want := bucketgate.KeyDigest("k"), hex.EncodeToString(sum[:])[:bucketgate.DigestLen]; got != want {
		t.Errorf("KeyDigest = %s, want %s", got, want)
	}
}

// FuzzParse: any document is a Config or an ErrConfig error, never a panic; every
// accepted configuration yields valid requests for its plans.
func FuzzParse(f *testing.F) {
	f.Add([]byte(sample))
	f.Add([]byte(`{"defaultPlan":"free","plans":{"free":[{"name":"b","capacity":1,"refillPerSecond":1}]}}`))
	f.Add([]byte("defaultPlan: [\n"))
	f.Add([]byte("plans: {a: [{name: b, capacity: 9e99, refill: -1, per: 0s}]}"))
	f.Add([]byte("defaultPlan: t\nplans: {t: {shadow: true, rules: [{name: b, capacity: 5, refillPerSecond: 1}]}}\nroutes: [{path: /x/../y, shadow: true, rules: [{name: u, capacity: 2, refillPerSecond: 1}]}]"))
	f.Add([]byte("defaultPlan: p\nplans: {p: &r [{name: b, capacity: 0100, refillPerSecond: 1}], q: *r}"))
	f.Add([]byte("defaultPlan: p\nplans: {p: [{name: b, capacity: 5, refillPerSecond: 1}, {name: m, limit: 1000, period: month, anchor: 15}]}\nroutes: [{path: /r, cost: 5, rules: [{name: w, limit: 50, period: week}]}]"))
	f.Add([]byte("defaultPlan: p\nplans: {p: [{name: m, limit: 0, period: day, anchor: 0}], q: [{name: m, capacity: 1, refillPerSecond: 1}]}"))
	f.Add([]byte("defaultPlan: p\nplans: {p: {rules: [&r {name: b, capacity: 5, refillPerSecond: 1e-400, refill: 1e-400, per: day}, *r]}}\nroutes: [{path: /;x/a, rules: [{name: u, capacity: 2, refillPerSecond: 1, refill: -1e-400}]}]"))
	f.Fuzz(func(t *testing.T, doc []byte) {
		c, err := config.Parse(doc)
		if err != nil {
			if !errors.Is(err, config.ErrConfig) {
				t.Fatalf("error without ErrConfig: %v", err)
			}
			return
		}
		for _, name := range c.Plans() {
			p, _ := c.Plan(name)
			l := c.Limits(p, "GET", "/")
			q := bucketgate.Request{Identity: "fuzz", Rules: l.Rules, Cost: l.Cost}
			if err := q.Validate(); err != nil {
				t.Fatalf("accepted config yields an invalid request: %v", err)
			}
		}
	})
}

// A raw API key written where a digest belongs is refused without repeating it: the
// error goes to the function's log at init.
func TestRawKeyNotInError(t *testing.T) {
	for name, entry := range map[string]string{
		"with a plan":                 "bg_s3cr3t-Key_0123456789: free",
		"with a plan that is no text": "bg_s3cr3t-Key_0123456789: [free]",
		"with a plan nobody has":      "bg_s3cr3t-Key_0123456789: gold",
		"given twice":                 "bg_s3cr3t-Key_0123456789: free\n  bg_s3cr3t-Key_0123456789: free",
	} {
		_, err := config.Parse([]byte("defaultPlan: free\n" + free + "\nkeys:\n  " + entry + "\n"))
		if err == nil || strings.Contains(err.Error(), "s3cr3t") || !strings.Contains(err.Error(), "keys (line ") {
			t.Errorf("%s: Parse() = %v, want an error naming keys and its line, without the key", name, err)
		}
	}
}

// madeKey has the shape of the API keys bucketgate makes (bucketgate keys create).
const madeKey = "bg_" + "s3cr3tAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"

// A tenant id that is an API key bucketgate made, which the check function refuses as a
// key, is a secret in the document: an error about its entry names tenants without
// repeating it (the error goes to the function's log at init), and a document that
// loads says so in a caveat, unquoted, counting such entries: they match no check, and
// a running function keeps its other tenants.
func TestMadeKeyTenant(t *testing.T) {
	for name, entry := range map[string]string{
		"with a plan that is no text": madeKey + ": [free]",
		"with a plan nobody has":      madeKey + ": gold",
		"given twice":                 madeKey + ": free\n  " + madeKey + ": free",
		"within a longer id":          "acme/" + madeKey + ": gold",
	} {
		_, err := config.Parse([]byte("defaultPlan: free\n" + free + "\ntenants:\n  " + entry + "\n"))
		if err == nil || strings.Contains(err.Error(), "s3cr3t") || !strings.Contains(err.Error(), "tenants (line ") {
			t.Errorf("%s: Parse() = %v, want an error naming tenants and its line, without the key", name, err)
		}
	}
	for _, tc := range []struct {
		name    string
		tenants string
		want    string // the caveat; "" for none
	}{
		{"no such tenant", "{acme: free}", ""},
		{"one", "{acme: free, " + madeKey + ": free}", "tenants: 1 entry is or holds an API key bucketgate made (bg_..., not shown)"},
		{"two", "{" + madeKey + ": free, " + madeKey[:len(madeKey)-1] + "B: free}", "tenants: 2 entries are or hold API keys bucketgate made (bg_..., not shown)"},
		{"one within a longer id", "{acme: free, 'Bearer " + madeKey + "': free}", "tenants: 1 entry is or holds an API key bucketgate made (bg_..., not shown)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := config.Parse([]byte("defaultPlan: free\n" + free + "\ntenants: " + tc.tenants + "\n"))
			if err != nil {
				t.Fatal(err)
			}
			caveats := strings.Join(c.Caveats(), "\n")
			if strings.Contains(caveats, "s3cr3t") || !strings.Contains(caveats, tc.want) || (tc.want == "") != (caveats == "") {
				t.Errorf("caveats %q: want %q, without the key", caveats, tc.want)
			}
			if _, known := c.PlanForTenant("acme"); tc.name != "two" && !known {
				t.Errorf("tenant acme unknown: want its plan")
			}
		})
	}
}

// A plan's or a route's rule, a plan, or an identity's override named by an API key
// bucketgate made is refused without repeating it, naming where it is: a rule's name
// rests in Redis, the decision log lines and the metrics, a plan's in the log lines
// and the registry, as they are.
func TestMadeKeyNamesRefused(t *testing.T) {
	rule := "{name: " + madeKey + ", capacity: 2, refillPerSecond: 1}"
	for _, tc := range []struct{ name, doc, want string }{
		{"a plan's rule", "defaultPlan: free\nplans: {free: [{name: a, capacity: 2, refillPerSecond: 1}, " + rule + "]}", "plans.free[1] (line 2"},
		{"a plan's rule, within a longer name", "defaultPlan: free\nplans: {free: [{name: a." + madeKey + ", capacity: 2, refillPerSecond: 1}]}", "plans.free[0] (line 2"},
		{"a plan's rule of a bad capacity", "defaultPlan: free\nplans: {free: [{name: " + madeKey + ", capacity: 0, refillPerSecond: 1}]}", "plans.free[0] (line 2"},
		{"a route's rule", "defaultPlan: free\n" + free + "\nroutes: [{path: /x, rules: [" + rule + "]}]", "routes[0].rules[0] (line 3"},
		{"a plan", "defaultPlan: free\nplans: {free: [{name: a, capacity: 2, refillPerSecond: 1}], " + madeKey + ": [{name: a, capacity: 2, refillPerSecond: 1}]}", "plans (line 2"},
		{"a plan of a bad rule", "defaultPlan: free\nplans: {free: [{name: a, capacity: 2, refillPerSecond: 1}], " + madeKey + ": [{name: a, capacity: x, refillPerSecond: 1}]}", "plans (line 2"},
		{"the default plan", "defaultPlan: " + madeKey + "\n" + free, `defaultPlan (line 1, column 14): unknown plan "bg_..."`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := config.Parse([]byte(tc.doc))
			if err == nil || strings.Contains(err.Error(), "s3cr3t") || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Parse() = %v, want an error at %q, without the key", err, tc.want)

			}
		})
	}
	c, err := config.Parse([]byte("defaultPlan: free\n" + free))
	if err != nil {
		t.Fatal(err)
	}
	p, _ := c.Plan("free")
	_, err = c.Override(p, []bucketgate.Rule{{Name: madeKey, Capacity: 2, RefillPerSecond: 1}})
	if err == nil || strings.Contains(err.Error(), "s3cr3t") || !strings.Contains(err.Error(), "rules[0]") {
		t.Fatalf("Override() = %v, want an error at rules[0], without the key", err)
	}
}
