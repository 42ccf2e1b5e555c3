package identity

import (
	"encoding/base64"
	"fmt"
	"strings"

	"github.com/bucketgate/bucketgate"
)

// MadeKeyPrefix starts every API key bucketgate makes (bucketgate keys create), so that
// a secret scanner can tell one, and so can the check function given one as a key.
const MadeKeyPrefix = "bg_"

// MadeKeyBytes is how many random bytes an API key bucketgate makes holds: 256 bits.
const MadeKeyBytes = 32

// IsMadeKey reports whether s has the shape of the API keys bucketgate makes:
// MadeKeyPrefix and MadeKeyBytes, base64url.
func IsMadeKey(s string) bool {
	rest, ok := strings.CutPrefix(s, MadeKeyPrefix)
	if !ok || len(rest) != base64.RawURLEncoding.EncodedLen(MadeKeyBytes) {
		return false
	}
	_, err := base64.RawURLEncoding.DecodeString(rest)
	return err == nil
}

// MadeKey reports key, a check's key at path, when it is an API key bucketgate made,
// never quoting it (a secret). The check function refuses such a check (the key would
// rest in Redis and the registry as it is), and so does checkclient before sending it:
// the key would leave the process in the payload, and may reach Lambda's logs.
func MadeKey(path, key string) error {
	if !IsMadeKey(key) {
		return nil
	}
	return fmt.Errorf("%s: an API key bucketgate made (%s...), which would rest in Redis and the registry as it is: pass its digest (the first %d hex digits of its SHA-256, bucketgate.KeyDigest)", path, MadeKeyPrefix, bucketgate.DigestLen)
}

// MadeKeyIdentity reports id, a check's identity at path, when what follows its kind
// ("tenant:", "key:", any) is an API key bucketgate made, as MadeKey reports a key.
func MadeKeyIdentity(path, id string) error {
	kind, rest, ok := strings.Cut(id, ":")
	if !ok || !IsMadeKey(rest) {
		return nil
	}
	return fmt.Errorf("%s: %s: with an API key bucketgate made (%s...), which would rest in Redis and the registry as it is: want %s<its digest> for a tenant a service names by the key's digest, or %s<its digest> for the key's own buckets (the authorizer's): the first %d hex digits of its SHA-256, bucketgate.KeyDigest",
		path, kind, MadeKeyPrefix, bucketgate.TenantPrefix, bucketgate.KeyPrefix, bucketgate.DigestLen)
}
