package check

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/bucketgate/bucketgate"
	"github.com/bucketgate/bucketgate/checkapi"
	"github.com/bucketgate/bucketgate/internal/claims"
	"github.com/bucketgate/bucketgate/internal/config"
	"github.com/bucketgate/bucketgate/internal/identity"
	"github.com/bucketgate/bucketgate/internal/invalid"
	"github.com/bucketgate/bucketgate/internal/madekey"
	"github.com/bucketgate/bucketgate/internal/registry"
)

// identityPrefix namespaces the check function's keys in Redis and in the registry: key
// "tenant-42" spends the buckets of identity "tenant:tenant-42" (Redis key
// "bg:{tenant:tenant-42}"), apart from the authorizer's "key:" and "ip:" identities.
const identityPrefix = bucketgate.TenantPrefix

// Member names of the payload.
const (
	fieldKey         = "key"
	fieldIdentity    = "identity"
	fieldOp          = "op"
	fieldPlan        = "plan"
	fieldRules       = "rules"
	fieldCost        = "cost"
	fieldFrom        = "from"
	fieldTo          = "to"
	fieldChecks      = "checks"
	fieldTTL         = "ttlMs"
	fieldRequestID   = "requestId"
	fieldReservation = "reservation"
	fieldLease       = "lease"
)

// checkFields and ruleFields are the members a check and an inline rule may have;
// payloadFields those of the payload (one check, or checks).
var (
	checkFields   = []string{fieldKey, fieldIdentity, fieldOp, fieldPlan, fieldRules, fieldCost, fieldFrom, fieldTo, fieldTTL, fieldRequestID, fieldReservation, fieldLease}
	payloadFields = append(slices.Clone(checkFields), fieldChecks)
	ruleFields    = []string{"name", "capacity", "refillPerSecond", "limit", "period", "anchor", "shadow", "concurrency"}
)

// Plans finds the rules of a check that names no inline rules; *config.Config is one.
type Plans interface {
	// Plan returns the plan called name.
	Plan(name string) (*config.Plan, bool)
	// DefaultPlan returns the plan of identities the registry does not know.
	DefaultPlan() *config.Plan
	// Plans returns the name of every plan.
	Plans() []string
}

// check is one validated check, ready to decide.
type check struct {
	// logged is whose buckets these are, for logs: the identity, a key as its digest.
	logged string
	// plan names the plan of the rules; empty for inline rules.
	plan string
	// account and owner are the registry's for the identity (events only); empty
	// when it holds none, or its plan does not decide the check (an unknown identity).
	account, owner string
	// inline reports a check that brought its own rules, whose names are the caller's.
	inline bool
	// req is what the engine decides.
	req bucketgate.Request
	// explicit reports a check that named an identity: the operator's path.
	explicit bool
	// tenant reports a check with neither plan nor rules for an identity the registry
	// holds (a tenant, an API key, an account): its plan comes from the registry
	// (resolveTenants), and until then req has no rules.
	tenant bool
	// follow reports a check naming an API key or an account with a plan or rules: the
	// registry says whose buckets they are (a key of an account spends its account's;
	// a key it does not know as active, its own, but for its usage: resolveTenants),
	// and nothing else.
	follow bool
	// lookupErr is why the registry could not say who the identity is, or, for an id
	// whose claims led to a conflict, unsigned: the check is then answered by the
	// failure policy.
	lookupErr error
	// from and to are a usage request's days as given (OpUsage): "" when left out.
	from, to string
	// bearer reports a settle, a cancel or a release that named its id alone (the
	// authorizer's): claims, from its id, say whose and which route; refused, when set,
	// is why the id cannot be one, or why a release, a settle or a cancel by a plan the
	// plan, or a reload that removed it, can no longer do (a conflict, answered before
	// anything is decided).
	bearer  bool
	claims  claims.Claims
	refused error
	// unsigned is why the bearer's id could not be verified (Redis did not give the
	// secrets): its claims are not known to be the limiter's (see resolveBearers).
	unsigned error
}

