package main

import (
	"cmp"
	"errors"
	"strings"
	"testing"

	"github.com/bucketgate/bucketgate"
	"github.com/bucketgate/bucketgate/checkapi"
	"github.com/bucketgate/bucketgate/internal/identity"
	"github.com/bucketgate/bucketgate/internal/settings"
)

func sourcesOf(t *testing.T, ipv6Prefix int) sources {
	t.Helper()
	r, err := identity.NewResolver(settings.DefaultAPIKeyHeader, ipv6Prefix)
	if err != nil {
		t.Fatal(err)
	}
	return sources{resolver: r, ipv6Prefix: ipv6Prefix}
}

// IDENTITY names the authorizer's identities as the authorizer spells them (an address
// through internal/identity, as the authorizer resolves it), a tenant, or an API key by
// its digest.
func TestParseTarget(t *testing.T) {
	digest := bucketgate.KeyDigest("bg_secret")
	tests := []struct {
		name, arg  string
		ipv6Prefix int // 0: settings.DefaultIPv6Prefix
		want       string
	}{
		{name: "API key", arg: "bg_secret", want: "key:" + digest},
		{name: "API key with blanks around it, as the authorizer trims it", arg: " bg_secret\t", want: "key:" + digest},
		{name: "key digest", arg: "key:" + digest, want: "key:" + digest},
		{name: "a word is a key", arg: "unknown", want: "key:" + bucketgate.KeyDigest("unknown")},
		{name: "text with a blank before a colon is a key", arg: "my key:x", want: "key:" + bucketgate.KeyDigest("my key:x")},
		{name: "IPv4", arg: "203.0.113.10", want: "ip:203.0.113.10"},
		{name: "ip: IPv4", arg: "ip:203.0.113.10", want: "ip:203.0.113.10"},
		{name: "IPv4 /32", arg: "203.0.113.10/32", want: "ip:203.0.113.10"},
		{name: "IPv4-mapped IPv6", arg: "::ffff:203.0.113.10", want: "ip:203.0.113.10"},
		{name: "IPv6 by its /64", arg: "2001:db8:1:2:aaaa::99", want: "ip:2001:db8:1:2::/64"},
		{name: "ip: IPv6", arg: "ip:2001:DB8:1:2::99", want: "ip:2001:db8:1:2::/64"},
		{name: "IPv6 with a zone", arg: "fe80::1%eth0", want: "ip:fe80::/64"},
		{name: "IPv6 prefix", arg: "ip:2001:db8:1:2::/64", want: "ip:2001:db8:1:2::/64"},
		{name: "IPv6 prefix with host bits", arg: "2001:db8:1:2:ff::/64", want: "ip:2001:db8:1:2::/64"},
		{name: "IPv6 by its /56", arg: "2001:db8:1:2::99", ipv6Prefix: 56, want: "ip:2001:db8:1::/56"},
		{name: "IPv6 one by one", arg: "2001:db8:1:2::99", ipv6Prefix: 128, want: "ip:2001:db8:1:2::99"},
		{name: "the unknown source", arg: "ip:unknown", want: "ip:unknown"},
		{name: "tenant", arg: "tenant:acme svc", want: "tenant:acme svc"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := parseTarget(tc.arg, sourcesOf(t, cmp.Or(tc.ipv6Prefix, settings.DefaultIPv6Prefix)))
			if err != nil {
				t.Fatal(err)
			}
			want := checkapi.Request{Identity: tc.want}
			if got.id != tc.want || got.req.Identity != want.Identity || got.req.Key != want.Key {
				t.Fatalf("parseTarget(%q) = %+v, want id %s, request %+v", tc.arg, got, tc.want, want)
			}
		})
	}
}

// Anything else is a usage error naming the problem, never quoting what may be a key.
func TestParseTargetRefuses(t *testing.T) {
	tests := []struct{ name, arg, want string }{
		{"empty", "", "IDENTITY is empty"},
		{"blank", " \t", "IDENTITY is empty"},
		{"empty tenant", "tenant:", "tenant: with no tenant key"},
		{"tenant holding an API key bucketgate made", "tenant:acme/bg_" + strings.Repeat("A", 43), "tenant: a tenant key that is or holds an API key bucketgate made (bg_...)"},
		{"key: with a raw key", "key:bg_secret", "key: wants the key's digest, 32 lowercase hex digits"},
		{"key: with an upper-case digest", "key:" + strings.ToUpper(bucketgate.KeyDigest("k")), "key: wants the key's digest"},
		{"unknown kind", "user:bob", "unknown kind before ':'"},
		{"mistyped IPv4", "203.0.113.300", "looks like an IP address but is not one"},
		{"IPv4 with leading zeros", "192.000.2.1", "looks like an IP address"},
		{"mistyped IPv6", "2001:db8::zz", "looks like an IP address"},
		{"ip: not an address", "ip:nowhere", "ip:nowhere: not an IP address"},
		{"ip: empty", "ip:", "ip:: not an IP address"},
		{"IPv4 prefix", "203.0.113.0/24", "IPv4 sources count one by one"},
		{"IPv6 prefix of another length", "2001:db8::/48", "groups IPv6 sources by /64 (IPV6_PREFIX_LENGTH)"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := parseTarget(tc.arg, sourcesOf(t, settings.DefaultIPv6Prefix))
			if !errors.Is(err, errUsage) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("parseTarget(%q) = %+v, %v; want a usage error mentioning %q", tc.arg, got, err, tc.want)
			}
		})
	}
	if _, err := parseTarget("key:bg_secret", sourcesOf(t, settings.DefaultIPv6Prefix)); strings.Contains(err.Error(), "bg_secret") {
		t.Fatalf("the error quotes the key: %v", err)
	}
}
