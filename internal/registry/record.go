package registry

import (
	"cmp"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/bucketgate/bucketgate"
	"github.com/bucketgate/bucketgate/internal/config"
	"github.com/bucketgate/bucketgate/internal/madekey"
)

// Status says whether a Record's identity may be used.
type Status string

// The values of a Record's status attribute.
const (
	// StatusActive is a usable identity: the attribute "active", or no attribute.
	StatusActive Status = "active"
	// StatusRevoked is an identity that counts as unknown from the moment a cache
	// reads it: a revoked API key.
	StatusRevoked Status = "revoked"
)

// Record is one identity's item in the registry table, as DESIGN.md gives it.
type Record struct {
	// ID is the item's partition key, the identity it describes: "key:<digest>" for
	// an API key (32 hex digits of its SHA-256, bucketgate.KeyDigest), "tenant:<key>" for
	// a check function key, "account:<name>" for an account (its identity is
	// "acct:<name>": see ItemID).
	ID string
	// Plan names a plan of the configuration document. Required, but in a key of an
	// account, which is decided by its account's plan: one it holds is ignored.
	Plan string
	// Account names the account of an API key: the key is decided as the account
	// (identity "acct:<name>"), under the account's plan and rules, spending the
	// account's buckets, with its own Rules added for itself alone (see
	// config.Config.WithKeyRules). Empty for a key of no account; only an API key's
	// record has one.
	Account string
	// Status is StatusActive or StatusRevoked; empty is StatusActive.
	Status Status
	// ExpiresAt is when the identity starts to count as unknown, to the second; the
	// zero Time never.
	ExpiresAt time.Time
	// Rules are the identity's own rules (see config.Config.Override): one named like
	// a rule of its plan or of a route replaces it, another name adds a rule. Empty
	// for none.
	Rules []bucketgate.Rule
	// Owner and Note are for people; no decision reads them.
	Owner, Note string
	// Buckets, in an account's record, is the identity whose buckets the account's
	// keys spend when it is not the account's own ("acct:<name>"): "key:<digest>" of
	// the lone key that bucketgate keys roll made the account from, whose buckets it
	// keeps. In the record of a key of an account, it is the key whose own rules'
	// buckets (in the account's hash) the key spends when they are not its own:
	// "key:<digest>" of the key that bucketgate keys roll rolled it from (the first of
	// the line), so that a roll gives none of their tokens back and leaves no state
	// behind. Empty otherwise.
	Buckets string
}

// AccountItemPrefix starts the id of an account's item, "account:<name>"; the account's
// identity is bucketgate.AccountPrefix and the name.
const AccountItemPrefix = "account:"

// ItemID returns the id of the item that says who identity id is: "account:<name>" for
// an account ("acct:<name>"), the identity itself for any other.
func ItemID(id string) string {
	if name, ok := strings.CutPrefix(id, bucketgate.AccountPrefix); ok {
		return AccountItemPrefix + name
	}
	return id
}

// IdentityOf returns the identity that the item of id says who it is: ItemID's inverse.
func IdentityOf(id string) string {
	if name, ok := strings.CutPrefix(id, AccountItemPrefix); ok {
		return bucketgate.AccountPrefix + name
	}
	return id
}

// Active reports whether r's identity may be used at now: not revoked, not expired.
func (r Record) Active(now time.Time) bool {
	return r.Status != StatusRevoked && (r.ExpiresAt.IsZero() || now.Before(r.ExpiresAt))
}

// Plans finds a plan by name and applies an identity's overrides to it, or a key's own
// rules to its account's; *config.Config is one.
type Plans interface {
	Plan(name string) (*config.Plan, bool)
	Override(p *config.Plan, overrides []bucketgate.Rule) (*config.Plan, error)
	OverrideAlone(p *config.Plan, overrides []bucketgate.Rule) (*config.Plan, error)
	WithKeyRules(p *config.Plan, digest string, own []bucketgate.Rule) (*config.Plan, error)
}

// Resolve returns the plan r puts its identity on: r's plan with r's rules applied (a
// tenant's as no route applies to it: config.Config.OverrideAlone). An unknown plan or
// rules the configuration refuses is a *RecordError naming the attribute. Resolve
// ignores Status and ExpiresAt (see Active).
func (r Record) Resolve(plans Plans) (*config.Plan, error) {
	p, ok := plans.Plan(r.Plan)
	if !ok {
		return nil, &RecordError{ID: r.ID, Attribute: attrPlan, Err: fmt.Errorf("unknown plan %q: not in the configuration document", madekey.Mask(r.Plan))}
	}
	override := plans.Override
	if strings.HasPrefix(r.ID, bucketgate.TenantPrefix) { // the check function's: no route applies
		override = plans.OverrideAlone
	}
	q, err := override(p, r.Rules)
	if err != nil {
		return nil, &RecordError{ID: r.ID, Attribute: attrRules, Err: err}
	}
	return q, nil
}

// ResolveMember returns the plan that key, a record of an API key of account, is decided
// under: account's plan with account's rules (Resolve), and key's own rules added for key
// alone (config.Config.WithKeyRules). An account the configuration refuses is a
// *RecordError naming the account's attribute; own rules it refuses with the account's
// plan, one naming key's rules. Resolve ignores Status and ExpiresAt, and whether key
// names account.
func ResolveMember(key, account Record, plans Plans) (*config.Plan, error) {
	p, err := account.Resolve(plans)
	if err != nil {
		return nil, err
	}
	return withKeyRules(plans, p, key.ID, key.Buckets, key.Account, key.Rules)
}

// withKeyRules returns p, the plan of account, with the own rules of its key of
// identity id, whose buckets are those of the key buckets names (Record.Buckets; ""
// for id's own); their error is a *RecordError naming the key's rules.
func withKeyRules(plans Plans, p *config.Plan, id, buckets, account string, own []bucketgate.Rule) (*config.Plan, error) {
	q, err := plans.WithKeyRules(p, strings.TrimPrefix(cmp.Or(buckets, id), bucketgate.KeyPrefix), own)
	if err != nil {
		return nil, &RecordError{ID: id, Attribute: attrRules, Err: fmt.Errorf("with plan %s of account %s: %w", p.Name, account, err)}
	}
	return q, nil
}

// ErrInvalidRecord is wrapped by every *RecordError.
var ErrInvalidRecord = errors.New("invalid registry item")

// RecordError is an item whose data the registry cannot use: a missing or mistyped
// attribute, a value out of range, an unknown plan, invalid rules. Its identity counts as
// unknown. The ID is the item's id, which for an API key is its digest; its error shows
// it with every API key bucketgate made that it holds masked (madekey.Mask): a
// hand-written item's id may hold one.
type RecordError struct {
	// ID is the item's id.
	ID string
	// Attribute names the attribute at fault: "plan", "rules[1].capacity", ...
	Attribute string
	// Err is what is wrong with it.
	Err error
}

func (e *RecordError) Error() string {
	return fmt.Sprintf("%v %s: attribute %s: %v", ErrInvalidRecord, madekey.Mask(e.ID), e.Attribute, e.Err)
}

// Unwrap returns ErrInvalidRecord and Err.
func (e *RecordError) Unwrap() []error { return []error{ErrInvalidRecord, e.Err} }
