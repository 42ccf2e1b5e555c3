package config

import (
	"cmp"
	_ "embed"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"sort"
	"strings"

	"github.com/bucketgate/bucketgate"
	"github.com/bucketgate/bucketgate/internal/invalid"
	"github.com/bucketgate/bucketgate/internal/madekey"
)

// Limits on the document, so that no document can exhaust a function's memory or time
// at init. Exceeding one is an error that names it.
const (
	// MaxDocument is the largest document, in bytes.
	MaxDocument = 256 << 10
	// MaxValues is the most values (scalars, lists and mappings) a document may hold,
	// counting the values an alias repeats each time it is used.
	MaxValues = 50_000
	// MaxPlans is the most plans.
	MaxPlans = 100
	// MaxRoutes is the most routes.
	MaxRoutes = 100
	// MaxKeys is the most API key digests in keys, and MaxTenants the most tenants:
	// more belong in the key registry.
	MaxKeys    = 5_000
	MaxTenants = 5_000
)

//go:embed default.yaml
var defaultDocument []byte

// ErrConfig is wrapped by every error about the configuration document.
var ErrConfig = errors.New("rate-limit configuration")

// Default returns the built-in configuration (default.yaml): the free, pro and
// enterprise plans, and every identity on free.
func Default() *Config {
	c, err := Parse(defaultDocument)
	if err != nil {
		panic("config: built-in default.yaml is invalid: " + err.Error())
	}
	return c
}

// ReadFile reads the document in the file at path (for example one bundled with the
// function) and parses it.
func ReadFile(path string) (*Config, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrConfig, err)
	}
	defer f.Close()
	doc, err := io.ReadAll(io.LimitReader(f, MaxDocument+1))
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrConfig, err)
	}
	return Parse(doc)
}

// Parse decodes a YAML or JSON document strictly (see Document: unknown fields, repeated
// names and numbers that are not decimal are errors) and validates all of it. Every
// error wraps ErrConfig and names the field by its path, with its line and column.
func Parse(doc []byte) (*Config, error) {
	if len(doc) > MaxDocument {
		return nil, fmt.Errorf("%w: document is %d bytes, want at most %d", ErrConfig, len(doc), MaxDocument)
	}
	d, dec, err := decodeDocument(doc)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrConfig, hideKey(err))
	}
	c, err := compile(d)
	if err != nil {
		return nil, located(err, dec.positions)
	}
	if c.idleTTL != nil {
		c.idleTTL = located(c.idleTTL, dec.positions)
	}
	for _, fe := range c.legacy {
		fe.pos = dec.positions[fe.path]
	}
	c.legacy = append(dec.legacy, c.legacy...)
	return c, nil
}

// located returns err, an error of compile, wrapping ErrConfig with its field's position
// added from positions.
func located(err error, positions map[string]position) error {
	if fe := (*fieldError)(nil); errors.As(err, &fe) && fe.pos.line == 0 {
		fe.pos = positions[fe.path]
	}
	return fmt.Errorf("%w: %w", ErrConfig, hideKey(err))
}

// hideKey returns err, naming an entry of keys whose name is not a digest as "keys",
// one of tenants that is or holds an API key bucketgate made as "tenants", and a value
// in a plan whose name holds one as "plans": it may be a raw API key, which an init
// error would otherwise put in the log. Any other key bucketgate made in the path (an
// unknown field of its name, a plan's), or what may be one or part of one, and in the
// message (a route's path), is masked (madekey.Mask).
func hideKey(err error) error {
	if fe := (*fieldError)(nil); errors.As(err, &fe) {
		fe.msg = madekey.Mask(fe.msg)
		if madekey.Shows(fe.path) {
			fe.shown = madekey.Mask(fe.path)
		}
		if name, ok := strings.CutPrefix(fe.path, "keys."); ok && !bucketgate.ValidDigest(name) {
			fe.shown = "keys"
		}
		if id, ok := strings.CutPrefix(fe.path, "tenants."); ok && madekey.Holds(id) {
			fe.shown = "tenants"
		}
		if plan, ok := strings.CutPrefix(fe.path, "plans."); ok && madekey.Holds(plan) {
			fe.shown = "plans"
		}
	}
	return err
}

