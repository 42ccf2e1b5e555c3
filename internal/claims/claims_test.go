package claims_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/bucketgate/bucketgate"
	"github.com/bucketgate/bucketgate/internal/claims"
	"github.com/bucketgate/bucketgate/internal/config"
	"github.com/bucketgate/bucketgate/internal/registry"
	"github.com/bucketgate/bucketgate/internal/testkit/registrytest"
)

// route is a route's id (config.Limits.Route).
const route = "cb3991b74af151d5"

var (
	digest  = bucketgate.KeyDigest("k")
	key     = bucketgate.Identity{Kind: bucketgate.KindKey, Value: digest}
	account = bucketgate.Identity{Kind: bucketgate.KindAccount, Value: "acme"}
	ip      = bucketgate.Identity{Kind: bucketgate.KindIP, Value: "2001:db8::/64"}
	rolled  = bucketgate.Identity{Kind: bucketgate.KindKey, Value: bucketgate.KeyDigest("old")} // an account made by keys roll spends it
)

// Claims written by Of parse back to themselves, and fit bucketgate.MaxClaims at their
// longest; an account's, and a key's that another key spends, carry the key that led to
// it, no other's does.
func TestRoundTrip(t *testing.T) {
	longest := bucketgate.Identity{Kind: bucketgate.KindAccount, Value: strings.Repeat("a", bucketgate.MaxAccountName)}
	tests := []struct {
		name     string
		id, key  bucketgate.Identity
		route    string
		want     claims.Claims
		wantText string
	}{
		{"API key", key, key, route, claims.Claims{Identity: "key:" + digest, Route: route}, "a2 key:" + digest + " " + route},
		{"account's key", account, key, route, claims.Claims{Identity: "acct:acme", Key: "key:" + digest, Route: route}, "a2 acct:acme " + route + " key:" + digest},
		{"source, no route", ip, bucketgate.Identity{}, "", claims.Claims{Identity: "ip:2001:db8::/64"}, "a2 ip:2001:db8::/64 -"},
		{"source of an unknown key", ip, key, route, claims.Claims{Identity: "ip:2001:db8::/64", Route: route}, "a2 ip:2001:db8::/64 " + route},
		{"a key spending a rolled key's buckets", rolled, key, route, claims.Claims{Identity: rolled.String(), Key: "key:" + digest, Route: route}, "a2 " + rolled.String() + " " + route + " key:" + digest},
		{"longest", longest, key, route, claims.Claims{Identity: longest.String(), Key: key.String(), Route: route}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := claims.Of(tt.id, tt.key, config.Limits{Route: tt.route})
			s := c.String()
			if c != tt.want || tt.wantText != "" && s != tt.wantText || len(s) > bucketgate.MaxClaims {
				t.Fatalf("Of = %+v (%q, %d bytes), want %+v (%q, at most %d bytes)", c, s, len(s), tt.want, tt.wantText, bucketgate.MaxClaims)
			}
			if back, err := claims.Parse(s); err != nil || back != c {
				t.Fatalf("Parse(%q) = %+v, %v", s, back, err)
			}
		})
	}
}

// Parse refuses what the authorizer never writes, naming it.
func TestParseRefuses(t *testing.T) {
	for _, tt := range []struct{ name, s, want string }{
		{"empty", "", "not the authorizer's"},
		{"other version", "a3 key:" + digest + " " + route, "not the authorizer's"},
		{"the route's place (a1, before 0.3.0)", "a1 key:" + digest + " 1", "not the authorizer's"},
		{"tenant", "a2 tenant:t " + route, "want key:, acct: or ip:"},
		{"raw key", "a2 key:my-secret " + route, "not one the authorizer writes"},
		{"bad account", "a2 acct:a/b " + route + " key:" + digest, "not one the authorizer writes"},
		{"account without its key", "a2 acct:acme " + route, "without its API key"},
		{"key with itself", "a2 key:" + digest + " " + route + " key:" + digest, "only an account's identity, or a key's that another key spends"},
		{"source with a key", "a2 ip:1.2.3.4 " + route + " key:" + digest, "only an account's identity, or a key's that another key spends"},
		{"account's key not a digest", "a2 acct:acme " + route + " key:x", "want key:<digest>"},
		{"route a place", "a2 ip:1.2.3.4 1", "route \"1\": want 16 lowercase hex digits, or - for none"},
		{"route in upper case", "a2 ip:1.2.3.4 CB3991B74AF151D5", "want 16 lowercase hex digits"},
		{"route too short", "a2 ip:1.2.3.4 " + route[1:], "want 16 lowercase hex digits"},
		{"route too long", "a2 ip:1.2.3.4 " + route + "0", "want 16 lowercase hex digits"},
		{"route not hex", "a2 ip:1.2.3.4 cb3991b74af151dg", "want 16 lowercase hex digits"},
		{"route empty", "a2 ip:1.2.3.4 ", "want 16 lowercase hex digits"},
		{"key empty", "a2 ip:1.2.3.4 - ", `key "": want key:<digest>`},
		{"empty source", "a2 ip: -", "not one the authorizer writes"},
		{"five parts", "a2 ip:1.2.3.4 - key:" + digest + " x", "not the authorizer's"},
	} {
		if c, err := claims.Parse(tt.s); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: Parse(%q) = %+v, %v; want an error saying %q", tt.name, tt.s, c, err, tt.want)
		}
	}
}

