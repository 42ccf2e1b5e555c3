package bucket

import (
	"errors"
	"testing"

	"github.com/bucketgate/bucketgate"
)

// FuzzParseReservation: a reservation id is a caller's input. Whatever it holds,
// parseID returns a reservation or an error wrapping ErrConflict, never a
// panic; it accepts only what the secret signed for the identity and rules, and what it
// accepts signs back to the very same id, within the bounds a settle needs. Claims reads
// any id without a panic, and the claims it reads from an accepted id are the signed
// ones.
func FuzzParseReservation(f *testing.F) {
	secret := []byte("0123456789abcdef0123456789abcdef")
	rules := []bucketgate.Rule{{Name: "tokens", Capacity: 1000, RefillPerSecond: 10}}
	good := reservation{nonce: "AAAAAAAAAAAAAAAAAAAAAA", estimate: 40, expiry: 1767225600000}.id(kindReservation, secret, "key:abc", rules)
	claimed := reservation{nonce: "AAAAAAAAAAAAAAAAAAAAAA", estimate: 40, expiry: 1767225600000, claims: "k\x00key:abc\x001"}.id(kindReservation, secret, "key:abc", rules)
	f.Add(good, "key:abc")
	f.Add(claimed, "key:abc")
	f.Add(claimed[:10]+claimed[12:], "key:abc")
	f.Add(good, "key:abd")
	f.Add(good[:len(good)-1], "key:abc")
	f.Add(idVersion+"."+"x", "key:abc")
	f.Add("", "")
	f.Fuzz(func(t *testing.T, id, identity string) {
		q := bucketgate.Request{Identity: identity, Rules: rules, Op: bucketgate.OpSettle, ID: id}
		claims, hasClaims := Claims(id)
		r, err := parseID(kindReservation, secret, q)
		if err != nil {
			if !errors.Is(err, bucketgate.ErrConflict) {
				t.Fatalf("id %q: error %v does not wrap ErrConflict", id, err)
			}
			return
		}
		if id != good && id != claimed || identity != "key:abc" {
			t.Fatalf("accepted id %q for %q: only the signed id for key:abc may pass", id, identity)
		}
		if back := r.id(kindReservation, secret, identity, rules); back != id {
			t.Fatalf("id %q read as %+v signs back to %q", id, r, back)
		}
		if r.estimate < 1 || r.estimate > bucketgate.MaxCapacity || r.expiry < 0 {
			t.Fatalf("id %q read out of bounds: %+v", id, r)
		}
		if claims != r.claims || hasClaims != (r.claims != "") {
			t.Fatalf("id %q: Claims = %q, %v; parseID read %q", id, claims, hasClaims, r.claims)
		}
	})
}
