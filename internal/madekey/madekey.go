// Package madekey tells the API keys bucketgate makes (bucketgate keys create) by their
// shape, so that the places where only a key's digest may go (a check's key or identity,
// its other texts, the configuration's tenants, checkclient before sending, the CLI's
// owners and notes) refuse one without quoting it, and what prints text masks whatever
// may be one, or part of one (Mask).
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
	return len(s) == len(Prefix)+keyLen && Holds(s)
}

// keyLen is how many base64url characters follow Prefix in a key bucketgate makes.
var keyLen = base64.RawURLEncoding.EncodedLen(Bytes)

// Holds reports whether s holds an API key bucketgate made as a token: Prefix and
// Bytes, base64url, neither preceded nor followed by another base64url character
// ("Bearer bg_...", "acme/bg_...", "key:bg_...", or the key alone). A key's digest
// (hex) never holds one.
func Holds(s string) bool {
	i, _ := next(s)
	return i >= 0
}

// Mask returns s with every text that is or may be part of an API key bucketgate made
// replaced by Prefix and "...": s as it may be printed ("tenant:acme/bg_..."). That is
// Prefix and the base64url characters after it when they are MinShown or more, whatever
// comes before Prefix: a key Holds, and one glued to other base64url characters (a
// sloppy copy, a longer token), cut short, or glued to another. It may mask text that
// holds no key (bg_ and a long name), and never leaves 128 bits of one after its Prefix
// (a key is told by its Prefix: one that lost it is not). It returns s itself when s
// shows none (Shows).
func Mask(s string) string {
	var b strings.Builder
	for {
		i, end := shown(s)
		if i < 0 {
			if b.Len() == 0 {
				return s
			}
			return b.String() + s
		}
		b.WriteString(s[:i] + Prefix + "...")
		s = s[end:]
	}
}

// Shows reports whether s, printed as it is, could show 128 bits or more of an API key
// bucketgate made: whether Mask changes it. Every s that Holds a key Shows one.
func Shows(s string) bool {
	i, _ := shown(s)
	return i >= 0
}

// MinShown is how many base64url characters after Prefix Mask masks at least: 22 of a
// key's carry 132 bits, 21 carry 126.
const MinShown = (128 + 5) / 6

// shown returns where the first text that Mask masks in s begins and ends, or -1 when s
// shows none (Shows).
func shown(s string) (i, end int) {
	for i < len(s) {
		j := strings.Index(s[i:], Prefix)
		if j < 0 {
			break
		}
		i += j
		end = i + len(Prefix)
		for end < len(s) && base64URL(s[end]) {
			end++
		}
		if end-i-len(Prefix) >= MinShown {
			return i, end
		}
		i = end // a Prefix after i within the run has a shorter run
	}
	return -1, -1
}

// next returns where the first API key bucketgate made that s holds (Holds) begins and
// ends, or -1 when s holds none.
func next(s string) (i, end int) {
	for ; ; i++ {
		j := strings.Index(s[i:], Prefix)
		if j < 0 {
			return -1, -1
		}
		i += j
		end = i + len(Prefix) + keyLen
		if end <= len(s) && (i == 0 || !base64URL(s[i-1])) && (end == len(s) || !base64URL(s[end])) && allBase64URL(s[i+len(Prefix):end]) {
			return i, end
		}
	}
}

// allBase64URL reports whether every byte of s is a character of base64url's alphabet.
func allBase64URL(s string) bool {
	for i := range len(s) {
		if !base64URL(s[i]) {
			return false
		}
	}
	return true
}

// base64URL reports whether c is a character of base64url's alphabet.
func base64URL(c byte) bool {
	return 'A' <= c && c <= 'Z' || 'a' <= c && c <= 'z' || '0' <= c && c <= '9' || c == '-' || c == '_'
}

// InKey reports key, a check's key at path, when it is or holds an API key bucketgate
// made (Holds), never quoting it (a secret). The check function refuses such a check
// (the key would rest in Redis and the registry as it is), and so does checkclient
// before sending it: the key would leave the process in the payload, and may reach
// Lambda's logs.
func InKey(path, key string) error {
	if !Holds(key) {
		return nil
	}
	return fmt.Errorf("%s: %s (%s...), which would rest in Redis and the registry as it is: pass its digest (the first %d hex digits of its SHA-256, bucketgate.KeyDigest)", path, made(key), Prefix, bucketgate.DigestLen)
}

// InIdentity reports id, a check's identity at path, when it is or holds an API key
// bucketgate made (Holds), after its kind ("tenant:", "key:", any) or without one, as
// InKey reports a key.
func InIdentity(path, id string) error {
	if !Holds(id) {
		return nil
	}
	what := made(id)
	if kind, rest, ok := strings.Cut(id, ":"); ok && Is(rest) {
		what = kind + ": with an API key bucketgate made"
	}
	return fmt.Errorf("%s: %s (%s...), which would rest in Redis and the registry as it is: want %s<its digest> for a tenant a service names by the key's digest, or %s<its digest> for the key's own buckets (the authorizer's): the first %d hex digits of its SHA-256, bucketgate.KeyDigest",
		path, what, Prefix, bucketgate.TenantPrefix, bucketgate.KeyPrefix, bucketgate.DigestLen)
}

// InField reports s, a check's text at path that is neither its key nor its identity
// (its operation, plan, rules' names and periods, days, reservation, lease), when it is
// or holds an API key bucketgate made (Holds), never quoting it: none of them is one
// (the ids the limiter makes hold none), the errors about a value that is not the
// field's quote it, which the check function logs, and a rule's name rests in Redis and
// the metrics. The check function refuses such a check, and so does checkclient before
// sending it.
func InField(path, s string) error {
	if !Holds(s) {
		return nil
	}
	return fmt.Errorf("%s: %s (%s...), refused unquoted: no operation, plan, rule, day, reservation or lease is one, and the errors about one quote it in the function's logs (a rule's name would rest in Redis and the metrics)", path, made(s), Prefix)
}

// made says what s, which Holds, is: a key bucketgate made, or text holding one.
func made(s string) string {
	if Is(s) {
		return "an API key bucketgate made"
	}
	return "holds an API key bucketgate made"
}
