// Package claims writes and reads what the authorizer's reservation ids carry for a
// settle by the id alone (bucketgate.Request.Claims): whose buckets the reserve spent
// and where its rules came from, so that the check function finds the same identity and
// rules again, from the same configuration, with nothing but the id. The limiter signs
// the claims with the reservation (internal/bucket), so a settle that follows altered
// claims is refused there.
package claims

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/bucketgate/bucketgate"
	"github.com/bucketgate/bucketgate/internal/bucket"
	"github.com/bucketgate/bucketgate/internal/config"
	"github.com/bucketgate/bucketgate/internal/registry"
)

// version starts the claims this package writes: a2 names the route by its id. (a1
// named it by its place in the list; only unreleased builds wrote it, and it is refused.)
const version = "a2"

// noRoute is the route of claims whose request matched none.
const noRoute = "-"

// Claims are whose buckets an authorizer's reserve spent and where its rules came from.
type Claims struct {
	// Identity is whose buckets: "key:<digest>", "acct:<name>" or "ip:<source>", as
	// the authorizer spells them (never a raw key).
	Identity string
	// Key is the API key's identity ("key:<digest>") whose registry entry gave the plan
	// and says whose buckets it spends, when that is not Key itself: for an account's
	// Identity (an account's key may add rules of its own), and for a key's Identity
	// that another key spends (the account bucketgate keys roll made from the old key
	// spends its buckets, and outlives it). Empty for any other Identity.
	Key string
	// Route is the configuration's route the request matched (config.Limits.Route): its
	// id, a digest of its method and path pattern, which other routes added, removed or
	// moved around it leave as it is; empty for none.
	Route string
}

// String returns c as Request.Claims carries them: "a2 <identity> <route>", then " <key>"
// for an account's; the route is "-" for none. None of the parts holds a space.
func (c Claims) String() string {
	s := version + " " + c.Identity + " " + cmp.Or(c.Route, noRoute)
	if c.Key != "" {
		s += " " + c.Key
	}
	return s
}

// Parse reads claims that String wrote. Its error names what is wrong; claims come in a
// caller's reservation id, so they are checked whole before anything follows them.
func Parse(s string) (Claims, error) {
	parts := strings.Split(s, " ")
	if len(parts) < 3 || len(parts) > 4 || parts[0] != version {
		return Claims{}, fmt.Errorf("claims of %d bytes: not the authorizer's", len(s))
	}
	c := Claims{Identity: parts[1]}
	if parts[2] != noRoute {
		if !validRoute(parts[2]) {
			return Claims{}, fmt.Errorf("claims: route %.24q: want %d lowercase hex digits, or %s for none", parts[2], config.RouteIDLen, noRoute)
		}
		c.Route = parts[2]
	}
	if len(parts) == 4 {
		if parts[3] == "" { // a space and no key: Claims.String never writes it
			return Claims{}, errors.New(`claims: key "": want key:<digest>`)
		}
		c.Key = parts[3]
	}
	digest, isKey := strings.CutPrefix(c.Identity, bucketgate.KeyPrefix)
	name, isAccount := strings.CutPrefix(c.Identity, bucketgate.AccountPrefix)
	addr, isIP := strings.CutPrefix(c.Identity, bucketgate.IPPrefix)
	switch {
	case isKey && !bucketgate.ValidDigest(digest), isAccount && !bucketgate.ValidAccountName(name), isIP && (addr == "" || len(addr) > maxSource):
		return Claims{}, fmt.Errorf("claims: identity %.48q: not one the authorizer writes", c.Identity)
	case !isKey && !isAccount && !isIP:
		return Claims{}, fmt.Errorf("claims: identity of %d bytes: want key:, acct: or ip:", len(c.Identity))
	case isAccount && c.Key == "":
		return Claims{}, fmt.Errorf("claims: %.48q without its API key: an account's identity has one", c.Identity)
	case isIP && c.Key != "", c.Key == c.Identity:
		return Claims{}, fmt.Errorf("claims: an API key with %.48q: only an account's identity, or a key's that another key spends, has one", c.Identity)
	case c.Key != "" && !validKey(c.Key):
		return Claims{}, fmt.Errorf("claims: key %.48q: want key:<digest>", c.Key)
	}
	return c, nil
}

// ErrNone is Read's error for a reservation id that carries no claims the authorizer
// writes: not an id the limiter made to be settled by itself (a check function's, or
// one forged).
var ErrNone = errors.New("not an id the limiter made to be settled by itself (the authorizer's)")

// Read returns the claims that reservation id id carries, not yet verified: the settle
// that follows them is refused unless the limiter signed the id, claims and all, for
// the identity and rules they lead to. Its error is ErrNone.
func Read(id string) (Claims, error) {
	raw, ok := bucket.Claims(id)
	c, err := Parse(raw)
	if !ok || err != nil {
		return Claims{}, ErrNone
	}
	return c, nil
}

// maxSource is the longest source address (or IPv6 prefix) of an "ip:" identity.
const maxSource = len("ffff:ffff:ffff:ffff:ffff:ffff:255.255.255.255/128")

