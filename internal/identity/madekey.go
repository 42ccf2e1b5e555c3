package identity

import (
	"encoding/base64"
	"strings"
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
