package registry_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/bucketgate/bucketgate"
	"github.com/bucketgate/bucketgate/internal/registry"
	"github.com/bucketgate/bucketgate/internal/testkit/dynalite"
)

// The table's items, read through DynamoDB's own API as served by dynalite.
func TestTable(t *testing.T) {
	client := dynalite.Table(t, "bucketgate-keys")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	put := func(it map[string]types.AttributeValue) {
		t.Helper()
		if _, err := client.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String("bucketgate-keys"), Item: it}); err != nil {
			t.Fatal(err)
		}
	}
	want := registry.Record{ID: digestID, Plan: "pro", ExpiresAt: time.Unix(1_900_000_000, 0),
		Rules: []bucketgate.Rule{{Name: "daily", Capacity: 1000, RefillPerSecond: 1000.0 / 86400}}, Owner: "acme"}
	put(want.Item())
	put(item("id", s("key:bad"), "rules", l(rule("b", "1.5", "1"))))
	put(item("id", s("tenant:t1"), "plan", s("free")))
	table := registry.NewTable(client, "bucketgate-keys")

	got, found, err := table.Get(ctx, digestID)
	if err != nil || !found || got.ID != want.ID || got.Plan != want.Plan || !got.ExpiresAt.Equal(want.ExpiresAt) ||
		len(got.Rules) != 1 || got.Rules[0] != want.Rules[0] || got.Owner != "acme" {
		t.Fatalf("Get = %+v, %v, %v; want %+v", got, found, err, want)
	}
	if got, found, err := table.Get(ctx, "tenant:t1"); err != nil || !found || got.Plan != "free" {
		t.Fatalf("tenant: %+v, %v, %v", got, found, err)
	}
	for _, id := range []string{"key:none", "tenant:\xff", strings.Repeat("k", registry.MaxID+1)} {
		if _, found, err := table.Get(ctx, id); err != nil || found {
			t.Errorf("Get(%.20q) = %v, %v; want not found", id, found, err)
		}
	}
	_, _, err = table.Get(ctx, "key:bad")
	if !errors.Is(err, registry.ErrInvalidRecord) || !strings.Contains(err.Error(), "key:bad: attribute rules[0].capacity") {
		t.Fatalf("invalid item: %v", err)
	}

	missing := registry.NewTable(client, "no-such-table")
	_, _, err = missing.Get(ctx, digestID)
	var notFound *types.ResourceNotFoundException
	if !errors.As(err, &notFound) || errors.Is(err, registry.ErrInvalidRecord) || !strings.Contains(err.Error(), "no-such-table") {
		t.Fatalf("missing table: %v; want DynamoDB's ResourceNotFoundException naming it", err)
	}
}

// Two keys of one account, and the account, read from dynalite through a Cache: both
// keys are decided as the account, under its plan, and the account is read once for
// both; a revocation of the account makes both unknown after the period.
func TestTableAccounts(t *testing.T) {
	client := dynalite.Table(t, "bucketgate-keys")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	put := func(r registry.Record) {
		t.Helper()
		if _, err := client.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String("bucketgate-keys"), Item: r.Item()}); err != nil {
			t.Fatal(err)
		}
	}
	put(registry.Record{ID: "account:acme", Plan: "enterprise", Owner: "Acme Corp"})
	put(registry.Record{ID: memberA, Account: "acme"})
	put(registry.Record{ID: memberB, Account: "acme"})
	table := registry.NewTable(client, "bucketgate-keys")
	if got, found, err := table.Get(ctx, "account:acme"); err != nil || !found || got.Plan != "enterprise" || got.Owner != "Acme Corp" {
		t.Fatalf("the account's item: %+v, %v, %v", got, found, err)
	}
	if got, found, err := table.Get(ctx, memberA); err != nil || !found || got.Account != "acme" || got.Plan != "" {
		t.Fatalf("a key's item: %+v, %v, %v", got, found, err)
	}
	clk := &clock{t: time.Unix(1_800_000_000, 0)}
	c := registry.NewCache(table, registry.Options{TTL: ttl, Size: 100, Now: clk.now})
	for _, id := range []string{memberA, memberB} {
		e, err := c.Lookup(ctx, plans, id)
		if err != nil || e.Plan == nil || e.Plan.Name != "enterprise" || e.Identity.String() != acmeID || e.Owner != "Acme Corp" {
			t.Fatalf("%s: %+v, %v; want acme's enterprise", id, e, err)
		}
	}
	put(registry.Record{ID: "account:acme", Plan: "enterprise", Status: registry.StatusRevoked})
	clk.advance(ttl)
	for _, id := range []string{memberA, memberB} {
		if e, err := c.Lookup(ctx, plans, id); err != nil || e.Plan != nil {
			t.Fatalf("%s of the revoked account: %+v, %v; want unknown", id, e, err)
		}
	}
}

