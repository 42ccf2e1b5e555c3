package config

import (
	"bytes"
	"crypto/sha256"
	_ "embed"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"sort"

	"gopkg.in/yaml.v3"

	"github.com/bucketgate/bucketgate/internal/bucket"
)

// MaxDocument is the largest document Load accepts, in bytes.
const MaxDocument = 1 << 20

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

// Parse decodes a YAML or JSON document strictly (unknown fields are errors) and
// validates all of it.
func Parse(doc []byte) (*Config, error) {
	if len(doc) > MaxDocument {
		return nil, fmt.Errorf("%w: document is %d bytes, want at most %d", ErrConfig, len(doc), MaxDocument)
	}
	var d Document
	dec := yaml.NewDecoder(bytes.NewReader(doc))
	dec.KnownFields(true)
	if err := dec.Decode(&d); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, fmt.Errorf("%w: document is empty", ErrConfig)
		}
		return nil, fmt.Errorf("%w: %w", ErrConfig, err)
	}
	var extra yaml.Node
	if err := dec.Decode(&extra); !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("%w: more than one document", ErrConfig)
	}
	c, err := compile(d)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrConfig, err)
	}
	return c, nil
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
	if len(d.Plans) == 0 {
		return nil, errors.New("plans: at least one plan is required")
	}
	for _, name := range sortedKeys(d.Plans) {
		if name == "" {
			return nil, errors.New("plans: a plan name is empty")
		}
		rules, err := compileRules(fmt.Sprintf("plans.%s", name), d.Plans[name])
		if err != nil {
			return nil, err
		}
		if len(rules) == 0 {
			return nil, fmt.Errorf("plans.%s: at least one rule is required", name)
		}
		c.plans[name] = &Plan{Name: name, Rules: rules}
	}
	if d.DefaultPlan == "" {
		return nil, errors.New("defaultPlan: required")
	}
	if c.defaultPlan, err = c.plan("defaultPlan", d.DefaultPlan); err != nil {
		return nil, err
	}
	for _, digest := range sortedKeys(d.Keys) {
		if !validDigest(digest) {
			return nil, fmt.Errorf("keys.%s: want a key digest of %d lowercase hex digits (see KeyDigest), not a raw key", digest, DigestLen)
		}
		if c.keys[digest], err = c.plan("keys."+digest, d.Keys[digest]); err != nil {
			return nil, err
		}
	}
	for _, id := range sortedKeys(d.Tenants) {
		if c.tenants[id], err = c.plan("tenants."+id, d.Tenants[id]); err != nil {
			return nil, err
		}
	}
	return c, compileRoutes(c, d.Routes)
}

// compileRoutes compiles the routes and every plan's rule set with each, checking that
// every combination is a request the engine accepts.
func compileRoutes(c *Config, specs []RouteSpec) error {
	extras := make([][]bucket.Rule, 0, len(specs)+1)
	for i, spec := range specs {
		field := fmt.Sprintf("routes[%d]", i)
		r, err := compileRoute(spec)
		if err != nil {
			return fmt.Errorf("%s: %w", field, err)
		}
		rules, err := compileRules(field+".rules", spec.Rules)
		if err != nil {
			return err
		}
		c.routes = append(c.routes, r)
		extras = append(extras, rules)
	}
	extras = append(extras, nil)
	for _, name := range sortedKeys(c.plans) {
		if err := c.combine(c.plans[name], extras); err != nil {
			return err
		}
	}
	return nil
}

// combine sets p.byRoute to p's rules plus each route's extra rules (extras[i] for
// route i, then nil for no route), checking that each set, at its route's cost, is a
// request the engine accepts.
func (c *Config) combine(p *Plan, extras [][]bucket.Rule) error {
	p.byRoute = make([][]bucket.Rule, 0, len(extras))
	for i, extra := range extras {
		rules := append(append([]bucket.Rule(nil), p.Rules...), extra...)
		cost := int64(defaultCost)
		field := fmt.Sprintf("plans.%s", p.Name)
		if i < len(c.routes) {
			cost = c.routes[i].cost
			field = fmt.Sprintf("routes[%d] with plans.%s", i, p.Name)
		}
		q := bucket.Request{Identity: "config", Rules: rules, Cost: cost}
		if err := q.Validate(); err != nil {
			return fmt.Errorf("%s: %w", field, err)
		}
		p.byRoute = append(p.byRoute, rules)
	}
	return nil
}

func compileRules(field string, specs []RuleSpec) ([]bucket.Rule, error) {
	rules := make([]bucket.Rule, 0, len(specs))
	for i, s := range specs {
		r, err := s.Rule()
		if err != nil {
			return nil, fmt.Errorf("%s[%d]: %w", field, i, err)
		}
		rules = append(rules, r)
	}
	return rules, nil
}

// Rule returns the rule s describes, validated; the error names what is wrong.
func (s RuleSpec) Rule() (bucket.Rule, error) {
	rate, err := s.refillPerSecond()
	if err != nil {
		return bucket.Rule{}, err
	}
	r := bucket.Rule{Name: s.Name, Capacity: int64(s.Capacity), RefillPerSecond: rate}
	return r, r.Validate()
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
	err := fmt.Errorf("%s: %q: want %q or %q", field, v, allow, PolicyRefuse)
	if field == "unknownKeys" && v == PolicyDefault {
		err = fmt.Errorf("%w: %q gave every unknown key a bucket of its own, so a new made-up key escaped every limit; %q limits it by source IP", err, v, PolicyIP)
	}
	return false, err
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// DigestLen is the length of a key digest in hex digits (128 bits of SHA-256).
const DigestLen = 32

// KeyDigest returns the digest under which an API key is configured, limited and
// logged: the first DigestLen hex digits of its SHA-256. Raw keys are never stored.
// From a shell: printf %s "$KEY" | sha256sum | cut -c1-32
func KeyDigest(key string) string {
	sum := sha256.Sum256([]byte(key))
	return hex.EncodeToString(sum[:DigestLen/2])
}

func validDigest(s string) bool {
	if len(s) != DigestLen {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}
