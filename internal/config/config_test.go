package config_test

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bucketgate/bucketgate/internal/bucket"
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
`

func TestDefault(t *testing.T) {
	c := config.Default()
	want := map[string]bucket.Rule{
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
	if p, known := c.PlanForKey(config.KeyDigest("anything")); known || p.Name != "free" || c.RefuseUnknownKeys() || c.RefuseAnonymous() {
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

func TestParseErrorsNameTheField(t *testing.T) {
	tests := []struct{ name, doc, want string }{
		{"empty", ``, "document is empty"},
		{"unknown field", "defaultPlan: free\nplanz: {}\n", "field planz not found"},
		{"no plans", "defaultPlan: free\n", "plans: at least one plan"},
		{"no default plan", "plans: {free: [{name: b, capacity: 1, refillPerSecond: 1}]}", "defaultPlan: required"},
		{"unknown default plan", "defaultPlan: gold\nplans: {free: [{name: b, capacity: 1, refillPerSecond: 1}]}", `defaultPlan: unknown plan "gold"`},
		{"plan without rules", "defaultPlan: free\nplans: {free: []}", "plans.free: at least one rule"},
		{"bad capacity", "defaultPlan: free\nplans: {free: [{name: b, capacity: 0, refillPerSecond: 1}]}", "plans.free[0]: invalid: rule b: capacity 0"},
		{"fractional capacity", "defaultPlan: free\nplans: {free: [{name: b, capacity: 1.5, refillPerSecond: 1}]}", `"1.5": want a whole number`},
		{"no rate", "defaultPlan: free\nplans: {free: [{name: b, capacity: 1}]}", "plans.free[0]: refillPerSecond (or refill with per) is required"},
		{"both rates", "defaultPlan: free\nplans: {free: [{name: b, capacity: 1, refillPerSecond: 1, refill: 1, per: day}]}", "plans.free[0]: give refillPerSecond or refill with per, not both"},
		{"bad period", "defaultPlan: free\nplans: {free: [{name: b, capacity: 1, refill: 1, per: fortnight}]}", `plans.free[0]: per "fortnight"`},
		{"raw key", "defaultPlan: free\nplans: {free: [{name: b, capacity: 1, refillPerSecond: 1}]}\nkeys: {my-secret: free}", "keys.my-secret: want a key digest"},
		{"key to unknown plan", "defaultPlan: free\nplans: {free: [{name: b, capacity: 1, refillPerSecond: 1}]}\nkeys: {0123456789abcdef0123456789abcdef: gold}", `keys.0123456789abcdef0123456789abcdef: unknown plan "gold"`},
		{"tenant to unknown plan", "defaultPlan: free\nplans: {free: [{name: b, capacity: 1, refillPerSecond: 1}]}\ntenants: {t1: gold}", `tenants.t1: unknown plan "gold"`},
		{"bad policy", "defaultPlan: free\nunknownKeys: maybe\nplans: {free: [{name: b, capacity: 1, refillPerSecond: 1}]}", `unknownKeys: "maybe"`},
		{"unknownKeys default is gone", "defaultPlan: free\nunknownKeys: default\nplans: {free: [{name: b, capacity: 1, refillPerSecond: 1}]}", `unknownKeys: "default": want "ip" or "refuse"`},
		{"anonymous ip is not a policy", "defaultPlan: free\nanonymous: ip\nplans: {free: [{name: b, capacity: 1, refillPerSecond: 1}]}", `anonymous: "ip": want "default" or "refuse"`},
		{"route cost above capacity", "defaultPlan: free\nplans: {free: [{name: b, capacity: 2, refillPerSecond: 1}]}\nroutes: [{path: /x, cost: 3}]", "routes[0] with plans.free: invalid: cost 3 exceeds capacity 2 of rule b"},
		{"route rule clashes with plan rule", "defaultPlan: free\nplans: {free: [{name: b, capacity: 2, refillPerSecond: 1}]}\nroutes: [{path: /x, rules: [{name: b, capacity: 2, refillPerSecond: 1}]}]", "rule b appears twice"},
		{"route path", "defaultPlan: free\nplans: {free: [{name: b, capacity: 2, refillPerSecond: 1}]}\nroutes: [{path: x}]", `routes[0]: path "x"`},
		{"route rest not last", "defaultPlan: free\nplans: {free: [{name: b, capacity: 2, refillPerSecond: 1}]}\nroutes: [{path: /a/**/b}]", "** must be the last segment"},
		{"route method", "defaultPlan: free\nplans: {free: [{name: b, capacity: 2, refillPerSecond: 1}]}\nroutes: [{method: FETCH, path: /a}]", `routes[0]: method "FETCH"`},
		{"two documents", "defaultPlan: free\nplans: {free: [{name: b, capacity: 2, refillPerSecond: 1}]}\n---\ndefaultPlan: x\n", "more than one document"},
		{"json unknown field", `{"defaultPlan":"free","plans":{"free":[{"name":"b","capacity":1,"refillPerSecond":1,"burst":2}]}}`, "field burst not found"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := config.Parse([]byte(tt.doc))
			if !errors.Is(err, config.ErrConfig) || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Parse() = %v, want ErrConfig mentioning %q", err, tt.want)
			}
		})
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

// TestKeyDigest matches the README's shell recipe: sha256sum, first 32 hex digits.
func TestKeyDigest(t *testing.T) {
	sum := sha256.Sum256([]byte("k"))
	if got, want := config.KeyDigest("k"), hex.EncodeToString(sum[:])[:config.DigestLen]; got != want {
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
			q := bucket.Request{Identity: "fuzz", Rules: l.Rules, Cost: l.Cost}
			if err := q.Validate(); err != nil {
				t.Fatalf("accepted config yields an invalid request: %v", err)
			}
		}
	})
}