func compile(d Document) (*Config, error) {
	c := &Config{plans: map[string]*Plan{}, keys: map[string]*Plan{}, tenants: map[string]*Plan{}}
	var err error
	if c.refuseUnknown, err = refusal("unknownKeys", d.UnknownKeys, PolicyIP); err != nil {
		return nil, err
	}
	if c.refuseAnon, err = refusal("anonymous", d.Anonymous, PolicyDefault); err != nil {
		return nil, err
	}
	for _, l := range []struct {
		field  string
		n, max int
	}{{"plans", len(d.Plans), MaxPlans}, {"routes", len(d.Routes), MaxRoutes}, {"keys", len(d.Keys), MaxKeys}, {"tenants", len(d.Tenants), MaxTenants}} {
		if l.n > l.max {
			return nil, errorAt(l.field, "%d entries: want at most %d", l.n, l.max)
		}
	}
	if len(d.Plans) == 0 {
		return nil, errorAt("plans", "at least one plan is required")
	}
	for _, name := range sortedKeys(d.Plans) {
		field := "plans." + name
		if err := checkPlanName(name); err != nil {
			return nil, errorAt(field, "%v", err)
		}
		spec := d.Plans[name]
		rules, err := c.compileRules(field, spec.Rules, spec.Shadow)
		if err != nil {
			return nil, err
		}
		if len(rules) == 0 {
			return nil, errorAt(field, "at least one rule is required")
		}
		c.plans[name] = &Plan{Plan: bucketgate.Plan{Name: name, Rules: rules}}
	}
	if err := oneKindPerName(c.plans); err != nil {
		return nil, err
	}
	if d.DefaultPlan == "" {
		return nil, errorAt("defaultPlan", "required")
	}
	if c.defaultPlan, err = c.plan("defaultPlan", d.DefaultPlan); err != nil {
		return nil, err
	}
	for _, digest := range sortedKeys(d.Keys) {
		if !bucketgate.ValidDigest(digest) {
			return nil, errorAt("keys."+digest, "an entry of %d bytes is not a key digest: want %d lowercase hex digits (see bucketgate.KeyDigest), never a raw key", len(digest), bucketgate.DigestLen)
		}
		if c.keys[digest], err = c.plan("keys."+digest, d.Keys[digest]); err != nil {
			return nil, err
		}
	}
	for _, id := range sortedKeys(d.Tenants) {
		if id == "" || len(id) > bucketgate.MaxTenantKey {
			return nil, errorAt("tenants."+id, "a tenant id of %d bytes: want 1 to %d, as the check function's keys are", len(id), bucketgate.MaxTenantKey)
		}
		if c.tenants[id], err = c.plan("tenants."+id, d.Tenants[id]); err != nil {
			return nil, err
		}
		if madekey.Holds(id) {
			c.madeTenants++
		}
	}
	return c, compileRoutes(c, d.Routes)
}

// oneKindPerName reports a rule name that is a bucket in one plan and a quota in
// another: one name is one state of an identity, which a plan change keeps, so plans
// may give a name other numbers but not another kind.
func oneKindPerName(plans map[string]*Plan) error {
	type named struct {
		path string
		rule bucketgate.Rule
	}
	first := map[string]named{}
	for _, plan := range sortedKeys(plans) {
		for i, r := range plans[plan].Rules {
			path := fmt.Sprintf("plans.%s[%d]", plan, i)
			prev, ok := first[r.Name]
			if !ok {
				first[r.Name] = named{path, r}
				continue
			}
			if !bucketgate.SameKind(prev.rule, r) {
				return errorAt(path, "rule %s is %s, and %s of %s: a rule name is one bucket, quota or concurrency rule of an identity, so give one of them another name",
					r.Name, kind(r), kind(prev.rule), prev.path)
			}
		}
	}
	return nil
}

// checkPlanName reports a plan name that could not travel in the authorizer context
// and the 429's JSON body as it is, or that holds an API key bucketgate made, which
// would rest in the log lines, the 429's body and the registry as it is.
func checkPlanName(name string) error {
	if name == "" || len(name) > bucketgate.MaxPlanName {
		return fmt.Errorf("a plan name is 1 to %d bytes", bucketgate.MaxPlanName)
	}
	if err := madekey.InField("plan name", name); err != nil { // hideKey hides the path, which holds it
		return fmt.Errorf("%w: give the plan another name (in defaultPlan, keys and tenants too)", err)
	}
	for i := 0; i < len(name); i++ {
		if c := name[i]; c < ' ' || c > '~' || c == '"' || c == '\\' {
			return fmt.Errorf("plan name %q: want printable ASCII without '\"' or '\\'", name)
		}
	}
	return nil
}

