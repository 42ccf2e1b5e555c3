package check

import (
	"context"
	"errors"
	"fmt"

	"github.com/bucketgate/bucketgate"
	"github.com/bucketgate/bucketgate/checkapi"
	"github.com/bucketgate/bucketgate/internal/bucket"
	"github.com/bucketgate/bucketgate/internal/claims"
	"github.com/bucketgate/bucketgate/internal/config"
	"github.com/bucketgate/bucketgate/internal/registry"
	"github.com/bucketgate/bucketgate/internal/telemetry"
)

// byReservation reports whether the check with members m names its reservation or
// lease alone (no key, identity, plan or rules): a settle or a cancel of a reservation,
// or a release of a lease, the authorizer made, whose id carries whose it is and where
// its rules come from.
func byReservation(m map[string][]byte) bool {
	return (m[fieldReservation] != nil || m[fieldLease] != nil) && m[fieldKey] == nil && m[fieldIdentity] == nil && m[fieldPlan] == nil && m[fieldRules] == nil
}

// parseByReservation validates the members m of the check at path that names its
// reservation (or lease) alone. The id's claims say whose buckets and which route;
// resolveBearers finds the rules. An id that carries no claims the authorizer writes
// leaves c.refused set (a conflict: not an id the limiter made to be settled by
// itself), and nothing is decided, nor is the registry read: an id not spelled whole
// as the limiter writes one (its MAC's length, its payload's figures) carries none.
// resolveBearers has its MAC checked before any lookup (an id of the previous format,
// whose MAC covers the rules the lookup gives, after it). The signed id is the capability: it settles or
// cancels its own reservation, or releases its own lease, and nothing else (a check, a
// peek, a refund or a reset names a key or an identity).
func parseByReservation(path string, m map[string][]byte) (check, error) {
	var c check
	op, err := parseOp(field(path, fieldOp), m[fieldOp])
	if err != nil {
		return check{}, err
	}
	if op != bucketgate.OpSettle && op != bucketgate.OpCancel && op != bucketgate.OpRelease {
		name := fieldReservation
		if m[name] == nil {
			name = fieldLease
		}
		return check{}, fmt.Errorf("%s: alone (no %s, %s, %s or %s) only with op %s, %s or %s: a reservation or lease the authorizer made settles or is released by its id; a %v names a key or an identity",
			field(path, name), fieldKey, fieldIdentity, fieldPlan, fieldRules, checkapi.OpSettle, checkapi.OpCancel, checkapi.OpRelease, op)
	}
	for _, name := range []string{fieldFrom, fieldTo} {
		if m[name] != nil {
			return check{}, fmt.Errorf("%s: only with op %s: a usage report's first and last day", field(path, name), checkapi.OpUsage)
		}
	}
	c.req.Op, c.bearer = op, true
	if c.req.Cost, err = parseCost(field(path, fieldCost), m[fieldCost], op, nil); err != nil {
		return check{}, err
	}
	if err := parseHold(path, m, &c.req); err != nil {
		return check{}, err
	}
	name := idField(op)
	if err := bucket.MisplacedID(c.req.ID, op == bucketgate.OpRelease); err != nil { // before its route says what it cannot
		c.refused = fmt.Errorf("%s: %w", field(path, name), err)
		return c, nil
	}
	cl, err := claims.Read(c.req.ID)
	if err != nil {
		c.refused = fmt.Errorf("%s: %w: %w; a %s of the check function's names its %s (or %s) and %s (or %s)",
			field(path, name), bucketgate.ErrConflict, err, name, fieldKey, fieldIdentity, fieldPlan, fieldRules)
		return c, nil
	}
	c.claims = cl
	c.req.Identity, c.logged = cl.Identity, cl.Identity // the authorizer's identities are digests or addresses
	return c, nil
}

// resolveBearers gives every check that named its reservation alone the identity and
// rules its id's claims lead to in v (see claims.Resolve), and the registry's account
// and owner of that identity (for its events), counting its lookups in inv. Its error wraps
// bucketgate.ErrConflict, naming the check, for an id the limiter did not make to be
// settled by itself, or whose claims no longer lead where they led (a lone key revoked,
// an account not active, the route gone): nothing is then decided, and the reservation
// stays charged at its estimate. Each id's signature is checked with g first (Signed), so that the
// claims of an id the limiter did not make are followed nowhere: no registry read, and
// no refusal that tells whether a key is registered, or of which account. (Redis not
// giving the secret, the lookup and the engine's decision follow, which meet it: under
// ctx of bucket.OneRead, Redis is not asked for it again, by the next id's check or by
// the decision, which fail with its error, nor asked the decision of the batch's other
// checks on the Redis that failed (guard.ErrFailedInRequest): the invocation waits for
// Redis once, and counts one failure in the circuit breaker. The check keeps that failure
// (unsigned): a conflict of its claims is then no answer, but that failure, for the
// failure policy, and an answer Redis did not decide carries nothing its claims led
// to, no plan, rule or limit (answer), so that a forged id's is the same whatever it
// names.) A check whose lookup failed keeps the error, for the failure policy. The
// lookups of a batch run concurrently, as its tenants' do (lookupEach).
func resolveBearers(ctx context.Context, g Guard, v registry.View, checks []check, batch bool, inv *telemetry.Invocation) error {
	for _, c := range checks {
		if c.refused != nil {
			return c.refused
		}
	}
	type answer struct {
		l   config.Limits
		e   registry.Entry
		err error
	}
	answers := make([]answer, len(checks))
	needs := func(c check) bool { return c.bearer && c.lookupErr == nil }
	for i, c := range checks {
		if !needs(c) {
			continue
		}
		err := g.Signed(ctx, c.req.Identity, c.req.ID, c.req.Op == bucketgate.OpRelease)
		if errors.Is(err, bucketgate.ErrConflict) {
			return fmt.Errorf("%s: %w", field(bearerPath(batch, i), idField(c.req.Op)), err)
		}
		checks[i].unsigned = err
	}
	lookupEach(checks, needs, func(i int) {
		answers[i].l, answers[i].e, answers[i].err = claims.Resolve(ctx, v, checks[i].claims, checks[i].req.Op)
	})
	for i, c := range checks { // every lookup made, though a conflict refuses the batch
		if needs(c) {
			answers[i].e.Observe(inv)
		}
	}
	for i := range checks {
		c := &checks[i]
		if !needs(*c) {
			continue
		}
		l, e, err := answers[i].l, answers[i].e, answers[i].err
		switch {
		case errors.Is(err, bucketgate.ErrConflict) && c.unsigned != nil: // claims not verified lead nowhere
			c.lookupErr = c.unsigned
			continue
		case errors.Is(err, bucketgate.ErrConflict):
			return fmt.Errorf("%s: %w", field(bearerPath(batch, i), idField(c.req.Op)), err)
		case err != nil:
			c.lookupErr = err
			continue
		}
		c.plan, c.req.Rules, c.account, c.owner = l.Plan, l.Rules, e.Account, e.Owner
	}
	return nil
}

// bearerPath is the path of the check at index i: its index in a batch, else none.
func bearerPath(batch bool, i int) string {
	if batch {
		return index(fieldChecks, i)
	}
	return ""
}

// idField is the field that holds the id of a check by op: lease for a release, else
// reservation.
func idField(op bucketgate.Op) string {
	if op == bucketgate.OpRelease {
		return fieldLease
	}
	return fieldReservation
}
