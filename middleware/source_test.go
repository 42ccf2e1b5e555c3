package middleware

import (
	"net/http/httptest"
	"testing"
)

// The source is the peer, unless the peer is a trusted proxy: then the rightmost hop of
// X-Forwarded-For that is not one. A client writes what it likes to the left of it.
func TestSource(t *testing.T) {
	ps, err := parseProxies([]string{"10.0.0.0/8", "192.0.2.7", "2001:db8::/32", "::ffff:172.16.0.0/108"})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name   string
		peer   string
		xff    []string
		trust  proxies
		source string
	}{
		{"no proxies trusted: the peer, whatever the header says", "203.0.113.5:4000", []string{"198.51.100.1"}, proxies{}, "203.0.113.5"},
		{"an untrusted peer: its header is ignored", "203.0.113.5:4000", []string{"198.51.100.1"}, ps, "203.0.113.5"},
		{"a trusted proxy: the hop before it", "10.1.2.3:4000", []string{"198.51.100.1"}, ps, "198.51.100.1"},
		{"a client's forged hops to the left are ignored", "10.1.2.3:4000", []string{"1.1.1.1, 2.2.2.2, 198.51.100.1"}, ps, "198.51.100.1"},
		{"trusted hops are skipped", "10.1.2.3:4000", []string{"198.51.100.1, 192.0.2.7", "10.9.9.9"}, ps, "198.51.100.1"},
		{"every hop trusted: the leftmost", "10.1.2.3:4000", []string{"10.0.0.1, 10.0.0.2"}, ps, "10.0.0.1"},
		{"no header: the proxy itself", "192.0.2.7:4000", nil, ps, "192.0.2.7"},
		{"a hop that is not an address", "10.1.2.3:4000", []string{"198.51.100.1, unknown"}, ps, "unknown"},
		{"an IPv6 proxy", "[2001:db8::1]:4000", []string{"2001:db8:1::5, 2001:db9::7"}, ps, "2001:db9::7"},
		{"an IPv4-mapped trusted peer", "[::ffff:10.0.0.1]:4000", []string{"198.51.100.1"}, ps, "198.51.100.1"},
		{"a proxy trusted by an IPv4-mapped prefix", "172.16.5.5:4000", []string{"198.51.100.1"}, ps, "198.51.100.1"},
		{"a hop with a port: its address", "10.1.2.3:4000", []string{"198.51.100.1:5000"}, ps, "198.51.100.1"},
		{"an IPv6 hop with a port: its address", "10.1.2.3:4000", []string{"[2001:db9::7]:443"}, ps, "2001:db9::7"},
		{"a trusted hop with a port is skipped", "10.1.2.3:4000", []string{"198.51.100.1, 10.0.0.9:8080"}, ps, "198.51.100.1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := httptest.NewRequest("GET", "/", nil)
			r.RemoteAddr = tc.peer
			for _, h := range tc.xff {
				r.Header.Add("X-Forwarded-For", h)
			}
			if got := tc.trust.source(r); got != tc.source {
				t.Fatalf("source %q, want %q", got, tc.source)
			}
		})
	}
}
