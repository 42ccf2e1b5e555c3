package identity_test

import (
	"cmp"
	"strings"
	"testing"

	"github.com/bucketgate/bucketgate"
	"github.com/bucketgate/bucketgate/internal/identity"
	"github.com/bucketgate/bucketgate/internal/settings"
)

const rawKey = "sk-live-Secret{}:key"

// who returns what Resolve found, as the handlers read it: the key's identity, else
// "conflict" or the source's identity.
func who(c identity.Caller) string {
	switch {
	case c.Conflict:
		return "conflict"
	case c.Key != bucketgate.Identity{}:
		return c.Key.String()
	}
	return c.IP.String()
}

func TestResolve(t *testing.T) {
	digest := bucketgate.KeyDigest(rawKey)
	tests := []struct {
		name     string
		header   string
		headers  map[string]string
		multi    map[string][]string
		sourceIP string
		want     string
	}{
		{"default header exact case", "", map[string]string{"X-API-Key": rawKey}, nil, "192.0.2.1", "key:" + digest},
		{"header lower case (HTTP API)", "", map[string]string{"x-api-key": rawKey}, nil, "192.0.2.1", "key:" + digest},
		{"header odd case", "", map[string]string{"X-Api-KEY": rawKey}, nil, "192.0.2.1", "key:" + digest},
		{"key trimmed", "", map[string]string{"x-api-key": " \t" + rawKey + " "}, nil, "192.0.2.1", "key:" + digest},
		{"custom header", "Authorization-Key", map[string]string{"authorization-key": rawKey, "X-API-Key": "other"}, nil, "192.0.2.1", "key:" + digest},
		{"custom header ignores default", "Authorization-Key", map[string]string{"X-API-Key": rawKey}, nil, "192.0.2.1", "ip:192.0.2.1"},
		{"no key: IPv4", "", map[string]string{"Accept": "*/*"}, nil, "192.0.2.1", "ip:192.0.2.1"},
		{"blank key: IP", "", map[string]string{"X-API-Key": "  "}, nil, "192.0.2.1", "ip:192.0.2.1"},
		{"nil headers", "", nil, nil, "192.0.2.1", "ip:192.0.2.1"},
		{"IPv6 canonical prefix", "", nil, nil, "2001:DB8:0:0::1", "ip:2001:db8::/64"},
		{"IPv4-mapped IPv6", "", nil, nil, "::ffff:192.0.2.7", "ip:192.0.2.7"},
		{"zone dropped", "", nil, nil, "fe80::1%eth0", "ip:fe80::/64"},
		{"placeholder source", "", nil, nil, "...", "ip:" + identity.UnknownAddr},
		{"missing source", "", nil, nil, "", "ip:" + identity.UnknownAddr},
		{"forwarded list is not an IP", "", nil, nil, "192.0.2.1, 10.0.0.1", "ip:" + identity.UnknownAddr},
		{"IPv6 by its /64", "", nil, nil, "2001:db8:1:2:aaaa::7", "ip:2001:db8:1:2::/64"},
		{"IPv6 /64 neighbour is the same caller", "", nil, nil, "2001:db8:1:2:ffff:ffff:ffff:ffff", "ip:2001:db8:1:2::/64"},
		{"same key in both maps", "", map[string]string{"X-API-Key": rawKey}, map[string][]string{"X-API-Key": {rawKey}}, "192.0.2.1", "key:" + digest},
		{"same key twice in multi", "", nil, map[string][]string{"x-api-key": {rawKey, " " + rawKey}}, "192.0.2.1", "key:" + digest},
		{"key only in multi", "", map[string]string{"Accept": "*/*"}, map[string][]string{"X-Api-Key": {rawKey}}, "192.0.2.1", "key:" + digest},
		{"two cases, two values", "", map[string]string{"X-API-Key": rawKey, "x-api-key": "other"}, nil, "192.0.2.1", "conflict"},
		{"two cases, one value", "", map[string]string{"X-API-Key": rawKey, "x-api-key": rawKey}, nil, "192.0.2.1", "key:" + digest},
		{"multi holds two values", "", map[string]string{"X-API-Key": rawKey}, map[string][]string{"X-API-Key": {"other", rawKey}}, "192.0.2.1", "conflict"},
		{"headers and multi disagree", "", map[string]string{"X-API-Key": rawKey}, map[string][]string{"X-API-Key": {"other"}}, "192.0.2.1", "conflict"},
		// A blank copy is an empty list element (RFC 9110, section 5.6.1), as "K," is.
		{"a blank copy beside a key", "", map[string]string{"X-API-Key": rawKey}, map[string][]string{"x-api-key": {""}}, "192.0.2.1", "key:" + digest},
		{"a key and a blank copy, apart", "", map[string]string{"X-API-Key": ""}, map[string][]string{"x-api-key": {rawKey, " "}}, "192.0.2.1", "key:" + digest},
		{"only blank copies", "", map[string]string{"X-API-Key": " "}, map[string][]string{"x-api-key": {"", "\t"}}, "192.0.2.1", "ip:192.0.2.1"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r, err := identity.NewResolver(cmp.Or(tc.header, settings.DefaultAPIKeyHeader), settings.DefaultIPv6Prefix)
			if err != nil {
				t.Fatal(err)
			}
			c := r.Resolve(tc.headers, tc.multi, tc.sourceIP)
			got := who(c)
			if got != tc.want {
				t.Fatalf("Resolve = %q, want %q", got, tc.want)
			}
			if strings.Contains(got, rawKey) {
				t.Fatalf("identity %q holds the raw key", got)
			}
			if c.IP.Kind != bucketgate.KindIP || c.IP.Value == "" {
				t.Fatalf("source identity %+v, want one of kind ip", c.IP)
			}
		})
	}
}

