package authorizer

import (
	"context"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/bucketgate/bucketgate"
	"github.com/bucketgate/bucketgate/internal/registry"
	"github.com/bucketgate/bucketgate/internal/testkit/dynalite"
	"github.com/bucketgate/bucketgate/internal/testkit/redistest"
	"github.com/bucketgate/bucketgate/internal/testkit/samples"
)

// readUnits is a registry table read through a real client, counting the read request
// units DynamoDB bills its GetItems: half a unit an eventually consistent one, a unit a
// strongly consistent one (every item is under 4 KB).
type readUnits struct {
	*dynamodb.Client
	mu    sync.Mutex
	units float64
}

func (r *readUnits) GetItem(ctx context.Context, in *dynamodb.GetItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error) {
	r.mu.Lock()
	r.units += 0.5
	if aws.ToBool(in.ConsistentRead) {
		r.units += 0.5
	}
	r.mu.Unlock()
	return r.Client.GetItem(ctx, in, opts...)
}

// take returns the units counted since the last take.
func (r *readUnits) take() float64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	u := r.units
	r.units = 0
	return u
}

// readUnitUSD is DynamoDB's on-demand price of a million read request units, as
// docs/deploy.md prices them.
const readUnitUSD = 0.125

// What a flood of made-up API keys from one address costs the registry table, read
// from dynalite with decisions on a real Redis: each new key is read (1.5 read units:
// the eventually consistent GetItem and the strongly consistent one that confirms the
// miss) before its request is limited as its address, also once the address's bucket
// is empty: an address causes as many reads as requests, whatever its allowance. The
// address cannot be asked first: a registered key from that same empty address is
// decided on its own buckets (0.5 units), a key of an account on its account's (1
// unit: the key's item, then the account's), and nothing tells either from a made-up
// key before its read. docs/deploy.md's DynamoDB cost per million requests is the most
// any request read.
func TestTableReadsOfAMadeUpKeyFlood(t *testing.T) {
	const table = "bucketgate-keys"
	db := &readUnits{Client: dynalite.Table(t, table)}
	for _, rec := range []registry.Record{
		{ID: "key:" + bucketgate.KeyDigest("k-registered"), Plan: "pro"},
		{ID: "account:acme", Plan: "pro"},
		{ID: "key:" + bucketgate.KeyDigest("k-member"), Account: "acme"},
	} {
		if _, err := db.Client.PutItem(t.Context(), &dynamodb.PutItemInput{TableName: aws.String(table), Item: rec.Item()}); err != nil {
			t.Fatal(err)
		}
	}
	cfg := mustParse(t, "defaultPlan: free\nplans:\n"+
		"  free: [{name: burst, capacity: 3, refill: 1, per: day}]\n"+
		"  pro: [{name: burst, capacity: 100, refill: 1, per: day}]\n")
	f := newFixture(t, options{config: cfg, cache: registry.NewCache(registry.NewTable(db, table), cacheOptions()),
		redis: redistest.Client(t, redistest.Start(t).Addr)})
	ip := "ip:203.0.113.10" // the REST sample's source
	steps := []struct {
		name      string
		key       string
		allowed   bool
		principal string
		units     float64
	}{
		{"a made-up key", "made-up-1", true, ip, 1.5},
		{"another", "made-up-2", true, ip, 1.5},
		{"a third, the address's last token", "made-up-3", true, ip, 1.5},
		{"a fourth, the address limited, read all the same", "made-up-4", false, ip, 1.5},
		{"a fifth, read all the same", "made-up-5", false, ip, 1.5},
		{"a registered key from the limited address", "k-registered", true, "key:" + bucketgate.KeyDigest("k-registered"), 0.5},
		{"a key of an account from the limited address", "k-member", true, "acct:acme", 1},
		{"the registered key again: cached", "k-registered", true, "key:" + bucketgate.KeyDigest("k-registered"), 0},
		{"a made-up key again: cached as unknown", "made-up-1", false, ip, 0},
	}
	worst := 0.0
	for _, st := range steps {
		a := f.mustInvoke(t, withHeaders(t, samples.Read(t, restEvent), map[string]string{"X-API-Key": st.key}))
		units := db.take()
		if a.allowed(t) != st.allowed || a.PrincipalID != st.principal || units != st.units {
			t.Fatalf("%s: allowed %v as %q after %.1f read units, want %v as %q after %.1f: %s",
				st.name, a.allowed(t), a.PrincipalID, units, st.allowed, st.principal, st.units, a.raw)
		}
		worst = max(worst, units)
	}
	doc, err := os.ReadFile("../../docs/deploy.md")
	if err != nil {
		t.Fatal(err)
	}
	want := fmt.Sprintf("| DynamoDB | ≤ %.3f | ≤ %.3f |", worst*readUnitUSD, worst*readUnitUSD)
	if !strings.Contains(string(doc), want) {
		t.Errorf("docs/deploy.md's cost per million requests has no row %q: a request reads up to %.1f read units", want, worst)
	}
}
