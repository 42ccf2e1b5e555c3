package config

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/bucketgate/bucketgate"
	"github.com/bucketgate/bucketgate/internal/madekey"
)

// Policy values of Document.UnknownKeys (PolicyIP or PolicyRefuse) and
// Document.Anonymous (PolicyDefault or PolicyRefuse).
const (
	// PolicyDefault: a request without an API key is limited by its source IP under
	// the default plan.
	PolicyDefault = "default"
	// PolicyIP: a request with an API key nobody registered (unknown, revoked, expired
	// or invalid) is limited as its source IP under the default plan, as if it had no
	// key: a made-up key never gets a bucket of its own.
	PolicyIP = "ip"
	// PolicyRefuse: the request is refused (401).
	PolicyRefuse = "refuse"
)

// Config is a loaded, validated configuration. It is read-only and safe for concurrent
// use. The zero Config is empty; use Load or Default.
type Config struct {
	defaultPlan   *Plan
	plans         map[string]*Plan
	keys          map[string]*Plan
	tenants       map[string]*Plan
	routes        []route
	routeRules    [][]bucketgate.Rule // routeRules[i] is route i's rules; the last entry is none
	routeIDs      map[string]int      // by route id: the first route of that id (the one that matches)
	depth         int                 // one more than the most segments a route's pattern has: how many of a path's matter
	refuseUnknown bool
	refuseAnon    bool
	idleTTL       error         // a route's ttlMs that only an identity's own rules could use: CheckAlone
	madeTenants   int           // the tenants that are or hold API keys bucketgate made: Caveats
	legacy        []*fieldError // the 0s (and numbers rounding to 0) an earlier bucketgate read as left out, read so still: Legacy
}

// Plan is a configured plan (bucketgate.Plan: its name and its own rules, before any
// route adds its own) with its route table.
type Plan struct {
	bucketgate.Plan
	// byRoute[i] is Rules plus route i's rules; the last entry is Rules alone. A plan
	// of the document has it, shared by every identity on the plan; an identity's plan
	// with overrides (Override) has none: it shares the document's route table, and
	// Limits merges a route's rules with its own when the route has any.
	byRoute [][]bucketgate.Rule
	// overrides are an identity's own rules (Override), which replace the routes' rules
	// of their names; nil for a plan of the document.
	overrides []bucketgate.Rule
}

// Limits are what one request is decided against.
type Limits struct {
	// Plan is the plan's name.
	Plan string
	// Rules are the plan's rules and the matching route's, decided together.
	Rules []bucketgate.Rule
	// Cost is the tokens the request takes: the route's cost, or 1.
	Cost int64
	// Reserve is the estimate the request reserves instead of taking Cost (the route's
	// reserve); 0 for a check of Cost.
	Reserve int64
	// TTL is how long what the request holds lasts (the reservation of Reserve, the
	// lease of a concurrency rule of Rules): the route's ttlMs; zero is
	// bucketgate.DefaultTTL. Request gives it to a request that holds something alone.
	TTL time.Duration
	// Route is the matching route's id: a digest of its method and path pattern
	// (RouteIDLen lowercase hex digits), which stays the route's whatever routes come
	// before or after it; empty for none. LimitsOf gives the same Limits from it, but
	// for a request that holds nothing to a path that backends read two ways, none of
	// whose routes is dearer: its Rules are then all of those routes' (Config.Limits).
	Route string
}

// Request returns what l asks of the engine for identity: a check of Cost or, on a
// route that reserves, a reserve of the estimate Reserve; when it holds something (a
// reservation, or a lease of a concurrency rule: bucketgate.Request.Holds), for TTL.
// A request on a route with a ttl that holds nothing (its identity's rules have no
// concurrency rule) has none: the engine refuses a ttl there.
func (l Limits) Request(identity string) bucketgate.Request {
	q := bucketgate.Request{Identity: identity, Rules: l.Rules, Cost: l.Cost}
	if l.Reserve > 0 {
		q.Op, q.Cost = bucketgate.OpReserve, l.Reserve
	}
	if q.Holds() {
		q.TTL = l.TTL
	}
	return q
}

