package authorizer

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/bucketgate/bucketgate"
	"github.com/bucketgate/bucketgate/internal/bucket"
	"github.com/bucketgate/bucketgate/internal/registry"
	"github.com/bucketgate/bucketgate/internal/telemetry"
	"github.com/bucketgate/bucketgate/internal/testkit/samples"
	"github.com/bucketgate/bucketgate/ratelimitheaders"
)

// accountPlans puts the account on a plan of a burst of 4; free is the address's.
const accountPlans = "defaultPlan: free\nplans: {free: [{name: burst, capacity: 10, refillPerSecond: 1}], team: [{name: burst, capacity: 4, refill: 1, per: hour}]}"

// keyed is the REST sample with key in the API key header.
func keyed(t *testing.T, key string) []byte {
	t.Helper()
	return withHeaders(t, samples.Read(t, restEvent), map[string]string{"X-API-Key": key})
}

// Two keys of one account spend one set of buckets, the account's, under its plan: the
// burst of 4 runs out over both keys together. A key's own rule limits it alone, named
// by the key's digest in the headers; the decision line names the key and the account;
// the account is a second lookup, counted.
func TestKeysOfAnAccountShareItsBuckets(t *testing.T) {
	cfg := mustParse(t, accountPlans)
	digestB := bucketgate.KeyDigest("key b")
	reg := cacheOver(cfg, nil,
		registry.Record{ID: "account:acme", Plan: "team", Owner: "Acme"},
		registry.Record{ID: "key:" + bucketgate.KeyDigest("key a"), Account: "acme"},
		registry.Record{ID: "key:" + digestB, Account: "acme", Rules: []bucketgate.Rule{{Name: "burst", Capacity: 1, RefillPerSecond: 0.001}}},
	)
	f := newFixture(t, options{config: cfg, cache: reg})
	var got []string
	for i, key := range []string{"key a", "key b", "key a", "key b", "key a", "key a"} {
		a := f.mustInvoke(t, keyed(t, key))
		if a.PrincipalID != "acct:acme" || a.str(t, ratelimitheaders.KeyPlan) != "team" {
			t.Fatalf("request %d: %s: want acct:acme on team", i, a.raw)
		}
		got = append(got, a.str(t, ratelimitheaders.KeyReason)+":"+a.str(t, ratelimitheaders.KeyRule))
		if i == 1 {
			policy := a.str(t, ratelimitheaders.KeyRateLimitPolicy)
			if want := `"burst";q=4;w=14400, "` + digestB + `/burst";q=1;w=1000`; policy != want {
				t.Errorf("key b's RateLimit-Policy %s, want %s", policy, want)
			}
		}
	}
	want := "ok:burst ok:" + digestB + "/burst ok:burst limited:" + digestB + "/burst ok:burst limited:burst"
	if strings.Join(got, " ") != want {
		t.Fatalf("reasons %s, want %s: key b's own burst of 1, then the account's 4 for both", strings.Join(got, " "), want)
	}
	if keys := f.mr.Keys(); !slices.Equal(keys, []string{bucket.Key("acct:acme")}) {
		t.Fatalf("Redis keys %v, want the account's one hash", keys)
	}
	fields, _ := f.mr.HKeys(bucket.Key("acct:acme"))
	slices.Sort(fields)
	if want := []string{"burst:tokens", "burst:ts", digestB + "/burst:tokens", digestB + "/burst:ts"}; !slices.Equal(fields, want) {
		t.Errorf("the account's fields %v, want %v", fields, want)
	}
	logs := f.logs.String()
	if !strings.Contains(logs, `"identity":"acct:acme"`) || !strings.Contains(logs, `"key":"key:`+digestB+`"`) || !strings.Contains(logs, `"account":"acme"`) {
		t.Errorf("the decision lines do not name the account and the key:\n%s", logs)
	}
	var lookups []string
	for _, line := range strings.Split(strings.TrimSpace(f.metrics.String()), "\n")[:2] {
		var doc map[string]any
		if err := json.Unmarshal([]byte(line), &doc); err != nil {
			t.Fatal(err)
		}
		lookups = append(lookups, line)
		if !strings.Contains(line, `"`+telemetry.MetricRegistryLookups+`"`) {
			t.Fatalf("EMF line %s: no registry lookups", line)
		}
	}
	if !strings.Contains(lookups[0], `"miss"`) || strings.Count(f.metrics.String(), `"Result":"miss"`) != 2 {
		t.Errorf("EMF lines %v: want the key's and the account's reads counted as misses", lookups)
	}
}

// A revoked account turns every key of it away, and so does an active account a revoked
// or expired key of it (the old key of a roll), though the registry still names the
// account as whose buckets they spent: limited as its address (unknownKeys ip) or
// refused (refuse), with nothing of the account's written.
func TestRevokedAccountTurnsItsKeysAway(t *testing.T) {
	key := "key:" + bucketgate.KeyDigest("key a")
	for _, tc := range []struct {
		name    string
		records []registry.Record
	}{
		{"revoked account", []registry.Record{{ID: "account:acme", Plan: "pro", Status: registry.StatusRevoked}, {ID: key, Account: "acme"}}},
		{"revoked key", []registry.Record{{ID: "account:acme", Plan: "pro"}, {ID: key, Account: "acme", Status: registry.StatusRevoked}}},
		{"expired key", []registry.Record{{ID: "account:acme", Plan: "pro"}, {ID: key, Account: "acme", ExpiresAt: time.Unix(1, 0)}}},
	} {
		for _, policy := range []string{"ip", "refuse"} {
			t.Run(tc.name+"/"+policy, func(t *testing.T) {
				cfg := unknownKeysConfig(t, policy)
				f := newFixture(t, options{config: cfg, cache: cacheOver(cfg, nil, tc.records...)})
				checkUnknownKey(t, f, policy, keyed(t, "key a"))
			})
		}
	}
}

// A key item written by hand naming an account the table does not hold is an invalid
// item: the key is unknown (limited as its address), the EMF line counts it in
// RegistryInvalidItems (the registry's error line naming the key and the attribute is
// TestCacheAccountInvalid's).
func TestKeyOfAMissingAccountIsInvalid(t *testing.T) {
	cfg := unknownKeysConfig(t, "ip")
	id := "key:" + bucketgate.KeyDigest("key a")
	f := newFixture(t, options{config: cfg, cache: cacheOver(cfg, nil, registry.Record{ID: id, Account: "gone"})})
	checkUnknownKey(t, f, "ip", keyed(t, "key a"))
	doc := oneEMF(t, f.metrics.Bytes())
	if doc[telemetry.MetricRegistryInvalid] != 1.0 {
		t.Errorf("EMF %v: want RegistryInvalidItems 1", doc)
	}
}
