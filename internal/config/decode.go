package config

import (
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"io"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"
)

// This file reads a document into a Document value by value, so that every error names
// the field at fault by its path ("plans.pro[1].refilPerSecond") and its line and
// column (an inline document is all on line 1), and nothing is coerced: names match
// exactly and are known, a name appears once, numbers are decimal (0100 is refused,
// not read as the octal 64), whole numbers are whole. Aliases are followed, and every
// value they repeat counts against MaxValues, so that no document can expand beyond it.

// position is where a value starts in the document, counted from 1.
type position struct{ line, column int }

func (p position) String() string { return fmt.Sprintf("line %d, column %d", p.line, p.column) }

func positionOf(n *yaml.Node) position { return position{n.Line, n.Column} }

// fieldError is an error about the value at path, at pos when it is known.
type fieldError struct {
	path string
	pos  position
	msg  string
	// shown names the value instead of path when path may hold a secret (see hideKey);
	// empty shows path.
	shown string
}

func (e *fieldError) Error() string {
	where := cmp.Or(e.shown, e.path)
	if where == "" {
		where = "document"
	}
	if e.pos.line > 0 {
		where += " (" + e.pos.String() + ")"
	}
	return where + ": " + e.msg
}

// errorAt returns a fieldError about the value at path, without a position: Parse adds
// the position of path when the document gave one.
func errorAt(path, format string, args ...any) error {
	return &fieldError{path: path, msg: fmt.Sprintf(format, args...)}
}

// decoder reads one document. Its budget is the number of values it may still visit.
type decoder struct {
	budget    int
	positions map[string]position // of every value decoded, by path
	rounded   []rounded           // of the rule being read: readRounded's
	legacy    []*fieldError       // the numbers readRounded read as left out, as an earlier bucketgate did: Legacy
}

// rounded is a number written other than 0 that rounds to 0 (1e-400), decoded as 0
// until its rule is read (readRounded).
type rounded struct {
	path string
	n    *yaml.Node
}

// decodeDocument parses doc, one YAML or JSON document, into a Document. The decoder
// returned holds the positions of its values and the legacy notes of its numbers.
func decodeDocument(doc []byte) (Document, *decoder, error) {
	var root yaml.Node
	dec := yaml.NewDecoder(bytes.NewReader(doc))
	if err := dec.Decode(&root); err != nil {
		if errors.Is(err, io.EOF) {
			return Document{}, nil, errors.New("document is empty")
		}
		return Document{}, nil, SyntaxError(err, doc)
	}
	var extra yaml.Node
	if err := dec.Decode(&extra); !errors.Is(err, io.EOF) {
		return Document{}, nil, errors.New("more than one document (a line ---, or data after the end)")
	}
	n := &root
	if n.Kind == yaml.DocumentNode && len(n.Content) == 1 {
		n = n.Content[0]
	}
	if isNull(n) {
		return Document{}, nil, errors.New("document is empty")
	}
	d := &decoder{budget: MaxValues, positions: map[string]position{}}
	var out Document
	if err := d.decode("", n, reflect.ValueOf(&out).Elem()); err != nil {
		return Document{}, nil, err
	}
	return out, d, nil
}

// yamlError is the text of a yaml.v3 syntax error: the line, when it names one, and the
// problem.
var yamlError = regexp.MustCompile(`^yaml: (?:line ([0-9]+): )?(.+)$`)

// parserProblems are the problems yaml.v3's parser reports (its scanner reports others).
var parserProblems = []string{
	"did not find expected ',' or ']'", "did not find expected ',' or '}'",
	"did not find expected '-' indicator", "did not find expected <document start>",
	"did not find expected <stream-start>", "did not find expected key",
	"did not find expected node content", "found duplicate %TAG directive",
	"found duplicate %YAML directive", "found incompatible YAML document",
	"found undefined tag handle",
}

// SyntaxError returns err, an error of yaml.v3 reading doc, a YAML or JSON document (a
// configuration document, a SAM template), with the line of a parser's problem counted
// from 1, as its scanner's are and as an editor counts: yaml.v3 (v3.0.1, parser.fail)
// names the parser's line counted from 0, and none on line 1, so that a comma missing on
// line 3 was reported on line 2. The line is the one the parser stopped on, or where the
// mapping or list it was reading starts; the last, when it stopped at the end of doc
// (which yaml.v3 places on a line after it). Any other error is returned as it is.
func SyntaxError(err error, doc []byte) error {
	m := yamlError.FindStringSubmatch(err.Error())
	if m == nil || !slices.Contains(parserProblems, m[2]) {
		return err
	}
	line, _ := strconv.Atoi(m[1]) // m[1] is "" when yaml.v3 named no line: 0, the first
	last := bytes.Count(bytes.TrimSuffix(doc, []byte("\n")), []byte("\n")) + 1
	return fmt.Errorf("yaml: line %d: %s", min(line+1, last), m[2])
}

