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

// FuzzHolds holds Holds and Is to the shape of a key bucketgate made on any text: Holds
// where the expression heldKey matches, Is where the whole text is one; Mask leaves
// none held; InKey's, InIdentity's and InField's errors quote none of the text.
func FuzzHolds(f *testing.F) {
	key := "bg_" + strings.Repeat("A", 42) + "-"
	for _, s := range []string{key, "key:" + key, "Bearer " + key, "x" + key, key + "_", "bg_bg_" + key, "tenant:acme/" + key + "/x", strings.Repeat("0a", 16), ""} {
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
		if masked := madekey.Mask(s); madekey.Holds(masked) || !holds && masked != s {
			t.Fatalf("Mask(%q) = %q: want no key held, and the text as it is when it held none", s, masked)
		}
		for _, err := range []error{madekey.InKey("key", s), madekey.InIdentity("identity", s), madekey.InField("plan", s)} {
			if (err != nil) != holds || err != nil && len(s) >= 8 && strings.Contains(err.Error(), s) {
				t.Fatalf("error %v for %q (holds %v): want one, never quoting it, just when it holds a key", err, s, holds)
			}
		}
	})
}
