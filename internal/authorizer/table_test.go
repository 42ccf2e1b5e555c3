package authorizer

import (
	"bytes"
	"log/slog"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/bucketgate/bucketgate"
	"github.com/bucketgate/bucketgate/internal/bucket"
	"github.com/bucketgate/bucketgate/internal/lua"
	"github.com/bucketgate/bucketgate/internal/registry"
	"github.com/bucketgate/bucketgate/internal/telemetry"
	"github.com/bucketgate/bucketgate/internal/testkit/dynalite"
	"github.com/bucketgate/bucketgate/internal/testkit/samples"
	"github.com/bucketgate/bucketgate/ratelimitheaders"
)

// An item of the registry table that the registry cannot use (an unknown plan, rules the
// configuration refuses, an attribute of the wrong type), read from dynalite through the
// cache as the functions read it: the key is unknown, so under ip the request is its
// source's on the default plan and under refuse it is 401, and nothing is written to
// Redis for the key's own identity. The item and the attribute at fault are logged at
// error and counted. A valid item beside them is decided under its own plan.
func TestInvalidTableItems(t *testing.T) {
	const table = "bucketgate-keys"
	client := dynalite.Table(t, table)
	burst := func(capacity int64) bucketgate.Rule {
		return bucketgate.Rule{Name: "burst", Capacity: capacity, RefillPerSecond: 1}
	}
	tests := []struct {
		name      string
		record    registry.Record
		edit      func(map[string]types.AttributeValue) // nil: the record's item as it is
		attribute string                                // the attribute at fault; "": a valid item
	}{
		{"valid", registry.Record{Plan: "pro", Rules: []bucketgate.Rule{burst(3)}}, nil, ""},
		{"unknown plan", registry.Record{Plan: "gold"}, nil, "plan"},
		{"capacity out of range", registry.Record{Plan: "pro", Rules: []bucketgate.Rule{burst(0)}}, nil, "rules"},
		{"rule given twice", registry.Record{Plan: "pro", Rules: []bucketgate.Rule{burst(3), burst(4)}}, nil, "rules"},
		{"expiresAt not a number", registry.Record{Plan: "pro"}, func(it map[string]types.AttributeValue) {
			it["expiresAt"] = &types.AttributeValueMemberS{Value: "tomorrow"}
		}, "expiresAt"},
	}
	for _, tc := range tests {
		rawKey := "k-" + strings.ReplaceAll(tc.name, " ", "-")
		id := "key:" + bucketgate.KeyDigest(rawKey)
		tc.record.ID = id
		item := tc.record.Item()
		if tc.edit != nil {
			tc.edit(item)
		}
		if _, err := client.PutItem(t.Context(), &dynamodb.PutItemInput{TableName: aws.String(table), Item: item}); err != nil {
			t.Fatal(err)
		}
		for _, policy := range []string{"ip", "refuse"} {
			t.Run(tc.name+"/"+policy, func(t *testing.T) {
				cfg := unknownKeysConfig(t, policy)
				var logs bytes.Buffer
				opts := cacheOptions()
				opts.Log = telemetry.NewLogger(&logs, slog.LevelDebug)
				reg := registry.NewCache(registry.NewTable(client, table), opts)
				f := newFixture(t, options{config: cfg, cache: reg})
				ev := withHeaders(t, samples.Read(t, restEvent), map[string]string{"X-API-Key": rawKey})
				if tc.attribute == "" {
					a := f.mustInvoke(t, ev)
					if a.PrincipalID != id || a.str(t, ratelimitheaders.KeyPlan) != "pro" || a.num(t, ratelimitheaders.KeyLimit) != 3 {
						t.Fatalf("answer %s: want %s on pro with its burst of 3", a.raw, id)
					}
					if keys := f.mr.Keys(); !slices.Equal(keys, []string{bucket.Key(id)}) {
						t.Fatalf("Redis keys %v, want the key's own bucket", keys)
					}
					return
				}
				checkUnknownKey(t, f, policy, ev)
				for _, want := range []string{registry.MsgInvalidItem, `"level":"ERROR"`, `"item":"` + id + `"`, `"attribute":"` + tc.attribute} {
					if !strings.Contains(logs.String(), want) {
						t.Errorf("the registry's log does not hold %s: %s", want, &logs)
					}
				}
				if doc := oneEMF(t, f.metrics.Bytes()); doc[telemetry.MetricRegistryInvalid] != 1.0 || doc[telemetry.DimResult] != string(registry.ResultMiss) {
					t.Errorf("EMF %v: want one invalid item, read (miss)", doc)
				}
				if strings.Contains(logs.String()+f.logs.String(), rawKey) {
					t.Errorf("the raw key is in the logs")
				}
			})
		}
	}
}

// A route's ttlMs times the lease of a concurrency rule that only a registry item gives
// (the document has none, and loads with a table), read from dynalite as the functions
// read it: the lease's score in its set is Redis's time plus the route's ttl. A key of
// the same route without such a rule holds nothing: no lease, and no ttl sent.
func TestRouteTTLOfAnItemsLease(t *testing.T) {
	const table = "bucketgate-keys"
	client := dynalite.Table(t, table)
	cfg := mustParse(t, "defaultPlan: free\nplans: {free: [{name: burst, capacity: 10, refillPerSecond: 1}]}\n"+
		"routes: [{method: GET, path: '/orders/*', ttlMs: 90000}]\n")
	if cfg.CheckAlone() == nil {
		t.Fatal("CheckAlone() = nil: the document's route should hold nothing by itself")
	}
	records := map[string]registry.Record{
		"k-streams": {Plan: "free", Rules: []bucketgate.Rule{{Name: "streams", Concurrency: 2}}},
		"k-plain":   {Plan: "free"},
	}
	for raw, rec := range records {
		rec.ID = "key:" + bucketgate.KeyDigest(raw)
		if _, err := client.PutItem(t.Context(), &dynamodb.PutItemInput{TableName: aws.String(table), Item: rec.Item()}); err != nil {
			t.Fatal(err)
		}
	}
	f := newFixture(t, options{config: cfg, cache: registry.NewCache(registry.NewTable(client, table), cacheOptions())})
	invoke := func(raw string) answer {
		a := f.mustInvoke(t, withHeaders(t, samples.Read(t, restEvent), map[string]string{"X-API-Key": raw}))
		if !a.allowed(t) {
			t.Fatalf("%s: denied: %s", raw, a.raw)
		}
		return a
	}
	a := invoke("k-streams")
	lease, _ := a.Context[ratelimitheaders.KeyLease].(string)
	id := "key:" + bucketgate.KeyDigest("k-streams")
	members, err := f.mr.ZMembers(bucket.LeaseKey(id, "streams"))
	if err != nil {
		t.Fatalf("the item's lease set: %v (keys %v; answer %s)", err, f.mr.Keys(), a.raw)
	}
	var scores []float64
	for _, m := range members {
		if m == lua.LeaseSetMark {
			continue
		}
		s, err := f.mr.ZScore(bucket.LeaseKey(id, "streams"), m)
		if err != nil {
			t.Fatal(err)
		}
		scores = append(scores, s)
	}
	if want := float64(t0.Add(90 * time.Second).UnixMilli()); lease == "" || len(scores) != 1 || scores[0] != want {
		t.Fatalf("lease %q, scores %v: want one lease expiring at %v (Redis's time plus the route's 90 s)", lease, scores, want)
	}
	if a := invoke("k-plain"); a.str(t, ratelimitheaders.KeyLease) != "" {
		t.Fatalf("a key without a concurrency rule took a lease: %s", a.raw)
	}
}
