package registry

import (
	"errors"
	"fmt"
	"math"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/bucketgate/bucketgate"
	"github.com/bucketgate/bucketgate/internal/madekey"
	"github.com/bucketgate/bucketgate/internal/textcut"
)

// Attribute names of an item.
const (
	attrID      = "id"
	attrPlan    = "plan"
	attrRules   = "rules"
	attrAccount = "account"
	attrBuckets = "buckets"
)

// KeyAttribute is the table's partition key: a string attribute holding the identity.
const KeyAttribute = attrID

// item is a registry item as the table holds it (attributevalue's shape of a Record):
// every attribute it may have, in the order DecodeItem checks them. An attribute
// without omitempty is required; plan is, but in a key of an account (DecodeItem).
type item struct {
	ID        string `dynamodbav:"id"`
	Plan      string `dynamodbav:"plan,omitempty"`
	Account   string `dynamodbav:"account,omitempty"`
	Status    string `dynamodbav:"status,omitempty"`
	ExpiresAt int64  `dynamodbav:"expiresAt,omitempty"`
	Rules     []rule `dynamodbav:"rules,omitempty"`
	Owner     string `dynamodbav:"owner,omitempty"`
	Note      string `dynamodbav:"note,omitempty"`
	Buckets   string `dynamodbav:"buckets,omitempty"`
}

// rule is one map of an item's rules list: a bucketgate.Rule without shadow, a bucket
// (capacity and refillPerSecond), a quota (limit, period and perhaps anchor) or a
// concurrency rule (concurrency).
type rule struct {
	Name            string  `dynamodbav:"name"`
	Capacity        int64   `dynamodbav:"capacity,omitempty"`
	RefillPerSecond float64 `dynamodbav:"refillPerSecond,omitempty"`
	Limit           int64   `dynamodbav:"limit,omitempty"`
	Period          string  `dynamodbav:"period,omitempty"`
	Anchor          int64   `dynamodbav:"anchor,omitempty"`
	Concurrency     int64   `dynamodbav:"concurrency,omitempty"`
}

// Errors say what a value should have been: typeWants, by attribute, after its type's
// name, for a value of another type; numberWants, for a number out of range.
var (
	typeWants = map[string]string{
		"expiresAt": " of Unix seconds",
		"updatedAt": " of Unix seconds",
		attrRules:   " of maps",
		"rules[]":   " of name with capacity and refillPerSecond (a bucket), with limit, period and anchor (a quota), or with concurrency",
	}
	numberWants = map[string]string{
		"expiresAt":       fmt.Sprintf("whole Unix seconds from 1 to %d", int64(MaxExpiresAt)),
		"updatedAt":       fmt.Sprintf("whole Unix seconds from 1 to %d", int64(MaxExpiresAt)),
		"version":         fmt.Sprintf("a whole number from 1 to %d", int64(MaxVersion)),
		"capacity":        "a whole number of tokens",
		"limit":           "a whole number of tokens",
		"anchor":          fmt.Sprintf("a whole day of the month from 1 to %d", bucketgate.MaxAnchor),
		"refillPerSecond": "a finite number of tokens per second",
		"concurrency":     fmt.Sprintf("a whole number of requests in flight from 1 to %d", bucketgate.MaxConcurrency),
	}
)

// Attributes returns the name of every attribute an item may hold, KeyAttribute first.
func Attributes() []string { return fieldNames(reflect.TypeFor[item]()) }

// MaxExpiresAt is the latest expiresAt an item may hold, in Unix seconds: the last
// second of the year 9999.
const MaxExpiresAt = 253402300799

