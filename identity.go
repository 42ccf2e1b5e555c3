package bucketgate

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"
)

// Kind says what an Identity is, and spells its namespace: no identity of one kind can
// equal an identity of another. The zero Kind, "", is none.
type Kind string

// The kinds of Identity.
const (
	// KindKey is an API key, held as its KeyDigest.
	KindKey Kind = "key"
	// KindIP is a request's source address (an IPv6 source by its prefix).
	KindIP Kind = "ip"
	// KindTenant is a key the check function was invoked with, as given: services that
	// invoke it are trusted. Its buckets and registry item carry the key itself; logs
	// carry its digest (LogForm), as a tenant's key may name a customer.
	KindTenant Kind = "tenant"
	// KindAccount is an account of the registry, by its name (ValidAccountName): every
	// API key of the account is decided as the account, and spends its buckets.
	KindAccount Kind = "acct"
)

// Identity is whose buckets a request spends. The zero Identity is none.
type Identity struct {
	// Kind is what the identity is.
	Kind Kind
	// Value is the key's digest (KindKey), the canonical source address or IPv6 prefix
	// (KindIP), the check function's key (KindTenant), or the account's name
	// (KindAccount). It never holds a raw API key.
	Value string
}

// String returns the namespaced identity, "key:<digest>", "ip:<address>",
// "tenant:<key>" or "acct:<name>": Request.Identity, the registry's lookups, and the
// REST authorizer's principal id.
func (id Identity) String() string { return string(id.Kind) + ":" + id.Value }

// The namespaces of the kinds' identities, as Identity.String spells them.
const (
	KeyPrefix     = string(KindKey) + ":"
	IPPrefix      = string(KindIP) + ":"
	TenantPrefix  = string(KindTenant) + ":"
	AccountPrefix = string(KindAccount) + ":"
)

// MaxAccountName is the longest account name, in bytes.
const MaxAccountName = 128

// ValidAccountName reports whether name can name an account: 1 to MaxAccountName
// letters, digits, '.', '_' or '-'.
func ValidAccountName(name string) bool { return validName(name, MaxAccountName) }

// LogForm returns the identity id ("kind:value", Identity.String's form) as logs and
// errors carry it: a tenant's ("tenant:<key>") with its key as its digest, KeyDigest
// ("tenant:<digest>"), so that a tenant's key never rests in a log; any other as it is
// (an API key's identity is its digest already, an address is no secret).
func LogForm(id string) string {
	if key, ok := strings.CutPrefix(id, TenantPrefix); ok {
		return TenantPrefix + KeyDigest(key)
	}
	return id
}

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
//
// The digest is unsalted, on purpose. It must be the same everywhere a key is named:
// the authorizer and the check function, the CLI, the configuration document (whose
// authors compute it with sha256sum), the registry's item ids, the Redis keys of every
// bucket, and services limiting through the library. A keyed hash would need the
// deployment's key in all of them (the document's authors too), and changing that key
// would orphan every registry item and bucket. What an unsalted digest gives away is
// the key itself only when the key can be guessed: the keys bucketgate makes (bucketgate
// keys create) carry 256 bits from crypto/rand, beyond any dictionary or search, and a
// 128-bit digest has no practical collision or preimage. A key chosen by a person can
// be guessed: the CLI registers one made elsewhere (keys create --key -) only with 128
// bits of estimated entropy, the document takes digests only, and the local demo's
// sample keys guard nothing.
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
