package registry

import (
	"errors"
	"fmt"
	"time"

	"github.com/bucketgate/bucketgate"
	"github.com/bucketgate/bucketgate/internal/config"
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
	// a check function key.
	ID string
	// Plan names a plan of the configuration document. Required.
	Plan string
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
}

// Active reports whether r's identity may be used at now: not revoked, not expired.
func (r Record) Active(now time.Time) bool {
	return r.Status != StatusRevoked && (r.ExpiresAt.IsZero() || now.Before(r.ExpiresAt))
}

// Plans finds a plan by name and applies an identity's overrides to it;
// *config.Config is one.
type Plans interface {
	Plan(name string) (*config.Plan, bool)
	Override(p *config.Plan, overrides []bucketgate.Rule) (*config.Plan, error)
}

// Resolve returns the plan r puts its identity on: r's plan with r's rules applied. An
// unknown plan or rules the configuration refuses is a *RecordError naming the attribute.
// Resolve ignores Status and ExpiresAt (see Active).
func (r Record) Resolve(plans Plans) (*config.Plan, error) {
	p, ok := plans.Plan(r.Plan)
	if !ok {
		return nil, &RecordError{ID: r.ID, Attribute: attrPlan, Err: fmt.Errorf("unknown plan %q: not in the configuration document", r.Plan)}
	}
	q, err := plans.Override(p, r.Rules)
	if err != nil {
		return nil, &RecordError{ID: r.ID, Attribute: attrRules, Err: err}
	}
	return q, nil
}

// ErrInvalidRecord is wrapped by every *RecordError.
var ErrInvalidRecord = errors.New("invalid registry item")

// RecordError is an item whose data the registry cannot use: a missing or mistyped
// attribute, a value out of range, an unknown plan, invalid rules. Its identity counts as
// unknown. The ID is the item's id, which for an API key is its digest.
type RecordError struct {
	// ID is the item's id.
	ID string
	// Attribute names the attribute at fault: "plan", "rules[1].capacity", ...
	Attribute string
	// Err is what is wrong with it.
	Err error
}

func (e *RecordError) Error() string {
	return fmt.Sprintf("%v %s: attribute %s: %v", ErrInvalidRecord, e.ID, e.Attribute, e.Err)
}

// Unwrap returns ErrInvalidRecord and Err.
func (e *RecordError) Unwrap() []error { return []error{ErrInvalidRecord, e.Err} }
