package bucket

import "strings"

// KeyPrefix starts every key bucketgate writes.
const KeyPrefix = "bg:"

// Key returns the Redis key of identity's state hash: KeyPrefix + "{" + identity + "}",
// with '%', '{' and '}' percent-encoded so that no identity can end the hash tag early,
// move to another cluster slot, or collide with another identity. Every rule of the
// identity lives in this one hash, so every call touches one slot.
func Key(identity string) string {
	if !strings.ContainsAny(identity, "%{}") {
		return KeyPrefix + "{" + identity + "}"
	}
	var b strings.Builder
	b.Grow(len(KeyPrefix) + len(identity) + 16)
	b.WriteString(KeyPrefix)
	b.WriteByte('{')
	for i := 0; i < len(identity); i++ {
		switch c := identity[i]; c {
		case '%':
			b.WriteString("%25")
		case '{':
			b.WriteString("%7B")
		case '}':
			b.WriteString("%7D")
		default:
			b.WriteByte(c)
		}
	}
	b.WriteByte('}')
	return b.String()
}