// DecodeItem reads a table item strictly, as the configuration document is read: every
// attribute of the right type (see item), numbers where numbers belong (capacity a
// whole number, expiresAt whole Unix seconds from 1 to MaxExpiresAt), status active or
// revoked, a plan name of at most bucketgate.MaxPlanName bytes, at most
// bucketgate.MaxRules rules, each exactly name (at most bucketgate.MaxRuleName bytes),
// capacity and refillPerSecond (a bucket), name, limit, period and perhaps anchor (a
// quota) or name and concurrency (a concurrency rule), and no attribute it does not
// know. An account's item ("account:<name>", a name
// bucketgate.ValidAccountName takes that holds no API key bucketgate made, as a key's
// account too) names no account, and only it may say whose buckets
// it spends (buckets: "key:<digest>"); only an API key's item ("key:...") may name an
// account, by a name of an account, and then needs no plan. attributevalue converts the
// values. Its error is a *RecordError naming the attribute. It does not check the plan
// or the rules against the configuration (see Record.Resolve), nor that a key's account
// exists.
func DecodeItem(av map[string]types.AttributeValue) (Record, error) {
	var it item
	if id, ok := av[attrID].(*types.AttributeValueMemberS); ok {
		it.ID = id.Value
	}
	fail := func(attr string, err error) (Record, error) {
		id := it.ID
		if _, ok := av[attrID].(*types.AttributeValueMemberS); !ok {
			id = "(no id)"
		}
		return Record{ID: it.ID}, &RecordError{ID: id, Attribute: attr, Err: err}
	}
	if attr, err := decodeMap("", av, reflect.ValueOf(&it).Elem()); err != nil {
		return fail(attr, err)
	}
	r := Record{ID: it.ID, Plan: it.Plan, Account: it.Account, Status: Status(it.Status), Owner: it.Owner, Note: it.Note, Buckets: it.Buckets}
	name, isAccount := strings.CutPrefix(it.ID, AccountItemPrefix)
	switch {
	case it.ID == "":
		return fail(attrID, fmt.Errorf("empty"))
	case isAccount && !bucketgate.ValidAccountName(name):
		return fail(attrID, fmt.Errorf("%q: %s", quoted(it.ID), wantAccountName))
	case isAccount && madekey.Holds(name):
		return fail(attrID, fmt.Errorf("%q: %s", quoted(it.ID), madeAccountName))
	case av[attrAccount] != nil && isAccount:
		return fail(attrAccount, fmt.Errorf("an account's item names no account: accounts do not nest"))
	case av[attrAccount] != nil && !strings.HasPrefix(it.ID, bucketgate.KeyPrefix):
		return fail(attrAccount, fmt.Errorf("only an API key's item (%s<digest>) names an account", bucketgate.KeyPrefix))
	case av[attrAccount] != nil && !bucketgate.ValidAccountName(it.Account):
		return fail(attrAccount, fmt.Errorf("%q: %s", quoted(it.Account), wantAccountName))
	case madekey.Holds(it.Account):
		return fail(attrAccount, fmt.Errorf("%q: %s", quoted(it.Account), madeAccountName))
	case av[attrPlan] == nil && it.Account == "":
		return fail(attrPlan, fmt.Errorf("missing: every item needs a plan, but a key of an account (it has its account's)"))
	case av[attrPlan] != nil && it.Plan == "":
		return fail(attrPlan, fmt.Errorf("empty"))
	case len(it.Plan) > bucketgate.MaxPlanName: // no document has such a plan: neither a cache entry nor a log line holds it
		return fail(attrPlan, fmt.Errorf("%q: want a plan of the configuration document: at most %d bytes", quoted(it.Plan), bucketgate.MaxPlanName))
	case av[attrBuckets] != nil && !isAccount && it.Account == "":
		return fail(attrBuckets, fmt.Errorf("only an account's item, or a key of an account's, says whose buckets it spends"))
	case av[attrBuckets] != nil && !validKeyID(it.Buckets):
		return fail(attrBuckets, fmt.Errorf("%q: want %s<the %d hex digits of a key's digest>: the key the account was made from, or whose own rules' buckets a key of an account spends", quoted(it.Buckets), bucketgate.KeyPrefix, bucketgate.DigestLen))
	case av["status"] != nil && r.Status != StatusActive && r.Status != StatusRevoked: // "" too: only absence means active
		return fail("status", fmt.Errorf("%q: want %q or %q", quoted(it.Status), StatusActive, StatusRevoked))
	case av["expiresAt"] != nil && (it.ExpiresAt < 1 || it.ExpiresAt > MaxExpiresAt):
		return fail("expiresAt", fmt.Errorf("%q: want %s", quoted(number(av["expiresAt"])), numberWants["expiresAt"]))
	case len(it.Rules) > bucketgate.MaxRules:
		return fail(attrRules, fmt.Errorf("%d rules: want at most %d", len(it.Rules), bucketgate.MaxRules))
	}
	if it.ExpiresAt != 0 {
		r.ExpiresAt = time.Unix(it.ExpiresAt, 0)
	}
	for i, x := range it.Rules {
		m := av[attrRules].(*types.AttributeValueMemberL).Value[i].(*types.AttributeValueMemberM).Value
		rule, attr, err := x.decode(m)
		if err != nil {
			return fail(fmt.Sprintf("%s[%d]%s", attrRules, i, attr), err)
		}
		r.Rules = append(r.Rules, rule)
	}
	return r, nil
}

