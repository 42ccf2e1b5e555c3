package registry_test

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/bucketgate/bucketgate"
	"github.com/bucketgate/bucketgate/checkapi"
	"github.com/bucketgate/bucketgate/internal/config"
	"github.com/bucketgate/bucketgate/internal/registry"
	"github.com/bucketgate/bucketgate/internal/testkit/registrytest"
)

// planRules is how many rules sizeDocument's plan has: with a route's, a request's
// most (bucketgate.MaxRules).
const planRules = bucketgate.MaxRules - 1

// planRule and routeRule name the i-th rule of sizeDocument's plan and the rule of its
// i-th route, with the longest names.
func planRule(i int) string  { return fmt.Sprintf("plan%0*d", bucketgate.MaxRuleName-4, i) }
func routeRule(i int) string { return fmt.Sprintf("route%0*d", bucketgate.MaxRuleName-5, i) }

// sizeDocument is a configuration at the document's limits where an entry's size
// could grow: a plan of planRules rules, and config.MaxRoutes routes that each add a
// rule of their own.
func sizeDocument(tb testing.TB) *config.Config {
	tb.Helper()
	var doc strings.Builder
	doc.WriteString("defaultPlan: big\nplans:\n  big:\n")
	for i := range planRules {
		fmt.Fprintf(&doc, "    - {name: %s, capacity: 1000, refillPerSecond: 1}\n", planRule(i))
	}
	doc.WriteString("routes:\n")
	for i := range config.MaxRoutes {
		fmt.Fprintf(&doc, "  - {path: /route%d/**, rules: [{name: %s, capacity: 100, refillPerSecond: 1}]}\n", i, routeRule(i))
	}
	c, err := config.Parse([]byte(doc.String()))
	if err != nil {
		tb.Fatal(err)
	}
	return c
}

// copying is a registry.Source whose every read returns a record of its own, as one
// decoded from a DynamoDB item is: the entries built from it keep its strings alone.
// Its records have own rules of their own: the first replace the plan's rules, the
// rest the routes'. With account, they are keys of that account, with an owner, and
// the account is on the plan, or has accountOwn rules of its own. With owner, each record
// has an owner of that many bytes.
type copying struct {
	own        int
	account    string
	accountOwn int
	owner      int
}

func (s copying) Get(_ context.Context, id string) (registry.Record, bool, error) {
	if strings.HasPrefix(id, registry.AccountItemPrefix) {
		return registry.Record{ID: strings.Clone(id), Plan: "big", Owner: "Acme Corp", Rules: ownRules(s.accountOwn)}, true, nil
	}
	r := registry.Record{ID: strings.Clone(id), Plan: strings.Clone("big")}
	if s.account != "" {
		r.Plan, r.Account, r.Owner = "", strings.Clone(s.account), strings.Clone("Acme Corp")
	}
	if s.owner > 0 {
		r.Owner = strings.Repeat("o", s.owner)
	}
	r.Rules = ownRules(s.own)
	return r, true, nil
}

// ownRules returns n rules of a record's own, each in a slice and strings of its own: the
// first replace the plan's rules, the rest the routes'.
func ownRules(n int) []bucketgate.Rule {
	var rules []bucketgate.Rule
	for i := range n {
		name := planRule(i)
		if i >= planRules {
			name = routeRule(i - planRules)
		}
		rules = append(rules, bucketgate.Rule{Name: strings.Clone(name), Capacity: 10, RefillPerSecond: 1})
	}
	return rules
}

// entryBytes fills a registry cache with n entries read from src, under ids made by
// id, and returns the heap they take per entry (read after a collection: a bound, not
// an exact figure).
func entryBytes(tb testing.TB, cfg *config.Config, src registry.Source, n int, id func(i int) string) float64 {
	tb.Helper()
	return heapPer(tb, registry.NewCache(src, registry.Options{TTL: time.Hour, Size: n}), n, func(c *registry.Cache, i int) {
		if e, err := c.Lookup(context.Background(), cfg, id(i)); err != nil || e.Plan == nil {
			tb.Fatalf("lookup %d: %+v, %v", i, e, err)
		}
	})
}