// parse reads and validates a whole payload: one check, or a batch of them (batch
// true), with the plans and, for explicit identities, the authorizer's sources. Its
// error names the field at fault; it decides nothing.
func parse(payload []byte, plans Plans, sources identity.Resolver) (checks []check, batch bool, err error) {
	top, err := members("", payload, payloadFields)
	if err != nil {
		return nil, false, err
	}
	raw, batch := top[fieldChecks]
	if !batch {
		c, err := parseCheck("", top, plans, sources)
		return []check{c}, false, err
	}
	for _, name := range checkFields {
		if top[name] != nil {
			return nil, true, fmt.Errorf("%s: not with %s: send one check, or a batch of checks", name, fieldChecks)
		}
	}
	elems, n, err := arrayValue(fieldChecks, raw, checkapi.MaxBatch)
	if err != nil {
		return nil, true, err
	}
	if n == 0 || n > checkapi.MaxBatch {
		return nil, true, fmt.Errorf("%s: %d checks: want 1 to %d per call", fieldChecks, n, checkapi.MaxBatch)
	}
	checks = make([]check, len(elems))
	for i, elem := range elems {
		path := index(fieldChecks, i)
		m, err := members(path, elem, checkFields)
		if err != nil {
			return nil, true, err
		}
		if checks[i], err = parseCheck(path, m, plans, sources); err != nil {
			return nil, true, err
		}
		if checks[i].req.Op == bucketgate.OpUsage {
			return nil, true, fmt.Errorf("%s: %s is a report, not a check: send it alone, not in a batch", field(path, fieldOp), checkapi.OpUsage)
		}
	}
	return checks, true, nil
}

// repeated names the first check of a batch, checks, with the identity and requestId of
// an earlier check: the engine would answer it that check's decision (replayed, nothing
// taken) or a conflict, never one of its own. The identities are those whose buckets
// the checks spend (resolveTenants): two keys of one account spend its buckets, and
// share its requestIds.
func repeated(checks []check) error {
	requests := make(map[[2]string]int) // the index of the check of each identity and requestId
	for i, c := range checks {
		if c.req.RequestID == "" {
			continue
		}
		k := [2]string{c.req.Identity, c.req.RequestID}
		if j, ok := requests[k]; ok {
			path, first := index(fieldChecks, i), index(fieldChecks, j)
			return fmt.Errorf("%s: %s's, for the same buckets: one requestId is one request, so %s would be answered %s's decision (replayed, nothing taken): give each check its own",
				field(path, fieldRequestID), first, path, first)
		}
		requests[k] = i
	}
	return nil
}

// parseCheck validates the members m of the check at path.
func parseCheck(path string, m map[string][]byte, plans Plans, sources identity.Resolver) (check, error) {
	if byReservation(m) {
		return parseByReservation(path, m)
	}
	var c check
	switch {
	case m[fieldIdentity] != nil && m[fieldKey] != nil:
		return check{}, fmt.Errorf("%s: not with %s: give a key (the check function's own buckets) or an identity (the authorizer's), not both",
			field(path, fieldIdentity), fieldKey)
	case m[fieldIdentity] != nil:
		id, logged, err := parseIdentity(field(path, fieldIdentity), m[fieldIdentity], sources)
		if err != nil {
			return check{}, err
		}
		c.logged, c.req.Identity, c.explicit = logged, id, true
	default:
		key, err := parseKey(field(path, fieldKey), m[fieldKey])
		if err != nil {
			return check{}, err
		}
		c.req.Identity = identityPrefix + key
		c.logged = bucketgate.LogForm(c.req.Identity)
	}
	op, err := parseOp(field(path, fieldOp), m[fieldOp])
	if err != nil {
		return check{}, err
	}
	c.req.Op = op
	if op == bucketgate.OpUsage {
		return parseUsage(path, m, c)
	}
	for _, name := range []string{fieldFrom, fieldTo} {
		if m[name] != nil {
			return check{}, fmt.Errorf("%s: only with op %s: a usage report's first and last day", field(path, name), checkapi.OpUsage)
		}
	}
	switch {
	case m[fieldPlan] != nil && m[fieldRules] != nil:
		return check{}, fmt.Errorf("%s: not with %s: give a plan or inline rules, not both", field(path, fieldRules), fieldPlan)
	case m[fieldPlan] != nil:
		name, p, err := parsePlan(field(path, fieldPlan), m[fieldPlan], plans)
		switch {
		case err != nil:
			return check{}, err
		case p != nil:
			c.plan, c.req.Rules = p.Name, p.Rules
		case op == bucketgate.OpRelease || op == bucketgate.OpSettle || op == bucketgate.OpCancel: // reserved or acquired before a reload removed it
			c.plan, c.refused = name, holdConflict(path, op, fmt.Sprintf("plan %.*q is not in the configuration any more", maxQuoted, name))
		default:
			known := plans.Plans()
			slices.Sort(known)
			return check{}, fmt.Errorf("%s: unknown plan %.*q (configured: %s)", field(path, fieldPlan), maxQuoted, name, strings.Join(known, ", "))
		}
	case m[fieldRules] != nil:
		if c.req.Rules, err = parseRules(field(path, fieldRules), m[fieldRules]); err != nil {
			return check{}, err
		}
		c.inline = true
	case registry.Holds(c.req.Identity):
		c.tenant = true // the registry's plan, checked against the cost in resolveTenants
	default: // an address: no registry item may change its plan, the authorizer's default
		p := plans.DefaultPlan()
		c.plan, c.req.Rules = p.Name, p.Rules
	}
	c.follow = !c.tenant && follows(c)
	if c.req.Cost, err = parseCost(field(path, fieldCost), m[fieldCost], op, c.req.Rules); err != nil {
		return check{}, err
	}
	if err := parseHold(path, m, &c.req); err != nil {
		return check{}, err
	}
	if len(c.req.Rules) == 0 { // a tenant's, or no configuration's: no rules yet
		return c, nil
	}
	if !c.inline {
		if c.refused = outgrown(path, c); c.refused != nil {
			return c, nil
		}
	}
	if err := rulesRefused(path, c); err != nil {
		return check{}, err
	}
	if err := c.req.Validate(); err != nil { // what the engine would refuse, if anything is left
		return check{}, fmt.Errorf("%s: %w", where(path), invalid.Bare(err))
	}
	return c, nil
}

