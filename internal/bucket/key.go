package bucket

import "strings"

// KeyPrefix starts every key bucketgate writes.
const KeyPrefix = "bg:"

// Key returns the Redis key of identity's state hash: KeyPrefix + "{" + identity + "}",
// with '%', '{' and '}' percent-encoded so that no identity can end the hash tag early,
// move to another cluster slot, or collide with another identity. Every rule of the
// identity lives in this one hash, so every call touches one slot.
func Key(identity string) string {
	var buf [64]byte
	return string(appendKey(buf[:0], identity))
}

// UsageSuffix follows an identity's Key in the key of its usage archive: the usage of
// its past days (see UsageKey).
const UsageSuffix = ":usage"

// UsageKey returns the Redis key of identity's usage archive, a hash of one field per
// UTC day before the current one: Key(identity) + UsageSuffix, in the same hash tag, so
// in the same cluster slot. No identity's Key is another's UsageKey: a Key ends with '}'.
func UsageKey(identity string) string { return Key(identity) + UsageSuffix }

// appendKey appends Key(identity) to dst.
func appendKey(dst []byte, identity string) []byte {
	dst = append(dst, KeyPrefix...)
	dst = append(dst, '{')
	if !strings.ContainsAny(identity, "%{}") {
		return append(append(dst, identity...), '}')
	}
	for i := 0; i < len(identity); i++ {
		switch c := identity[i]; c {
		case '%':
			dst = append(dst, "%25"...)
		case '{':
			dst = append(dst, "%7B"...)
		case '}':
			dst = append(dst, "%7D"...)
		default:
			dst = append(dst, c)
		}
	}
	return append(dst, '}')
}