// FuzzParse: claims come in a caller's reservation id. Whatever they hold, Parse
// returns claims or an error, never a panic; what it accepts writes back the same, and
// names a route by an id of config.RouteIDLen digits, or none.
func FuzzParse(f *testing.F) {
	f.Add("a2 acct:acme " + route + " key:" + digest)
	f.Add("a2 key:" + digest + " " + route)
	f.Add("a2 ip:unknown -")
	f.Add("a2  -")
	f.Add("a1 key:" + digest + " 1")
	f.Fuzz(func(t *testing.T, s string) {
		c, err := claims.Parse(s)
		if err != nil {
			return
		}
		if back := c.String(); back != s {
			t.Fatalf("Parse(%q) = %+v, which writes %q", s, c, back)
		}
		if c.Route != "" && len(c.Route) != config.RouteIDLen {
			t.Fatalf("Parse(%q) = %+v: a route no configuration names", s, c)
		}
	})
}

// Read refuses, as ErrNone, an id that carries no claims the authorizer writes: a check
// function's (none), or one that is no id at all. (The ids the authorizer makes are read
// back by the tests of internal/check and internal/authorizer, on real servers.)
func TestReadRefuses(t *testing.T) {
	for _, id := range []string{"", "r2.YmEbG7KPIb9rHudxkgGlbAAAAAAAAA-gAAABlVGYceA.JeiHLzs3l2vW53uJpOkaZA", "r2.!.x", "not an id"} {
		if c, err := claims.Read(id); !errors.Is(err, claims.ErrNone) {
			t.Errorf("Read(%q) = %+v, %v; want ErrNone", id, c, err)
		}
	}
}

// A release refused because its key was revoked, or now spends another identity's
// buckets, says what becomes of the lease: it holds its slot until its ttl. It said, as
// a settle's refusal does, that "the reservation ... stays charged at its estimate",
// which a lease is not. A refusal because the key's account is no longer active names
// the account, not the key: it said the key was no longer registered, which an
// operator checking the key (active) could not square.
func TestResolveRefusalSaysWhatIsLeft(t *testing.T) {
	cfg, err := config.Parse([]byte("defaultPlan: free\nplans:\n  free: [{name: burst, capacity: 10, refillPerSecond: 1}, {name: streams, concurrency: 2}]\n"))
	if err != nil {
		t.Fatal(err)
	}
	moved, active, lone := bucketgate.KeyDigest("moved"), bucketgate.KeyDigest("active"), bucketgate.KeyDigest("lone")
	src := registrytest.New(
		registry.Record{ID: "account:acme", Plan: "free", Status: registry.StatusRevoked},
		registry.Record{ID: "account:other", Plan: "free"},
		registry.Record{ID: "key:" + digest, Account: "acme", Status: registry.StatusRevoked},
		registry.Record{ID: "key:" + moved, Account: "other"},
		registry.Record{ID: "key:" + active, Account: "acme"},
		registry.Record{ID: "key:" + lone, Plan: "free", Status: registry.StatusRevoked},
	)
	v, _ := registry.NewStatic(cfg, registry.NewCache(src, registry.Options{Size: 10})).Current(context.Background())
	revokedKey := claims.Claims{Identity: account.String(), Key: key.String()}
	movedKey := claims.Claims{Identity: account.String(), Key: "key:" + moved}
	activeKey := claims.Claims{Identity: account.String(), Key: "key:" + active}
	loneKey := claims.Claims{Identity: "key:" + lone}
	for _, tc := range []struct {
		name      string
		c         claims.Claims
		op        bucketgate.Op
		want, not string
	}{
		{"a settle of a revoked key's reservation", loneKey, bucketgate.OpSettle, "the reservation's key:" + lone + " is no longer registered: it stays charged at its estimate", "lease"},
		{"a release of a revoked key's lease", loneKey, bucketgate.OpRelease, "the lease's key:" + lone + " is no longer registered: it frees itself at its ttl", "estimate"},
		{"a settle of a revoked account's revoked key's reservation", revokedKey, bucketgate.OpSettle, "the reservation's account acme is no longer active (revoked, expired or unusable): it stays charged at its estimate", "registered"},
		{"a settle of a revoked account's key's reservation", activeKey, bucketgate.OpSettle, "the reservation's account acme is no longer active (revoked, expired or unusable): it stays charged at its estimate", "registered"},
		{"a release of a revoked account's key's lease", activeKey, bucketgate.OpRelease, "the lease's account acme is no longer active (revoked, expired or unusable): it frees itself at its ttl", "registered"},
		{"a cancel of a moved key's reservation", movedKey, bucketgate.OpCancel, "the reservation's key:" + moved + " now spends the buckets of acct:other, not acct:acme: it stays charged at its estimate", "lease"},
		{"a release of a moved key's lease", movedKey, bucketgate.OpRelease, "the lease's key:" + moved + " now spends the buckets of acct:other, not acct:acme: it frees itself at its ttl", "estimate"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, _, err := claims.Resolve(context.Background(), v, tc.c, tc.op)
			if !errors.Is(err, bucketgate.ErrConflict) || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), tc.not) {
				t.Errorf("Resolve: %v, want a conflict saying %q, without %q", err, tc.want, tc.not)
			}
		})
	}
}