// rulesRefused reports c, the check at path, whose op its rules cannot do, naming them
// (its rules, or its plan): a reserve, a refund, a settle or a cancel of concurrency
// rules alone, a release of no concurrency rule. Request.Validate refuses them too,
// naming the request.
func rulesRefused(path string, c check) error {
	q := c.req
	var why string
	switch {
	case q.Op == bucketgate.OpRelease && !slices.ContainsFunc(q.Rules, bucketgate.Rule.IsConcurrency):
		why = "no concurrency rule: a release returns its lease to the concurrency rules that gave it"
	case (q.Op == bucketgate.OpReserve || q.Op == bucketgate.OpRefund || q.Op == bucketgate.OpSettle || q.Op == bucketgate.OpCancel) &&
		!slices.ContainsFunc(q.Rules, func(r bucketgate.Rule) bool { return !r.IsConcurrency() }):
		why = fmt.Sprintf("concurrency rules alone: a %v needs a bucket or a quota", q.Op)
	default:
		return nil
	}
	if c.inline {
		return fmt.Errorf("%s: %s", field(path, fieldRules), why)
	}
	return fmt.Errorf("%s: plan %.*q has %s", field(path, fieldPlan), maxQuoted, c.plan, why)
}

// follows reports whether the registry says whose buckets (and usage) c's identity
// spends: an API key's or an account's named on the operator's path (a key of an
// account spends its account's).
func follows(c check) bool {
	return c.explicit && (strings.HasPrefix(c.req.Identity, bucketgate.KeyPrefix) || strings.HasPrefix(c.req.Identity, bucketgate.AccountPrefix))
}

// parseUsage completes c, a usage request at path with members m: its days as given
// (read and checked against today when it is answered), and nothing a check has.
func parseUsage(path string, m map[string][]byte, c check) (check, error) {
	c.follow = follows(c)
	for _, name := range []string{fieldPlan, fieldRules, fieldCost, fieldTTL, fieldRequestID, fieldReservation, fieldLease} {
		if m[name] != nil {
			return check{}, fmt.Errorf("%s: not with op %s: a usage report counts every check of the identity, whatever its rules", field(path, name), checkapi.OpUsage)
		}
	}
	var err error
	for _, d := range []struct {
		name string
		day  *string
	}{{fieldFrom, &c.from}, {fieldTo, &c.to}} {
		if m[d.name] == nil {
			continue
		}
		if *d.day, err = textValue(field(path, d.name), m[d.name]); err != nil {
			return check{}, err
		}
		if _, err := ParseDay(*d.day); err != nil {
			return check{}, fmt.Errorf("%s: %w", field(path, d.name), err)
		}
	}
	return c, nil
}

