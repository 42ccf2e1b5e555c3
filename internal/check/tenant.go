package check

import (
	"context"
	"fmt"
	"sync"

	"github.com/bucketgate/bucketgate/internal/registry"
	"github.com/bucketgate/bucketgate/internal/telemetry"
)

// Registry says which plan a tenant is on (its "tenant:<key>" identity), with its own
// rules, or no plan when the registry does not know it; *registry.Cache and
// registry.Document are ones.
type Registry interface {
	Lookup(ctx context.Context, id string) (registry.Entry, error)
}

// maxLookups bounds the registry lookups of one batch that run at once: a cold batch of
// tenants costs about one read's time per maxLookups of them, not one per tenant.
const maxLookups = 16

// resolveTenants gives every check that named neither a plan nor rules its tenant's
// plan from the registry, or the default plan for a tenant the registry does not know
// (never registered, revoked, expired, invalid). A check whose lookup failed gets no
// plan and no rules, and keeps the error, to be answered by the failure policy: its
// plan is unknown, so neither is its cost checked nor its answer given a plan's name.
// Its error names a check whose cost its plan can never allow; then nothing is
// decided. The lookups of a batch run concurrently, at most maxLookups at once.
func (h *Handler) resolveTenants(ctx context.Context, checks []check, batch bool, inv *telemetry.Invocation) error {
	type answer struct {
		e   registry.Entry
		err error
	}
	answers := make([]answer, len(checks))
	var wg sync.WaitGroup
	slots := make(chan struct{}, maxLookups)
	for i := range checks {
		if !checks[i].tenant {
			continue
		}
		slots <- struct{}{}
		wg.Go(func() {
			defer func() { <-slots }()
			answers[i].e, answers[i].err = h.Registry.Lookup(ctx, checks[i].req.Identity)
		})
	}
	wg.Wait()
	for i := range checks {
		c := &checks[i]
		if !c.tenant {
			continue
		}
		e, err := answers[i].e, answers[i].err
		if e.Result != "" {
			inv.ObserveLookup(string(e.Result), e.Invalid)
		}
		if err != nil {
			c.lookupErr = fmt.Errorf("registry lookup of %s: %w", c.logged, err) // the decision line's error: the key as its digest
			continue
		}
		p := e.Plan
		if p == nil {
			p = h.Plans.DefaultPlan()
		}
		c.plan, c.req.Rules = p.Name, p.Rules
		path := ""
		if batch {
			path = index(fieldChecks, i)
		}
		if err := fits(field(path, fieldCost), c.req.Cost, c.req.Op, c.req.Rules); err != nil {
			return err
		}
	}
	return nil
}
