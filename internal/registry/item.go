package registry

import (
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
)

// Attribute names of an item.
const (
	attrID    = "id"
	attrPlan  = "plan"
	attrRules = "rules"
)

// KeyAttribute is the table's partition key: a string attribute holding the identity.
const KeyAttribute = attrID

// item is a registry item as the table holds it (attributevalue's shape of a Record):
// every attribute it may have, in the order DecodeItem checks them. An attribute
// without omitempty is required.
type item struct {
	ID        string `dynamodbav:"id"`
	Plan      string `dynamodbav:"plan"`
	Status    string `dynamodbav:"status,omitempty"`
	ExpiresAt int64  `dynamodbav:"expiresAt,omitempty"`
	Rules     []rule `dynamodbav:"rules,omitempty"`
	Owner     string `dynamodbav:"owner,omitempty"`
	Note      string `dynamodbav:"note,omitempty"`
}

// rule is one map of an item's rules list: a bucketgate.Rule without shadow.
type rule struct {
	Name            string  `dynamodbav:"name"`
	Capacity        int64   `dynamodbav:"capacity"`
	RefillPerSecond float64 `dynamodbav:"refillPerSecond"`
}

// Errors say what a value should have been: typeWants, by attribute, after its type's
// name, for a value of another type; numberWants, for a number out of range.
var (
	typeWants = map[string]string{
		"expiresAt": " of Unix seconds",
		"updatedAt": " of Unix seconds",
		attrRules:   " of maps",
		"rules[]":   " of name, capacity and refillPerSecond",
	}
	numberWants = map[string]string{
		"expiresAt":       fmt.Sprintf("whole Unix seconds from 1 to %d", int64(MaxExpiresAt)),
		"updatedAt":       fmt.Sprintf("whole Unix seconds from 1 to %d", int64(MaxExpiresAt)),
		"version":         fmt.Sprintf("a whole number from 1 to %d", int64(MaxVersion)),
		"capacity":        "a whole number of tokens",
		"refillPerSecond": "a finite number of tokens per second",
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
// revoked, at most bucketgate.MaxRules rules of exactly name, capacity and
// refillPerSecond, and no attribute it does not know. attributevalue converts the
// values. Its error is a *RecordError naming the attribute. It does not check the plan
// or the rules against the configuration: see Record.Resolve.
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
	r := Record{ID: it.ID, Plan: it.Plan, Status: Status(it.Status), Owner: it.Owner, Note: it.Note}
	switch {
	case it.ID == "":
		return fail(attrID, fmt.Errorf("empty"))
	case it.Plan == "":
		return fail(attrPlan, fmt.Errorf("empty"))
	case av["status"] != nil && r.Status != StatusActive && r.Status != StatusRevoked: // "" too: only absence means active
		return fail("status", fmt.Errorf("%q: want %q or %q", it.Status, StatusActive, StatusRevoked))
	case av["expiresAt"] != nil && (it.ExpiresAt < 1 || it.ExpiresAt > MaxExpiresAt):
		return fail("expiresAt", fmt.Errorf("%q: want %s", truncate(number(av["expiresAt"])), numberWants["expiresAt"]))
	case len(it.Rules) > bucketgate.MaxRules:
		return fail(attrRules, fmt.Errorf("%d rules: want at most %d", len(it.Rules), bucketgate.MaxRules))
	}
	if it.ExpiresAt != 0 {
		r.ExpiresAt = time.Unix(it.ExpiresAt, 0)
	}
	for i, x := range it.Rules {
		if math.IsNaN(x.RefillPerSecond) || math.IsInf(x.RefillPerSecond, 0) {
			path := fmt.Sprintf("%s[%d].refillPerSecond", attrRules, i)
			m := av[attrRules].(*types.AttributeValueMemberL).Value[i].(*types.AttributeValueMemberM).Value
			return fail(path, fmt.Errorf("%q: want %s", truncate(number(m["refillPerSecond"])), numberWants["refillPerSecond"]))
		}
		r.Rules = append(r.Rules, bucketgate.Rule{Name: x.Name, Capacity: x.Capacity, RefillPerSecond: x.RefillPerSecond})
	}
	return r, nil
}

// decodeMap decodes the map av into the struct v, the value at path: no attribute v
// does not name, every attribute of the type its field is, each converted by
// attributevalue. Its error names the attribute (its path) at fault.
func decodeMap(path string, av map[string]types.AttributeValue, v reflect.Value) (string, error) {
	names := fieldNames(v.Type())
	for name := range av {
		if !slices.Contains(names, name) {
			return join(path, strconv.Quote(name)), fmt.Errorf("unknown attribute (want %s or %s)", strings.Join(names[:len(names)-1], ", "), names[len(names)-1])
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
		return path, fmt.Errorf("%q: want %s", truncate(number(value)), numberWants[name])
	}
	return "", nil
}

// Item returns r as a table item, the form DecodeItem reads: empty attributes left out.
func (r Record) Item() map[string]types.AttributeValue {
	it := item{ID: r.ID, Plan: r.Plan, Status: string(r.Status), Owner: r.Owner, Note: r.Note}
	if !r.ExpiresAt.IsZero() {
		it.ExpiresAt = r.ExpiresAt.Unix()
	}
	for _, x := range r.Rules {
		it.Rules = append(it.Rules, rule{Name: x.Name, Capacity: x.Capacity, RefillPerSecond: x.RefillPerSecond})
	}
	av, err := attributevalue.MarshalMap(it)
	if err != nil {
		panic("registry: an item of strings and numbers does not marshal: " + err.Error())
	}
	return av
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

// truncate returns at most maxQuoted bytes of s, marked when cut.
func truncate(s string) string {
	if len(s) > maxQuoted {
		return s[:maxQuoted] + "..."
	}
	return s
}
