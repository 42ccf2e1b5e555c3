package benchreport

import (
	"context"
	"testing"
	"time"

	"github.com/bucketgate/bucketgate/internal/config"
	"github.com/bucketgate/bucketgate/internal/registry"
	"github.com/bucketgate/bucketgate/internal/testkit/registrytest"
)

// A small plan in memory: every lookup finds its key, and the caches read at most the
// bound, at least once per distinct key per environment.
func TestMeasureRegistryReads(t *testing.T) {
	plan := RegistryPlan{Keys: 50, Zipf: 1.1, Environments: 3, Duration: 10 * time.Second, Rate: 100, CachePeriod: 3 * time.Second, Seed: 1}
	src := registrytest.New()
	for i := range plan.Keys {
		src.Put(registry.Record{ID: RegistryKeyID(i), Plan: "pro"})
	}
	r, err := MeasureRegistryReads(context.Background(), plan, src, config.Default())
	if err != nil {
		t.Fatal(err)
	}
	if r.Unknown != 0 || r.Reads != src.Reads() || r.Reads > r.Bound() || r.Reads < r.Distinct || r.Bound() != 4*r.Distinct {
		t.Fatalf("%+v (bound %d): want every key found and distinct <= reads <= bound = 4 x distinct", r, r.Bound())
	}
	again, _ := MeasureRegistryReads(context.Background(), plan, registrytest.New(), config.Default())
	if again.Distinct != r.Distinct || again.Unknown != plan.Requests() {
		t.Fatalf("a second run with the seed saw %d distinct keys (want %d), %d unknown (want all)", again.Distinct, r.Distinct, again.Unknown)
	}
}

// With half the keys in accounts, every lookup still finds a plan, and the reads, keys'
// and accounts', stay within the bound, which counts each account once per environment
// and period.
func TestMeasureRegistryReadsWithAccounts(t *testing.T) {
	plan := RegistryPlan{Keys: 50, Zipf: 1.1, Environments: 3, Duration: 10 * time.Second, Rate: 100, CachePeriod: 3 * time.Second, KeysPerAccount: 5, Seed: 1}
	src := registrytest.New(plan.Records()...)
	if plan.Accounts() != 5 || plan.Account(0) != "" || plan.Account(11) != "acct-1" {
		t.Fatalf("%d accounts, key 0's %q, key 11's %q", plan.Accounts(), plan.Account(0), plan.Account(11))
	}
	r, err := MeasureRegistryReads(context.Background(), plan, src, config.Default())
	if err != nil {
		t.Fatal(err)
	}
	if r.Unknown != 0 || r.Reads != src.Reads() || r.Reads > r.Bound() || r.AccountReads < r.DistinctAccounts || r.AccountReads == 0 ||
		r.Bound() != 4*(r.Distinct+r.DistinctAccounts) || r.Known > r.Pairs || r.Pairs > r.AccountReads {
		t.Fatalf("%+v (bound %d): want every key found, reads within the bound, accounts read", r, r.Bound())
	}
}
