// Package config loads bucketgate's rate-limit configuration: plans (named rule sets),
// routes that add a cost or rules, API-key digests and tenants mapped to plans, and what
// happens to identities nobody configured. It is one YAML or JSON document, validated
// completely when loaded; an error names the field.
package config

import (
	"fmt"
	"strings"
	"time"
)

// Count is a whole number of tokens as written in the document: a decimal integer (a
// plain int64 would take 1.5 by truncating it, and YAML reads 0100 as octal).
type Count int64

// Document is the configuration as written. Parse reads one and turns it into a Config.
type Document struct {
	// DefaultPlan is the plan of identities with no mapping. Required.
	DefaultPlan string `yaml:"defaultPlan"`
	// UnknownKeys is what happens to an API key the registry does not know (unknown,
	// revoked, expired, invalid, or a header given twice with different values): "ip"
	// (limited as its source IP under the default plan) or "refuse" (401). Empty is "ip".
	UnknownKeys string `yaml:"unknownKeys"`
	// Anonymous is what happens to a request with no API key: "default" (the default
	// plan, limited by source IP) or "refuse" (401). Empty is "default".
	Anonymous string `yaml:"anonymous"`
	// Plans maps a plan name (1 to bucketgate.MaxPlanName printable ASCII bytes, not '"' or '\')
	// to the plan: at most MaxPlans of them.
	Plans map[string]PlanSpec `yaml:"plans"`
	// Keys maps an API key's digest (see KeyDigest) to a plan name: at most MaxKeys.
	Keys map[string]string `yaml:"keys"`
	// Tenants maps a tenant id (the check function's key, 1 to bucketgate.MaxTenantKey bytes) to
	// a plan name: at most MaxTenants.
	Tenants map[string]string `yaml:"tenants"`
	// Routes add a cost and rules to matching requests; the first match wins (a route
	// that an earlier one leaves no request to match is an error). At most MaxRoutes.
	Routes []RouteSpec `yaml:"routes"`
}

// PlanSpec is a plan as written: the list of its rules, or a mapping with the rules
// and shadow.
type PlanSpec struct {
	// Rules are the plan's rules, decided together: 1 to bucketgate.MaxRules.
	Rules []RuleSpec `yaml:"rules"`
	// Shadow makes every rule of the plan a shadow rule (see RuleSpec.Shadow).
	Shadow bool `yaml:"shadow"`
}

// RuleSpec is a rule as written: a token bucket, its rate either as refillPerSecond, or
// as refill tokens per period ("second", "minute", "hour", "day", or a Go duration such
// as "90s"); a quota on the calendar, with a limit, a period and, for a month, an
// anchor; or a concurrency rule, with its most requests in flight.
type RuleSpec struct {
	// Name is the rule's name: with the identity, it names one bucket (or quota).
	Name string `yaml:"name"`
	// Capacity is a bucket's burst, in tokens.
	Capacity Count `yaml:"capacity"`
	// RefillPerSecond is the rate in tokens per second; nil when Refill and Per give it.
	// (A pointer, as Limit and Concurrency are, so that 0 written is told from none.)
	RefillPerSecond *float64 `yaml:"refillPerSecond"`
	// Refill is the tokens refilled every Per; zero when RefillPerSecond gives the rate.
	Refill float64 `yaml:"refill"`
	// Per is the period of Refill.
	Per string `yaml:"per"`
	// Limit is a quota's most tokens per window, 1 to bucketgate.MaxCapacity; nil for
	// another rule.
	Limit *Count `yaml:"limit"`
	// Period makes the rule a quota: "day" (UTC), "week" (from Monday, UTC) or "month"
	// (from day Anchor, UTC). Empty for a bucket.
	Period string `yaml:"period"`
	// Anchor is the day of the month, 1 to bucketgate.MaxAnchor, on which a monthly
	// quota's windows begin (the billing day); nil means 1.
	Anchor *Count `yaml:"anchor"`
	// Shadow makes the rule a shadow rule (bucketgate.Rule.Shadow): decided, and its bucket
	// spent, as if it were enforced, but it never denies. False enforces it. A
	// concurrency rule is never shadow.
	Shadow bool `yaml:"shadow"`
	// Concurrency makes the rule a concurrency rule: its most requests in flight, 1 to
	// bucketgate.MaxConcurrency, each holding a lease until released or its ttl ends.
	// It has no other number. Nil for another rule.
	Concurrency *Count `yaml:"concurrency"`
}

// RouteSpec matches requests by method and path and adds Cost (default 1) and Rules.
type RouteSpec struct {
	// Method is an HTTP method, or "*" or empty for any. GET covers HEAD too, unless a
	// HEAD route comes first.
	Method string `yaml:"method"`
	// Path is a pattern of '/'-separated segments: a literal, "*" or "{name}" for any one
	// segment, and as the last segment "**" or "{name+}" for any rest, even none.
	Path string `yaml:"path"`
	// Cost is the tokens a matching request takes, 1 or more; nil means 1. (A cost of 0
	// would turn the route into a peek that enforces nothing.)
	Cost *Count `yaml:"cost"`
	// Reserve, when set, makes the authorizer reserve this estimate of tokens for a
	// matching request instead of taking its cost (1 or more; not with Cost): the
	// backend settles the actual cost afterwards with the reservation id the authorizer
	// context carries. Nil takes the cost.
	Reserve *Count `yaml:"reserve"`
	// TTLMs is how long what a request of the route holds lasts, its reservation (see
	// Reserve) or its lease of a concurrency rule (the route's or its plan's), in
	// milliseconds (1 to 3600000; only on a route that reserves, or that has a
	// concurrency rule, or when a plan has one); nil means 300000 (bucketgate.DefaultTTL).
	TTLMs *Count `yaml:"ttlMs"`
	// Rules are added to the plan's rules for matching requests. A rule named like a
	// plan's rule must have that rule's capacity and rate, in every plan that has one
	// (it is the same bucket, and counts once); a name used by several routes must have the same numbers in each.
	Rules []RuleSpec `yaml:"rules"`
	// Shadow makes the route's rules shadow rules (see RuleSpec.Shadow). A shadow route
	// cannot set Cost: the cost applies to every rule of the request, the plan's
	// enforced rules too.
	Shadow bool `yaml:"shadow"`
}

// periods are the named values of RuleSpec.Per.
var periods = map[string]time.Duration{
	"second": time.Second,
	"minute": time.Minute,
	"hour":   time.Hour,
	"day":    24 * time.Hour,
}

// refillPerSecond returns the rate the spec gives, or an error naming what is wrong.
func (s RuleSpec) refillPerSecond() (float64, error) {
	switch {
	case s.RefillPerSecond != nil && (s.Refill != 0 || s.Per != ""):
		return 0, fmt.Errorf("give refillPerSecond or refill with per, not both")
	case s.RefillPerSecond != nil: // 0 is the rule's Validate's to refuse, naming it
		return *s.RefillPerSecond, nil
	case s.Refill == 0 && s.Per == "":
		return 0, fmt.Errorf("refillPerSecond (or refill with per) is required")
	case s.Refill <= 0:
		return 0, fmt.Errorf("refill %v: want a number > 0 with per", s.Refill)
	}
	period, ok := periods[strings.ToLower(s.Per)]
	if !ok {
		d, err := time.ParseDuration(s.Per)
		if err != nil || d <= 0 {
			return 0, fmt.Errorf("per %q: want second, minute, hour, day or a positive duration like 90s", s.Per)
		}
		period = d
	}
	return s.Refill / period.Seconds(), nil
}