// decode returns x, read from its map m, as a bucketgate.Rule: a quota when m has a
// period, else a bucket, each with exactly its own attributes, its name no longer than
// any rule's. Its error names the attribute at fault (".period"), or none for the map.
// Ranges and the name's characters are checked later, with the plan (Record.Resolve).
func (x rule) decode(m map[string]types.AttributeValue) (bucketgate.Rule, string, error) {
	has := func(name string) bool { _, ok := m[name]; return ok }
	if len(x.Name) > bucketgate.MaxRuleName { // neither a cache entry nor a log line holds it
		return bucketgate.Rule{}, ".name", fmt.Errorf("%q: want a rule's name: at most %d bytes", quoted(x.Name), bucketgate.MaxRuleName)
	}
	if has("concurrency") {
		switch {
		case len(m) != 2 || !has("name"):
			return bucketgate.Rule{}, "", errors.New("a concurrency rule has a name and a concurrency alone")
		case x.Concurrency < 1 || x.Concurrency > bucketgate.MaxConcurrency:
			return bucketgate.Rule{}, ".concurrency", fmt.Errorf("%d: want %s", x.Concurrency, numberWants["concurrency"])
		}
		return bucketgate.Rule{Name: x.Name, Concurrency: int32(x.Concurrency)}, "", nil
	}
	if !has("period") {
		switch {
		case has("limit") || has("anchor"):
			return bucketgate.Rule{}, "", errors.New("a limit or an anchor without a period: a quota needs period (day, week or month), a bucket has capacity and refillPerSecond")
		case !has("capacity"):
			return bucketgate.Rule{}, ".capacity", errors.New("missing: a bucket needs a capacity and a refillPerSecond (a quota, a limit and a period)")
		case !has("refillPerSecond"):
			return bucketgate.Rule{}, ".refillPerSecond", errors.New("missing: a bucket needs a capacity and a refillPerSecond")
		case math.IsNaN(x.RefillPerSecond) || math.IsInf(x.RefillPerSecond, 0):
			return bucketgate.Rule{}, ".refillPerSecond", fmt.Errorf("%q: want %s", quoted(number(m["refillPerSecond"])), numberWants["refillPerSecond"])
		}
		return bucketgate.Rule{Name: x.Name, Capacity: x.Capacity, RefillPerSecond: x.RefillPerSecond}, "", nil
	}
	period, ok := bucketgate.ParsePeriod(x.Period)
	switch {
	case !ok:
		return bucketgate.Rule{}, ".period", fmt.Errorf("%q: want day, week or month", quoted(x.Period))
	case has("capacity") || has("refillPerSecond"):
		return bucketgate.Rule{}, "", fmt.Errorf("a quota (period %s) has a limit, not a capacity or a refillPerSecond", period)
	case !has("limit"):
		return bucketgate.Rule{}, ".limit", errors.New("missing: a quota needs a limit")
	case has("anchor") && period != bucketgate.PeriodMonth:
		return bucketgate.Rule{}, ".anchor", fmt.Errorf("%d with period %s: only a monthly quota has an anchor", x.Anchor, period)
	case has("anchor") && (x.Anchor < 1 || x.Anchor > bucketgate.MaxAnchor):
		return bucketgate.Rule{}, ".anchor", fmt.Errorf("%d: want %s", x.Anchor, numberWants["anchor"])
	}
	return bucketgate.Rule{Name: x.Name, Limit: x.Limit, Period: period, Anchor: uint8(x.Anchor)}, "", nil
}

// decodeMap decodes the map av into the struct v, the value at path: no attribute v
// does not name, every attribute of the type its field is, each converted by
// attributevalue. Its error names the attribute (its path) at fault.
func decodeMap(path string, av map[string]types.AttributeValue, v reflect.Value) (string, error) {
	names := fieldNames(v.Type())
	for name := range av {
		if !slices.Contains(names, name) {
			return join(path, strconv.Quote(quoted(name))), fmt.Errorf("unknown attribute (want %s or %s)", strings.Join(names[:len(names)-1], ", "), names[len(names)-1])
		}
	}
	for i, name := range names {
		field, at := v.Field(i), join(path, name)
		value, ok := av[name]
		switch {
		case !ok && !strings.Contains(v.Type().Field(i).Tag.Get("dynamodbav"), ",omitempty"):
			if path == "" {
				return at, fmt.Errorf("missing: every item needs a %s", name)
			}
			return at, fmt.Errorf("missing")
		case !ok:
			continue
		}
		if attr, err := decodeValue(at, name, value, field); err != nil {
			return attr, err
		}
	}
	return "", nil
}

// decodeValue decodes value, the attribute called name at path, into v.
func decodeValue(path, name string, value types.AttributeValue, v reflect.Value) (string, error) {
	want := typeOf(v.Type())
	if got := typeName(value); got != want {
		return path, fmt.Errorf("got %s, want %s%s", got, want, typeWants[name])
	}
	switch v.Kind() {
	case reflect.Slice:
		list := value.(*types.AttributeValueMemberL).Value
		if len(list) > bucketgate.MaxRules {
			return path, fmt.Errorf("%d rules: want at most %d", len(list), bucketgate.MaxRules)
		}
		v.Set(reflect.MakeSlice(v.Type(), len(list), len(list)))
		for i, e := range list {
			if attr, err := decodeValue(fmt.Sprintf("%s[%d]", path, i), name+"[]", e, v.Index(i)); err != nil {
				return attr, err
			}
		}
		return "", nil
	case reflect.Struct:
		return decodeMap(path, value.(*types.AttributeValueMemberM).Value, v)
	}
	if err := attributevalue.Unmarshal(value, v.Addr().Interface()); err != nil {
		return path, fmt.Errorf("%q: want %s", quoted(number(value)), numberWants[name])
	}
	return "", nil
}