// ParseDay reads a day written YYYY-MM-DD, exactly (no other spelling of it), as a
// usage request's from and to: midnight UTC of that day. The error quotes s's start, an
// API key bucketgate made in it masked first (the CLI's --from and --to: a cut key is no
// longer one that a later mask knows).
func ParseDay(s string) (time.Time, error) {
	t, err := time.Parse(time.DateOnly, s)
	if err != nil || t.Format(time.DateOnly) != s {
		return time.Time{}, fmt.Errorf("%.40q: want a day as YYYY-MM-DD, such as 2026-11-25", madekey.Mask(s))
	}
	return t, nil
}

func parseKey(path string, raw []byte) (string, error) {
	if raw == nil {
		return "", fmt.Errorf("%s: missing: every check needs a key (or an identity)", path)
	}
	key, err := stringValue(path, raw)
	switch {
	case err != nil:
		return "", err
	case key == "":
		return "", fmt.Errorf("%s: empty: every check needs a key", path)
	case len(key) > checkapi.MaxKey:
		return "", fmt.Errorf("%s: %d bytes: want at most %d", path, len(key), checkapi.MaxKey)
	}
	if err := madekey.InKey(path, key); err != nil { // never quoted: it is a secret
		return "", err
	}
	return key, nil
}

// parseOp reads the operation at path; nil is a check.
func parseOp(path string, raw []byte) (bucketgate.Op, error) {
	if raw == nil {
		return bucketgate.OpCheck, nil
	}
	name, err := textValue(path, raw)
	if err != nil {
		return 0, err
	}
	var op bucketgate.Op
	if err := op.UnmarshalText([]byte(name)); err != nil {
		return 0, fmt.Errorf("%s: %w", path, err)
	}
	return op, nil
}

// parsePlan reads the name of a plan at path, and returns it with its plan in plans: nil
// for a name plans does not have.
func parsePlan(path string, raw []byte, plans Plans) (string, *config.Plan, error) {
	name, err := textValue(path, raw)
	if err != nil {
		return "", nil, err
	}
	p, _ := plans.Plan(name)
	return name, p, nil
}

func parseRules(path string, raw []byte) ([]bucketgate.Rule, error) {
	elems, n, err := arrayValue(path, raw, bucketgate.MaxRules)
	if err != nil {
		return nil, err
	}
	if n == 0 || n > bucketgate.MaxRules {
		return nil, fmt.Errorf("%s: %d rules: want 1 to %d, or a plan", path, n, bucketgate.MaxRules)
	}
	rules := make([]bucketgate.Rule, len(elems))
	for i, elem := range elems {
		if rules[i], err = parseRule(index(path, i), elem); err != nil {
			return nil, err
		}
		for j, earlier := range rules[:i] {
			if earlier.Name == rules[i].Name {
				return nil, fmt.Errorf("%s: name %q: already the name of %s", index(path, i), rules[i].Name, index(path, j))
			}
		}
	}
	return rules, nil
}

func parseRule(path string, raw []byte) (bucketgate.Rule, error) {
	m, err := members(path, raw, ruleFields)
	if err != nil {
		return bucketgate.Rule{}, err
	}
	if m["concurrency"] != nil {
		return parseConcurrency(path, m)
	}
	required := []string{"name", "capacity", "refillPerSecond"}
	if m["period"] != nil || m["limit"] != nil || m["anchor"] != nil {
		required = []string{"name", "limit", "period"} // a quota
	}
	for _, name := range required {
		if m[name] == nil {
			return bucketgate.Rule{}, fmt.Errorf("%s: missing", field(path, name))
		}
	}
	var r bucketgate.Rule
	if r.Name, err = textValue(field(path, "name"), m["name"]); err != nil {
		return r, err
	}
	if m["period"] != nil {
		if r, err = parseQuota(path, m, r); err != nil {
			return r, err
		}
	} else {
		for _, name := range []string{"limit", "anchor"} {
			if m[name] != nil {
				return r, fmt.Errorf("%s: a bucket's (it has no period): a quota has a limit, a period and perhaps an anchor; a bucket, a capacity and a refillPerSecond", field(path, name))
			}
		}
		if r.Capacity, err = wholeValue(field(path, "capacity"), m["capacity"], "a whole number of tokens"); err != nil {
			return r, err
		}
		if r.RefillPerSecond, err = numberValue(field(path, "refillPerSecond"), m["refillPerSecond"]); err != nil {
			return r, err
		}
	}
	if m["shadow"] != nil {
		if r.Shadow, err = boolValue(field(path, "shadow"), m["shadow"]); err != nil {
			return r, err
		}
	}
	if err := r.Validate(); err != nil {
		return r, fmt.Errorf("%s: %w", path, invalid.Bare(err))
	}
	return r, nil
}