// compileRoutes compiles the routes and every plan's rule set with each, checking that
// every combination is a request the engine accepts. A rule name is one bucket of an
// identity, so a route's rule must agree with every other rule of its name: a plan's
// rule of that name is the same bucket and counts once; another route's must have the
// same numbers.
func compileRoutes(c *Config, specs []RouteSpec) error {
	extras := make([][]bucketgate.Rule, 0, len(specs)+1)
	type named struct {
		path string
		rule bucketgate.Rule
	}
	c.routeIDs = make(map[string]int, len(specs))
	first := map[string]named{} // by rule name: the first route rule of that name
	planLeases := c.anyPlanRule(bucketgate.Rule.IsConcurrency)
	for i, spec := range specs {
		field := fmt.Sprintf("routes[%d]", i)
		r, err := compileRoute(spec)
		if err != nil {
			return errorAt(field, "%v", err)
		}
		if j := slices.IndexFunc(c.routes, func(earlier route) bool { return earlier.covers(r) }); j >= 0 {
			return errorAt(field, "never matches: routes[%d] (%s, path %q) comes first and matches every request it would; the first route that matches a request wins, so list the more specific one first",
				j, cmp.Or(specs[j].Method, "any method"), specs[j].Path)
		}
		if spec.Shadow && spec.Cost != nil && *spec.Cost != defaultCost {
			return errorAt(field+".cost", "a shadow route cannot set a cost: the cost applies to every rule of the request, the plan's enforced rules too")
		}
		if spec.Shadow && spec.Reserve != nil {
			return errorAt(field+".reserve", "a shadow route cannot reserve: the estimate applies to every rule of the request, the plan's enforced rules too")
		}
		if err := compileReserve(field, spec, &r); err != nil {
			return err
		}
		rules, err := c.compileRules(field+".rules", spec.Rules, spec.Shadow)
		if err != nil {
			return err
		}
		leases := planLeases || slices.ContainsFunc(rules, bucketgate.Rule.IsConcurrency)
		idle, err := compileTTL(field, spec, &r, leases)
		switch {
		case err != nil:
			return err
		case idle != nil && c.ListsIdentities(): // no registry table: its rules are the document's
			return idle
		case idle != nil && c.idleTTL == nil:
			c.idleTTL = idle
		}
		kept := rules[:0]
		for j, rule := range rules {
			path := fmt.Sprintf("%s.rules[%d]", field, j)
			prev, ok := first[rule.Name]
			if ok && strings.HasPrefix(prev.path, field+".") {
				if !sameRule(prev.rule, rule) {
					return errorAt(path, "rule %s appears twice in the route (first at %s): take one out", rule.Name, prev.path)
				}
				// An earlier bucketgate read the copies as one rule, enforced unless each is
				// shadow, and so do the functions still (Legacy): refusing a document stored
				// then failed every cold start.
				c.legacy = append(c.legacy, &fieldError{path: path, msg: fmt.Sprintf("rule %s appears twice in the route (first at %s), which an earlier bucketgate read as one rule, enforced unless every copy is shadow, as the functions still do in a document stored then; bucketgate config put refuses it: take one copy out", rule.Name, prev.path)})
				k := slices.IndexFunc(kept, func(r bucketgate.Rule) bool { return r.Name == rule.Name })
				kept[k].Shadow = kept[k].Shadow && rule.Shadow
				continue
			}
			if ok && !sameRule(prev.rule, rule) {
				return errorAt(path, "rule %s (%s) has other numbers than %s (%s): a rule name is one bucket (or quota) of an identity, so give both the same numbers, or this one another name",
					rule.Name, numbers(rule), prev.path, numbers(prev.rule))
			}
			if !ok {
				first[rule.Name] = named{path, rule}
			}
			if err := c.samePlanRules(path, rule); err != nil {
				return err
			}
			kept = append(kept, rule)
		}
		rules = kept
		c.routeIDs[r.id] = i // one route per id: one of the same id would never match
		c.routes = append(c.routes, r)
		c.depth = max(c.depth, len(r.segments)+1)
		extras = append(extras, rules)
	}
	c.routeRules = append(extras, nil)
	for _, name := range sortedKeys(c.plans) {
		if err := c.combine(c.plans[name]); err != nil {
			return err
		}
	}
	return nil
}