// wantAccountName says what an account's name is.
var wantAccountName = fmt.Sprintf("want an account's name: 1 to %d letters, digits, '.', '_' or '-'", bucketgate.MaxAccountName)

// madeAccountName says why an account's name that is or holds an API key bucketgate
// made (madekey.Holds), which bucketgate.ValidAccountName takes, is refused.
const madeAccountName = "is or holds an API key bucketgate made, which bucketgate accounts create refuses as a name: it would rest in Redis's keys, the log lines and the metrics as it is"

// validKeyID reports whether id is an API key's identity: "key:<digest>".
func validKeyID(id string) bool {
	digest, ok := strings.CutPrefix(id, bucketgate.KeyPrefix)
	return ok && bucketgate.ValidDigest(digest)
}

// Item returns r as a table item, the form DecodeItem reads: empty attributes left out.
func (r Record) Item() map[string]types.AttributeValue {
	it := item{ID: r.ID, Plan: r.Plan, Account: r.Account, Status: string(r.Status), Owner: r.Owner, Note: r.Note, Buckets: r.Buckets}
	if !r.ExpiresAt.IsZero() {
		it.ExpiresAt = r.ExpiresAt.Unix()
	}
	av, err := attributevalue.MarshalMap(it)
	if err != nil {
		panic("registry: an item of strings and numbers does not marshal: " + err.Error())
	}
	if len(r.Rules) == 0 {
		return av
	}
	rules := make([]types.AttributeValue, len(r.Rules))
	for i, x := range r.Rules {
		rules[i] = ruleItem(x)
	}
	av[attrRules] = &types.AttributeValueMemberL{Value: rules}
	return av
}

// ruleItem returns x as a map of an item's rules: a bucket's name, capacity and
// refillPerSecond, zeros included; a quota's name, limit, period and, when it has one,
// anchor; a concurrency rule's name and concurrency.
func ruleItem(x bucketgate.Rule) types.AttributeValue {
	number := func(v any) types.AttributeValue {
		n, err := attributevalue.Marshal(v)
		if err != nil {
			panic("registry: a number does not marshal: " + err.Error())
		}
		return n
	}
	m := map[string]types.AttributeValue{"name": &types.AttributeValueMemberS{Value: x.Name}}
	switch {
	case x.IsConcurrency():
		m["concurrency"] = number(int64(x.Concurrency))
	case !x.IsQuota():
		m["capacity"], m["refillPerSecond"] = number(x.Capacity), number(x.RefillPerSecond)
	case x.Anchor != 0:
		m["anchor"] = number(int64(x.Anchor))
		fallthrough
	default:
		m["limit"], m["period"] = number(x.Limit), &types.AttributeValueMemberS{Value: x.Period.String()}
	}
	return &types.AttributeValueMemberM{Value: m}
}

// fieldNames returns the attribute names of struct t's fields, in order.
func fieldNames(t reflect.Type) []string {
	names := make([]string, t.NumField())
	for i := range names {
		names[i], _, _ = strings.Cut(t.Field(i).Tag.Get("dynamodbav"), ",")
	}
	return names
}

// typeOf names the DynamoDB type that holds a Go value of type t, as typeName does.
func typeOf(t reflect.Type) string {
	switch t.Kind() {
	case reflect.String:
		return "a string (S)"
	case reflect.Int64, reflect.Float64:
		return "a number (N)"
	case reflect.Slice:
		return "a list (L)"
	}
	return "a map (M)"
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

// number returns the text of a number attribute.
func number(v types.AttributeValue) string {
	n, _ := v.(*types.AttributeValueMemberN)
	if n == nil {
		return ""
	}
	return n.Value
}

// join is the path of attribute name in the map at path.
func join(path, name string) string {
	if path == "" {
		return name
	}
	return path + "." + name
}

// maxQuoted bounds how much of a bad value an error quotes.
const maxQuoted = 40

// quoted returns at most maxQuoted bytes of s, marked when cut, with every API key
// bucketgate made that it holds masked (madekey.Mask, before the cut, which would leave
// part of one).
func quoted(s string) string {
	return textcut.Marked(madekey.Mask(s), maxQuoted)
}