// validRoute reports whether s is spelled as a route's id: config.RouteIDLen lowercase
// hex digits.
func validRoute(s string) bool {
	if len(s) != config.RouteIDLen {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

// validKey reports whether id is an API key's identity, "key:<digest>".
func validKey(id string) bool {
	d, ok := strings.CutPrefix(id, bucketgate.KeyPrefix)
	return ok && bucketgate.ValidDigest(d)
}

// Of returns the claims of a reserve the authorizer decided for identity id under
// limits, for a request that carried the API key whose identity is key (zero for none):
// with key when the registry's entry of key said whose buckets id are (an account's, or
// another key's).
func Of(id, key bucketgate.Identity, limits config.Limits) Claims {
	c := Claims{Identity: id.String(), Route: limits.Route}
	if id.Kind == bucketgate.KindAccount || id.Kind == bucketgate.KindKey && key != id {
		c.Key = key.String()
	}
	return c
}

// Resolve returns whose buckets c names and the Limits of its route on that identity's
// plan today, in v, for op (a settle, a cancel or a release): the default plan for a
// source address, the registry's plan (with the key's own rules) for an API key or an
// account's key; and the registry's Entry it read, with an error too (its Account and
// Owner, for events; its Results, for the RegistryLookups metric; the zero Entry for a
// source address). A settle, a cancel or a release for a key revoked, expired or
// unknown since, or moved to another account, is resolved on the plan of the account
// whose buckets it spent while that account is active: the tokens and the slot are that
// account's (what the reserve took of the key's own rules stays taken). Its error wraps
// bucketgate.ErrConflict when c no longer leads there (a lone key unknown or revoked, an
// account not active, a key of a lone key's buckets now of another account, the route
// gone, or its rules now unable to do op: a release without a concurrency rule, a settle
// or a cancel without a bucket or a quota): a settle is then refused, and its
// reservation stays charged at its estimate (a lease frees itself at its ttl). Any other
// error is the registry's, for the failure policy.
func Resolve(ctx context.Context, v registry.View, c Claims, op bucketgate.Op) (config.Limits, registry.Entry, error) {
	var e registry.Entry
	what, left := "reservation", "it stays charged at its estimate" // what a refusal leaves
	if op == bucketgate.OpRelease {
		what, left = "lease", "it frees itself at its ttl"
	}
	if v.Config == nil {
		return config.Limits{}, e, fmt.Errorf("no configuration: %w", v.Err)
	}
	plan := v.Config.DefaultPlan()
	if !strings.HasPrefix(c.Identity, bucketgate.IPPrefix) {
		via, inactive := c.Identity, "" // inactive: the account c names, when it is not active
		of := ""                        // the key looked up, for an error, when the lines name another identity (its account)
		if c.Key != "" {
			via, of = c.Key, " of "+c.Key
		}
		var err error
		if e, err = v.Lookup(ctx, via); err != nil {
			return config.Limits{}, e, fmt.Errorf("registry lookup%s: %w", of, err)
		}
		spends := via
		if e.Identity != (bucketgate.Identity{}) {
			spends = e.Identity.String()
		}
		if e.Plan == nil || spends != c.Identity {
			// A key revoked or expired since, or moved to another account: its
			// reservation's tokens and its lease's slot are still the account's it spent,
			// which that account's other keys spend, settled or returned under its plan
			// while it is active (one of the key's own rules keeps what the reserve took,
			// or frees itself at its ttl).
			name := e.Account // a key revoked or expired: its account's, when it spends them
			if spends != c.Identity {
				name, _ = strings.CutPrefix(c.Identity, bucketgate.AccountPrefix)
			}
			if name != "" {
				a, err := v.Lookup(ctx, bucketgate.AccountPrefix+name)
				if err != nil {
					return config.Limits{}, a, fmt.Errorf("registry lookup of the account%s: %w", of, err)
				}
				switch {
				case a.Identity.String() != c.Identity:
				case a.Plan != nil:
					// Counted as a key of an account's lookup is: the key's and its account's.
					a.Result, a.Invalid, a.AccountResult, a.AccountInvalid = e.Result, e.Invalid, a.Result, a.Invalid
					e, spends = a, c.Identity
				case e.Plan == nil: // the account whose buckets it spent: the refusal is its
					inactive = name
				}
			}
		}
		switch {
		case inactive != "":
			return config.Limits{}, e, fmt.Errorf("%w: the %s's account %s is no longer active (revoked, expired or unusable): %s", bucketgate.ErrConflict, what, inactive, left)
		case e.Plan == nil:
			return config.Limits{}, e, fmt.Errorf("%w: the %s's %s is no longer registered: %s", bucketgate.ErrConflict, what, via, left)
		case spends != c.Identity:
			return config.Limits{}, e, fmt.Errorf("%w: the %s's %s now spends the buckets of %s, not %s: %s", bucketgate.ErrConflict, what, via, spends, c.Identity, left)
		}
		plan = e.Plan
	}
	l, ok := v.Config.LimitsOf(plan, c.Route)
	if !ok {
		return config.Limits{}, e, fmt.Errorf("%w: the %s's route (%s) is no longer in the configuration, no route has its method and path: %s", bucketgate.ErrConflict, what, c.Route, left)
	}
	leases := slices.ContainsFunc(l.Rules, bucketgate.Rule.IsConcurrency)
	switch {
	case op == bucketgate.OpRelease && !leases:
		return config.Limits{}, e, fmt.Errorf("%w: the lease's route (%s) has no concurrency rule any more: it frees itself at its ttl", bucketgate.ErrConflict, cmp.Or(c.Route, noRoute))
	case op != bucketgate.OpRelease && !slices.ContainsFunc(l.Rules, func(r bucketgate.Rule) bool { return !r.IsConcurrency() }):
		return config.Limits{}, e, fmt.Errorf("%w: the reservation's route (%s) has no bucket or quota any more: it stays charged at its estimate", bucketgate.ErrConflict, cmp.Or(c.Route, noRoute))
	}
	return l, e, nil
}