// decode decodes n into v, the value at path.
func (d *decoder) decode(path string, n *yaml.Node, v reflect.Value) error {
	for n.Kind == yaml.AliasNode {
		if d.budget--; d.budget < 0 {
			return d.tooLarge(path, n)
		}
		n = n.Alias
	}
	if d.budget--; d.budget < 0 {
		return d.tooLarge(path, n)
	}
	d.positions[path] = positionOf(n)
	if isNull(n) { // null or ~: as if absent
		return nil
	}
	switch p := v.Addr().Interface().(type) {
	case *Count:
		return d.count(path, n, p)
	case *PlanSpec:
		if n.Kind == yaml.SequenceNode { // a plan written as its list of rules
			return d.decode(path, n, reflect.ValueOf(&p.Rules).Elem())
		}
		if err := d.structure(path, n, v); err != nil {
			return err
		}
		d.ruleAliases(path, n)
		return nil
	case *RuleSpec:
		from := len(d.rounded)
		if err := d.structure(path, n, v); err != nil {
			return err
		}
		return d.readRounded(path, p, from)
	}
	switch v.Kind() {
	case reflect.Struct:
		return d.structure(path, n, v)
	case reflect.Map:
		return d.mapping(path, n, v)
	case reflect.Slice:
		return d.sequence(path, n, v)
	case reflect.Pointer:
		v.Set(reflect.New(v.Type().Elem()))
		return d.decode(path, n, v.Elem())
	case reflect.String:
		if n.Kind != yaml.ScalarNode {
			return d.errorf(path, n, "got %s, want a string", kindOf(n))
		}
		v.SetString(n.Value)
		return nil
	case reflect.Float64:
		f, err := d.number(path, n)
		v.SetFloat(f)
		return err
	case reflect.Bool:
		if n.Kind != yaml.ScalarNode || n.ShortTag() != "!!bool" {
			return d.errorf(path, n, "%s: want true or false", describe(n))
		}
		switch n.Value { // the words YAML 1.2 reads as booleans; a !!bool tag makes no other one
		case "true", "True", "TRUE":
			v.SetBool(true)
		case "false", "False", "FALSE":
		default: // on, yes, y, 1... under the tag, which an earlier bucketgate read as false
			return d.errorf(path, n, "%s: write true or false (an earlier bucketgate read it as false: enforced)", describe(n))
		}
		return nil
	}
	panic("config: the document has a field of type " + v.Type().String() + ", which decode does not read")
}

// ruleAliases gives the rules of the plan at path, written as a mapping (n), and their
// fields the positions of those of a plan written as a list: compile names a plan's
// rule plans.NAME[i], and a field of it plans.NAME[i].FIELD (a 0 Legacy notes), in
// either form.
func (d *decoder) ruleAliases(path string, n *yaml.Node) {
	for i := 0; i+1 < len(n.Content); i += 2 {
		if rules := n.Content[i+1]; n.Content[i].Value == "rules" && rules.Kind == yaml.SequenceNode {
			for j, rule := range rules.Content {
				alias, written := fmt.Sprintf("%s[%d]", path, j), fmt.Sprintf("%s.rules[%d]", path, j)
				d.positions[alias] = positionOf(rule)
				for rule.Kind == yaml.AliasNode {
					rule = rule.Alias
				}
				for k := 0; k+1 < len(rule.Content); k += 2 {
					field := rule.Content[k].Value
					d.positions[join(alias, field)] = d.positions[join(written, field)]
				}
			}
		}
	}
}

// tooLarge is the error of a document that expands to more than MaxValues values.
func (d *decoder) tooLarge(path string, n *yaml.Node) error {
	return d.errorf(path, n, "the document has more than %d values (an alias counts its values each time it is used): want at most %d", MaxValues, MaxValues)
}

// structure decodes the mapping n into the struct v, field by yaml tag name.
func (d *decoder) structure(path string, n *yaml.Node, v reflect.Value) error {
	if n.Kind != yaml.MappingNode {
		return d.errorf(path, n, "got %s, want a mapping of %s", kindOf(n), strings.Join(fieldNames(v.Type()), ", "))
	}
	return d.entries(path, n, func(key string, keyNode, value *yaml.Node) error {
		i := fieldIndex(v.Type(), key)
		if i < 0 {
			return d.errorf(join(path, key), keyNode, "unknown field%s", suggest(key, fieldNames(v.Type())))
		}
		return d.decode(join(path, key), value, v.Field(i))
	})
}

