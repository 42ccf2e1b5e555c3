package identity_test

import (
	"strings"
	"testing"

	"github.com/bucketgate/bucketgate/internal/config"
	"github.com/bucketgate/bucketgate/internal/identity"
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
			r, err := identity.Load(func(k string) string { return map[string]string{identity.EnvHeader: tc.header}[k] })
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
	r, err := identity.NewResolver(identity.DefaultHeader)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"192.0.2.1", "::1", config.KeyDigest("x"), "key:" + config.KeyDigest("x"), "unknown"} {
		asKey := r.Resolve(map[string]string{identity.DefaultHeader: s}, "")
		asIP := r.Resolve(nil, s)
		if asKey == asIP || asKey.String() == asIP.String() {
			t.Errorf("%q: key identity %q equals address identity %q", s, asKey, asIP)
		}
		if asKey.Kind != identity.KindKey || asIP.Kind != identity.KindIP {
			t.Errorf("%q: kinds %q and %q", s, asKey.Kind, asIP.Kind)
		}
	}
}

func TestLoadDefaultsAndErrors(t *testing.T) {
	r, err := identity.Load(func(string) string { return "" })
	if err != nil || r.Header() != identity.DefaultHeader {
		t.Fatalf("Load with nothing set = %q, %v; want %q", r.Header(), err, identity.DefaultHeader)
	}
	for _, bad := range []string{"X API Key", "X-Key:", "Ключ", "a\nb"} {
		_, err := identity.Load(func(k string) string { return map[string]string{identity.EnvHeader: bad}[k] })
		if err == nil || !strings.Contains(err.Error(), identity.EnvHeader) {
			t.Errorf("Load(%q) error = %v, want one naming %s", bad, err, identity.EnvHeader)
		}
	}
}

func BenchmarkResolve(b *testing.B) {
	r, _ := identity.NewResolver(identity.DefaultHeader)
	headers := map[string]string{"accept": "*/*", "host": "api.example", "user-agent": "curl", "x-api-key": rawKey}
	b.ReportAllocs()
	for b.Loop() {
		_ = r.Resolve(headers, "192.0.2.1")
	}
}
