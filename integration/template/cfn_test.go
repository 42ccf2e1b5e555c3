package template_test

// CloudFormation's intrinsic functions, as much of them as it takes to deploy a template
// on paper: the parameter values (the defaults unless given), which Conditions hold,
// which Rules assertions refuse the values, which resources and outputs exist and what
// their properties resolve to. In Rules and Conditions a function the evaluator does
// not know fails the test, never a guess.

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"
)

// Pseudo parameters, as one deployment of the tests sees them.
const (
	testStack  = "bucketgate-test" // AWS::StackName, and STACK_NAME of the functions
	testRegion = "us-east-1"
)

var pseudo = map[string]any{
	"AWS::StackName": testStack, "AWS::Region": testRegion, "AWS::AccountId": "123456789012",
	"AWS::Partition": "aws", "AWS::URLSuffix": "amazonaws.com",
}

// plain returns the YAML node n as plain values (map[string]any, []any, scalars), every
// short-form intrinsic in its long form: !Ref X as {"Ref": "X"}, !GetAtt A.B as
// {"Fn::GetAtt": ["A", "B"]}, !Condition C as {"Condition": "C"}, !F v as {"Fn::F": v}.
func plain(t *testing.T, n *yaml.Node) any {
	t.Helper()
	switch n.Kind {
	case yaml.DocumentNode:
		return plain(t, n.Content[0])
	case yaml.AliasNode:
		return plain(t, n.Alias)
	}
	var v any
	switch n.Kind {
	case yaml.MappingNode:
		m := map[string]any{}
		for i := 0; i+1 < len(n.Content); i += 2 {
			m[n.Content[i].Value] = plain(t, n.Content[i+1])
		}
		v = m
	case yaml.SequenceNode:
		l := []any{}
		for _, c := range n.Content {
			l = append(l, plain(t, c))
		}
		v = l
	case yaml.ScalarNode:
		v = n.Value
		if !strings.HasPrefix(n.Tag, "!") || strings.HasPrefix(n.Tag, "!!") {
			if err := n.Decode(&v); err != nil {
				t.Fatalf("line %d: %v", n.Line, err)
			}
		}
	}
	if !strings.HasPrefix(n.Tag, "!") || strings.HasPrefix(n.Tag, "!!") {
		return v
	}
	switch name := n.Tag[1:]; name {
	case "Ref", "Condition":
		return map[string]any{name: v}
	case "GetAtt":
		if s, ok := v.(string); ok {
			resource, attr, _ := strings.Cut(s, ".")
			v = []any{resource, attr}
		}
		return map[string]any{"Fn::GetAtt": v}
	default:
		return map[string]any{"Fn::" + name: v}
	}
}

// readTemplate returns the template at path (from the repository root) in plain form.
func readTemplate(t *testing.T, path string) map[string]any {
	t.Helper()
	return parseTemplate(t, path, readFile(t, path))
}

// parseTemplate returns the CloudFormation template text, from name, in plain form.
func parseTemplate(t *testing.T, name, text string) map[string]any {
	t.Helper()
	var n yaml.Node
	if err := yaml.Unmarshal([]byte(text), &n); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	doc, ok := plain(t, &n).(map[string]any)
	if !ok {
		t.Fatalf("%s: a template that is not a mapping", name)
	}
	return doc
}

// section returns the mapping doc[name] (Parameters, Resources, ...), empty if absent.
func section(doc map[string]any, name string) map[string]any {
	m, _ := doc[name].(map[string]any)
	return m
}

// deployment is a template with parameter values: a list parameter's value is an []any
// of strings (CloudFormation splits "" into one empty string), any other a string.
type deployment struct {
	doc    map[string]any
	params map[string]any
}

// deploy returns doc with the parameters given in values (name, value, ...) and the
// defaults of the others; a name the template lacks fails t.
func deploy(t *testing.T, doc map[string]any, values ...string) deployment {
	t.Helper()
	given := map[string]string{}
	for i := 0; i+1 < len(values); i += 2 {
		given[values[i]] = values[i+1]
	}
	d := deployment{doc: doc, params: map[string]any{}}
	for name, p := range section(doc, "Parameters") {
		spec, _ := p.(map[string]any)
		v, ok := given[name]
		if !ok {
			v = fmt.Sprint(spec["Default"])
		}
		delete(given, name)
		if typ, _ := spec["Type"].(string); typ == "CommaDelimitedList" || strings.HasPrefix(typ, "List<") {
			var l []any
			for _, e := range strings.Split(v, ",") {
				l = append(l, e)
			}
			d.params[name] = l
			continue
		}
		d.params[name] = v
	}
	if len(given) > 0 {
		t.Fatalf("no parameters %v in the template", slices.Sorted(maps.Keys(given)))
	}
	return d
}

