package identity_test

import (
	"cmp"
	"strings"
	"testing"

	"github.com/bucketgate/bucketgate/internal/config"
	"github.com/bucketgate/bucketgate/internal/identity"
	"github.com/bucketgate/bucketgate/internal/settings"
)

const rawKey = "sk-live-Secret{}:key"

func TestResolve(t *testing.T) {
	digest := config.KeyDigest(rawKey)
	tests := []struct {
		name     string
		header   string
		headers  map[string]string
		sourceIP string
		want     string
	}{
		{"default header exact case", "", map[string]string{"X-API-Key": rawKey}, "192.0.2.1", "key:" + digest},
		{"header lower case (HTTP API)", "", map[string]string{"x-api-key": rawKey}, "192.0.2.1", "key:" + digest},
		{"header odd case", "", map[string]string{"X-Api-KEY": rawKey}, "192.0.2.1", "key:" + digest},
		{"key trimmed", "", map[string]string{"x-api-key": " \t" + rawKey + " "}, "192.0.2.1", "key:" + digest},
		{"custom header", "Authorization-Key", map[string]string{"authorization-key": rawKey, "X-API-Key": "other"}, "192.0.2.1", "key:" + digest},
		{"custom header ignores default", "Authorization-Key", map[string]string{"X-API-Key": rawKey}, "192.0.2.1", "ip:192.0.2.1"},
		{"no key: IPv4", "", map[string]string{"Accept": "*/*"}, "192.0.2.1", "ip:192.0.2.1"},
		{"blank key: IP", "", map[string]string{"X-API-Key": "  "}, "192.0.2.1", "ip:192.0.2.1"},
		{"nil headers", "", nil, "192.0.2.1", "ip:192.0.2.1"},
		{"IPv6 canonical", "", nil, "2001:DB8:0:0::1", "ip:2001:db8::1"},
		{"IPv4-mapped IPv6", "", nil, "::ffff:192.0.2.7", "ip:192.0.2.7"},
		{"zone dropped", "", nil, "fe80::1%eth0", "ip:fe80::1"},
		{"placeholder source", "", nil, "...", "ip:" + identity.UnknownAddr},
		{"missing source", "", nil, "", "ip:" + identity.UnknownAddr},
		{"forwarded list is not an IP", "", nil, "192.0.2.1, 10.0.0.1", "ip:" + identity.UnknownAddr},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r, err := identity.NewResolver(cmp.Or(tc.header, settings.DefaultAPIKeyHeader))
			if err != nil {
				t.Fatal(err)
			}
			got := r.Resolve(tc.headers, tc.sourceIP).String()
			if got != tc.want {
				t.Fatalf("Resolve = %q, want %q", got, tc.want)
			}
			if strings.Contains(got, rawKey) {
				t.Fatalf("identity %q holds the raw key", got)
			}
		})
	}
}

// An address can never produce a key's identity and the other way round, whatever the
// text: the kinds are distinct prefixes and the key side is always a hex digest.
func TestNamespacesCannotCollide(t *testing.T) {
	r, err := identity.NewResolver(settings.DefaultAPIKeyHeader)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"192.0.2.1", "::1", config.KeyDigest("x"), "key:" + config.KeyDigest("x"), "unknown"} {
		asKey := r.Resolve(map[string]string{settings.DefaultAPIKeyHeader: s}, "")
		asIP := r.Resolve(nil, s)
		if asKey == asIP || asKey.String() == asIP.String() {
			t.Errorf("%q: key identity %q equals address identity %q", s, asKey, asIP)
		}
		if asKey.Kind != identity.KindKey || asIP.Kind != identity.KindIP {
			t.Errorf("%q: kinds %q and %q", s, asKey.Kind, asIP.Kind)
		}
	}
}

func TestNewResolverErrors(t *testing.T) {
	r, err := identity.NewResolver(settings.DefaultAPIKeyHeader)
	if err != nil || r.Header() != settings.DefaultAPIKeyHeader {
		t.Fatalf("NewResolver(%q) = %q, %v", settings.DefaultAPIKeyHeader, r.Header(), err)
	}
	for _, bad := range []string{"", "X API Key", "X-Key:", "Ключ", "a\nb"} {
		_, err := identity.NewResolver(bad)
		if err == nil || !strings.Contains(err.Error(), "API key header") {
			t.Errorf("NewResolver(%q) error = %v, want one naming the API key header", bad, err)
		}
	}
}

func BenchmarkResolve(b *testing.B) {
	r, _ := identity.NewResolver(settings.DefaultAPIKeyHeader)
	headers := map[string]string{"accept": "*/*", "host": "api.example", "user-agent": "curl", "x-api-key": rawKey}
	b.ReportAllocs()
	for b.Loop() {
		_ = r.Resolve(headers, "192.0.2.1")
	}
}
