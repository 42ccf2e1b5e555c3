package main

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/bucketgate/bucketgate"
	"github.com/bucketgate/bucketgate/checkapi"
)

// bucketgate usage ID takes every ID the design names (a key, key:<digest>,
// acct:<name>, tenant:<key>, ip:<address>; and a bare address, an IPv6 one standing for
// its prefix as the authorizer groups it), and reports the usage the functions counted
// under it: the authorizer's of a source address and of a key of an account, the check
// function's of a tenant.
func TestUsageOfEveryKindOfID(t *testing.T) {
	d, _ := newDeployment(t)
	for _, source := range []string{"198.51.100.9", "198.51.100.9", "2001:db8:1:2::5", "2001:db8:1:2::6"} {
		d.authz.decideFrom(t, "", source)
	}
	d.ok("accounts", "create", "acme", "--plan", "gold")
	member := strings.TrimSpace(d.ok("keys", "create", "--account", "acme"))
	d.authz.decide(t, member)
	lone := strings.TrimSpace(d.ok("keys", "create", "--plan", "gold"))
	for range 3 {
		d.authz.decide(t, lone)
	}
	d.ok("keys", "create", "--tenant", "t-usage", "--plan", "gold")
	if _, err := d.check.Invoke(context.Background(), []byte(`{"key":"t-usage","cost":2}`)); err != nil {
		t.Fatal(err)
	}
	loneID := "key:" + bucketgate.KeyDigest(lone)
	tests := []struct {
		name, id, identity string
		want               checkapi.UsageCounts
	}{
		{"an IPv4 address", "ip:198.51.100.9", "ip:198.51.100.9", checkapi.UsageCounts{Allowed: 2, Cost: 2}},
		{"a bare IPv4 address", "198.51.100.9", "ip:198.51.100.9", checkapi.UsageCounts{Allowed: 2, Cost: 2}},
		{"an IPv6 address of the prefix", "ip:2001:db8:1:2::7", "ip:2001:db8:1:2::/64", checkapi.UsageCounts{Allowed: 2, Cost: 2}},
		{"the IPv6 prefix", "2001:db8:1:2::/64", "ip:2001:db8:1:2::/64", checkapi.UsageCounts{Allowed: 2, Cost: 2}},
		{"an account", "acct:acme", "acct:acme", checkapi.UsageCounts{Allowed: 1, Cost: 1}},
		{"a key of the account", member, "acct:acme", checkapi.UsageCounts{Allowed: 1, Cost: 1}},
		{"a lone key", lone, loneID, checkapi.UsageCounts{Allowed: 3, Cost: 3}},
		{"a lone key's digest", loneID, loneID, checkapi.UsageCounts{Allowed: 3, Cost: 3}},
		{"a tenant", "tenant:t-usage", "tenant:t-usage", checkapi.UsageCounts{Allowed: 1, Cost: 2}},
		{"an address nobody used", "ip:192.0.2.1", "ip:192.0.2.1", checkapi.UsageCounts{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var u checkapi.Usage
			if err := json.Unmarshal([]byte(d.ok("usage", "--json", tt.id)), &u); err != nil {
				t.Fatal(err)
			}
			if u.Identity != tt.identity || u.From != u.To || len(u.Days) != 1 || u.Days[0].UsageCounts != tt.want || u.Total != tt.want {
				t.Fatalf("usage %s = %+v; want %s's, %+v today", tt.id, u, tt.identity, tt.want)
			}
		})
	}
}
