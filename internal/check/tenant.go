package check

import (
	"context"
	"fmt"
	"strings"
	"sync"

	"github.com/bucketgate/bucketgate"
	"github.com/bucketgate/bucketgate/internal/config"
	"github.com/bucketgate/bucketgate/internal/invalid"
	"github.com/bucketgate/bucketgate/internal/registry"
	"github.com/bucketgate/bucketgate/internal/telemetry"
)

// Configuration gives each invocation what it is decided by: the configuration
// document (the plans) and the registry that says which plan a tenant is on (its
// "tenant:<key>" identity), with its own rules, resolved with that document;
// *registry.Live is one. The Refresh says what getting it read, for the metrics.
type Configuration interface {
	Current(ctx context.Context) (registry.View, registry.Refresh)
}

// maxLookups bounds the registry lookups of one batch that run at once: a cold batch of
// tenants costs about one read's time per maxLookups of them, not one per tenant.
const maxLookups = 16

// resolveTenants gives every check that named neither a plan nor rules its tenant's
// plan from the registry, or the default plan for a tenant the registry does not know
// (never registered, revoked, expired, invalid), on its own buckets, and every check of
// an identity the registry holds (with a plan or rules given too, for an API key it
// knows as active or an account, or with neither when the registry knows it) the
// identity whose buckets it spends: a key of an account spends its account's, an
// account made from a lone key that key's; a usage report of any key of an account,
// its account's. A check whose lookup failed gets no plan and
// no rules, and keeps the error, to be answered by the failure policy: its plan is
// unknown, so neither is its cost checked nor its answer given a plan's name. Its error
// names a check whose cost its plan can never allow, or that its plan can never do (a
// reserve or a refund with concurrency rules alone); then nothing is decided. A release,
// a settle or a cancel its plan can no longer do gets its conflict (outgrown) to be
// answered before anything is decided. The
// lookups of a batch run concurrently, at most maxLookups at once. v is the
// invocation's configuration and registry.
func (h *Handler) resolveTenants(ctx context.Context, v registry.View, checks []check, batch bool, inv *telemetry.Invocation) error {
	type answer struct {
		e   registry.Entry
		err error
	}
	answers := make([]answer, len(checks))
	lookupEach(checks, func(c check) bool { return c.tenant || c.follow }, func(i int) {
		answers[i].e, answers[i].err = v.Lookup(ctx, checks[i].req.Identity)
	})
	for i := range checks {
		c := &checks[i]
		if !c.tenant && !c.follow {
			continue
		}
		e, err := answers[i].e, answers[i].err
		e.Observe(inv)
		if err != nil {
			c.lookupErr = fmt.Errorf("registry lookup: %w", err) // the decision line's error: the line names the identity
			continue
		}
		// Whose buckets (and usage) the registry's identity is for, and whose account and
		// owner the events name: a key it does not know (a revoked or expired key of an
		// account, a key of an account that is not active) is decided as itself, on the
		// default plan or the plan or rules named, never on its account's buckets, which
		// its account's other keys spend under their plan, and its events name no
		// account; only its usage is its account's (and its buckets too when they are its
		// account's own, below). An account is followed to whose buckets it spends,
		// active or not.
		follows := c.follow && (c.req.Op == bucketgate.OpUsage || !strings.HasPrefix(c.req.Identity, bucketgate.KeyPrefix))
		if !follows && e.Plan == nil && e.Account != "" && e.Identity.String() == c.req.Identity {
			// A dead key whose own buckets its account spends (keys roll made the account
			// out of it): they are the account's, decided as the account is.
			if e, err = v.Lookup(ctx, bucketgate.AccountPrefix+e.Account); err != nil {
				c.lookupErr = fmt.Errorf("registry lookup of its account: %w", err)
				continue
			}
			e.Observe(inv)
		}
		if follows && e.AccountErr != nil { // a dead key's usage, its account's: the registry cannot say whose
			c.lookupErr = fmt.Errorf("registry lookup: %w", e.AccountErr)
			continue
		}
		if follows || e.Plan != nil {
			c.account, c.owner = e.Account, e.Owner
			if e.Identity != (bucketgate.Identity{}) {
				c.req.Identity = e.Identity.String()
				c.logged = bucketgate.LogForm(c.req.Identity)
			}
		}
		if c.follow {
			continue
		}
		p := e.Plan
		if p == nil {
			p = v.Config.DefaultPlan()
		}
		c.plan, c.req.Rules = p.Name, p.Rules
		path := ""
		if batch {
			path = index(fieldChecks, i)
		}
		if err := fits(field(path, fieldCost), c.req.Cost, c.req.Op, c.req.Rules); err != nil {
			return err
		}
		if c.refused = outgrown(path, *c); c.refused != nil { // answered by resolveBearers
			continue
		}
		if err := fitsHold(path, c.req); err != nil {
			return err
		}
		if err := rulesRefused(path, *c); err != nil {
			return err
		}
		if err := c.req.Validate(); err != nil { // what else the engine would refuse, as parseCheck asks of inline rules
			return fmt.Errorf("%s: %w", where(path), invalid.Bare(err))
		}
	}
	return nil
}

// lookupEach calls lookup with the index of every check of checks that needs a
// registry lookup, concurrently, at most maxLookups at once, and waits for them all.
func lookupEach(checks []check, needs func(check) bool, lookup func(i int)) {
	var wg sync.WaitGroup
	slots := make(chan struct{}, maxLookups)
	for i := range checks {
		if !needs(checks[i]) {
			continue
		}
		slots <- struct{}{}
		wg.Go(func() {
			defer func() { <-slots }()
			lookup(i)
		})
	}
	wg.Wait()
}

// unconfigured is the Plans of an instance that has no configuration yet (the registry
// table could not be read since it started): it takes every plan name, as a plan with no
// rules, so that the payload is still checked whole; unresolved then has every check
// that needs a plan answered by the failure policy.
type unconfigured struct{}

func (unconfigured) Plan(name string) (*config.Plan, bool) {
	return &config.Plan{Plan: bucketgate.Plan{Name: name}}, true
}

func (unconfigured) DefaultPlan() *config.Plan { return &config.Plan{} }

func (unconfigured) Plans() []string { return nil }

// unresolved gives every check of checks that names a plan, or needs its identity's
// plan, the error err: with no configuration, it is answered by the failure policy.
// Checks that bring their own rules are decided as usual, on the identity named (the
// registry, unread, cannot say whose buckets they are).
func unresolved(checks []check, err error) {
	for i := range checks {
		c := &checks[i]
		c.follow = false
		if !c.inline { // its plan is unknown: no name in its answer either
			c.tenant, c.plan, c.lookupErr = false, "", fmt.Errorf("no configuration: %w", err)
		}
	}
}
