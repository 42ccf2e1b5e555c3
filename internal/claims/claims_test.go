package claims_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/bucketgate/bucketgate"
	"github.com/bucketgate/bucketgate/internal/claims"
	"github.com/bucketgate/bucketgate/internal/config"
)

var (
	digest  = bucketgate.KeyDigest("k")
	key     = bucketgate.Identity{Kind: bucketgate.KindKey, Value: digest}
	account = bucketgate.Identity{Kind: bucketgate.KindAccount, Value: "acme"}
	ip      = bucketgate.Identity{Kind: bucketgate.KindIP, Value: "2001:db8::/64"}
)

// Claims written by Of parse back to themselves, and fit bucketgate.MaxClaims at their
// longest; an account's carry the key that led to it, no other's does.
func TestRoundTrip(t *testing.T) {
	longest := bucketgate.Identity{Kind: bucketgate.KindAccount, Value: strings.Repeat("a", bucketgate.MaxAccountName)}
	tests := []struct {
		name     string
		id, key  bucketgate.Identity
		route    int
		want     claims.Claims
		wantText string
	}{
		{"API key", key, key, 1, claims.Claims{Identity: "key:" + digest, Route: 1}, "a1 key:" + digest + " 1"},
		{"account's key", account, key, 3, claims.Claims{Identity: "acct:acme", Key: "key:" + digest, Route: 3}, "a1 acct:acme 3 key:" + digest},
		{"source", ip, bucketgate.Identity{}, 0, claims.Claims{Identity: "ip:2001:db8::/64"}, "a1 ip:2001:db8::/64 0"},
		{"longest", longest, key, config.MaxRoutes, claims.Claims{Identity: longest.String(), Key: key.String(), Route: config.MaxRoutes}, ""},
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
		{"other version", "a2 key:" + digest + " 1", "not the authorizer's"},
		{"tenant", "a1 tenant:t 1", "want key:, acct: or ip:"},
		{"raw key", "a1 key:my-secret 1", "not one the authorizer writes"},
		{"bad account", "a1 acct:a/b 1 key:" + digest, "not one the authorizer writes"},
		{"account without its key", "a1 acct:acme 1", "only an account's identity has one"},
		{"key with a key", "a1 key:" + digest + " 1 key:" + digest, "only an account's identity has one"},
		{"account's key not a digest", "a1 acct:acme 1 key:x", "want key:<digest>"},
		{"route negative", "a1 ip:1.2.3.4 -1", "want 0 to 100"},
		{"route padded", "a1 ip:1.2.3.4 01", "want 0 to 100"},
		{"route too far", "a1 ip:1.2.3.4 101", "want 0 to 100"},
		{"empty source", "a1 ip: 1", "not one the authorizer writes"},
		{"five parts", "a1 ip:1.2.3.4 1 key:" + digest + " x", "not the authorizer's"},
	} {
		if c, err := claims.Parse(tt.s); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: Parse(%q) = %+v, %v; want an error saying %q", tt.name, tt.s, c, err, tt.want)
		}
	}
}

// FuzzParse: claims come in a caller's reservation id. Whatever they hold, Parse
// returns claims or an error, never a panic, and what it accepts writes back the same.
func FuzzParse(f *testing.F) {
	f.Add("a1 acct:acme 3 key:" + digest)
	f.Add("a1 key:" + digest + " 1")
	f.Add("a1 ip:unknown 0")
	f.Add("a1  0")
	f.Fuzz(func(t *testing.T, s string) {
		c, err := claims.Parse(s)
		if err != nil {
			return
		}
		if back := c.String(); back != s {
			t.Fatalf("Parse(%q) = %+v, which writes %q", s, c, back)
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
