// Package madekey tells the API keys bucketgate makes (bucketgate keys create) by their
// shape, so that the places where only a key's digest may go (a check's key or identity,
// the configuration's tenants, checkclient before sending) refuse one without quoting it.
package madekey

import (
	"encoding/base64"
	"fmt"
	"strings"

	"github.com/bucketgate/bucketgate"
)

// Prefix starts every API key bucketgate makes (bucketgate keys create), so that
// a secret scanner can tell one, and so can the check function given one as a key.
const Prefix = "bg_"

// Bytes is how many random bytes an API key bucketgate makes holds: 256 bits.
const Bytes = 32

// Is reports whether s has the shape of the API keys bucketgate makes:
// Prefix and Bytes, base64url.
func Is(s string) bool {
	rest, ok := strings.CutPrefix(s, Prefix)
	if !ok || len(rest) != base64.RawURLEncoding.EncodedLen(Bytes) {
		return false
	}
	_, err := base64.RawURLEncoding.DecodeString(rest)
	return err == nil
}

// InKey reports key, a check's key at path, when it is an API key bucketgate made,
// never quoting it (a secret). The check function refuses such a check (the key would
// rest in Redis and the registry as it is), and so does checkclient before sending it:
// the key would leave the process in the payload, and may reach Lambda's logs.
func InKey(path, key string) error {
	if !Is(key) {
		return nil
	}
	return fmt.Errorf("%s: an API key bucketgate made (%s...), which would rest in Redis and the registry as it is: pass its digest (the first %d hex digits of its SHA-256, bucketgate.KeyDigest)", path, Prefix, bucketgate.DigestLen)
}

// InIdentity reports id, a check's identity at path, when what follows its kind
// ("tenant:", "key:", any) is an API key bucketgate made, as InKey reports a key.
func InIdentity(path, id string) error {
	kind, rest, ok := strings.Cut(id, ":")
	if !ok || !Is(rest) {
		return nil
	}
	return fmt.Errorf("%s: %s: with an API key bucketgate made (%s...), which would rest in Redis and the registry as it is: want %s<its digest> for a tenant a service names by the key's digest, or %s<its digest> for the key's own buckets (the authorizer's): the first %d hex digits of its SHA-256, bucketgate.KeyDigest",
		path, kind, Prefix, bucketgate.TenantPrefix, bucketgate.KeyPrefix, bucketgate.DigestLen)
}
