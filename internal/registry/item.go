package registry

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/bucketgate/bucketgate"
)

// Attribute names of an item, and of each map in its rules list.
const (
	attrID              = "id"
	attrPlan            = "plan"
	attrStatus          = "status"
	attrExpiresAt       = "expiresAt"
	attrRules           = "rules"
	attrOwner           = "owner"
	attrNote            = "note"
	attrRuleName        = "name"
	attrCapacity        = "capacity"
	attrRefillPerSecond = "refillPerSecond"
)

// KeyAttribute is the table's partition key: a string attribute holding the identity.
const KeyAttribute = attrID

// Attributes returns the name of every attribute an item may hold, KeyAttribute first.
func Attributes() []string {
	return []string{attrID, attrPlan, attrStatus, attrExpiresAt, attrRules, attrOwner, attrNote}
}

// MaxExpiresAt is the latest expiresAt an item may hold, in Unix seconds: the last
// second of the year 9999.
const MaxExpiresAt = 253402300799

// DecodeItem reads a table item strictly, as the configuration document is read: every
// attribute of the right type, numbers where numbers belong (capacity a whole number,
// expiresAt whole Unix seconds from 1 to MaxExpiresAt), status active or revoked, at
// most bucketgate.MaxRules rules of exactly name, capacity and refillPerSecond, and no
// attribute it does not know. Its error is a *RecordError naming the attribute. It does
// not check the plan or the rules against the configuration: see Record.Resolve.
func DecodeItem(item map[string]types.AttributeValue) (Record, error) {
	var r Record
	id, err := stringAttr(item, attrID, true)
	if err != nil {
		return r, &RecordError{ID: "(no id)", Attribute: attrID, Err: err}
	}
	r.ID = id
	fail := func(attr string, err error) (Record, error) {
		return Record{ID: id}, &RecordError{ID: id, Attribute: attr, Err: err}
	}
	known := Attributes()
	for name := range item {
		if !slices.Contains(known, name) {
			return fail(strconv.Quote(name), fmt.Errorf("unknown attribute (want %s or %s)",
				strings.Join(known[:len(known)-1], ", "), known[len(known)-1]))
		}
	}
	if r.Plan, err = stringAttr(item, attrPlan, true); err != nil {
		return fail(attrPlan, err)
	}
	status, err := stringAttr(item, attrStatus, false)
	switch r.Status = Status(status); {
	case err != nil:
		return fail(attrStatus, err)
	case item[attrStatus] != nil && r.Status != StatusActive && r.Status != StatusRevoked: // "" too: only absence means active
		return fail(attrStatus, fmt.Errorf("%q: want %q or %q", status, StatusActive, StatusRevoked))
	}
	if r.ExpiresAt, err = expiresAt(item[attrExpiresAt]); err != nil {
		return fail(attrExpiresAt, err)
	}
	if r.Rules, err = rules(item[attrRules]); err != nil {
		if re := (*RecordError)(nil); errors.As(err, &re) {
			return fail(re.Attribute, re.Err)
		}
		return fail(attrRules, err)
	}
	if r.Owner, err = stringAttr(item, attrOwner, false); err != nil {
		return fail(attrOwner, err)
	}
	if r.Note, err = stringAttr(item, attrNote, false); err != nil {
		return fail(attrNote, err)
	}
	return r, nil
}

// Item returns r as a table item, the form DecodeItem reads: empty attributes left out.
func (r Record) Item() map[string]types.AttributeValue {
	item := map[string]types.AttributeValue{
		attrID:   &types.AttributeValueMemberS{Value: r.ID},
		attrPlan: &types.AttributeValueMemberS{Value: r.Plan},
	}
	if r.Status != "" {
		item[attrStatus] = &types.AttributeValueMemberS{Value: string(r.Status)}
	}
	if !r.ExpiresAt.IsZero() {
		item[attrExpiresAt] = &types.AttributeValueMemberN{Value: strconv.FormatInt(r.ExpiresAt.Unix(), 10)}
	}
	if len(r.Rules) > 0 {
		item[attrRules] = RulesAttribute(r.Rules)
	}
	if r.Owner != "" {
		item[attrOwner] = &types.AttributeValueMemberS{Value: r.Owner}
	}
	if r.Note != "" {
		item[attrNote] = &types.AttributeValueMemberS{Value: r.Note}
	}
	return item
}

// RulesAttribute returns rules as the value of an item's rules attribute.
func RulesAttribute(rules []bucketgate.Rule) types.AttributeValue {
	list := make([]types.AttributeValue, len(rules))
	for i, rule := range rules {
		list[i] = &types.AttributeValueMemberM{Value: map[string]types.AttributeValue{
			attrRuleName:        &types.AttributeValueMemberS{Value: rule.Name},
			attrCapacity:        &types.AttributeValueMemberN{Value: strconv.FormatInt(rule.Capacity, 10)},
			attrRefillPerSecond: &types.AttributeValueMemberN{Value: strconv.FormatFloat(rule.RefillPerSecond, 'f', -1, 64)},
		}}
	}
	return &types.AttributeValueMemberL{Value: list}
}

