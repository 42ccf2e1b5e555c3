package benchreport

import (
	"context"
	"fmt"
	"math"
	"math/rand"
	"strings"
	"sync/atomic"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/bucketgate/bucketgate/internal/config"
	"github.com/bucketgate/bucketgate/internal/registry"
	"github.com/bucketgate/bucketgate/internal/settings"
)

// RegistryPlan is item 8: how many DynamoDB reads the key registry makes under a
// realistic load, against the bound its cache promises.
type RegistryPlan struct {
	// Keys are the registered API keys, Zipf their popularity exponent (> 1): the key
	// of rank i is asked for in proportion to 1/(1+i)^Zipf.
	Keys int
	Zipf float64
	// Environments are the execution environments (instances), each with its own
	// cache; every request goes to one of them, chosen at random.
	Environments int
	// Duration and Rate are the load: Rate requests per second over Duration.
	Duration time.Duration
	Rate     float64
	// CachePeriod is REGISTRY_CACHE_MS.
	CachePeriod time.Duration
	// KeysPerAccount, when not zero, puts every other key (the odd ranks: half of them)
	// in an account of that many keys, in rank order; the other half are lone keys.
	KeysPerAccount int
	// Seed makes the run repeatable.
	Seed int64
}

// Accounts is how many accounts the plan's keys are in.
func (p RegistryPlan) Accounts() int {
	if p.KeysPerAccount == 0 {
		return 0
	}
	return (p.Keys/2 + p.KeysPerAccount - 1) / p.KeysPerAccount
}

// Account returns the name of the account of the key of rank i, "" for a lone key.
func (p RegistryPlan) Account(i int) string {
	if p.KeysPerAccount == 0 || i%2 == 0 {
		return ""
	}
	return fmt.Sprintf("acct-%d", i/2/p.KeysPerAccount)
}

// Records returns the records the table must hold for the plan: every key (on pro, or
// in its account), then every account (on pro).
func (p RegistryPlan) Records() []registry.Record {
	var out []registry.Record
	for i := range p.Keys {
		rec := registry.Record{ID: RegistryKeyID(i), Plan: "pro"}
		if name := p.Account(i); name != "" {
			rec.Plan, rec.Account = "", name
		}
		out = append(out, rec)
	}
	for a := range p.Accounts() {
		out = append(out, registry.Record{ID: registry.AccountItemPrefix + fmt.Sprintf("acct-%d", a), Plan: "pro"})
	}
	return out
}

// Requests is how many requests the plan makes.
func (p RegistryPlan) Requests() int { return int(p.Rate * p.Duration.Seconds()) }

// RegistryReads is what MeasureRegistryReads measured.
type RegistryReads struct {
	Plan RegistryPlan
	// Reads are the GetItem calls the caches made against the table: of keys, and of
	// accounts (AccountReads of them).
	Reads, AccountReads int
	// Distinct is, summed over the environments, how many distinct keys each saw;
	// DistinctAccounts how many distinct accounts.
	Distinct, DistinctAccounts int
	// Unknown counts lookups that found no plan: every key is registered, so 0.
	Unknown int
	// Pairs counts the lookups that read both a key and its account: the only ones a
	// BatchGetItem of both could have made in one round trip instead of two. Known
	// counts those of them whose environment had read the key before, and so could have
	// known its account before reading it: without that, the account's name is in the
	// key's item, and the two reads cannot be one.
	Pairs, Known int
	// Wall is how long the run took on this machine (its simulated time is Duration).
	Wall time.Duration
}

// Bound is what the cache promises at most: distinct keys and accounts per environment
// × the periods the run spans, summed over the environments.
func (r RegistryReads) Bound() int {
	if r.Plan.CachePeriod <= 0 {
		return r.Plan.Requests() * (1 + min(r.Plan.KeysPerAccount, 1)) // no cache: a read per request, and per account
	}
	return (r.Distinct + r.DistinctAccounts) * r.periods()
}

// KeyBound is Bound without the accounts: the bound of the same load had every key
// been a lone key.
func (r RegistryReads) KeyBound() int { return r.Distinct * r.periods() }

// periods is how many cache periods the run spans.
func (r RegistryReads) periods() int {
	return int(math.Ceil(float64(r.Plan.Duration) / float64(r.Plan.CachePeriod)))
}

// ReadsPer1000 and BoundPer1000 are Reads and Bound per 1,000 requests.
func (r RegistryReads) ReadsPer1000() float64 { return per1000(r.Reads, r.Plan.Requests()) }