// combine sets p.byRoute to p's rules merged with each route's extra rules
// (c.routeRules[i] for route i, then nil for no route), checking that each set, at its
// route's cost, is a request the engine accepts. A route that adds no rule shares p's.
func (c *Config) combine(p *Plan) error {
	p.byRoute = make([][]bucketgate.Rule, 0, len(c.routeRules))
	for i, extra := range c.routeRules {
		rules := p.Rules
		if len(extra) > 0 {
			rules = merge(p.Rules, extra)
		}
		if err := c.validRoute(p, i, rules); err != nil {
			return err
		}
		p.byRoute = append(p.byRoute, rules)
	}
	return nil
}

// validRoute reports rules, p's for route i (i = len(c.routes): none), when, as the
// request Limits.Request makes of them at the route's cost (or estimate) and ttl, they
// are not a request the engine accepts.
func (c *Config) validRoute(p *Plan, i int, rules []bucketgate.Rule) error {
	l := Limits{Rules: rules, Cost: defaultCost}
	field, with := "plans."+p.Name, ""
	if i < len(c.routes) {
		r := c.routes[i]
		l.Cost, l.Reserve, l.TTL = r.cost, r.reserve, r.ttl
		field, with = fmt.Sprintf("routes[%d]", i), "with plans."+p.Name+": "
	}
	if err := l.Request("config").Validate(); err != nil {
		return errorAt(field, "%s%v", with, invalid.Bare(err))
	}
	return nil
}

// anyPlanRule reports whether a rule of a plan satisfies f.
func (c *Config) anyPlanRule(f func(bucketgate.Rule) bool) bool {
	for _, p := range c.plans {
		if slices.ContainsFunc(p.Rules, f) {
			return true
		}
	}
	return false
}

// samePlanRules reports a route's rule r, at path, that has other numbers than a plan's
// rule of its name, naming every such plan: one rule for every plan, a plan's rule of
// its name counts once, so the route's numbers must be those of every plan that has it.
func (c *Config) samePlanRules(path string, r bucketgate.Rule) error {
	var (
		others   []string
		numbered = map[string]bool{} // the numbers of the plans' rules of r's name
	)
	for _, plan := range sortedKeys(c.plans) {
		for _, pr := range c.plans[plan].Rules {
			if pr.Name != r.Name {
				continue
			}
			numbered[numbers(pr)] = true
			if !sameRule(pr, r) {
				others = append(others, fmt.Sprintf("plans.%s (%s)", plan, numbers(pr)))
			}
		}
	}
	switch {
	case len(others) == 0:
		return nil
	case len(numbered) > 1:
		return errorAt(path, "rule %s (%s) has other numbers than the rule %s of %s: a rule name is one bucket (or quota) of an identity, and the plans give this one other numbers each, so give the route's rule another name",
			r.Name, numbers(r), r.Name, strings.Join(others, ", of "))
	}
	return errorAt(path, "rule %s (%s) has other numbers than the rule %s of %s: a rule name is one bucket (or quota) of an identity, so give the route's rule the plan's numbers, or another name",
		r.Name, numbers(r), r.Name, strings.Join(others, ", of "))
}

// sameRule reports whether a and b are the same bucket (the same name, capacity and
// rate) or the same quota (the same name, limit, period and anchor). Whether a rule is a
// shadow rule does not change it.
func sameRule(a, b bucketgate.Rule) bool {
	a.Shadow, b.Shadow = false, false
	a.Anchor, b.Anchor = anchor(a), anchor(b)
	return a == b
}

// anchor is r's anchor as it counts: a monthly quota's day, 1 when not given.
func anchor(r bucketgate.Rule) uint8 {
	if r.Period == bucketgate.PeriodMonth && r.Anchor == 0 {
		return 1
	}
	return r.Anchor
}

