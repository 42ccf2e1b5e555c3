// Package registry says who an identity is: the plan an API key or a tenant is on and
// its own rules (overrides), or that the registry does not know it (never registered,
// revoked, expired, or an item the registry cannot use).
//
// Two kinds of registry answer the handlers' one question, a View's Lookup(ctx, id): a
// Document, the configuration document's keys and tenants (small setups, local runs),
// and a Cache over a Table, an Amazon DynamoDB table read with GetItem (REGISTRY_TABLE).
// The table may hold the configuration document itself (StoredConfig): a Live reads it
// at init and then at most once per period, and gives each invocation a View, the
// document and the registry resolving plans with it, which change together. The
// Cache keeps hits and misses alike for a period (REGISTRY_CACHE_MS) in a bounded
// number of entries (REGISTRY_CACHE_SIZE), so that a revocation, a plan change or an
// override takes effect on every execution environment within that period, and a flood
// of made-up keys costs at most one lookup per distinct key per period (a Table's two
// GetItems: a miss is read again, strongly consistent) and never more memory than the
// bound, and evicts made-up keys before registered ones. When the table fails, an entry past its period still answers
// for a bounded time (stale-if-error); an identity with nothing cached is an error the
// handlers answer by the failure policy. Time is passed in (Options.Now).
//
// Identities are the limiter's own strings (bucketgate.Identity's String): "key:<digest>"
// for an API key, "tenant:<key>" for a check function key. A raw API key never reaches
// this package.
package registry

import (
	"context"
	"strings"

	"github.com/bucketgate/bucketgate"
	"github.com/bucketgate/bucketgate/internal/config"
	"github.com/bucketgate/bucketgate/internal/telemetry"
)

// Result says how a lookup was answered: the Result dimension of the RegistryLookups
// metric. Reads of the table are the lookups answered ResultMiss, and those that
// failed (ResultStale and ResultError after a read), or that the caller gave up
// (ResultAbandoned).
type Result string

// The Results of a Cache lookup.
const (
	// ResultHit: from the cache, within its period; no read.
	ResultHit Result = "hit"
	// ResultMiss: read from the table (an item or none).
	ResultMiss Result = "miss"
	// ResultStale: the table failed (now, or within a second before); an entry past
	// its period answered (stale-if-error).
	ResultStale Result = "stale"
	// ResultError: the table failed and nothing usable was cached; Lookup's error is
	// set.
	ResultError Result = "error"
	// ResultAbandoned: the caller's time ran out (its context ended, or its deadline
	// less Options.Margin passed) before the table answered, or before another lookup's
	// read of the identity did: no failure of the table. Lookup's error is the
	// caller's.
	ResultAbandoned Result = "abandoned"
)

// Entry is what the registry says about one identity.
type Entry struct {
	// Plan is the identity's plan with its own rules applied (see Record.Resolve);
	// nil when the registry does not know the identity: never registered, revoked,
	// expired, or its item invalid.
	Plan *config.Plan
	// Result says how the Cache answered; empty from a Document, which reads nothing.
	Result Result
	// Invalid reports that this lookup read an item the registry cannot use (logged at
	// error, once per read): Plan is nil. A key naming an account that the table does
	// not hold is such an item.
	Invalid bool
	// Identity is whose buckets the identity's requests spend (or spent) when it is not
	// the identity itself: a key of an account spends its account's, and an account its
	// own, "acct:<name>", or, for an account that bucketgate keys roll made from a lone
	// key, that key's (Record.Buckets). It is set with no Plan too, for an account that
	// is revoked, expired or unusable, and for a revoked or expired key of an account the
	// table holds (the old key of a roll), so that the operator's path reaches the usage
	// it spent (the check function decides such a key's buckets as its own): the
	// handlers decide a request by the Plan alone. The zero Identity otherwise.
	Identity bucketgate.Identity
	// Account names the key's account, or the account looked up; empty otherwise.
	// Owner is the owner of the record that decides (the account's, for a key of an
	// account), at most MaxOwner bytes of it. Both are for logs and events: no decision
	// reads them.
	Account, Owner string
	// AccountResult says how the Cache answered the lookup of a key's account, made
	// after the key's (a second lookup of the RegistryLookups metric); empty when it
	// made none. AccountInvalid reports that it read an item it cannot use.
	AccountResult  Result
	AccountInvalid bool
	// AccountErr is why the lookup of a revoked or expired key's account failed (Lookup
	// itself answers such a key as unknown, without an error): Identity is then the zero
	// Identity although the key spent an account's buckets, so the operator's path cannot
	// tell whose they are. nil otherwise.
	AccountErr error

	who    *who              // the entry's record's owner, account, buckets (a Cache's)
	gone   bool              // the record is revoked or expired (a Cache's)
	rules  []bucketgate.Rule // the record's own rules (a Cache's)
	readAt instant           // when the entry was read (a Cache's)
}

// Observe counts in inv the lookups that answered e (RegistryLookups by Result, and
// RegistryInvalidItems): the identity's, and its account's for a key of an account;
// none for an Entry of no lookup (a Document's, or the zero Entry).
func (e Entry) Observe(inv *telemetry.Invocation) {
	if e.Result != "" {
		inv.ObserveLookup(string(e.Result), e.Invalid)
	}
	if e.AccountResult != "" {
		inv.ObserveLookup(string(e.AccountResult), e.AccountInvalid)
	}
}

// Document is the registry a configuration document holds: its keys (by digest) and
// tenants on their plans, with no overrides and no expiry. The zero Document knows no
// one; use NewDocument.
type Document struct {
	c *config.Config
}

// NewDocument returns the registry of c's keys and tenants.
func NewDocument(c *config.Config) Document { return Document{c: c} }

// Holds reports whether id is an identity the registry can know: an API key's
// ("key:<digest>"), a tenant's ("tenant:<key>") or an account's ("acct:<name>"). No
// registry reads any other, such as a source address's ("ip:..."): no item can change
// the plan of an address.
func Holds(id string) bool {
	return strings.HasPrefix(id, bucketgate.KeyPrefix) || strings.HasPrefix(id, bucketgate.TenantPrefix) ||
		strings.HasPrefix(id, bucketgate.AccountPrefix)
}

// Lookup returns the plan the document maps id to, or an Entry with no plan. It never
// fails.
func (d Document) Lookup(_ context.Context, id string) (Entry, error) {
	if d.c == nil {
		return Entry{}, nil
	}
	var (
		p     *config.Plan
		known bool
	)
	if digest, ok := strings.CutPrefix(id, bucketgate.KeyPrefix); ok {
		p, known = d.c.PlanForKey(digest)
	} else if key, ok := strings.CutPrefix(id, bucketgate.TenantPrefix); ok {
		p, known = d.c.PlanForTenant(key)
	}
	if !known {
		return Entry{}, nil
	}
	return Entry{Plan: p}, nil
}
