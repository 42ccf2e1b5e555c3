// Package identity decides whose buckets an API Gateway request spends: the API key in
// a configurable header when there is one, else the source IP. A raw key never leaves
// this package: it becomes its config.KeyDigest first, so Redis keys, logs, metrics and
// principal ids only ever see the digest. Identities are namespaced by kind ("key:" or
// "ip:") so that no address can ever equal a key's identity.
package identity

import (
	"fmt"
	"net/netip"
	"strings"

	"github.com/bucketgate/bucketgate/internal/config"
)

// Kind says where an Identity came from.
type Kind string

// The kinds of Identity.
const (
	// KindKey: an API key, held as its config.KeyDigest.
	KindKey Kind = "key"
	// KindIP: the request's source address, without a key.
	KindIP Kind = "ip"
)

// UnknownAddr is the Value of the one shared KindIP identity of every request whose
// source IP is missing or is not an IP address (API Gateway always sends one; test
// events sometimes carry placeholders such as "...").
const UnknownAddr = "unknown"

// Identity is whose buckets a request spends. The zero Identity is invalid.
type Identity struct {
	// Kind is where the identity came from.
	Kind Kind
	// Value is the key's digest (KindKey), or the canonical source address or
	// UnknownAddr (KindIP). It never holds a raw key.
	Value string
}

// String returns the namespaced identity, "key:<digest>" or "ip:<address>": the
// bucket.Request identity and the REST authorizer's principal id.
func (id Identity) String() string { return string(id.Kind) + ":" + id.Value }

// Resolver finds the Identity of a request. The zero Resolver is unusable; use
// NewResolver.
type Resolver struct {
	header string
}

// NewResolver returns a Resolver reading the API key from header (any case).
func NewResolver(header string) (Resolver, error) {
	if !validHeaderName(header) {
		return Resolver{}, fmt.Errorf("API key header %q: want an HTTP header name (letters, digits and !#$%%&'*+-.^_`|~)", header)
	}
	return Resolver{header: header}, nil
}

// Header returns the name of the API key header, as configured.
func (r Resolver) Header() string { return r.header }

// Resolve returns the identity of a request with these headers (names in any case) and
// this source IP: the digest of a non-empty API key, else the canonical source address,
// else the shared UnknownAddr.
func (r Resolver) Resolve(headers map[string]string, sourceIP string) Identity {
	if key, ok := r.key(headers); ok {
		return Identity{Kind: KindKey, Value: config.KeyDigest(key)}
	}
	return Identity{Kind: KindIP, Value: canonicalAddr(sourceIP)}
}

// key returns the trimmed API key among headers, if one is there and not blank.
func (r Resolver) key(headers map[string]string) (string, bool) {
	v, ok := headers[r.header]
	if !ok {
		for name, value := range headers {
			if strings.EqualFold(name, r.header) {
				v, ok = value, true
				break
			}
		}
	}
	v = strings.Trim(v, " \t")
	return v, ok && v != ""
}

// canonicalAddr returns the canonical text of an IP address (IPv4-mapped IPv6 as IPv4,
// no zone), or UnknownAddr when s is not one.
func canonicalAddr(s string) string {
	a, err := netip.ParseAddr(strings.TrimSpace(s))
	if err != nil {
		return UnknownAddr
	}
	return a.Unmap().WithZone("").String()
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