// numbers describes a rule's numbers for an error: a bucket's capacity and rate, a
// quota's limit, period and anchor.
func numbers(r bucketgate.Rule) string {
	switch {
	case r.Period == bucketgate.PeriodMonth:
		return fmt.Sprintf("limit %d a month from day %d", r.Limit, anchor(r))
	case r.IsQuota():
		return fmt.Sprintf("limit %d a %v", r.Limit, r.Period)
	case r.IsConcurrency():
		return fmt.Sprintf("concurrency %d", r.Concurrency)
	}
	return fmt.Sprintf("capacity %d, refillPerSecond %v", r.Capacity, r.RefillPerSecond)
}

// kind names what r is, for an error: a bucket, a quota or a concurrency rule.
func kind(r bucketgate.Rule) string {
	switch {
	case r.IsQuota():
		return "a quota"
	case r.IsConcurrency():
		return "a concurrency rule"
	}
	return "a bucket"
}

// merge returns the plan's rules followed by the route's, a route rule that is already
// the plan's counting once: enforced when either enforces it.
func merge(plan, route []bucketgate.Rule) []bucketgate.Rule {
	rules := append(make([]bucketgate.Rule, 0, len(plan)+len(route)), plan...)
	for _, r := range route {
		if i := slices.IndexFunc(rules, func(p bucketgate.Rule) bool { return p.Name == r.Name }); i >= 0 {
			rules[i].Shadow = rules[i].Shadow && r.Shadow
			continue
		}
		rules = append(rules, r)
	}
	return rules
}

// compileRules compiles the rules at field; shadow makes them all shadow rules. A rule
// that is valid only without the 0s written for its concurrency, limit or
// refillPerSecond (an earlier bucketgate read them as left out) is compiled without
// them, each noted in c.legacy.
func (c *Config) compileRules(field string, specs []RuleSpec, shadow bool) ([]bucketgate.Rule, error) {
	if len(specs) > bucketgate.MaxRules {
		return nil, errorAt(field, "%d rules: want at most %d", len(specs), bucketgate.MaxRules)
	}
	rules := make([]bucketgate.Rule, 0, len(specs))
	for i, s := range specs {
		r, err := s.Rule()
		if without, zeros := s.withoutZeros(); err != nil && len(zeros) > 0 {
			if earlier, e := without.Rule(); e == nil {
				r, err = earlier, nil
				for _, name := range zeros {
					c.legacy = append(c.legacy, &fieldError{path: fmt.Sprintf("%s[%d].%s", field, i, name),
						msg: "0 beside the rule's other numbers, which an earlier bucketgate read as left out, as the functions still do in a document stored then; bucketgate config put refuses it: take the field out"})
				}
			}
		}
		if keyErr := madekey.InField("name", s.Name); keyErr != nil { // before Rule's errors, which quote the name
			err = fmt.Errorf("%w: give the rule another name", keyErr)
		}
		if err == nil && shadow && r.IsConcurrency() {
			err = fmt.Errorf("rule %s: a concurrency rule is never shadow, and the shadow: true of %s makes every rule of it shadow: give it an enforced plan or route", r.Name, strings.TrimSuffix(field, ".rules"))
		}
		if err != nil {
			return nil, errorAt(fmt.Sprintf("%s[%d]", field, i), "%v", err)
		}
		r.Shadow = r.Shadow || shadow
		rules = append(rules, r)
	}
	return rules, nil
}

// Rule returns the rule s describes, validated; the error names what is wrong. A spec
// with a period (or a limit, or an anchor) is a quota, another a bucket.
func (s RuleSpec) Rule() (bucketgate.Rule, error) {
	if s.Concurrency != nil {
		return s.concurrency()
	}
	if s.Period != "" || s.Limit != nil || s.Anchor != nil {
		return s.quota()
	}
	rate, err := s.refillPerSecond()
	if err != nil {
		return bucketgate.Rule{}, err
	}
	r := bucketgate.Rule{Name: s.Name, Capacity: int64(s.Capacity), RefillPerSecond: rate, Shadow: s.Shadow}
	if err := r.Validate(); err != nil {
		return bucketgate.Rule{}, invalid.Bare(err)
	}
	return r, nil
}

