package madekey_test

import (
	"strings"
	"testing"

	"github.com/bucketgate/bucketgate/internal/madekey"
)

// TestIsMadeKey: the shape of the keys bucketgate makes, and near misses.
func TestIsMadeKey(t *testing.T) {
	tests := []struct {
		name string
		s    string
		want bool
	}{
		{"a made key", "bg_" + strings.Repeat("A", 42) + "_", true},
		{"a character short", "bg_" + strings.Repeat("A", 42), false},
		{"a character more", "bg_" + strings.Repeat("A", 44), false},
		{"not base64url", "bg_" + strings.Repeat("A", 42) + "+", false},
		{"no prefix", strings.Repeat("A", 46), false},
		{"a tenant's name", "bg_tenant-42", false},
		{"after a newline", "bg_" + strings.Repeat("A", 42) + "\n", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := madekey.Is(tt.s); got != tt.want {
				t.Errorf("Is: %v, want %v", got, tt.want)
			}
		})
	}
}

// TestHoldsMadeKey: a key bucketgate made within a longer text, as a token, is found
// (it would rest in Redis and the registry as it is); text that merely looks like one
// near its ends, a digest and ordinary keys are not.
func TestHoldsMadeKey(t *testing.T) {
	key := "bg_" + strings.Repeat("A", 42) + "-"
	tests := []struct {
		name string
		s    string
		want bool
	}{
		{"the key alone", key, true},
		{"after a kind", "key:" + key, true},
		{"after Bearer", "Bearer " + key, true},
		{"after a slash", "acme/" + key, true},
		{"before a slash", key + "/acme", true},
		{"after a newline", key + "\n", true},
		{"after a near miss", "bg_x " + key, true},
		{"the second of two", "bg_" + key[3:] + "A " + key, true},
		{"after a base64url character", "x" + key, false},
		{"after an underscore", "acme_" + key, false},
		{"before a base64url character", key + "x", false},
		{"before a hyphen", key + "-", false},
		{"a character short", key[:len(key)-1], false},
		{"a character not base64url", "bg_" + strings.Repeat("A", 41) + "+A", false},
		{"a non-ASCII character", "bg_" + strings.Repeat("A", 41) + "é", false},
		{"a digest", strings.Repeat("0123456789abcdef", 2), false},
		{"an ordinary key", "tenant-42", false},
		{"a tenant's name", "bg_tenant-42", false},
		{"empty", "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := madekey.Holds(tt.s); got != tt.want {
				t.Errorf("Holds: %v, want %v", got, tt.want)
			}
		})
	}
}

// TestInNeverQuotes: a key or an identity that is or holds an API key bucketgate made is
// refused naming the field, never quoting the key.
func TestInNeverQuotes(t *testing.T) {
	key := "bg_" + strings.Repeat("Q", 43)
	for _, tc := range []struct {
		name, value, want string
		in                func(path, s string) error
	}{
		{"a key", key, "key: an API key bucketgate made (bg_...)", madekey.InKey},
		{"a key holding one", "Bearer " + key, "key: holds an API key bucketgate made (bg_...)", madekey.InKey},
		{"an identity after its kind", "key:" + key, "identity: key: with an API key bucketgate made (bg_...)", madekey.InIdentity},
		{"an identity without a kind", key, "identity: an API key bucketgate made (bg_...)", madekey.InIdentity},
		{"an identity holding one", "tenant:acme/" + key, "identity: holds an API key bucketgate made (bg_...)", madekey.InIdentity},
		{"a plan", key, "plan: an API key bucketgate made (bg_...), refused unquoted: no operation, plan, rule, day, reservation or lease is one", madekey.InField},
		{"a lease holding one", "Bearer " + key, "lease: holds an API key bucketgate made (bg_...)", madekey.InField},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := strings.SplitN(tc.want, ":", 2)[0]
			err := tc.in(path, tc.value)
			if err == nil || !strings.HasPrefix(err.Error(), tc.want) || strings.Contains(err.Error(), key[3:]) {
				t.Errorf("error %v: want it to start %q, the key not quoted", err, tc.want)
			}
		})
	}
	for _, ok := range []string{"tenant-42", "key:" + strings.Repeat("ab", 16), "x" + key} {
		if err := madekey.InKey("key", ok); err != nil {
			t.Errorf("InKey(%q): %v, want nil", ok, err)
		}
		if err := madekey.InField("reservation", ok); err != nil {
			t.Errorf("InField(%q): %v, want nil", ok, err)
		}
		if err := madekey.InIdentity("identity", "tenant:"+ok); err != nil {
			t.Errorf("InIdentity(%q): %v, want nil", "tenant:"+ok, err)
		}
	}
}

