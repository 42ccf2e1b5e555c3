package stress

import (
	"strings"
	"testing"

	"github.com/bucketgate/bucketgate"
	"github.com/bucketgate/bucketgate/internal/bucket"
	"github.com/bucketgate/bucketgate/internal/identity"
	"github.com/bucketgate/bucketgate/internal/settings"
)

func TestHostileCases(t *testing.T) {
	plan := HostilePlan{Identities: 2000, Keys: 300}
	cases, collisions := hostileCases(7, plan)
	again, _ := hostileCases(7, plan)
	if len(cases) != len(again) || collisions != 0 {
		t.Fatalf("%d then %d cases, %d digest collisions", len(cases), len(again), collisions)
	}
	resolver, err := identity.NewResolver(settings.DefaultAPIKeyHeader, identity.MaxIPv6Prefix)
	if err != nil {
		t.Fatal(err)
	}
	keys := map[string]string{}
	var invalid, huge int
	for i, c := range cases {
		if c.want != again[i].want {
			t.Fatalf("case %d differs between two runs with one seed", i)
		}
		if !c.raw {
			if got := resolve(resolver, c); got != c.want {
				t.Fatalf("case %d resolves to %.60q, want %.60q", i, got, c.want)
			}
			for _, v := range c.headers {
				if len(v) == MaxHeaderBytes {
					huge++
				}
			}
		}
		if !c.valid {
			invalid++
			if err := (bucketgate.Request{Identity: c.want, Rules: hostileRules, Cost: 1}).Validate(); err == nil {
				t.Fatalf("invalid case %d (%d bytes) validates", i, len(c.want))
			}
			continue
		}
		// Distinct identities, distinct keys, each hash tag the whole identity.
		key := bucket.Key(c.want)
		if other, ok := keys[key]; ok {
			t.Fatalf("%.60q and %.60q share key %.60q", other, c.want, key)
		}
		keys[key] = c.want
		if tag := key[len(bucket.KeyPrefix)+1 : len(key)-1]; strings.ContainsAny(tag, "{}") {
			t.Fatalf("key %.60q: the hash tag ends inside the identity", key)
		}
	}
	if invalid != 4 || huge == 0 || len(keys) < plan.Identities+plan.Keys {
		t.Fatalf("%d invalid, %d huge keys, %d valid identities", invalid, huge, len(keys))
	}
}

func TestOwnSlots(t *testing.T) {
	nodes := `07c3 127.0.0.1:30001@40001 myself,master - 0 0 1 connected 0-5460 7000 [6000->-e7d1]
e7d1 127.0.0.1:30002@40002 master - 0 1 2 connected 5461-10922`
	owns, err := ownSlots(nodes)
	if err != nil {
		t.Fatal(err)
	}
	for slot, want := range map[int]bool{0: true, 5460: true, 5461: false, 7000: true, 6000: false, 16383: false} {
		if owns(slot) != want {
			t.Errorf("slot %d: owned %v, want %v", slot, owns(slot), want)
		}
	}
	if _, err := ownSlots("e7d1 127.0.0.1:30002@40002 master - 0 1 2 connected 1-2"); err == nil {
		t.Error("no myself line, no error")
	}
}
