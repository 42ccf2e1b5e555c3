package benchreport

import (
	"context"
	"fmt"
	"math"
	"math/rand"
	"sync/atomic"
	"time"

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
	// Seed makes the run repeatable.
	Seed int64
}

// Requests is how many requests the plan makes.
func (p RegistryPlan) Requests() int { return int(p.Rate * p.Duration.Seconds()) }

// RegistryReads is what MeasureRegistryReads measured.
type RegistryReads struct {
	Plan RegistryPlan
	// Reads are the GetItem calls the caches made against the table.
	Reads int
	// Distinct is, summed over the environments, how many distinct keys each saw.
	Distinct int
	// Unknown counts lookups that found no plan: every key is registered, so 0.
	Unknown int
	// Wall is how long the run took on this machine (its simulated time is Duration).
	Wall time.Duration
}

// Bound is what the cache promises at most: distinct keys per environment × the
// periods the run spans, summed over the environments.
func (r RegistryReads) Bound() int {
	if r.Plan.CachePeriod <= 0 {
		return r.Plan.Requests() // no cache: a read per request
	}
	return r.Distinct * int(math.Ceil(float64(r.Plan.Duration)/float64(r.Plan.CachePeriod)))
}

// ReadsPer1000 and BoundPer1000 are Reads and Bound per 1,000 requests.
func (r RegistryReads) ReadsPer1000() float64 { return per1000(r.Reads, r.Plan.Requests()) }

// BoundPer1000 is Bound per 1,000 requests.
func (r RegistryReads) BoundPer1000() float64 { return per1000(r.Bound(), r.Plan.Requests()) }

func per1000(n, of int) float64 {
	if of == 0 {
		return 0
	}
	return 1000 * float64(n) / float64(of)
}

// RegistryKeyID is the registry id of the key of rank i in MeasureRegistryReads: the
// table must hold one for every rank below the plan's Keys.
func RegistryKeyID(i int) string { return fmt.Sprintf("key:%032x", i) }

// countingSource counts the reads of the Source it wraps.
type countingSource struct {
	registry.Source
	reads atomic.Int64
}

func (c *countingSource) Get(ctx context.Context, id string) (registry.Record, bool, error) {
	c.reads.Add(1)
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
	for i := range caches {
		caches[i] = registry.NewCache(counted, registry.Options{TTL: plan.CachePeriod, Size: settings.DefaultRegistryCacheSize, Now: clock})
		seen[i] = map[int]bool{}
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
		if !seen[env][key] {
			seen[env][key] = true
			r.Distinct++
		}
		now = now.Add(step)
	}
	r.Reads, r.Wall = int(counted.reads.Load()), time.Since(began)
	return r, nil
}

// registrySummary is item 8 in one line.
func (r Report) registrySummary() string {
	g := r.Registry
	return fmt.Sprintf("DynamoDB reads per 1,000 requests %.1f (%d reads), bound %.1f (%d: distinct keys per environment, summed, %d, x %v / %v)",
		g.ReadsPer1000(), g.Reads, g.BoundPer1000(), g.Bound(), g.Distinct, g.Plan.Duration, g.Plan.CachePeriod)
}

// registrySection writes section 8 through p.
func (r Report) registrySection(p func(format string, args ...any)) {
	g := r.Registry
	pl := g.Plan
	p("## 8. Key registry reads\n\n")
	p("%d registered API keys of Zipf(%s) popularity in a dynalite table, %d execution environments (one\n", pl.Keys, fmtFloat(pl.Zipf), pl.Environments)
	p("`registry.Cache` each, %v period, as `REGISTRY_CACHE_MS`), %s requests/s for %v: %d lookups, one per\n", pl.CachePeriod, fmtFloat(pl.Rate), pl.Duration, pl.Requests())
	p("authorizer request with a key, each sent to an environment chosen at random. Time is simulated: the\n")
	p("caches read a clock that every request moves on by %v, so the %v of load ran in %.1f s here; every\n", time.Duration(float64(time.Second)/pl.Rate), pl.Duration, g.Wall.Seconds())
	p("miss is a real GetItem against dynalite. The bound is the cache's promise, at most one read per key per\n")
	p("environment per period: the distinct keys each environment saw, summed (%d), times the %d periods the\n", g.Distinct, g.Bound()/max(g.Distinct, 1))
	p("run spans.\n\n")
	p("| reads | per 1,000 requests | bound | bound per 1,000 requests | lookups without a plan |\n|---|---|---|---|---|\n")
	p("| %d | %.1f | %d | %.1f | %d |\n\n", g.Reads, g.ReadsPer1000(), g.Bound(), g.BoundPer1000(), g.Unknown)
}
