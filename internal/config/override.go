package config

import (
	"fmt"

	"github.com/bucketgate/bucketgate"
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
// plan change keeps them.
func (c *Config) Override(p *Plan, overrides []bucketgate.Rule) (*Plan, error) {
	if len(overrides) == 0 {
		return p, nil
	}
	if len(overrides) > bucketgate.MaxRules {
		return nil, fmt.Errorf("rules: %d overrides: want at most %d", len(overrides), bucketgate.MaxRules)
	}
	byName := make(map[string]bucketgate.Rule, len(overrides))
	for i, r := range overrides {
		if err := r.Validate(); err != nil {
			return nil, fmt.Errorf("rules[%d]: %w", i, err)
		}
		if _, dup := byName[r.Name]; dup {
			return nil, fmt.Errorf("rules[%d]: name %q given twice", i, r.Name)
		}
		byName[r.Name] = r
	}
	replaced := map[string]bool{}
	replace := func(rules []bucketgate.Rule) []bucketgate.Rule {
		out := make([]bucketgate.Rule, len(rules))
		for i, r := range rules {
			out[i] = r
			if o, ok := byName[r.Name]; ok {
				o.Shadow = r.Shadow
				out[i], replaced[r.Name] = o, true
			}
		}
		return out
	}
	own := replace(p.Rules)
	extras := make([][]bucketgate.Rule, len(c.routeRules))
	for i, rules := range c.routeRules {
		extras[i] = replace(rules)
	}
	for _, r := range overrides { // in the record's order
		if !replaced[r.Name] {
			r.Shadow = false
			own = append(own, r)
		}
	}
	q := &Plan{Plan: bucketgate.Plan{Name: p.Name, Rules: own}}
	if err := c.combine(q, extras); err != nil {
		return nil, fmt.Errorf("rules: %w", err)
	}
	return q, nil
}