// BoundPer1000 is Bound per 1,000 requests.
func (r RegistryReads) BoundPer1000() float64 { return per1000(r.Bound(), r.Plan.Requests()) }

// KeyBoundPer1000 is KeyBound per 1,000 requests.
func (r RegistryReads) KeyBoundPer1000() float64 { return per1000(r.KeyBound(), r.Plan.Requests()) }

func per1000(n, of int) float64 {
	if of == 0 {
		return 0
	}
	return 1000 * float64(n) / float64(of)
}

// RegistryKeyID is the registry id of the key of rank i in MeasureRegistryReads: the
// table must hold one for every rank below the plan's Keys.
func RegistryKeyID(i int) string { return fmt.Sprintf("key:%032x", i) }

// countingSource counts the reads of the Source it wraps, and those of accounts.
type countingSource struct {
	registry.Source
	reads, accounts atomic.Int64
}

func (c *countingSource) Get(ctx context.Context, id string) (registry.Record, bool, error) {
	c.reads.Add(1)
	if strings.HasPrefix(id, registry.AccountItemPrefix) {
		c.accounts.Add(1)
	}
	return c.Source.Get(ctx, id)
}

// MeasureRegistryReads runs plan's load through one registry cache per environment over
// src (the table), with plans resolving the records. Time is simulated, not waited for:
// the caches read a clock that each request moves on by 1/Rate seconds, so the run
// takes as long as its reads do, and every cache miss is a real read of src.
func MeasureRegistryReads(ctx context.Context, plan RegistryPlan, src registry.Source, plans *config.Config) (RegistryReads, error) {
	began := time.Now()
	counted := &countingSource{Source: src}
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	clock := func() time.Time { return now }
	caches := make([]*registry.Cache, plan.Environments)
	seen := make([]map[int]bool, plan.Environments)
	seenAccounts := make([]map[string]bool, plan.Environments)
	for i := range caches {
		caches[i] = registry.NewCache(counted, registry.Options{TTL: plan.CachePeriod, Size: settings.DefaultRegistryCacheSize, Now: clock})
		seen[i], seenAccounts[i] = map[int]bool{}, map[string]bool{}
	}
	rng := rand.New(rand.NewSource(plan.Seed))
	zipf := rand.NewZipf(rng, plan.Zipf, 1, uint64(plan.Keys-1))
	step := time.Duration(float64(time.Second) / plan.Rate)
	r := RegistryReads{Plan: plan}
	for range plan.Requests() {
		env, key := rng.Intn(plan.Environments), int(zipf.Uint64())
		e, err := caches[env].Lookup(ctx, plans, RegistryKeyID(key))
		if err != nil {
			return r, fmt.Errorf("registry lookup of key %d: %w", key, err)
		}
		if e.Plan == nil {
			r.Unknown++
		}
		if e.Result == registry.ResultMiss && e.AccountResult == registry.ResultMiss {
			r.Pairs++
			if seen[env][key] {
				r.Known++
			}
		}
		if !seen[env][key] {
			seen[env][key] = true
			r.Distinct++
		}
		if name := plan.Account(key); name != "" && !seenAccounts[env][name] {
			seenAccounts[env][name] = true
			r.DistinctAccounts++
		}
		now = now.Add(step)
	}
	r.Reads, r.AccountReads, r.Wall = int(counted.reads.Load()), int(counted.accounts.Load()), time.Since(began)
	return r, nil
}

// PairReads is the time to read an API key's item and its account's from the table: two
// GetItems, one after the other (what the registry cache does when it has neither: the
// account's name is in the key's item), and one BatchGetItem of both (what it could do
// only when it knew the account before reading the key).
type PairReads struct {
	// GetItems and Batch are each repetition's time, taken in turns.
	GetItems, Batch []time.Duration
}

// MeasurePairReads reads the items keyID and accountID of table reps times each way,
// taking turns, through client.
func MeasurePairReads(ctx context.Context, client *dynamodb.Client, table, keyID, accountID string, reps int) (PairReads, error) {
	key := func(id string) map[string]types.AttributeValue {
		return map[string]types.AttributeValue{registry.KeyAttribute: &types.AttributeValueMemberS{Value: id}}
	}
	var r PairReads
	for range reps {
		began := time.Now()
		for _, id := range []string{keyID, accountID} {
			out, err := client.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(table), Key: key(id)})
			if err != nil || len(out.Item) == 0 {
				return r, fmt.Errorf("GetItem %s: %v, %d attributes", id, err, len(out.Item))
			}
		}
		r.GetItems = append(r.GetItems, time.Since(began))
		began = time.Now()
		out, err := client.BatchGetItem(ctx, &dynamodb.BatchGetItemInput{RequestItems: map[string]types.KeysAndAttributes{
			table: {Keys: []map[string]types.AttributeValue{key(keyID), key(accountID)}}}})
		if err != nil || len(out.Responses[table]) != 2 || len(out.UnprocessedKeys) != 0 {
			return r, fmt.Errorf("BatchGetItem: %v, %d items", err, len(out.Responses[table]))
		}
		r.Batch = append(r.Batch, time.Since(began))
	}
	return r, nil
}

