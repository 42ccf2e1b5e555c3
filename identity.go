package bucketgate

import (
	"crypto/sha256"
	"encoding/hex"
)

// Kind says what an Identity is, and spells its namespace: no identity of one kind can
// equal an identity of another.
type Kind string

// The kinds of Identity.
const (
	// KindKey: an API key, held as its KeyDigest.
	KindKey Kind = "key"
	// KindIP: a request's source address (an IPv6 source by its prefix).
	KindIP Kind = "ip"
	// KindTenant: a key the check function was invoked with, as given: services that
	// invoke it are trusted, their keys are not secrets.
	KindTenant Kind = "tenant"
)

// Identity is whose buckets a request spends. The zero Identity is none.
type Identity struct {
	// Kind is what the identity is.
	Kind Kind
	// Value is the key's digest (KindKey), the canonical source address or IPv6 prefix
	// (KindIP), or the check function's key (KindTenant). It never holds a raw API key.
	Value string
}

// String returns the namespaced identity, "key:<digest>", "ip:<address>" or
// "tenant:<key>": Request.Identity, the registry's item id, and the REST authorizer's
// principal id.
func (id Identity) String() string { return string(id.Kind) + ":" + id.Value }

// The namespaces of the kinds' identities, as Identity.String spells them.
const (
	KeyPrefix    = string(KindKey) + ":"
	IPPrefix     = string(KindIP) + ":"
	TenantPrefix = string(KindTenant) + ":"
)

// MaxTenantKey is the longest key of a KindTenant identity, in bytes: the longest key
// the check function takes.
const MaxTenantKey = 1000

// KeyIdentity returns the identity of an API key: its digest, never the key.
func KeyIdentity(key string) Identity { return Identity{Kind: KindKey, Value: KeyDigest(key)} }

// DigestLen is the length of a key digest in hex digits (128 bits of SHA-256).
const DigestLen = 32

// KeyDigest returns the digest under which an API key is registered, limited and
// logged: the first DigestLen hex digits of its SHA-256. Raw keys are never stored.
// From a shell: printf %s "$KEY" | sha256sum | cut -c1-32
func KeyDigest(key string) string {
	sum := sha256.Sum256([]byte(key))
	return hex.EncodeToString(sum[:DigestLen/2])
}

// ValidDigest reports whether s is a key digest as KeyDigest writes it: DigestLen
// lowercase hex digits.
func ValidDigest(s string) bool {
	if len(s) != DigestLen {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}