// parseConcurrency reads the concurrency rule at path from its members m: its name and
// its most requests in flight, nothing else.
func parseConcurrency(path string, m map[string][]byte) (bucketgate.Rule, error) {
	for _, name := range []string{"capacity", "refillPerSecond", "limit", "period", "anchor", "shadow"} {
		if m[name] != nil {
			return bucketgate.Rule{}, fmt.Errorf("%s: a concurrency rule's (it has a concurrency): a concurrency rule has a name and a concurrency alone, and is never shadow", field(path, name))
		}
	}
	if m["name"] == nil {
		return bucketgate.Rule{}, fmt.Errorf("%s: missing", field(path, "name"))
	}
	var r bucketgate.Rule
	var err error
	if r.Name, err = textValue(field(path, "name"), m["name"]); err != nil {
		return r, err
	}
	want := fmt.Sprintf("a whole number of requests in flight from 1 to %d", bucketgate.MaxConcurrency)
	n, err := wholeValue(field(path, "concurrency"), m["concurrency"], want)
	if err != nil {
		return r, err
	}
	if n < 1 || n > bucketgate.MaxConcurrency {
		return r, fmt.Errorf("%s: got %d, want %s", field(path, "concurrency"), n, want)
	}
	r.Concurrency = int32(n)
	if err := r.Validate(); err != nil {
		return r, fmt.Errorf("%s: %w", path, invalid.Bare(err))
	}
	return r, nil
}

// parseQuota reads the quota r at path from its members m: its limit, period and anchor.
func parseQuota(path string, m map[string][]byte, r bucketgate.Rule) (bucketgate.Rule, error) {
	for _, name := range []string{"capacity", "refillPerSecond"} {
		if m[name] != nil {
			return r, fmt.Errorf("%s: a quota's (it has a period): a quota has a limit, a period and perhaps an anchor; a bucket, a capacity and a refillPerSecond", field(path, name))
		}
	}
	name, err := textValue(field(path, "period"), m["period"])
	if err != nil {
		return r, err
	}
	var ok bool
	if r.Period, ok = bucketgate.ParsePeriod(name); !ok {
		return r, fmt.Errorf("%s: %.20q: want day, week or month", field(path, "period"), name)
	}
	if r.Limit, err = wholeValue(field(path, "limit"), m["limit"], "a whole number of tokens"); err != nil {
		return r, err
	}
	if m["anchor"] != nil {
		want := fmt.Sprintf("a day of the month from 1 to %d", bucketgate.MaxAnchor)
		anchor, err := wholeValue(field(path, "anchor"), m["anchor"], want)
		switch {
		case err != nil:
			return r, err
		case r.Period != bucketgate.PeriodMonth:
			return r, fmt.Errorf("%s: %d with period %s: only a monthly quota has an anchor", field(path, "anchor"), anchor, r.Period)
		case anchor < 1 || anchor > bucketgate.MaxAnchor:
			return r, fmt.Errorf("%s: %d: want %s", field(path, "anchor"), anchor, want)
		}
		r.Anchor = uint8(anchor)
	}
	return r, nil
}