// Plan returns the plan called name.
func (c *Config) Plan(name string) (*Plan, bool) {
	p, ok := c.plans[name]
	return p, ok
}

// DefaultPlan returns the plan of identities with no mapping.
func (c *Config) DefaultPlan() *Plan { return c.defaultPlan }

// PlanForKey returns the plan of an API key by its digest (see KeyDigest), as the
// document's keys list it. For a key nobody listed it returns the default plan and known
// false; RefuseUnknownKeys says what becomes of such a key.
func (c *Config) PlanForKey(digest string) (p *Plan, known bool) {
	if p, ok := c.keys[digest]; ok {
		return p, true
	}
	return c.defaultPlan, false
}

// PlanForTenant returns the plan mapped to a tenant id, or the default plan and false.
func (c *Config) PlanForTenant(id string) (p *Plan, known bool) {
	if p, ok := c.tenants[id]; ok {
		return p, true
	}
	return c.defaultPlan, false
}

// Caveats returns what in c is valid but likely not what its author meant, one sentence
// each naming the fields, for a warning where the document is loaded; nil when nothing
// is. Today: anonymous: refuse with unknownKeys: ip, under which a request without a
// key is refused but one with any made-up key is let through, limited by its address;
// tenants that are or hold API keys bucketgate made (madekey.Holds), which the check
// function refuses as keys (so they match no check), and which are secrets in the
// document; and what Legacy returns. A caveat never quotes such a key.
func (c *Config) Caveats() []string {
	caveats := c.Legacy()
	if c.refuseAnon && !c.refuseUnknown {
		caveats = append(caveats, "anonymous: refuse with unknownKeys: ip refuses a request without an API key but lets one with a made-up key through, limited by its address: set unknownKeys: refuse to let only registered keys through")
	}
	if n := c.madeTenants; n > 0 {
		entries := "1 entry is or holds an API key"
		if n > 1 {
			entries = fmt.Sprintf("%d entries are or hold API keys", n)
		}
		caveats = append(caveats, fmt.Sprintf("tenants: %s bucketgate made (%s..., not shown): the check function refuses such a key, so no check matches it, and the document holds it as a secret: name each such tenant by its key's digest (printf %%s \"$KEY\" | sha256sum | cut -c1-%d), as a service passes it", entries, madekey.Prefix, bucketgate.DigestLen))
	}
	return caveats
}

// Legacy returns what in c an earlier bucketgate read and this one reads as it did
// only so that a document already stored loads, one sentence each naming the field:
// a 0 written for a rule's concurrency, limit or refillPerSecond beside the numbers of
// another kind of rule, which it read as left out, and Parse does too (a 0 alone is an
// error), and so a refillPerSecond or refill written as a number that rounds to 0
// (1e-400), which 0.2 read as 0. Caveats returns them too; bucketgate config put
// refuses a document with any.
func (c *Config) Legacy() []string {
	var notes []string // nil when none, as Caveats is
	for _, fe := range c.legacy {
		notes = append(notes, fe.Error())
	}
	return notes
}

// ListsIdentities reports whether the document lists any key or tenant.
func (c *Config) ListsIdentities() bool { return len(c.keys)+len(c.tenants) > 0 }

// CheckAlone reports, as an error wrapping ErrConfig that names the field, what in c
// changes nothing when c is the whole registry (no registry table, its keys and tenants
// the only identities): a route's ttlMs on a route whose requests hold neither a
// reservation nor a lease of a rule of the document. With a registry table an
// identity's own rules may add a concurrency rule, whose lease the route's ttlMs then
// times, so Parse cannot tell; a document that lists keys or tenants has no table, and
// Parse refuses it there.
func (c *Config) CheckAlone() error { return c.idleTTL }