// mapping decodes the mapping n into the map v, keyed by strings.
func (d *decoder) mapping(path string, n *yaml.Node, v reflect.Value) error {
	if n.Kind != yaml.MappingNode {
		return d.errorf(path, n, "got %s, want a mapping", kindOf(n))
	}
	if v.IsNil() {
		v.Set(reflect.MakeMapWithSize(v.Type(), len(n.Content)/2))
	}
	return d.entries(path, n, func(key string, _, value *yaml.Node) error {
		elem := reflect.New(v.Type().Elem()).Elem()
		if err := d.decode(join(path, key), value, elem); err != nil {
			return err
		}
		v.SetMapIndex(reflect.ValueOf(key), elem)
		return nil
	})
}

// entries calls each for every key and value of the mapping n, refusing a key that is
// not a scalar, a key given twice and a merge key.
func (d *decoder) entries(path string, n *yaml.Node, each func(key string, keyNode, value *yaml.Node) error) error {
	seen := make(map[string]*yaml.Node, len(n.Content)/2)
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, value := n.Content[i], n.Content[i+1]
		for k.Kind == yaml.AliasNode {
			k = k.Alias
		}
		switch {
		case k.Kind != yaml.ScalarNode:
			return d.errorf(path, k, "a key is %s: want a name", kindOf(k))
		case k.ShortTag() == "!!merge":
			return d.errorf(path, k, "merge keys (<<) are not supported: write the fields out, or make the whole value an alias")
		case seen[k.Value] != nil:
			return d.errorf(join(path, k.Value), k, "given twice (first at %s)", positionOf(seen[k.Value]))
		}
		seen[k.Value] = k
		if err := each(k.Value, k, value); err != nil {
			return err
		}
	}
	return nil
}

// sequence decodes the sequence n into the slice v.
func (d *decoder) sequence(path string, n *yaml.Node, v reflect.Value) error {
	if n.Kind != yaml.SequenceNode {
		return d.errorf(path, n, "got %s, want a list", kindOf(n))
	}
	s := reflect.MakeSlice(v.Type(), len(n.Content), len(n.Content))
	for i, item := range n.Content {
		if err := d.decode(fmt.Sprintf("%s[%d]", path, i), item, s.Index(i)); err != nil {
			return err
		}
	}
	v.Set(s)
	return nil
}

// Decimal numbers, the only ones a document may hold: no leading zeros (YAML reads
// 0100 as the octal 64), no 0x, 0o or 0b, no '_', no .inf or .nan.
var (
	decimalInt   = regexp.MustCompile(`^-?(0|[1-9][0-9]*)$`)
	decimalFloat = regexp.MustCompile(`^-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][-+]?[0-9]+)?$`)
)

// count decodes a whole number.
func (d *decoder) count(path string, n *yaml.Node, c *Count) error {
	if n.Kind != yaml.ScalarNode || n.ShortTag() != "!!int" && n.ShortTag() != "!!float" {
		return d.errorf(path, n, "%s: want a whole number", describe(n))
	}
	v, err := ParseCount(n.Value)
	if err != nil {
		return d.errorf(path, n, "%v", err)
	}
	*c = Count(v)
	return nil
}

// ParseCount reads a whole number written as a document writes one: decimal, without a
// leading zero, a sign but '-', an exponent or '_' (not 1.5, 1e3, 0100, +5, 0x64 or
// 1_000). The error quotes s. The CLI's --rule reads its whole numbers with it.
func ParseCount(s string) (int64, error) {
	if !decimalInt.MatchString(s) {
		return 0, fmt.Errorf("%q: want a whole decimal number such as 100 (not 1.5, 1e3, 0100, 0x64 or 1_000)", s)
	}
	v, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("%q: want a whole number: %v", s, errors.Unwrap(err))
	}
	return v, nil
}

// number decodes a decimal number; one that is not 0 but rounds to 0 (1e-400) is
// decoded as 0 and kept in d.rounded, for readRounded to read or refuse (every number
// of a Document is a rule's: refillPerSecond, refill).
func (d *decoder) number(path string, n *yaml.Node) (float64, error) {
	if n.Kind != yaml.ScalarNode || n.ShortTag() != "!!int" && n.ShortTag() != "!!float" {
		return 0, d.errorf(path, n, "%s: want a number", describe(n))
	}
	f, err := ParseNumber(n.Value)
	if err != nil {
		return 0, d.errorf(path, n, "%v", err)
	}
	if RoundsToZero(n.Value, f) {
		d.rounded = append(d.rounded, rounded{path, n})
	}
	return f, nil
}