// parseCost reads the cost at path for op (nil: the default) and checks that every rule
// can hold it.
func parseCost(path string, raw []byte, op bucketgate.Op, rules []bucketgate.Rule) (int64, error) {
	switch {
	case op == bucketgate.OpReset && raw != nil:
		return 0, fmt.Errorf("%s: not with op %s: a reset makes every rule full, whatever it held", path, checkapi.OpReset)
	case op == bucketgate.OpCancel && raw != nil:
		return 0, fmt.Errorf("%s: not with op %s: a cancel settles at 0", path, checkapi.OpCancel)
	case op == bucketgate.OpRelease && raw != nil:
		return 0, fmt.Errorf("%s: not with op %s: a release returns a lease, whatever the check cost", path, checkapi.OpRelease)
	case op == bucketgate.OpReset, op == bucketgate.OpCancel, op == bucketgate.OpRelease:
		return 0, nil
	case op == bucketgate.OpSettle:
		if raw == nil {
			return 0, fmt.Errorf("%s: missing: a settle needs the actual cost", path)
		}
		want := fmt.Sprintf("the actual cost, a whole number from 0 to %d", int64(bucketgate.MaxSettle))
		cost, err := wholeValue(path, raw, want)
		if err == nil && (cost < 0 || cost > bucketgate.MaxSettle) {
			err = fmt.Errorf("%s: got %d, want %s", path, cost, want)
		}
		return cost, err
	case raw == nil:
		return checkapi.DefaultCost, fits(path, checkapi.DefaultCost, op, rules)
	}
	want := fmt.Sprintf("a whole number from 0 to %d (2^53)", int64(checkapi.MaxCost))
	switch op {
	case bucketgate.OpRefund:
		want = fmt.Sprintf("a whole number of tokens to give back, from 1 to %d (2^53)", int64(checkapi.MaxCost))
	case bucketgate.OpReserve:
		want = fmt.Sprintf("an estimate, a whole number from 1 to %d (2^53)", int64(checkapi.MaxCost))
	}
	cost, err := wholeValue(path, raw, want)
	if err != nil {
		return 0, err
	}
	if cost < 0 || cost > checkapi.MaxCost || (op == bucketgate.OpRefund || op == bucketgate.OpReserve) && cost == 0 {
		return 0, fmt.Errorf("%s: got %d, want %s", path, cost, want)
	}
	return cost, fits(path, cost, op, rules)
}

// fits reports a cost (at path) of op that a rule of rules can never hold.
func fits(path string, cost int64, op bucketgate.Op, rules []bucketgate.Rule) error {
	if op == bucketgate.OpSettle { // the actual cost: what a rule cannot hold becomes a debt
		return nil
	}
	for _, r := range rules {
		switch {
		case cost <= r.Max() || r.IsConcurrency(): // a lease is one in flight, whatever its cost
		case r.Shadow: // a shadow denial (ShadowLimited), never refused
		case op == bucketgate.OpRefund:
			return fmt.Errorf("%s: %d exceeds %s %d of rule %s: a refund gives back at most a rule's %s", path, cost, r.MaxName(), r.Max(), r.Name, r.MaxName())
		default:
			return fmt.Errorf("%s: %d exceeds %s %d of rule %s: it could never be allowed", path, cost, r.MaxName(), r.Max(), r.Name)
		}
	}
	return nil
}

// parseHold reads into q, a request of the check at path with members m, its ttlMs (a
// reserve's, or a check's that acquires a lease), requestId (a check that takes tokens,
// a reserve's or a refund's), reservation (a settle's or a cancel's, which needs it) and
// lease (a release's, which needs it): neither of these two an API key bucketgate made
// (textValue).
func parseHold(path string, m map[string][]byte, q *bucketgate.Request) error {
	settles := q.Op == bucketgate.OpSettle || q.Op == bucketgate.OpCancel
	release := q.Op == bucketgate.OpRelease
	switch {
	case m[fieldTTL] != nil && q.Op != bucketgate.OpReserve && (q.Op != bucketgate.OpCheck || q.Cost == 0):
		return ttlRefused(path)
	case m[fieldReservation] != nil && !settles:
		return fmt.Errorf("%s: only with op %s or %s: the reservation they settle", field(path, fieldReservation), checkapi.OpSettle, checkapi.OpCancel)
	case m[fieldReservation] == nil && settles:
		return fmt.Errorf("%s: missing: a %v needs the reservation a reserve answered", field(path, fieldReservation), q.Op)
	case m[fieldLease] != nil && !release:
		return fmt.Errorf("%s: only with op %s: the lease it returns", field(path, fieldLease), checkapi.OpRelease)
	case m[fieldLease] == nil && release:
		return fmt.Errorf("%s: missing: a release needs the lease a check answered", field(path, fieldLease))
	case m[fieldRequestID] != nil && (settles || release || q.Op == bucketgate.OpReset || q.Op == bucketgate.OpCheck && q.Cost == 0):
		return fmt.Errorf("%s: not with a %s: only a request that takes or gives back tokens has one (a settle and a cancel are idempotent by their reservation, a release by its lease)",
			field(path, fieldRequestID), opName(*q))
	}
	if raw := m[fieldTTL]; raw != nil {
		want := fmt.Sprintf("whole milliseconds from 1 to %d", bucketgate.MaxTTL.Milliseconds())
		ms, err := wholeValue(field(path, fieldTTL), raw, want)
		if err != nil {
			return err
		}
		if ms < 1 || ms > bucketgate.MaxTTL.Milliseconds() {
			return fmt.Errorf("%s: got %d, want %s", field(path, fieldTTL), ms, want)
		}
		q.TTL = time.Duration(ms) * time.Millisecond
	}
	if len(q.Rules) > 0 { // else a tenant's: resolveTenants checks its plan's
		if err := fitsHold(path, *q); err != nil {
			return err
		}
	}
	for _, f := range []struct {
		name string
		to   *string
		most int
	}{{fieldRequestID, &q.RequestID, bucketgate.MaxRequestID}, {fieldReservation, &q.ID, bucketgate.MaxID}, {fieldLease, &q.ID, bucketgate.MaxID}} {
		if m[f.name] == nil {
			continue
		}
		read := textValue // a conflict's error quotes an id the limiter did not make
		if f.name == fieldRequestID {
			read = stringValue // it rests nowhere: its record is named by a digest of it
		}
		v, err := read(field(path, f.name), m[f.name])
		if err != nil {
			return err
		}
		if v == "" || len(v) > f.most {
			return fmt.Errorf("%s: %d bytes: want 1 to %d", field(path, f.name), len(v), f.most)
		}
		*f.to = v
	}
	return nil
}

