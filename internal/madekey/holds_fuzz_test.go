package madekey_test

import (
	"regexp"
	"strings"
	"testing"

	"github.com/bucketgate/bucketgate/internal/madekey"
)

// heldKey is a key bucketgate made as a token of a text: base64url characters
// neither before nor after it.
var heldKey = regexp.MustCompile(`(?:^|[^A-Za-z0-9_-])bg_[A-Za-z0-9_-]{43}(?:$|[^A-Za-z0-9_-])`)

// shownKey is what may be 128 bits or more of a key bucketgate made: its prefix and 22
// base64url characters, whatever comes before or after them.
var shownKey = regexp.MustCompile(`bg_[A-Za-z0-9_-]{22}`)

// FuzzHolds holds Holds and Is to the shape of a key bucketgate made on any text: Holds
// where the expression heldKey matches, Is where the whole text is one; Shows where
// shownKey matches (wherever Holds does), and Mask leaves nothing it matches, changing
// only a text that Shows; InKey's, InIdentity's and InField's errors quote none of the
// text.
func FuzzHolds(f *testing.F) {
	key := "bg_" + strings.Repeat("A", 42) + "-"
	for _, s := range []string{key, "key:" + key, "Bearer " + key, "x" + key, key + "_", "bg_bg_" + key, key[:3+21], key[:3+22] + ".", "tenant:acme/" + key + "/x", strings.Repeat("0a", 16), ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		holds := madekey.Holds(s)
		if want := heldKey.MatchString(s); holds != want {
			t.Fatalf("Holds(%q) = %v, want %v", s, holds, want)
		}
		if is, want := madekey.Is(s), holds && len(s) == len(key); is != want {
			t.Fatalf("Is(%q) = %v, want %v", s, is, want)
		}
		shows := madekey.Shows(s)
		if want := shownKey.MatchString(s); shows != want || holds && !shows {
			t.Fatalf("Shows(%q) = %v, want %v (Holds %v)", s, shows, want, holds)
		}
		if masked := madekey.Mask(s); shownKey.MatchString(masked) || (masked != s) != shows {
			t.Fatalf("Mask(%q) = %q: want nothing shown, and the text as it is when it showed none", s, masked)
		}
		for _, err := range []error{madekey.InKey("key", s), madekey.InIdentity("identity", s), madekey.InField("plan", s)} {
			if (err != nil) != holds || err != nil && len(s) >= 8 && strings.Contains(err.Error(), s) {
				t.Fatalf("error %v for %q (holds %v): want one, never quoting it, just when it holds a key", err, s, holds)
			}
		}
	})
}
