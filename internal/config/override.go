package config

import (
	"fmt"
	"slices"
	"strings"

	"github.com/bucketgate/bucketgate"
	"github.com/bucketgate/bucketgate/internal/invalid"
	"github.com/bucketgate/bucketgate/internal/madekey"
)

// Override returns plan p as it applies to one identity with its own rules (a registry
// record's overrides): a rule named like one of p's rules, or like a rule a route adds,
// replaces that rule wherever it applies, keeping its shadow mark; a rule with any other
// name is added to p's rules, so to every request. Without overrides it returns p itself.
//
// The overrides are validated as strictly as the document's rules: each a valid
// bucketgate.Rule, distinct names, at most bucketgate.MaxRules of them, and every route's rule
// set with them a request the engine accepts (a route's cost within every capacity).
// The error names the override ("rules[1]: ...") or the route. The returned Plan has
// p's name; the buckets of its rules are the identity's own, whatever the plan, so a
// plan change keeps them. It holds its own rules and the overrides, and shares the
// document's route table: its size does not grow with the routes (registry cache
// entries are such plans).
func (c *Config) Override(p *Plan, overrides []bucketgate.Rule) (*Plan, error) {
	if len(overrides) == 0 {
		return p, nil
	}
	if err := validOwn(overrides, "overrides"); err != nil {
		return nil, err
	}
	for i, r := range overrides {
		if where, other, ok := c.namesake(p, r.Name); ok && !bucketgate.SameKind(other, r) {
			return nil, fmt.Errorf("rules[%d]: rule %s is %s, and %s of %s: an override replaces a rule of its kind; give it another name", i, r.Name, kind(r), kind(other), where)
		}
	}
	// Clipped: an append below never writes into p's rules.
	own := slices.Clip(replace(p.Rules, overrides))
	for _, r := range overrides { // in the record's order
		if !c.replaces(p, r.Name) {
			r.Shadow = false
			own = append(own, r)
		}
	}
	return c.validPlan(&Plan{Plan: bucketgate.Plan{Name: p.Name, Rules: own}, overrides: slices.Clone(overrides)})
}

// OverrideAlone is Override for an identity that no route applies to, a tenant of the
// check function (whose checks have no method or path): an override named like one of
// p's rules replaces it, keeping its shadow mark, and any other is added to p's rules,
// so to every check. They are validated as Override validates them, against p's rules
// alone, routes apart: the returned Plan's Rules are what the identity's checks are
// decided against.
func (c *Config) OverrideAlone(p *Plan, overrides []bucketgate.Rule) (*Plan, error) {
	if len(overrides) == 0 {
		return p, nil
	}
	if err := validOwn(overrides, "overrides"); err != nil {
		return nil, err
	}
	own := slices.Clip(replace(p.Rules, overrides))
	for i, r := range overrides { // in the record's order
		j := slices.IndexFunc(p.Rules, func(pr bucketgate.Rule) bool { return pr.Name == r.Name })
		switch {
		case j < 0:
			r.Shadow = false
			own = append(own, r)
		case !bucketgate.SameKind(p.Rules[j], r):
			return nil, fmt.Errorf("rules[%d]: rule %s is %s, and %s of plan %s: an override replaces a rule of its kind; give it another name", i, r.Name, kind(r), kind(p.Rules[j]), p.Name)
		}
	}
	q := &Plan{Plan: bucketgate.Plan{Name: p.Name, Rules: own}}
	if err := c.validRoute(q, len(c.routes), own); err != nil {
		return nil, fmt.Errorf("rules: %w", err)
	}
	return q, nil
}

// WithKeyRules returns plan p, an account's (with the account's own rules applied, see
// Override), as it applies to the account's API key of digest, with the key's own
// rules: each is added to every request of the key under its bucketgate.KeyRuleName,
// an enforced rule of the key alone, decided with the account's rules in one call. None
// replaces a rule of the plan or of a route: those buckets are the account's, shared
// by all its keys. Without own rules it returns p itself.
//
// The own rules are validated as Override validates overrides, and every route's rule
// set with them must be a request the engine accepts (at most bucketgate.MaxRules rules
// in all, a route's cost within every capacity): the error names the rule ("rules[1]:
// ...") or the route. Like Override's, the returned Plan shares the document's route
// table.
func (c *Config) WithKeyRules(p *Plan, digest string, own []bucketgate.Rule) (*Plan, error) {
	if len(own) == 0 {
		return p, nil
	}
	if err := validOwn(own, "rules of the key's own"); err != nil {
		return nil, err
	}
	rules := append(make([]bucketgate.Rule, 0, len(p.Rules)+len(own)), p.Rules...)
	for _, r := range own {
		r.Name, r.Shadow = bucketgate.KeyRuleName(digest, r.Name), false
		rules = append(rules, r)
	}
	return c.validPlan(&Plan{Plan: bucketgate.Plan{Name: p.Name, Rules: rules}, overrides: p.overrides})
}