// withoutZeros returns s without the 0s written for its concurrency, limit or
// refillPerSecond, which an earlier bucketgate read as left out, and their fields'
// names.
func (s RuleSpec) withoutZeros() (RuleSpec, []string) {
	var zeros []string
	if s.Concurrency != nil && *s.Concurrency == 0 {
		s.Concurrency, zeros = nil, append(zeros, "concurrency")
	}
	if s.Limit != nil && *s.Limit == 0 {
		s.Limit, zeros = nil, append(zeros, "limit")
	}
	if s.RefillPerSecond != nil && *s.RefillPerSecond == 0 {
		s.RefillPerSecond, zeros = nil, append(zeros, "refillPerSecond")
	}
	return s, zeros
}

// concurrency returns the concurrency rule s describes, validated.
func (s RuleSpec) concurrency() (bucketgate.Rule, error) {
	switch {
	case s.Capacity != 0 || s.RefillPerSecond != nil || s.Refill != 0 || s.Per != "" || s.Limit != nil || s.Period != "" || s.Anchor != nil:
		return bucketgate.Rule{}, errors.New("a concurrency rule has a concurrency alone, not a capacity, refillPerSecond, refill, per, limit, period or anchor")
	case *s.Concurrency < 1 || *s.Concurrency > bucketgate.MaxConcurrency:
		return bucketgate.Rule{}, fmt.Errorf("concurrency %d: want 1 to %d requests in flight", *s.Concurrency, bucketgate.MaxConcurrency)
	}
	r := bucketgate.Rule{Name: s.Name, Concurrency: int32(*s.Concurrency), Shadow: s.Shadow}
	if err := r.Validate(); err != nil {
		return bucketgate.Rule{}, invalid.Bare(err)
	}
	return r, nil
}

// quota returns the quota s describes, validated.
func (s RuleSpec) quota() (bucketgate.Rule, error) {
	period, ok := bucketgate.ParsePeriod(s.Period)
	switch {
	case s.Period == "":
		return bucketgate.Rule{}, errors.New("a limit or an anchor without a period: a quota needs period: day, week or month (a bucket has capacity and refillPerSecond instead)")
	case !ok:
		return bucketgate.Rule{}, fmt.Errorf("period %q: want day, week or month", s.Period)
	case s.Capacity != 0 || s.RefillPerSecond != nil || s.Refill != 0 || s.Per != "":
		return bucketgate.Rule{}, fmt.Errorf("a quota (period %s) has a limit, not a capacity, refillPerSecond, refill or per", period)
	case s.Limit == nil:
		return bucketgate.Rule{}, fmt.Errorf("limit is required for a quota: 1 to %d tokens a %s", bucketgate.MaxCapacity, period)
	case s.Anchor != nil && period != bucketgate.PeriodMonth:
		return bucketgate.Rule{}, fmt.Errorf("anchor %d with period %s: only a monthly quota has an anchor", *s.Anchor, period)
	case s.Anchor != nil && (*s.Anchor < 1 || *s.Anchor > bucketgate.MaxAnchor):
		return bucketgate.Rule{}, fmt.Errorf("anchor %d: want a day of the month from 1 to %d (every month has it)", *s.Anchor, bucketgate.MaxAnchor)
	}
	r := bucketgate.Rule{Name: s.Name, Limit: int64(*s.Limit), Period: period, Shadow: s.Shadow}
	if s.Anchor != nil {
		r.Anchor = uint8(*s.Anchor)
	}
	if err := r.Validate(); err != nil {
		return bucketgate.Rule{}, invalid.Bare(err)
	}
	return r, nil
}

// refusal reads the policy v of field, whose other value than PolicyRefuse is allow
// (also the default, for an empty v).
func refusal(field, v, allow string) (bool, error) {
	switch v {
	case "", allow:
		return false, nil
	case PolicyRefuse:
		return true, nil
	}
	if field == "unknownKeys" && v == PolicyDefault {
		return false, errorAt(field, "%q: want %q or %q: %q gave every unknown key a bucket of its own, so a new made-up key escaped every limit; %q limits it by source IP",
			v, allow, PolicyRefuse, v, PolicyIP)
	}
	return false, errorAt(field, "%q: want %q or %q", v, allow, PolicyRefuse)
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