// fitsHold reports a hold of q, the request of the check at path, that q's rules can
// never have: a ttlMs of a check that acquires no lease. (A release of no concurrency
// rule is Validate's to refuse, or outgrown's for a plan's rules.)
func fitsHold(path string, q bucketgate.Request) error {
	if q.TTL != 0 && !q.Holds() {
		return ttlRefused(path)
	}
	return nil
}

// outgrown reports, wrapping bucketgate.ErrConflict, a release (a settle, a cancel) of
// c, the check at path, whose plan has no concurrency rule (no bucket or quota) any
// more: its lease (reservation) was made before the plan changed, and the caller did
// nothing wrong, so it is answered as one named by its id alone (claims.Resolve):
// holdConflict. Inline rules without one are the caller's mistake, Validate's to refuse.
func outgrown(path string, c check) error {
	switch q := c.req; {
	case q.Op == bucketgate.OpRelease && !slices.ContainsFunc(q.Rules, bucketgate.Rule.IsConcurrency):
		return holdConflict(path, q.Op, fmt.Sprintf("plan %q has no concurrency rule any more", c.plan))
	case (q.Op == bucketgate.OpSettle || q.Op == bucketgate.OpCancel) && !slices.ContainsFunc(q.Rules, func(r bucketgate.Rule) bool { return !r.IsConcurrency() }):
		return holdConflict(path, q.Op, fmt.Sprintf("plan %q has no bucket or quota any more", c.plan))
	}
	return nil
}

// holdConflict is the conflict, wrapping bucketgate.ErrConflict, of a release (op
// OpRelease) or a settle or a cancel at path that its plan, changed since the acquire
// (the reserve) as why says, can no longer do: the lease frees itself at its ttl, the
// reservation stays charged at its estimate.
func holdConflict(path string, op bucketgate.Op, why string) error {
	if op == bucketgate.OpRelease {
		return fmt.Errorf("%s: %w: %s: the lease frees itself at its ttl", field(path, fieldLease), bucketgate.ErrConflict, why)
	}
	return fmt.Errorf("%s: %w: %s: the reservation stays charged at its estimate", field(path, fieldReservation), bucketgate.ErrConflict, why)
}

// ttlRefused is the error of a ttlMs (of the check at path) that holds nothing.
func ttlRefused(path string) error {
	return fmt.Errorf("%s: only with op %s, or a check of a cost with a concurrency rule: how long its reservation or lease holds", field(path, fieldTTL), checkapi.OpReserve)
}

// opName names q's operation for a message: "peek" for a check of cost 0.
func opName(q bucketgate.Request) string {
	if q.Op == bucketgate.OpCheck && q.Cost == 0 {
		return "peek"
	}
	return q.Op.String()
}
