package textcut

import "testing"

func TestTo(t *testing.T) {
	tests := []struct {
		name, s string
		n       int
		want    string
	}{
		{"short", "abc", 5, "abc"},
		{"exact", "abcde", 5, "abcde"},
		{"cut", "abcdef", 5, "abcde"},
		{"zero", "abc", 0, ""},
		{"negative", "abc", -1, ""},
		{"inside a character", "ab\u00e9cd", 3, "ab"},
		{"after a character", "ab\u00e9cd", 4, "ab\u00e9"},
		{"inside the first character", "\u20acx", 2, ""},
		{"invalid UTF-8 kept as bytes", "a\xffbc", 2, "a\xff"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := To(tc.s, tc.n); got != tc.want {
				t.Fatalf("To(%q, %d) = %q, want %q", tc.s, tc.n, got, tc.want)
			}
		})
	}
}

func TestMarked(t *testing.T) {
	tests := []struct {
		name, s string
		n       int
		want    string
	}{
		{"short", "abc", 3, "abc"},
		{"cut", "abcd", 3, "abc..."},
		{"inside a character", "ab\u00e9cd", 3, "ab..."},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := Marked(tc.s, tc.n); got != tc.want {
				t.Fatalf("Marked(%q, %d) = %q, want %q", tc.s, tc.n, got, tc.want)
			}
		})
	}
}