// validOwn reports the first thing wrong with an identity's own rules (what, in an
// error about their number): at most bucketgate.MaxRules valid rules of distinct names.
func validOwn(rules []bucketgate.Rule, what string) error {
	if len(rules) > bucketgate.MaxRules {
		return fmt.Errorf("rules: %d %s: want at most %d", len(rules), what, bucketgate.MaxRules)
	}
	for i, r := range rules {
		if err := madekey.InField("name", r.Name); err != nil { // before Validate's errors, which quote the name
			return fmt.Errorf("rules[%d]: %w", i, err)
		}
		if err := r.Validate(); err != nil {
			return fmt.Errorf("rules[%d]: %w", i, invalid.Bare(err))
		}
		for j := range i {
			if rules[j].Name == r.Name {
				return fmt.Errorf("rules[%d]: name %q given twice", i, r.Name)
			}
		}
	}
	return nil
}

// validPlan returns q, an identity's plan, when every route's rule set with it is a
// request the engine accepts, as Limits will give them.
func (c *Config) validPlan(q *Plan) (*Plan, error) {
	for i := range c.routeRules {
		if err := c.validRoute(q, i, c.rules(q, i)); err != nil {
			return nil, fmt.Errorf("rules: %w", err)
		}
	}
	return q, nil
}

// namesake returns the rule called name that an override would replace, of p or of a
// route, and where it is ("the plan", "routes[2]").
func (c *Config) namesake(p *Plan, name string) (where string, r bucketgate.Rule, ok bool) {
	if i := slices.IndexFunc(p.Rules, func(r bucketgate.Rule) bool { return r.Name == name }); i >= 0 {
		return "plan " + p.Name, p.Rules[i], true
	}
	for k, rules := range c.routeRules {
		if i := slices.IndexFunc(rules, func(r bucketgate.Rule) bool { return r.Name == name }); i >= 0 {
			return fmt.Sprintf("routes[%d]", k), rules[i], true
		}
	}
	return "", bucketgate.Rule{}, false
}

// Reach says which requests of an identity on plan p its own rule called name limits
// (see Override): both empty for every request (it replaces a rule of p, or is added to
// p's rules); else where the routes that have a rule of its name are ("routes[0],
// routes[2]"), as it replaces their rule and then limits their requests alone, and
// routes, their ids (Limits.Route), which stay theirs whatever routes come before or
// after them: two documents' routes are the same requests when they are equal.
func (c *Config) Reach(p *Plan, name string) (where, routes string) {
	has := func(r bucketgate.Rule) bool { return r.Name == name }
	if slices.ContainsFunc(p.Rules, has) {
		return "", ""
	}
	var places, ids []string
	for i, r := range c.routes {
		if slices.ContainsFunc(c.routeRules[i], has) {
			places, ids = append(places, fmt.Sprintf("routes[%d]", i)), append(ids, r.id)
		}
	}
	slices.Sort(ids)
	return strings.Join(places, ", "), strings.Join(ids, ",")
}

// Shadows reports whether an identity's own rule called name, on plan p, would be a
// shadow rule (Override and OverrideAlone keep the shadow mark of the rule it replaces),
// so limit nothing where it is: p's rule of that name is shadow; or, with routes (a
// key's or an account's own rule, not a check function tenant's, to which no route
// applies), p has none and a route's rule of that name is shadow.
func (c *Config) Shadows(p *Plan, name string, routes bool) bool {
	if i := slices.IndexFunc(p.Rules, func(r bucketgate.Rule) bool { return r.Name == name }); i >= 0 {
		return p.Rules[i].Shadow
	}
	return routes && slices.ContainsFunc(c.routeRules, func(rules []bucketgate.Rule) bool {
		return slices.ContainsFunc(rules, func(r bucketgate.Rule) bool { return r.Name == name && r.Shadow })
	})
}

// replaces reports whether an override called name replaces a rule of p or of a route.
func (c *Config) replaces(p *Plan, name string) bool {
	has := func(r bucketgate.Rule) bool { return r.Name == name }
	if slices.ContainsFunc(p.Rules, has) {
		return true
	}
	for _, rules := range c.routeRules {
		if slices.ContainsFunc(rules, has) {
			return true
		}
	}
	return false
}

// replace returns rules with each rule named like one of overrides replaced by it,
// keeping its shadow mark; rules itself when none is.
func replace(rules, overrides []bucketgate.Rule) []bucketgate.Rule {
	var out []bucketgate.Rule
	for i, r := range rules {
		for _, o := range overrides {
			if o.Name != r.Name {
				continue
			}
			if out == nil {
				out = slices.Clone(rules)
			}
			o.Shadow = r.Shadow
			out[i] = o
		}
	}
	if out == nil {
		return rules
	}
	return out
}