// value evaluates v as CloudFormation evaluates a Condition or a Rules assertion.
func (d deployment) value(v any) (any, error) {
	switch v := v.(type) {
	case string, bool:
		return v, nil
	case []any:
		out := make([]any, len(v))
		for i, e := range v {
			var err error
			if out[i], err = d.value(e); err != nil {
				return nil, err
			}
		}
		return out, nil
	case map[string]any:
		if len(v) != 1 {
			return nil, fmt.Errorf("%v: not a function", v)
		}
		for fn, arg := range v {
			return d.call(fn, arg)
		}
	}
	return nil, fmt.Errorf("%v (%T): not a value of a condition", v, v)
}

// call evaluates the function fn with its argument arg.
func (d deployment) call(fn string, arg any) (any, error) {
	if fn == "Ref" {
		name, _ := arg.(string)
		if v, ok := d.params[name]; ok {
			return v, nil
		}
		if v, ok := pseudo[name]; ok {
			return v, nil
		}
		return nil, fmt.Errorf("Ref %v: no such parameter", arg)
	}
	if fn == "Condition" {
		name, _ := arg.(string)
		return d.condition(name)
	}
	args, err := d.value(arg)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", fn, err)
	}
	list, _ := args.([]any)
	str := func(i int) (string, bool) {
		if i >= len(list) {
			return "", false
		}
		s, ok := list[i].(string)
		return s, ok
	}
	strs := func(i int) ([]any, bool) {
		if i >= len(list) {
			return nil, false
		}
		l, ok := list[i].([]any)
		return l, ok
	}
	switch fn {
	case "Fn::Equals":
		a, okA := str(0)
		b, okB := str(1)
		if len(list) != 2 || !okA || !okB {
			return nil, fmt.Errorf("Fn::Equals %v: want two strings", args)
		}
		return a == b, nil
	case "Fn::Not", "Fn::And", "Fn::Or":
		var bools []bool
		for _, e := range list {
			b, ok := e.(bool)
			if !ok {
				return nil, fmt.Errorf("%s %v: want conditions", fn, args)
			}
			bools = append(bools, b)
		}
		switch {
		case fn == "Fn::Not" && len(bools) == 1:
			return !bools[0], nil
		case fn == "Fn::And" && len(bools) >= 2:
			return !slices.Contains(bools, false), nil
		case fn == "Fn::Or" && len(bools) >= 2:
			return slices.Contains(bools, true), nil
		}
		return nil, fmt.Errorf("%s %v: wrong number of conditions", fn, args)
	case "Fn::Join":
		sep, ok := str(0)
		parts, okParts := strs(1)
		if !ok || !okParts {
			return nil, fmt.Errorf("Fn::Join %v: want a separator and a list", args)
		}
		var s []string
		for _, p := range parts {
			s = append(s, fmt.Sprint(p))
		}
		return strings.Join(s, sep), nil
	case "Fn::Contains", "Fn::EachMemberEquals":
		l, okL := strs(0)
		s, okS := str(1)
		if !okL || !okS {
			return nil, fmt.Errorf("%s %v: want a list and a string", fn, args)
		}
		if fn == "Fn::Contains" {
			return slices.Contains(l, any(s)), nil
		}
		return !slices.ContainsFunc(l, func(e any) bool { return e != s }), nil
	case "Fn::EachMemberIn":
		l, okL := strs(0)
		in, okIn := strs(1)
		if !okL || !okIn {
			return nil, fmt.Errorf("Fn::EachMemberIn %v: want two lists", args)
		}
		return !slices.ContainsFunc(l, func(e any) bool { return !slices.Contains(in, e) }), nil
	}
	return nil, fmt.Errorf("%s: the evaluator does not know it", fn)
}

// truth evaluates v as a condition.
func (d deployment) truth(v any) (bool, error) {
	r, err := d.value(v)
	if err != nil {
		return false, err
	}
	b, ok := r.(bool)
	if !ok {
		return false, fmt.Errorf("%v is %v, not a condition", v, r)
	}
	return b, nil
}

// condition evaluates the template's condition called name.
func (d deployment) condition(name string) (bool, error) {
	c, ok := section(d.doc, "Conditions")[name]
	if !ok {
		return false, fmt.Errorf("no condition %q", name)
	}
	return d.truth(c)
}

// holds reports whether the condition called name holds, failing t if it cannot be
// evaluated; "" (a resource without a Condition) holds.
func (d deployment) holds(t *testing.T, name string) bool {
	t.Helper()
	if name == "" {
		return true
	}
	b, err := d.condition(name)
	if err != nil {
		t.Fatalf("condition %s: %v", name, err)
	}
	return b
}

// assertion is one Rules assertion: the rule it is in, its place there and its description.
type assertion struct {
	rule        string
	index       int
	description string
}

func (a assertion) String() string { return fmt.Sprintf("%s[%d]", a.rule, a.index) }