// stringAttr returns the string attribute name of item; a missing one is "" or, when
// required, an error.
func stringAttr(item map[string]types.AttributeValue, name string, required bool) (string, error) {
	v, ok := item[name]
	if !ok {
		if required {
			return "", fmt.Errorf("missing: every item needs a %s", name)
		}
		return "", nil
	}
	s, ok := v.(*types.AttributeValueMemberS)
	switch {
	case !ok:
		return "", fmt.Errorf("got %s, want a string (S)", typeName(v))
	case required && s.Value == "":
		return "", fmt.Errorf("empty")
	}
	return s.Value, nil
}

// expiresAt reads an expiresAt value: whole Unix seconds; nil (absent) is never.
func expiresAt(v types.AttributeValue) (time.Time, error) {
	if v == nil {
		return time.Time{}, nil
	}
	n, ok := v.(*types.AttributeValueMemberN)
	if !ok {
		return time.Time{}, fmt.Errorf("got %s, want a number (N) of Unix seconds", typeName(v))
	}
	sec, err := strconv.ParseInt(n.Value, 10, 64)
	if err != nil || sec < 1 || sec > MaxExpiresAt {
		return time.Time{}, fmt.Errorf("%q: want whole Unix seconds from 1 to %d", truncate(n.Value), int64(MaxExpiresAt))
	}
	return time.Unix(sec, 0), nil
}

// rules reads a rules value: a list of at most bucketgate.MaxRules maps; nil (absent) is
// none. An error about one rule is a *RecordError naming it ("rules[1].capacity").
func rules(v types.AttributeValue) ([]bucketgate.Rule, error) {
	if v == nil {
		return nil, nil
	}
	l, ok := v.(*types.AttributeValueMemberL)
	switch {
	case !ok:
		return nil, fmt.Errorf("got %s, want a list (L) of maps", typeName(v))
	case len(l.Value) > bucketgate.MaxRules:
		return nil, fmt.Errorf("%d rules: want at most %d", len(l.Value), bucketgate.MaxRules)
	}
	out := make([]bucketgate.Rule, len(l.Value))
	for i, e := range l.Value {
		path := fmt.Sprintf("%s[%d]", attrRules, i)
		r, attr, err := rule(e)
		if err != nil {
			if attr != "" {
				path += "." + attr
			}
			return nil, &RecordError{Attribute: path, Err: err}
		}
		out[i] = r
	}
	return out, nil
}

// rule reads one element of a rules list; its error names the member at fault, or ""
// for the element itself.
func rule(v types.AttributeValue) (r bucketgate.Rule, attr string, err error) {
	m, ok := v.(*types.AttributeValueMemberM)
	if !ok {
		return r, "", fmt.Errorf("got %s, want a map (M) of %s, %s and %s", typeName(v), attrRuleName, attrCapacity, attrRefillPerSecond)
	}
	for name := range m.Value {
		if name != attrRuleName && name != attrCapacity && name != attrRefillPerSecond {
			return r, strconv.Quote(name), fmt.Errorf("unknown attribute (want %s, %s and %s)", attrRuleName, attrCapacity, attrRefillPerSecond)
		}
	}
	if r.Name, err = stringAttr(m.Value, attrRuleName, true); err != nil {
		return r, attrRuleName, err
	}
	capacity, err := number(m.Value[attrCapacity])
	if err == nil {
		r.Capacity, err = strconv.ParseInt(capacity, 10, 64)
		if err != nil {
			err = fmt.Errorf("%q: want a whole number of tokens", truncate(capacity))
		}
	}
	if err != nil {
		return r, attrCapacity, err
	}
	rate, err := number(m.Value[attrRefillPerSecond])
	if err == nil {
		r.RefillPerSecond, err = strconv.ParseFloat(rate, 64)
		if err != nil || math.IsNaN(r.RefillPerSecond) || math.IsInf(r.RefillPerSecond, 0) {
			err = fmt.Errorf("%q: want a finite number of tokens per second", truncate(rate))
		}
	}
	if err != nil {
		return r, attrRefillPerSecond, err
	}
	return r, "", nil
}

// number returns the text of a number attribute, required.
func number(v types.AttributeValue) (string, error) {
	n, ok := v.(*types.AttributeValueMemberN)
	switch {
	case v == nil:
		return "", fmt.Errorf("missing")
	case !ok:
		return "", fmt.Errorf("got %s, want a number (N)", typeName(v))
	}
	return n.Value, nil
}

// typeName names the DynamoDB type of v, as the API spells it.
func typeName(v types.AttributeValue) string {
	switch v.(type) {
	case *types.AttributeValueMemberS:
		return "a string (S)"
	case *types.AttributeValueMemberN:
		return "a number (N)"
	case *types.AttributeValueMemberB:
		return "binary (B)"
	case *types.AttributeValueMemberBOOL:
		return "a boolean (BOOL)"
	case *types.AttributeValueMemberNULL:
		return "null (NULL)"
	case *types.AttributeValueMemberL:
		return "a list (L)"
	case *types.AttributeValueMemberM:
		return "a map (M)"
	case *types.AttributeValueMemberSS, *types.AttributeValueMemberNS, *types.AttributeValueMemberBS:
		return "a set (SS, NS or BS)"
	}
	return fmt.Sprintf("%T", v)
}

// maxQuoted bounds how much of a bad value an error quotes.
const maxQuoted = 40

// truncate returns at most maxQuoted bytes of s, marked when cut.
func truncate(s string) string {
	if len(s) > maxQuoted {
		return s[:maxQuoted] + "..."
	}
	return s
}