// An address can never produce a key's identity and the other way round, whatever the
// text: the kinds are distinct prefixes and the key side is always a hex digest.
func TestNamespacesCannotCollide(t *testing.T) {
	r, err := identity.NewResolver(settings.DefaultAPIKeyHeader, settings.DefaultIPv6Prefix)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"192.0.2.1", "::1", bucketgate.KeyDigest("x"), "key:" + bucketgate.KeyDigest("x"), "unknown"} {
		asKey := r.Resolve(map[string]string{settings.DefaultAPIKeyHeader: s}, nil, "").Key
		asIP := r.Resolve(nil, nil, s).IP
		if asKey == asIP || asKey.String() == asIP.String() {
			t.Errorf("%q: key identity %q equals address identity %q", s, asKey, asIP)
		}
		if asKey.Kind != bucketgate.KindKey || asIP.Kind != bucketgate.KindIP {
			t.Errorf("%q: kinds %q and %q", s, asKey.Kind, asIP.Kind)
		}
	}
}

func TestNewResolverErrors(t *testing.T) {
	r, err := identity.NewResolver(settings.DefaultAPIKeyHeader, settings.DefaultIPv6Prefix)
	if err != nil || r.Header() != settings.DefaultAPIKeyHeader {
		t.Fatalf("NewResolver(%q) = %q, %v", settings.DefaultAPIKeyHeader, r.Header(), err)
	}
	for _, bad := range []string{"", "X API Key", "X-Key:", "Ключ", "a\nb"} {
		_, err := identity.NewResolver(bad, settings.DefaultIPv6Prefix)
		if err == nil || !strings.Contains(err.Error(), "API key header") {
			t.Errorf("NewResolver(%q) error = %v, want one naming the API key header", bad, err)
		}
	}
	for _, bad := range []int{0, -1, 129} {
		_, err := identity.NewResolver(settings.DefaultAPIKeyHeader, bad)
		if err == nil || !strings.Contains(err.Error(), "IPv6 prefix length") {
			t.Errorf("NewResolver(prefix %d) error = %v, want one naming the IPv6 prefix length", bad, err)
		}
	}
}