// RefuseUnknownKeys reports whether API keys that the registry does not know (unknown,
// revoked, expired or invalid) are refused (401) rather than limited by source IP.
func (c *Config) RefuseUnknownKeys() bool { return c.refuseUnknown }

// RefuseAnonymous reports whether requests without an API key are refused (401).
func (c *Config) RefuseAnonymous() bool { return c.refuseAnon }

// Limits returns what a request to method and path on plan p is decided against: p's
// rules plus those of the first route that matches, and that route's cost. Routes match
// the path as a backend resolves it (dot segments, repeated slashes, percent-encoded
// unreserved characters; see pathSegments) and in any case. A path that backends read
// two ways ("/a/%2e%2e/admin" is "/admin" to Node and "/a/{id}/admin" to Go;
// "/v1/chat.json" is "/v1/chat" to Rails) takes the Limits of the dearest route a
// reading matches (see dearest).
func (c *Config) Limits(p *Plan, method, path string) Limits {
	var buf [maxInlineSegments]string
	segs, disguised := pathSegments(path, buf[:0], readings[0], c.depth)
	i := c.match(method, segs)
	if disguised != 0 {
		formatless := [2]int{i, i}
		if disguised&formatSuffix != 0 {
			formatless = c.formatless(method, segs)
		}
		return c.dearest(p, method, path, disguised, i, formatless)
	}
	return c.limitsAt(p, i)
}

// formatless returns the routes that a request to method matches with the path
// segments segs, whose last has an extension (see formatSuffix), without it: cut at
// its last '.', as Rails reads a format, and at its first, as Spring's suffix matching
// may. It cuts segs' last segment in place.
func (c *Config) formatless(method string, segs []string) [2]int {
	n, last := len(segs)-1, segs[len(segs)-1]
	segs[n] = last[:strings.LastIndexByte(last, '.')]
	rails := c.match(method, segs)
	segs[n] = last[:extension(last)]
	return [2]int{rails, c.match(method, segs)}
}

// match returns the index of the first route that matches a request to method with the
// path segments segs; len(c.routes) for none.
func (c *Config) match(method string, segs []string) int {
	for i, r := range c.routes {
		if r.matches(method, segs) {
			return i
		}
	}
	return len(c.routes)
}

// dearest returns the Limits on p of a request to method and path (which the first
// reading matches to route first, and without its format to formatless' routes; the
// readings of disguised may resolve otherwise)
// that charge at least what every reading's route charges, so that no spelling of a
// path reaches a route at a cheaper one's price: the Limits of the route that takes as
// many tokens as any other (its reserve, or else its cost) with every rule of every
// other (the same rule, enforced if it is). When no route does (each adds a rule the
// other lacks), those of the one that takes the most tokens, the first reading's on a
// tie, with the others' rules added when the engine can decide them so (see union):
// docs/configuration.md says what a backend owner does when it cannot.
func (c *Config) dearest(p *Plan, method, path string, disguised reading, first int, formatless [2]int) Limits {
	var buf [maxInlineSegments]string
	all := append(make([]Limits, 0, 2*len(readings)), c.limitsAt(p, first))
	seen := append(make([]int, 0, 2*len(readings)), first)
	add := func(i int) {
		if !slices.Contains(seen, i) {
			seen, all = append(seen, i), append(all, c.limitsAt(p, i))
		}
	}
	add(formatless[0])
	add(formatless[1])
	for _, how := range readings[1:] {
		if how&^disguised != readings[0]&^disguised {
			continue // the same as another reading's, for this path
		}
		segs, d := pathSegments(path, buf[:0], how, c.depth)
		add(c.match(method, segs))
		if d&formatSuffix != 0 {
			f := c.formatless(method, segs)
			add(f[0])
			add(f[1])
		}
	}
	most := all[0]
	for _, l := range all {
		if !slices.ContainsFunc(all, func(o Limits) bool { return !l.chargesAtLeast(o) }) {
			return l
		}
		if l.tokens() > most.tokens() {
			most = l
		}
	}
	return union(all, most)
}

