// Package config loads bucketgate's rate-limit configuration: plans (named rule sets),
// routes that add a cost or rules, API-key digests and tenants mapped to plans, and what
// happens to identities nobody configured. It is one YAML or JSON document, validated
// completely when loaded; an error names the field.
package config

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"gopkg.in/yaml.v3"
)

// Count is a whole number of tokens as written in the document. Unlike a plain int64,
// which the YAML decoder fills from 1.5 by truncating, it refuses anything but an integer.
type Count int64

// UnmarshalYAML decodes an integer scalar and refuses anything else.
func (c *Count) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind != yaml.ScalarNode || n.ShortTag() != "!!int" {
		return fmt.Errorf("line %d: %q: want a whole number", n.Line, n.Value)
	}
	v, err := strconv.ParseInt(n.Value, 0, 64)
	if err != nil {
		return fmt.Errorf("line %d: %q: want a whole number: %w", n.Line, n.Value, err)
	}
	*c = Count(v)
	return nil
}

// Document is the configuration as written. Load turns it into a Config.
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
	// Plans maps a plan name to its rules, decided together.
	Plans map[string][]RuleSpec `yaml:"plans"`
	// Keys maps an API key's digest (see KeyDigest) to a plan name.
	Keys map[string]string `yaml:"keys"`
	// Tenants maps a tenant id (the check function's key) to a plan name.
	Tenants map[string]string `yaml:"tenants"`
	// Routes add a cost and rules to matching requests; the first match wins.
	Routes []RouteSpec `yaml:"routes"`
}

// RuleSpec is a rule as written: a rate either as refillPerSecond, or as refill tokens
// per period ("second", "minute", "hour", "day", or a Go duration such as "90s").
type RuleSpec struct {
	Name            string  `yaml:"name"`
	Capacity        Count   `yaml:"capacity"`
	RefillPerSecond float64 `yaml:"refillPerSecond"`
	Refill          float64 `yaml:"refill"`
	Per             string  `yaml:"per"`
}

// RouteSpec matches requests by method and path and adds Cost (default 1) and Rules.
type RouteSpec struct {
	// Method is an HTTP method, or "*" or empty for any.
	Method string `yaml:"method"`
	// Path is a pattern of '/'-separated segments: a literal, "*" or "{name}" for any one
	// segment, and as the last segment "**" or "{name+}" for any rest, even none.
	Path string `yaml:"path"`
	// Cost is the tokens a matching request takes; nil means 1.
	Cost *Count `yaml:"cost"`
	// Rules are added to the plan's rules for matching requests.
	Rules []RuleSpec `yaml:"rules"`
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
	case s.RefillPerSecond != 0 && (s.Refill != 0 || s.Per != ""):
		return 0, fmt.Errorf("give refillPerSecond or refill with per, not both")
	case s.RefillPerSecond != 0:
		return s.RefillPerSecond, nil
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
