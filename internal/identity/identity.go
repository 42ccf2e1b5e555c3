// Package identity reads who sent an API Gateway request: the API key in a configurable
// header when there is exactly one, and the source IP (one IPv4 address, or an IPv6
// prefix, /64 by default). Whose buckets the request spends is the handler's choice
// (a registered key's, else the source's). A raw key never leaves this package: it
// becomes its bucketgate.KeyDigest first, so Redis keys, logs, metrics, registry lookups and
// principal ids only ever see the digest. Identities are namespaced by kind ("key:" or
// "ip:") so that no address can ever equal a key's identity.
package identity

import (
	"fmt"
	"net/netip"
	"strings"

	"github.com/bucketgate/bucketgate"
	"github.com/bucketgate/bucketgate/ratelimitheaders"
)

// UnknownAddr is the Value of the one shared KindIP identity of every request whose
// source IP is missing or is not an IP address (API Gateway always sends one; test
// events sometimes carry placeholders such as "...").
const UnknownAddr = "unknown"

// Caller is who sent a request, as far as the request says: always its source address,
// and its API key when it carried exactly one.
type Caller struct {
	// Key is the API key's identity (KindKey) when the request carried one non-blank
	// key, in one or more copies of the same value; the zero Identity otherwise.
	Key bucketgate.Identity
	// Conflict reports an API key header given more than once with different values
	// (in any letter case, or in the multi-value headers): that is not a key, and Key is
	// zero. The handlers treat it as an unknown key.
	Conflict bool
	// IP is the source address's identity (KindIP): one IPv4 address, or the IPv6
	// prefix it belongs to, or UnknownAddr.
	IP bucketgate.Identity
}

// Resolver finds the Caller of a request. The zero Resolver is unusable; use
// NewResolver.
type Resolver struct {
	header     string
	ipv6Prefix int
}

// MaxIPv6Prefix, the prefix length of a whole address, counts IPv6 sources one by one.
const MaxIPv6Prefix = 128

// NewResolver returns a Resolver reading the API key from header (any case) and
// grouping IPv6 sources by their first ipv6Prefix bits, 1 to MaxIPv6Prefix (64 groups
// a subscriber's /64, which is one caller). IPv4 sources count one by one.
func NewResolver(header string, ipv6Prefix int) (Resolver, error) {
	if !validHeaderName(header) {
		return Resolver{}, fmt.Errorf("API key header %q: want an HTTP header name (letters, digits and !#$%%&'*+-.^_`|~)", header)
	}
	if ipv6Prefix < 1 || ipv6Prefix > MaxIPv6Prefix {
		return Resolver{}, fmt.Errorf("IPv6 prefix length %d: want 1 to %d (%d counts addresses one by one)", ipv6Prefix, MaxIPv6Prefix, MaxIPv6Prefix)
	}
	return Resolver{header: header, ipv6Prefix: ipv6Prefix}, nil
}

// IPv6Prefix returns the prefix length, in bits, that IPv6 sources are grouped by.
func (r Resolver) IPv6Prefix() int { return r.ipv6Prefix }

// Header returns the name of the API key header, as configured.
func (r Resolver) Header() string { return r.header }

// Resolve returns the Caller of a request with these headers and multi-value headers
// (names in any case; either may be nil) and this source IP. Every copy of the API key
// header counts, whatever its case and wherever it is, but a blank one (an empty list
// element, RFC 9110, section 5.6.1): all blank is no key, all equal is one key,
// anything else a Conflict. The answer never depends on the order of the maps.
func (r Resolver) Resolve(headers map[string]string, multi map[string][]string, sourceIP string) Caller {
	var k KeyCopies
	for name, v := range headers {
		if r.IsKeyHeader(name) {
			k.Add(v)
		}
	}
	for name, vs := range multi {
		if r.IsKeyHeader(name) {
			for _, v := range vs {
				k.Add(v)
			}
		}
	}
	return r.ResolveCopies(k, sourceIP)
}

// IsKeyHeader reports whether a header called name is the API key header: the
// configured name, in any letter case and with '_' for '-', as the backend behind may
// read it (ratelimitheaders.SameName: CGI, WSGI and Rack read X_API_Key as X-API-Key).
func (r Resolver) IsKeyHeader(name string) bool { return ratelimitheaders.SameName(name, r.header) }

// ResolveCopies returns the Caller of a request whose API key header copies k holds,
// from sourceIP: Resolve for a caller that reads the headers itself.
func (r Resolver) ResolveCopies(k KeyCopies, sourceIP string) Caller {
	c := Caller{IP: bucketgate.Identity{Kind: bucketgate.KindIP, Value: r.source(sourceIP)}}
	switch {
	case k.conflict:
		c.Conflict = true
	case k.key != "":
		c.Key = bucketgate.KeyIdentity(k.key)
	}
	return c
}

// KeyCopies gathers the copies of one request's API key header, in any order: one
// key when every copy that is not blank holds it (blank-trimmed; a blank copy is an
// empty list element, which does not count), none when all are blank, a conflict when
// two differ. The zero KeyCopies holds no copy.
type KeyCopies struct {
	key      string
	seen     bool
	conflict bool
}

// Add adds one copy of the header, v; a blank one counts for nothing.
func (k *KeyCopies) Add(v string) {
	v = strings.Trim(v, " \t")
	switch {
	case v == "":
	case !k.seen:
		k.key, k.seen = v, true
	case v != k.key:
		k.conflict = true
	}
}

// Unjoin reads the one copy held as copies that a proxy joined with commas, as API
// Gateway's HTTP API payload 2.0 joins a header given more than once: when every
// comma-separated part that is not blank is the same key (blank-trimmed), k holds that
// key, since a list's empty elements do not count (RFC 9110, section 5.6.1: "K," and
// "K, ,K" are K, as a backend reads them); when every part is blank, no key. Otherwise
// k is unchanged: a copy without a comma, and one whose parts differ, which is read
// whole as one key (so two different keys joined are an unknown key).
func (k *KeyCopies) Unjoin() {
	if k.conflict || !strings.Contains(k.key, ",") {
		return
	}
	key := ""
	for rest, more := k.key, true; more; { // part by part: no list of them
		var p string
		p, rest, more = strings.Cut(rest, ",")
		switch p = strings.Trim(p, " \t"); {
		case p == "" || p == key:
		case key == "":
			key = p
		default:
			return
		}
	}
	k.key = key
}

// Merge adds every copy that o holds.
func (k *KeyCopies) Merge(o KeyCopies) {
	if o.seen {
		k.Add(o.key)
	}
	k.conflict = k.conflict || o.conflict
}

// source returns the Value of the identity of a source address: the canonical
// address for IPv4 (and IPv4-mapped IPv6), the masked prefix "2001:db8:1:2::/64" for
// IPv6 (the address itself for a /128), UnknownAddr when s is not an address.
func (r Resolver) source(s string) string {
	a, err := netip.ParseAddr(strings.TrimSpace(s))
	if err != nil {
		return UnknownAddr
	}
	a = a.Unmap().WithZone("")
	if a.Is4() || r.ipv6Prefix == MaxIPv6Prefix {
		return a.String()
	}
	p, _ := a.Prefix(r.ipv6Prefix) // cannot fail: an IPv6 address without zone, 1 to 128 bits
	return p.String()
}

// validHeaderName reports whether s is an RFC 9110 token, the syntax of a field name.
func validHeaderName(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0) {
			return false
		}
	}
	return true
}