// registrySummary is item 8 in one line.
func (r Report) registrySummary() string {
	g := r.Registry
	return fmt.Sprintf("DynamoDB reads per 1,000 requests %.1f (%d reads, %d of accounts), bound %.1f (%d: distinct keys and accounts per environment, summed, %d + %d, x %v / %v; keys alone %.1f); key and account read in one lookup %d times, %d of them knowing the account before; two GetItems %v, one BatchGetItem %v (medians)",
		g.ReadsPer1000(), g.Reads, g.AccountReads, g.BoundPer1000(), g.Bound(), g.Distinct, g.DistinctAccounts, g.Plan.Duration, g.Plan.CachePeriod,
		g.KeyBoundPer1000(), g.Pairs, g.Known, medianDuration(r.PairReads.GetItems).Round(time.Microsecond), medianDuration(r.PairReads.Batch).Round(time.Microsecond))
}

// registrySection writes section 8 through p.
func (r Report) registrySection(p func(format string, args ...any)) {
	g := r.Registry
	pl := g.Plan
	p("## 8. Key registry reads\n\n")
	p("%d registered API keys of Zipf(%s) popularity in a dynalite table, half of them (the odd ranks) in %d\n", pl.Keys, fmtFloat(pl.Zipf), pl.Accounts())
	p("accounts of %d keys each, %d execution environments (one `registry.Cache` each, %v period, as\n", pl.KeysPerAccount, pl.Environments, pl.CachePeriod)
	p("`REGISTRY_CACHE_MS`), %s requests/s for %v: %d lookups, one per authorizer request with a key, each\n", fmtFloat(pl.Rate), pl.Duration, pl.Requests())
	p("sent to an environment chosen at random. Time is simulated: the caches read a clock that every request\n")
	p("moves on by %v, so the %v of load ran in %.1f s here; every miss is a real GetItem against dynalite.\n", time.Duration(float64(time.Second)/pl.Rate), pl.Duration, g.Wall.Seconds())
	p("The bound is the cache's promise, at most one read per key and one per account per environment per\n")
	p("period: the distinct keys (%d) and accounts (%d) each environment saw, summed, times the %d periods the\n", g.Distinct, g.DistinctAccounts, g.periods())
	p("run spans; the keys' alone (the bound had every key been a lone key) is %d, %.1f per 1,000 requests.\n\n", g.KeyBound(), g.KeyBoundPer1000())
	p("| reads | of accounts | per 1,000 requests | bound | bound per 1,000 requests | lookups without a plan |\n|---|---|---|---|---|---|\n")
	p("| %d | %d | %.1f | %d | %.1f | %d |\n\n", g.Reads, g.AccountReads, g.ReadsPer1000(), g.Bound(), g.BoundPer1000(), g.Unknown)
	p("**A key and its account: two GetItems, not one BatchGetItem.** A lookup read both a key and its account\n")
	p("%d times in the run (the rest found the account cached: an account is shared by its keys); in %d of\n", g.Pairs, g.Known)
	p("them the environment had read the key before, and so could have known the account and asked for both\n")
	p("at once; in the others the account's name was in the key's item, and the second read had to wait for the\n")
	p("first. On dynalite, the two GetItems one after the other take %v (median of %d), one BatchGetItem of both\n", medianDuration(r.PairReads.GetItems).Round(time.Microsecond), len(r.PairReads.GetItems))
	p("%v. DynamoDB bills a BatchGetItem as the GetItems of its items (half a read unit each), so it would\n", medianDuration(r.PairReads.Batch).Round(time.Microsecond))
	p("save no read and one round trip on %.1f of every 1,000 requests, for a second IAM action on the\n", per1000(g.Known, pl.Requests()))
	p("functions, unprocessed keys to send again, and a read of an account that may not be the key's any more.\n\n")
}
