package registry_test

import (
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/bucketgate/bucketgate"
	"github.com/bucketgate/bucketgate/internal/registry"
)

// FuzzDecodeAccountItem reads the items of accounts and of keys of accounts as a hand
// may write them, the fuzzer's strings in the id, account and buckets (any bytes: braces,
// colons, spaces, unicode, a kilobyte) and a bit mask of which attributes are there and of
// which type: DecodeItem never panics, refuses with a *RecordError naming the item and an
// attribute, or returns a Record that a cache can use as an account's or a key's (an
// account's name and a key's account those ValidAccountName takes, whose buckets, an
// account's or a key of an account's, a digest's) and that Item writes back unchanged.
func FuzzDecodeAccountItem(f *testing.F) {
	f.Add("acme", "acme", digestID, "pro", uint8(0b0000_0001))
	f.Add("acme", "acme", digestID, "pro", uint8(0b0000_0110))
	f.Add("a{b}c", "a:b", "key:"+strings.Repeat("A", 32), "", uint8(0b0001_0010))
	f.Add("made", "x y", "acct:made", "pro", uint8(0b0000_1101))
	f.Add("é", strings.Repeat("n", 129), digestID, "pro", uint8(0b0010_0011))
	f.Fuzz(func(t *testing.T, name, account, buckets, plan string, shape uint8) {
		bit := func(i uint) bool { return shape&(1<<i) != 0 }
		id := digestID
		if bit(0) {
			id = registry.AccountItemPrefix + name
		}
		it := map[string]types.AttributeValue{"id": s(id)}
		if bit(1) {
			it["account"] = s(account)
		}
		if bit(2) {
			it["buckets"] = s(buckets)
		}
		if bit(3) {
			it["plan"] = s(plan)
		}
		if bit(4) {
			it["account"] = n(account)
		}
		if bit(5) {
			it["buckets"] = l(s(buckets))
		}
		rec, err := registry.DecodeItem(it)
		if err != nil {
			var re *registry.RecordError
			if !errors.As(err, &re) || re.Attribute == "" || re.ID != id {
				t.Fatalf("DecodeItem error %v: want a *RecordError naming item %q and an attribute", err, id)
			}
			return
		}
		acct, isAccount := strings.CutPrefix(rec.ID, registry.AccountItemPrefix)
		digest, isKeyID := strings.CutPrefix(rec.Buckets, bucketgate.KeyPrefix)
		switch {
		case isAccount && !bucketgate.ValidAccountName(acct):
			t.Fatalf("an account's item of name %q: want a name ValidAccountName takes", acct)
		case isAccount && rec.Account != "":
			t.Fatalf("an account's item naming account %q: accounts do not nest", rec.Account)
		case rec.Account != "" && (!strings.HasPrefix(rec.ID, bucketgate.KeyPrefix) || !bucketgate.ValidAccountName(rec.Account)):
			t.Fatalf("item %q of account %q: want an API key's, of an account's name", rec.ID, rec.Account)
		case rec.Buckets != "" && (!isAccount && rec.Account == "" || !isKeyID || !bucketgate.ValidDigest(digest)):
			t.Fatalf("item %q spending %q: want an account's or a key of an account's, spending a key's digest", rec.ID, rec.Buckets)
		case rec.Plan == "" && rec.Account == "":
			t.Fatalf("item %q with neither plan nor account", rec.ID)
		case isAccount && registry.ItemID(registry.IdentityOf(rec.ID)) != rec.ID:
			t.Fatalf("the identity %q of item %q does not lead back to it", registry.IdentityOf(rec.ID), rec.ID)
		}
		back, err := registry.DecodeItem(rec.Item())
		if err != nil || !reflect.DeepEqual(back, rec) {
			t.Fatalf("Item round trip: %+v, %v; want %+v", back, err, rec)
		}
	})
}
