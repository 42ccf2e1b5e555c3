package bucket

import (
	"errors"
	"slices"
	"testing"

	"github.com/bucketgate/bucketgate"
)

// FuzzParseReservation: a reservation id is a caller's input. Whatever it holds,
// parseID returns a reservation or an error wrapping ErrConflict, never a panic; it
// accepts only what the secret signed for the identity, an id of the current version
// for a settle that shares a rule with its reserve and an id of the version before
// (idVersion2) for its reserve's very rules, and what it accepts signs back to the very
// same id, within the bounds a settle needs, skipping every rule of the settle that its
// reserve did not take from. Claims reads any id without a panic, and the claims it
// reads from an accepted id are the signed ones.
func FuzzParseReservation(f *testing.F) {
	secret := []byte("0123456789abcdef0123456789abcdef")
	tokens := bucketgate.Rule{Name: "tokens", Capacity: 1000, RefillPerSecond: 10}
	trial := bucketgate.Rule{Name: "trial", Capacity: 5, RefillPerSecond: 1, Shadow: true}
	// The rules a settle may name, by the bits of its pick: those of the reserve, one of
	// them as a quota now, and one added since.
	pool := []bucketgate.Rule{tokens, trial, {Name: "tokens", Limit: 1000, Period: bucketgate.PeriodMonth}, {Name: "added", Capacity: 9, RefillPerSecond: 1}}
	reserved := pool[:2]
	r := reservation{nonce: "AAAAAAAAAAAAAAAAAAAAAA", estimate: 40, expiry: 1767225600000, skip: 1 << 1, prints: rulesPrint(reserved)}
	good := r.id(kindReservation, secret, "key:abc")
	r.claims = "k\x00key:abc\x001"
	claimed := r.id(kindReservation, secret, "key:abc")
	r.prints = ""
	old := r.idV2(kindReservation, secret, "key:abc", reserved)
	signed := []string{good, claimed, old}
	f.Add(good, "key:abc", uint8(3))
	f.Add(good, "key:abc", uint8(8))
	f.Add(good, "key:abc", uint8(9))
	f.Add(claimed, "key:abc", uint8(1))
	f.Add(claimed[:10]+claimed[12:], "key:abc", uint8(3))
	f.Add(old, "key:abc", uint8(3))
	f.Add(old, "key:abc", uint8(1))
	f.Add(idVersion2+old[len(idVersion2):], "key:abc", uint8(3))
	f.Add(good, "key:abd", uint8(3))
	f.Add(good[:len(good)-1], "key:abc", uint8(3))
	f.Add(idVersion+"."+"x", "key:abc", uint8(3))
	f.Add("", "", uint8(0))
	f.Fuzz(func(t *testing.T, id, identity string, pick uint8) {
		var rules []bucketgate.Rule
		for i, rule := range pool {
			if pick&(1<<i) != 0 && !slices.ContainsFunc(rules, func(r bucketgate.Rule) bool { return r.Name == rule.Name }) {
				rules = append(rules, rule)
			}
		}
		q := bucketgate.Request{Identity: identity, Rules: rules, Op: bucketgate.OpSettle, ID: id}
		claims, hasClaims := Claims(id)
		r, err := parseID(kindReservation, secret, q)
		if err != nil {
			if !errors.Is(err, bucketgate.ErrConflict) {
				t.Fatalf("id %q: error %v does not wrap ErrConflict", id, err)
			}
			return
		}
		if !slices.Contains(signed, id) || identity != "key:abc" {
			t.Fatalf("accepted id %q for %q: only the signed ids for key:abc may pass", id, identity)
		}
		back := r.id(kindReservation, secret, identity)
		if r.prints == "" {
			back = r.idV2(kindReservation, secret, identity, rules)
		}
		if back != id {
			t.Fatalf("id %q read as %+v signs back to %q", id, r, back)
		}
		if r.estimate < 1 || r.estimate > bucketgate.MaxCapacity || r.expiry < 0 {
			t.Fatalf("id %q read out of bounds: %+v", id, r)
		}
		if claims != r.claims || hasClaims != (r.claims != "") {
			t.Fatalf("id %q: Claims = %q, %v; parseID read %q", id, claims, hasClaims, r.claims)
		}
		// Of the settle's rules, only tokens as a bucket, which the reserve took from, is
		// given back to.
		skip, _ := r.skipOf(rules)
		for j, rule := range byKind(rules) {
			if given := rule.Name == tokens.Name && !rule.IsQuota(); skip.Has(j) == given {
				t.Fatalf("id %q settled under %+v: skip %b, rule %s given back to: %v", id, rules, skip, rule.Name, given)
			}
		}
	})
}