// The prefix length groups IPv6 sources; IPv4 sources stay one by one whatever it is.
func TestIPv6Prefix(t *testing.T) {
	tests := []struct {
		prefix   int
		sourceIP string
		want     string
	}{
		{128, "2001:db8::1", "ip:2001:db8::1"},
		{56, "2001:db8:1:2ff::1", "ip:2001:db8:1:200::/56"},
		{48, "2001:db8:1:2::1", "ip:2001:db8:1::/48"},
		{1, "2001:db8::1", "ip:::/1"},
		{48, "192.0.2.1", "ip:192.0.2.1"},
		{48, "::ffff:192.0.2.1", "ip:192.0.2.1"},
	}
	for _, tc := range tests {
		r, err := identity.NewResolver(settings.DefaultAPIKeyHeader, tc.prefix)
		if err != nil {
			t.Fatal(err)
		}
		if got := r.Resolve(nil, nil, tc.sourceIP).IP.String(); got != tc.want {
			t.Errorf("/%d %s: %q, want %q", tc.prefix, tc.sourceIP, got, tc.want)
		}
	}
}

// An HTTP API's payload 2.0 joins a header given more than once with commas: the same key
// twice is that key, empty elements aside; anything else is read whole, as before.
func TestKeyCopiesUnjoin(t *testing.T) {
	tests := []struct {
		name   string
		copies []string
		want   string
	}{
		{"one key", []string{rawKey}, "key:" + bucketgate.KeyDigest(rawKey)},
		{"the same key twice", []string{rawKey + "," + rawKey}, "key:" + bucketgate.KeyDigest(rawKey)},
		{"the same key three times, blanks around", []string{rawKey + ", " + rawKey + " ,\t" + rawKey}, "key:" + bucketgate.KeyDigest(rawKey)},
		{"two keys: read whole", []string{rawKey + ",other"}, "key:" + bucketgate.KeyDigest(rawKey+",other")},
		{"a trailing comma: an empty element, ignored", []string{rawKey + ","}, "key:" + bucketgate.KeyDigest(rawKey)},
		{"a blank element between copies, ignored", []string{rawKey + ", ," + rawKey}, "key:" + bucketgate.KeyDigest(rawKey)},
		{"a leading comma", []string{"," + rawKey}, "key:" + bucketgate.KeyDigest(rawKey)},
		{"two keys and an empty element: read whole", []string{rawKey + ",,other"}, "key:" + bucketgate.KeyDigest(rawKey+",,other")},
		{"blank copies joined", []string{" , "}, "ip:192.0.2.1"},
		{"a conflict stays one", []string{rawKey + "," + rawKey, "other"}, "conflict"},
	}
	r, _ := identity.NewResolver(settings.DefaultAPIKeyHeader, settings.DefaultIPv6Prefix)
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var k identity.KeyCopies
			for _, c := range tc.copies {
				k.Add(c)
			}
			k.Unjoin()
			if got := who(r.ResolveCopies(k, "192.0.2.1")); got != tc.want {
				t.Errorf("got %s, want %s", got, tc.want)
			}
		})
	}
}

// Whatever order the maps are walked in, the answer is the same: the answer depends on
// the set of values alone. Go randomizes map order, so many runs see many orders.
func TestResolveIgnoresMapOrder(t *testing.T) {
	r, _ := identity.NewResolver(settings.DefaultAPIKeyHeader, settings.DefaultIPv6Prefix)
	headers := map[string]string{"X-API-Key": "a", "x-api-key": "b", "X-Api-Key": "a", "Accept": "*/*", "X-API-KEY": "a"}
	for range 200 {
		if c := r.Resolve(headers, nil, "192.0.2.1"); !c.Conflict || c.Key != (bucketgate.Identity{}) {
			t.Fatalf("Resolve = %+v, want a conflict every time", c)
		}
	}
}

func BenchmarkResolve(b *testing.B) {
	r, _ := identity.NewResolver(settings.DefaultAPIKeyHeader, settings.DefaultIPv6Prefix)
	headers := map[string]string{"accept": "*/*", "host": "api.example", "user-agent": "curl", "x-api-key": rawKey}
	b.ReportAllocs()
	for b.Loop() {
		_ = r.Resolve(headers, nil, "192.0.2.1")
	}
}