// lagging is DynamoDB as a reader may meet it just after a write (dynalite always reads
// the latest): an eventually consistent GetItem of an id in fresh finds nothing yet, a
// strongly consistent one finds the item. reads counts the GetItems of each kind.
type lagging struct {
	*dynamodb.Client
	fresh map[string]bool
	reads map[bool]int // by ConsistentRead
}

func (l *lagging) GetItem(ctx context.Context, in *dynamodb.GetItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error) {
	consistent := aws.ToBool(in.ConsistentRead)
	l.reads[consistent]++
	if id := in.Key[registry.KeyAttribute].(*types.AttributeValueMemberS).Value; l.fresh[id] && !consistent {
		return &dynamodb.GetItemOutput{}, nil
	}
	return l.Client.GetItem(ctx, in, opts...)
}

// A key read just after its PutItem, before an eventually consistent read shows it, is
// found: a read that finds nothing is made again, strongly consistent, so that the key is
// never cached as unknown for a period. A key found at once costs one read.
func TestTableFindsAKeyJustWritten(t *testing.T) {
	client := dynalite.Table(t, "bucketgate-keys")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	rec := registry.Record{ID: digestID, Plan: "pro"}
	if _, err := client.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String("bucketgate-keys"), Item: rec.Item()}); err != nil {
		t.Fatal(err)
	}
	db := &lagging{Client: client, fresh: map[string]bool{digestID: true}, reads: map[bool]int{}}
	table := registry.NewTable(db, "bucketgate-keys")
	if got, found, err := table.Get(ctx, digestID); err != nil || !found || got.Plan != "pro" {
		t.Fatalf("a key just written: %+v, %v, %v; want found on plan pro", got, found, err)
	}
	if _, found, err := table.Get(ctx, "key:none"); err != nil || found {
		t.Fatalf("a key never written: %v, %v; want not found", found, err)
	}
	db.fresh = nil
	if _, found, err := table.Get(ctx, digestID); err != nil || !found {
		t.Fatalf("a key written a while ago: %v, %v", found, err)
	}
	if want := map[bool]int{false: 3, true: 2}; db.reads[false] != want[false] || db.reads[true] != want[true] {
		t.Errorf("GetItems %v (by ConsistentRead), want %v: one eventually consistent each, a consistent one after each miss", db.reads, want)
	}
}

// A key looked up before it exists is cached as unknown, and stays unknown for up to a
// period after it is created (docs/keys.md): only a key first looked up after its
// creation is found at once. Its miss cost two GetItems, the eventually consistent one
// and the strongly consistent one that confirms it; once found, a read is one.
func TestCacheKeyLookedUpBeforeItsCreation(t *testing.T) {
	client := dynalite.Table(t, "bucketgate-keys")
	db := &lagging{Client: client, reads: map[bool]int{}}
	clk := &clock{t: time.Unix(1_800_000_000, 0)}
	c := registry.NewCache(registry.NewTable(db, "bucketgate-keys"), registry.Options{TTL: ttl, Now: clk.now, Size: 1000})
	steps := []struct {
		name          string
		create        bool
		advance       time.Duration
		plan          string
		result        registry.Result
		reads, strong int
	}{
		{"looked up before it exists", false, 0, "", registry.ResultMiss, 1, 1},
		{"created, looked up again inside the period", true, time.Second, "", registry.ResultHit, 1, 1},
		{"still unknown at the period's last moment", false, ttl - time.Second - 1, "", registry.ResultHit, 1, 1},
		{"found once the period ends", false, 1, "pro", registry.ResultMiss, 2, 1},
	}
	for _, st := range steps {
		if st.create {
			rec := registry.Record{ID: digestID, Plan: "pro"}
			if _, err := client.PutItem(t.Context(), &dynamodb.PutItemInput{TableName: aws.String("bucketgate-keys"), Item: rec.Item()}); err != nil {
				t.Fatal(err)
			}
		}
		clk.advance(st.advance)
		plan, result := lookup(t, c, digestID)
		if plan != st.plan || result != st.result || db.reads[false] != st.reads || db.reads[true] != st.strong {
			t.Fatalf("%s: plan %q %s after %d eventually consistent and %d strongly consistent GetItems, want %q %s after %d and %d",
				st.name, plan, result, db.reads[false], db.reads[true], st.plan, st.result, st.reads, st.strong)
		}
	}
}