// readRounded reads the numbers of the rule s at path that round to 0 (d.rounded[from:])
// as 0.2 read them, as 0: left out, so that a document it loaded loads still, each
// noted in d.legacy, when the rule is valid without them (and without a 0 that Legacy
// notes: compile's withoutZeros). Otherwise, or left alone, such a number is the error
// it was (a rate refused as too close to 0, not as missing or never refilling).
func (d *decoder) readRounded(path string, s *RuleSpec, from int) error {
	numbers := d.rounded[from:]
	if len(numbers) == 0 {
		return nil
	}
	d.rounded = d.rounded[:from]
	earlier := *s
	for _, r := range numbers {
		if r.path == join(path, "refillPerSecond") {
			earlier.RefillPerSecond = nil // refill is 0 already
		}
	}
	without, _ := earlier.withoutZeros()
	if _, err := without.Rule(); err != nil {
		return d.roundsToZero(numbers[0])
	}
	*s = earlier
	for _, r := range numbers {
		d.legacy = append(d.legacy, &fieldError{path: r.path, pos: positionOf(r.n),
			msg: fmt.Sprintf("%q, which rounds to 0, beside the rule's other numbers: an earlier bucketgate read it as left out, as the functions still do in a document stored then; bucketgate config put refuses it: take the field out", r.n.Value)})
	}
	return nil
}

// roundsToZero is the error of the number r, which rounds to 0.
func (d *decoder) roundsToZero(r rounded) error {
	return d.errorf(r.path, r.n, "%q: too close to 0, which it would round to", r.n.Value)
}

// ParseNumber reads a number written as a document writes one: decimal, perhaps with
// a fraction and an exponent, without a leading zero, a sign but '-' or '_' (not 010,
// 0x10, 0x1p4, .5, +5, 1_000, .inf or .nan), and finite. The error quotes s. One that is
// not 0 but rounds to 0 is RoundsToZero's to tell. The CLI's --rule reads its rates
// with it.
func ParseNumber(s string) (float64, error) {
	if !decimalFloat.MatchString(s) {
		return 0, fmt.Errorf("%q: want a decimal number such as 50, 0.5 or 1e-3 (not 010, 0x10, 1_000, .inf or .nan)", s)
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return 0, fmt.Errorf("%q: want a number: %v", s, errors.Unwrap(err))
	}
	return f, nil
}

// RoundsToZero reports whether f, parsed from the decimal number text, is 0 though
// text is not (1e-400): a rate so written is refused as too close to 0, not read as 0,
// missing or never refilling, here, in the check function and on the CLI alike; only a
// document's rule valid without it, as 0.2 read it, loads so (Config.Legacy).
func RoundsToZero(text string, f float64) bool {
	mantissa, _, _ := strings.Cut(strings.ToLower(text), "e")
	return f == 0 && strings.ContainsAny(mantissa, "123456789")
}

func (d *decoder) errorf(path string, n *yaml.Node, format string, args ...any) error {
	return &fieldError{path: path, pos: positionOf(n), msg: fmt.Sprintf(format, args...)}
}

func isNull(n *yaml.Node) bool {
	return n.Kind == 0 || n.Kind == yaml.ScalarNode && n.ShortTag() == "!!null"
}

// kindOf names the kind of n for an error.
func kindOf(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	}
	return describe(n)
}

// describe names a scalar and its type for an error.
func describe(n *yaml.Node) string {
	switch {
	case n.Kind != yaml.ScalarNode:
		return kindOf(n)
	case n.ShortTag() == "!!str":
		return fmt.Sprintf("the string %q", n.Value)
	}
	return fmt.Sprintf("%q", n.Value)
}

// join returns the path of the field name inside path.
func join(path, name string) string {
	if path == "" {
		return name
	}
	return path + "." + name
}

// fieldNames returns the yaml names of t's fields, in order.
func fieldNames(t reflect.Type) []string {
	names := make([]string, 0, t.NumField())
	for i := range t.NumField() {
		names = append(names, yamlName(t.Field(i)))
	}
	return names
}

// fieldIndex returns the index of t's field named name in the document, or -1.
func fieldIndex(t reflect.Type, name string) int {
	for i := range t.NumField() {
		if yamlName(t.Field(i)) == name {
			return i
		}
	}
	return -1
}

func yamlName(f reflect.StructField) string {
	name, _, _ := strings.Cut(f.Tag.Get("yaml"), ",")
	return name
}

// suggest returns "; did you mean X?" for the known name closest to name, when one is
// close (a letter or two apart, or the same in another case), else the list of known
// names.
func suggest(name string, known []string) string {
	best, bestDist := "", 3
	for _, k := range known {
		if strings.EqualFold(k, name) {
			return fmt.Sprintf("; did you mean %s?", k)
		}
		if dist := editDistance(strings.ToLower(name), strings.ToLower(k)); dist < bestDist {
			best, bestDist = k, dist
		}
	}
	if best != "" {
		return fmt.Sprintf("; did you mean %s?", best)
	}
	return fmt.Sprintf(" (want %s)", strings.Join(slices.Sorted(slices.Values(known)), ", "))
}

// editDistance is the Levenshtein distance between a and b, in bytes.
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