// TestMask: every key bucketgate made that a text holds (Holds) is replaced by Prefix and
// "...", and the rest is kept; a text that holds none is returned as it is.
func TestMask(t *testing.T) {
	key := "bg_" + strings.Repeat("Q", 43)
	other := "bg_" + strings.Repeat("z", 42) + "-"
	for _, tc := range []struct{ name, s, want string }{
		{"the key alone", key, "bg_..."},
		{"after a tenant's name", "acme/" + key, "acme/bg_..."},
		{"two keys", key + " " + other + "/x", "bg_... bg_.../x"},
		{"none", "tenant-42", "tenant-42"},
		{"empty", "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := madekey.Mask(tc.s); got != tc.want {
				t.Errorf("Mask(%q) = %q, want %q", tc.s, got, tc.want)
			}
		})
	}
}

// TestMaskWhatAUserPastes: Mask leaves no 128 bits of an API key bucketgate made in
// what a user may paste around one: a key followed by punctuation, a line break or a
// closing quote, in a pair or a URL's query, glued to base64url characters on either
// side (a sloppy copy, a longer token), cut short, or two keys glued together. It masks
// Prefix and every base64url character after it from 22 on (132 bits of a key; 21 are
// 126), whatever comes before: it may mask a name that is no key, never show one. A key
// glued to a base64url character was printed whole, and so was one cut short.
func TestMaskWhatAUserPastes(t *testing.T) {
	key := "bg_" + strings.Repeat("Q", 20) + "bg_" + strings.Repeat("w", 19) + "-" // a key holding its prefix again
	for _, tc := range []struct{ name, s, want string }{
		{"followed by a comma", key + ",x", "bg_...,x"},
		{"followed by a semicolon", key + ";", "bg_...;"},
		{"in double quotes", `"` + key + `"`, `"bg_..."`},
		{"in parentheses", "(" + key + ")", "(bg_...)"},
		{"followed by a line break", key + "\n", "bg_...\n"},
		{"followed by CRLF", key + "\r\n", "bg_...\r\n"},
		{"a key=value pair", "key=" + key, "key=bg_..."},
		{"in a URL's query", "https://api.example.com/v1?api_key=" + key + "&page=2", "https://api.example.com/v1?api_key=bg_...&page=2"},
		{"after Bearer", "Authorization: Bearer " + key, "Authorization: Bearer bg_..."},
		{"after a letter", "x" + key, "xbg_..."},
		{"after an underscore", "api_key_" + key, "api_key_bg_..."},
		{"after a hyphen", "acme-" + key, "acme-bg_..."},
		{"before a letter", key + "x", "bg_..."},
		{"before more base64url", key + "Zm9vYmFyYmF6", "bg_..."},
		{"before a hyphen", key + "-old", "bg_..."},
		{"inside a longer token", "tok_" + key + "_v2", "tok_bg_..."},
		{"its prefix twice", "bg_" + key, "bg_..."},
		{"two keys glued", key + key, "bg_..."},
		{"base64 padding after it", key + "==", "bg_...=="},
		{"cut to 22 characters", key[:3+22], "bg_..."},
		{"cut to 42 characters", key[:len(key)-1], "bg_..."},
		{"cut to 21 characters", key[:3+21] + " x", key[:3+21] + " x"},
		{"a tenant's name", "bg_tenant-42", "bg_tenant-42"},
		{"a near miss, then a key", "bg_x " + key, "bg_x bg_..."},
		{"a digest", strings.Repeat("0123456789abcdef", 2), strings.Repeat("0123456789abcdef", 2)},
		{"the mask itself", "bg_... and bg_...", "bg_... and bg_..."},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := madekey.Mask(tc.s)
			if got != tc.want {
				t.Errorf("Mask(%q) = %q, want %q", tc.s, got, tc.want)
			}
			if shows := madekey.Shows(tc.s); shows != (tc.want != tc.s) {
				t.Errorf("Shows(%q) = %v, want %v: Mask changes it", tc.s, shows, !shows)
			}
			if madekey.Shows(got) {
				t.Errorf("Shows(Mask(%q)) = true, want nothing left to mask", tc.s)
			}
		})
	}
}