// assertions returns every Rules assertion of the template, and for each whether the
// deployment fails it (its rule applies and the assertion is false).
func (d deployment) assertions(t *testing.T) map[assertion]bool {
	t.Helper()
	out := map[assertion]bool{}
	for name, r := range section(d.doc, "Rules") {
		rule, _ := r.(map[string]any)
		applies := true
		if c, ok := rule["RuleCondition"]; ok {
			var err error
			if applies, err = d.truth(c); err != nil {
				t.Fatalf("rule %s: RuleCondition: %v", name, err)
			}
		}
		list, _ := rule["Assertions"].([]any)
		if len(list) == 0 {
			t.Fatalf("rule %s has no Assertions", name)
		}
		for i, e := range list {
			a, _ := e.(map[string]any)
			desc, _ := a["AssertDescription"].(string)
			holds, err := d.truth(a["Assert"])
			if err != nil || desc == "" {
				t.Fatalf("rule %s, assertion %d: %v (description %q)", name, i, err, desc)
			}
			out[assertion{name, i, desc}] = applies && !holds
		}
	}
	return out
}

// refused returns the assertions the deployment fails, sorted.
func (d deployment) refused(t *testing.T) []string {
	t.Helper()
	var out []string
	for a, failed := range d.assertions(t) {
		if failed {
			out = append(out, a.String())
		}
	}
	slices.Sort(out)
	return out
}

// noValue is what AWS::NoValue resolves to: the property is left out.
type noValue struct{}

// resolve returns v with every Fn::If decided, every Ref of a parameter or a pseudo
// parameter replaced by its value, AWS::NoValue left out, and Fn::Split and Fn::Select
// of literal strings evaluated; other functions (Ref of a resource, Fn::GetAtt, Fn::Sub,
// Fn::Select of others...) stay as they are, arguments resolved.
func (d deployment) resolve(t *testing.T, v any) any {
	t.Helper()
	switch v := v.(type) {
	case []any:
		out := []any{}
		for _, e := range v {
			if r := d.resolve(t, e); r != (noValue{}) {
				out = append(out, r)
			}
		}
		return out
	case map[string]any:
		if ref, ok := v["Ref"].(string); ok && len(v) == 1 {
			if ref == "AWS::NoValue" {
				return noValue{}
			}
			if p, ok := d.params[ref]; ok {
				return p
			}
			if p, ok := pseudo[ref]; ok {
				return p
			}
			return v
		}
		if arg, ok := v["Fn::If"].([]any); ok && len(v) == 1 {
			name, _ := arg[0].(string)
			if len(arg) != 3 {
				t.Fatalf("Fn::If %v: want a condition and two values", arg)
			}
			if d.holds(t, name) {
				return d.resolve(t, arg[1])
			}
			return d.resolve(t, arg[2])
		}
		out := map[string]any{}
		for k, e := range v {
			if r := d.resolve(t, e); r != (noValue{}) {
				out[k] = r
			}
		}
		return literal(out)
	}
	return v
}

// literal returns the value of a Fn::Split or a Fn::Select whose arguments are literal
// strings (a parameter's value, resolved), as CloudFormation evaluates it; any other
// value as it is.
func literal(v map[string]any) any {
	if args, ok := v["Fn::Split"].([]any); ok && len(v) == 1 && len(args) == 2 {
		sep, okSep := args[0].(string)
		s, okS := args[1].(string)
		if okSep && okS {
			var out []any
			for _, part := range strings.Split(s, sep) {
				out = append(out, part)
			}
			return out
		}
	}
	if args, ok := v["Fn::Select"].([]any); ok && len(v) == 1 && len(args) == 2 {
		i, err := strconv.Atoi(fmt.Sprint(args[0]))
		list, isList := args[1].([]any)
		if err == nil && isList && i >= 0 && i < len(list) && !slices.ContainsFunc(list, func(e any) bool { _, s := e.(string); return !s }) {
			return list[i]
		}
	}
	return v
}

// resource is a resource a deployment creates: its type, resolved properties and the
// logical ids it depends on (DependsOn, a string or a list).
type resource struct {
	Type       string
	Properties map[string]any
	DependsOn  []string
}

// resources returns the resources the deployment creates (their Condition holds), by
// logical id.
func (d deployment) resources(t *testing.T) map[string]resource {
	t.Helper()
	return existing(d, t, "Resources", func(r map[string]any) resource {
		typ, _ := r["Type"].(string)
		props, _ := d.resolve(t, r["Properties"]).(map[string]any)
		var after []string
		switch v := r["DependsOn"].(type) {
		case string:
			after = []string{v}
		case []any:
			for _, id := range v {
				s, _ := id.(string)
				after = append(after, s)
			}
		}
		return resource{typ, props, after}
	})
}

// outputs returns the outputs the deployment has, resolved, by name.
func (d deployment) outputs(t *testing.T) map[string]map[string]any {
	t.Helper()
	return existing(d, t, "Outputs", func(o map[string]any) map[string]any {
		r, _ := d.resolve(t, o).(map[string]any)
		delete(r, "Condition")
		return r
	})
}

// existing returns f of each entry of the section whose Condition holds.
func existing[V any](d deployment, t *testing.T, name string, f func(map[string]any) V) map[string]V {
	t.Helper()
	out := map[string]V{}
	for id, e := range section(d.doc, name) {
		m, _ := e.(map[string]any)
		cond, _ := m["Condition"].(string)
		if d.holds(t, cond) {
			out[id] = f(m)
		}
	}
	return out
}