// union returns most, one of all, with the rules of every other added (enforced where
// any is), for a path whose readings match the routes of all, none dearer than every
// other: a check of most's cost from every bucket a reading would charge. It returns
// most alone when that is not a check the engine decides, and whose Route leads back
// to it: when a Limits of all holds something (a reservation or a lease, which its
// route's id must settle or release), when the rules would be more than
// bucketgate.MaxRules, or when an enforced one could never allow most's cost.
func union(all []Limits, most Limits) Limits {
	rules := most.Rules
	for _, l := range all {
		if l.Request("").Holds() {
			return most
		}
		rules = merge(rules, l.Rules)
	}
	if len(rules) > bucketgate.MaxRules || slices.ContainsFunc(rules, func(r bucketgate.Rule) bool { return !r.Shadow && r.Max() < most.Cost }) {
		return most
	}
	most.Rules = rules
	return most
}

// tokens are what l takes from its buckets: its reserve, or else its cost.
func (l Limits) tokens() int64 { return cmp.Or(l.Reserve, l.Cost) }

// chargesAtLeast reports whether l takes as many tokens as o or more, with every rule
// of o's: the same rule, enforced when o's is.
func (l Limits) chargesAtLeast(o Limits) bool {
	if l.tokens() < o.tokens() {
		return false
	}
	for _, r := range o.Rules {
		if !slices.ContainsFunc(l.Rules, func(q bucketgate.Rule) bool {
			q.Shadow = q.Shadow || r.Shadow
			return q == r
		}) {
			return false
		}
	}
	return true
}

// LimitsOf returns the Limits of a request on plan p that matched route (Limits.Route:
// empty for none), as Limits gave them; false when the document has no route of that
// id (of that method and path pattern).
func (c *Config) LimitsOf(p *Plan, route string) (Limits, bool) {
	if route == "" {
		return c.limitsAt(p, len(c.routes)), true
	}
	i, ok := c.routeIDs[route]
	if !ok {
		return Limits{}, false
	}
	return c.limitsAt(p, i), true
}

// limitsAt returns the Limits of p with route i (i = len(c.routes): none).
func (c *Config) limitsAt(p *Plan, i int) Limits {
	if i == len(c.routes) {
		return Limits{Plan: p.Name, Rules: c.rules(p, i), Cost: defaultCost}
	}
	r := c.routes[i]
	return Limits{Plan: p.Name, Rules: c.rules(p, i), Cost: r.cost, Reserve: r.reserve, TTL: r.ttl, Route: r.id}
}

// rules returns p's rules with route i's (i = len(c.routes): none): the document's plans
// have them ready; an identity's plan with overrides has its own rules alone for a route
// that adds none, and else merges them with the route's, an override replacing the
// route's rule of its name (an allocation, for such identities' requests to such
// routes only).
func (c *Config) rules(p *Plan, i int) []bucketgate.Rule {
	switch {
	case p.byRoute != nil:
		return p.byRoute[i]
	case len(c.routeRules[i]) == 0:
		return p.Rules
	}
	return merge(p.Rules, replace(c.routeRules[i], p.overrides))
}

// maxInlineSegments is how many path segments Limits splits a path into without
// allocating.
const maxInlineSegments = 16

// defaultCost is the tokens a request takes when no route says otherwise.
const defaultCost = 1

// Plans returns the names of every configured plan, in no particular order.
func (c *Config) Plans() []string {
	names := make([]string, 0, len(c.plans))
	for name := range c.plans {
		names = append(names, name)
	}
	return names
}

func (c *Config) plan(field, name string) (*Plan, error) {
	p, ok := c.plans[name]
	if !ok {
		return nil, errorAt(field, "unknown plan %q", madekey.Mask(name))
	}
	return p, nil
}
