package bucket_test

import (
	"strings"
	"testing"

	"pgregory.net/rapid"

	"github.com/bucketgate/bucketgate/internal/bucket"
)

// hashTag returns the part of key Redis Cluster hashes: between the first '{' and the
// first '}' after it, when that is not empty; else the whole key.
func hashTag(key string) string {
	open := strings.IndexByte(key, '{')
	if open < 0 {
		return key
	}
	end := strings.IndexByte(key[open+1:], '}')
	if end <= 0 {
		return key
	}
	return key[open+1 : open+1+end]
}

func unescape(tag string) string {
	r := strings.NewReplacer("%7B", "{", "%7D", "}", "%25", "%")
	return r.Replace(tag)
}

func TestKey(t *testing.T) {
	tests := []struct{ identity, key string }{
		{"tenant-42", "bg:{tenant-42}"},
		{"a{b}c", "bg:{a%7Bb%7Dc}"},
		{"%7B", "bg:{%257B}"},
		{"", "bg:{}"},
	}
	for _, tt := range tests {
		if got := bucket.Key(tt.identity); got != tt.key {
			t.Errorf("Key(%q) = %q, want %q", tt.identity, got, tt.key)
		}
	}
}

// TestSlot: the identity is the hash tag, so its slot is CRC-16/XMODEM's check value for
// the standard input; TestCluster compares Slot with a real cluster's CLUSTER KEYSLOT.
func TestSlot(t *testing.T) {
	if got := bucket.Slot("123456789"); got != 0x31C3 {
		t.Fatalf("Slot(123456789) = %#x, want 0x31c3", got)
	}
}

// TestKeyProperties: for any bytes, the hash tag of the key is the whole identity
// (escaped), so identities cannot move slots, and distinct identities get distinct keys.
func TestKeyProperties(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		alphabet := rapid.SampledFrom([]byte("{}%:7BD25ab\x00\xff"))
		a := string(rapid.SliceOfN(alphabet, 1, 40).Draw(t, "a"))
		b := string(rapid.SliceOfN(alphabet, 1, 40).Draw(t, "b"))
		ka, kb := bucket.Key(a), bucket.Key(b)
		if got := unescape(hashTag(ka)); got != a {
			t.Fatalf("hash tag of %q decodes to %q", ka, got)
		}
		if !strings.HasPrefix(ka, bucket.KeyPrefix+"{") || !strings.HasSuffix(ka, "}") {
			t.Fatalf("key %q has the wrong shape", ka)
		}
		if (ka == kb) != (a == b) {
			t.Fatalf("Key(%q) = %q and Key(%q) = %q", a, ka, b, kb)
		}
	})
}
