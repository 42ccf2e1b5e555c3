// Package textcut bounds the text that goes into errors and logs: a value read from a
// request or a stored row may be any length, a message quoting it may not.
package textcut

import (
	"strings"
	"unicode/utf8"
)

// To returns at most n bytes of s, cut at a character boundary (so that a cut never
// makes invalid UTF-8 of valid text). A cut result is a copy, which does not hold the
// rest of s in memory as a slice of it would. n below 0 counts as 0.
func To(s string, n int) string {
	if len(s) <= n {
		return s
	}
	n = max(n, 0)
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return strings.Clone(s[:n])
}

// Marked is To(s, n) followed by "..." when s was cut, for a message that quotes s.
func Marked(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return To(s, n) + "..."
}