// heapPer returns the heap that c takes more after fill(c, i) for each i below n, per
// i (read after a collection: a bound, not an exact figure).
func heapPer(tb testing.TB, c *registry.Cache, n int, fill func(c *registry.Cache, i int)) float64 {
	tb.Helper()
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	for i := range n {
		fill(c, i)
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	runtime.KeepAlive(c)
	return float64(int64(after.HeapAlloc)-int64(before.HeapAlloc)) / float64(n)
}

// Bounds of the heap of a hold, which a read that failed keeps for an identity with no
// entry (registry.RetryAfterFailure), as many as the cache's size at most, beside the
// entries: an API key's, and the longest tenant key's.
const (
	maxKeyHoldBytes    = 160
	maxTenantHoldBytes = 1280
)

// TestCacheHoldBytesBound: a flood of made-up keys while the table fails fills the
// holds, up to the cache's size, each within its bound, as keys.md counts them beside
// the entries: what such a flood may take more than the entries do.
func TestCacheHoldBytesBound(t *testing.T) {
	cfg := sizeDocument(t)
	const n = 10000
	for _, tc := range []struct {
		name string
		id   func(i int) string
		max  float64
	}{
		{"API keys", apiKeyID, maxKeyHoldBytes},
		{"tenants of the longest key", tenantID, maxTenantHoldBytes},
	} {
		t.Run(tc.name, func(t *testing.T) {
			src := registrytest.New()
			src.Fail(errors.New("throttled"))
			c := registry.NewCache(src, registry.Options{TTL: time.Hour, Size: n})
			per := heapPer(t, c, 2*n, func(c *registry.Cache, i int) {
				if _, err := c.Lookup(context.Background(), cfg, tc.id(i)); err == nil {
					t.Fatalf("lookup %d with the table failing: no error", i)
				}
			}) * 2 // per hold: the second n took the places of the first
			if holds := registry.HoldsOf(c); holds != n {
				t.Fatalf("%d holds, want the cache's size, %d", holds, n)
			}
			t.Logf("%d holds, %.0f bytes each", n, per)
			if per > tc.max {
				t.Errorf("a hold takes %.0f bytes, want at most %.0f", per, tc.max)
			}
		})
	}
}

// Bounds of a registry cache entry's heap, as settings.MaxRegistryCacheSize states
// them, whatever the routes: the worst entry (a tenant's 1,000-byte key with 8 rules of
// its own, all with the longest names, and an owner of registry.MaxOwner bytes, the
// most an entry keeps), an API key on its plan alone, and one with such an owner.
const (
	maxEntryBytes       = 3<<10 + 256
	maxPlainEntryBytes  = 320
	maxOwnedEntryBytes  = 512
	maxMemberEntryBytes = 640
)

// apiKeyID is the identity of the i-th API key: key:<32 hex digits>.
func apiKeyID(i int) string { return fmt.Sprintf("key:%032x", i) }

// tenantID is the identity of the i-th tenant with the longest key.
func tenantID(i int) string { return fmt.Sprintf("tenant:%0*d", checkapi.MaxKey, i) }

// BenchmarkCacheEntryBytes reports the heap a registry cache entry takes (B/entry), for
// an API key on its plan alone and with bucketgate.MaxRules rules of its own, under a plan
// of 7 rules and config.MaxRoutes routes that each add one (the longest names
// throughout): make bench prints it. Run it alone with
// go test -run '^$' -bench CacheEntryBytes -benchtime 1x ./internal/registry
func BenchmarkCacheEntryBytes(b *testing.B) {
	cfg := sizeDocument(b)
	const entries = 2000
	for _, tc := range []struct {
		name    string
		own     int
		account string
	}{{"plan", 0, ""}, {"own-rules", bucketgate.MaxRules, ""}, {"account", 0, accountName}} {
		b.Run(tc.name, func(b *testing.B) {
			var per float64
			for b.Loop() {
				per = entryBytes(b, cfg, copying{own: tc.own, account: tc.account}, entries, apiKeyID)
			}
			b.ReportMetric(per, "B/entry")
		})
	}
}

// TestCacheEntryBytesBound: an entry's size does not grow with the routes. The worst
// entry (a tenant's 1,000-byte key, 8 rules of its own, all with the longest names, the
// longest owner kept, a plan of 7 rules and 100 routes that each add one) takes at most
// maxEntryBytes; an API key on its plan alone at most maxPlainEntryBytes, with an owner
// at most maxOwnedEntryBytes, however long its item's owner; a key of an account, with the
// longest name and with or without rules of the account's own, at most maxMemberEntryBytes
// (the keys of an account share its rules). An identity's plan with its own
// rules shares the document's route table instead of a merged copy of every route's
// rules (which took 36 KB with these 100 routes).
func TestCacheEntryBytesBound(t *testing.T) {
	cfg := sizeDocument(t)
	const entries = 2000
	if got := entryBytes(t, cfg, copying{own: bucketgate.MaxRules, owner: registry.MaxOwner}, entries, tenantID); got > maxEntryBytes {
		t.Errorf("the worst entry takes %.0f bytes, want at most %d", got, maxEntryBytes)
	}
	if got := entryBytes(t, cfg, copying{}, entries, apiKeyID); got > maxPlainEntryBytes {
		t.Errorf("an API key on its plan alone takes %.0f bytes, want at most %d", got, maxPlainEntryBytes)
	}
	if got := entryBytes(t, cfg, copying{account: accountName}, entries, apiKeyID); got > maxMemberEntryBytes {
		t.Errorf("an API key of an account with the longest name takes %.0f bytes, want at most %d", got, maxMemberEntryBytes)
	}
	if got := entryBytes(t, cfg, copying{account: accountName, accountOwn: bucketgate.MaxRules}, entries, apiKeyID); got > maxMemberEntryBytes {
		t.Errorf("an API key of an account with %d rules of its own takes %.0f bytes, want at most %d (its keys share the account's rules)", bucketgate.MaxRules, got, maxMemberEntryBytes)
	}
	for _, owner := range []int{registry.MaxOwner, 64 << 10} { // cut to MaxOwner bytes: the entry holds no more of it
		if got := entryBytes(t, cfg, copying{owner: owner}, entries/10, apiKeyID); got > maxOwnedEntryBytes {
			t.Errorf("an API key with an owner of %d bytes takes %.0f bytes, want at most %d", owner, got, maxOwnedEntryBytes)
		}
	}
}

// accountName is the longest account name.
var accountName = strings.Repeat("a", bucketgate.MaxAccountName)
