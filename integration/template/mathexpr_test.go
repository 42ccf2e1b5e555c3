package template_test

// CloudWatch metric math, as much of it as the alarms use: numbers, metric and
// expression ids, + - * /, comparisons (1 or 0), unary minus, parentheses, FILL(x, v)
// and IF(condition, a, b), evaluated one datapoint at a time. A datapoint a metric lacks
// is missing, and so is any arithmetic on it, until FILL replaces it.

import (
	"fmt"
	"strconv"
	"strings"
	"testing"
	"unicode"
)

// mathValue is one datapoint: ok false when it is missing.
type mathValue struct {
	v  float64
	ok bool
}

// mathExpr is a parsed expression, evaluated with the datapoints of its ids.
type mathExpr func(ids func(id string) (mathValue, error)) (mathValue, error)

// parseMath parses a metric math expression.
func parseMath(src string) (mathExpr, error) {
	p := &mathParser{src: src}
	p.next()
	e, err := p.compare()
	if err == nil && p.tok != "" {
		err = fmt.Errorf("%q: unexpected %q at %d", src, p.tok, p.pos)
	}
	return e, err
}

type mathParser struct {
	src string
	pos int
	tok string
}

// next reads the next token: a number, a name, a two-byte comparison or one byte.
func (p *mathParser) next() {
	for p.pos < len(p.src) && p.src[p.pos] == ' ' {
		p.pos++
	}
	start := p.pos
	switch {
	case p.pos == len(p.src):
	case unicode.IsLetter(rune(p.src[p.pos])) || unicode.IsDigit(rune(p.src[p.pos])) || p.src[p.pos] == '.':
		for p.pos < len(p.src) && (unicode.IsLetter(rune(p.src[p.pos])) || unicode.IsDigit(rune(p.src[p.pos])) || strings.ContainsRune("._", rune(p.src[p.pos]))) {
			p.pos++
		}
	case strings.HasPrefix(p.src[p.pos:], ">=") || strings.HasPrefix(p.src[p.pos:], "<="):
		p.pos += 2
	default:
		p.pos++
	}
	p.tok = p.src[start:p.pos]
}

func (p *mathParser) compare() (mathExpr, error) {
	left, err := p.sum()
	if err != nil || !strings.Contains(" > < >= <= ", " "+p.tok+" ") {
		return left, err
	}
	op := p.tok
	p.next()
	right, err := p.sum()
	return binary(left, right, func(a, b float64) (float64, error) {
		holds := map[string]bool{">": a > b, "<": a < b, ">=": a >= b, "<=": a <= b}[op]
		if holds {
			return 1, nil
		}
		return 0, nil
	}), err
}

func (p *mathParser) sum() (mathExpr, error) {
	left, err := p.product()
	for err == nil && (p.tok == "+" || p.tok == "-") {
		op := p.tok
		p.next()
		var right mathExpr
		right, err = p.product()
		left = binary(left, right, func(a, b float64) (float64, error) {
			if op == "+" {
				return a + b, nil
			}
			return a - b, nil
		})
	}
	return left, err
}

func (p *mathParser) product() (mathExpr, error) {
	left, err := p.unary()
	for err == nil && (p.tok == "*" || p.tok == "/") {
		op := p.tok
		p.next()
		var right mathExpr
		right, err = p.unary()
		left = binary(left, right, func(a, b float64) (float64, error) {
			if op == "*" {
				return a * b, nil
			}
			if b == 0 {
				return 0, fmt.Errorf("division by zero")
			}
			return a / b, nil
		})
	}
	return left, err
}

func (p *mathParser) unary() (mathExpr, error) {
	if p.tok == "-" {
		p.next()
		e, err := p.unary()
		return binary(func(func(string) (mathValue, error)) (mathValue, error) { return mathValue{0, true}, nil }, e,
			func(a, b float64) (float64, error) { return a - b, nil }), err
	}
	return p.primary()
}

func (p *mathParser) primary() (mathExpr, error) {
	tok := p.tok
	p.next()
	switch {
	case tok == "(":
		e, err := p.compare()
		if err == nil && p.tok != ")" {
			err = fmt.Errorf("%q: want ) at %d", p.src, p.pos)
		}
		p.next()
		return e, err
	case tok == "":
		return nil, fmt.Errorf("%q: ends early", p.src)
	case tok[0] >= '0' && tok[0] <= '9':
		n, err := strconv.ParseFloat(tok, 64)
		return func(func(string) (mathValue, error)) (mathValue, error) { return mathValue{n, true}, nil }, err
	case p.tok == "(":
		p.next()
		var args []mathExpr
		for {
			a, err := p.compare()
			if err != nil {
				return nil, err
			}
			args = append(args, a)
			if p.tok != "," {
				break
			}
			p.next()
		}
		if p.tok != ")" {
			return nil, fmt.Errorf("%q: want ) after the arguments of %s", p.src, tok)
		}
		p.next()
		return call(tok, args)
	}
	return func(ids func(string) (mathValue, error)) (mathValue, error) { return ids(tok) }, nil
}

// call is the function name applied to args.
func call(name string, args []mathExpr) (mathExpr, error) {
	switch {
	case name == "FILL" && len(args) == 2:
		return func(ids func(string) (mathValue, error)) (mathValue, error) {
			x, err := args[0](ids)
			if err != nil || x.ok {
				return x, err
			}
			return args[1](ids)
		}, nil
	case name == "IF" && len(args) == 3:
		return func(ids func(string) (mathValue, error)) (mathValue, error) {
			c, err := args[0](ids)
			if err != nil || !c.ok {
				return c, err
			}
			if c.v != 0 {
				return args[1](ids)
			}
			return args[2](ids)
		}, nil
	}
	return nil, fmt.Errorf("%s with %d arguments: the evaluator does not know it", name, len(args))
}

// binary applies f to the values of a and b; missing when either is.
func binary(a, b mathExpr, f func(a, b float64) (float64, error)) mathExpr {
	return func(ids func(string) (mathValue, error)) (mathValue, error) {
		x, err := a(ids)
		if err != nil {
			return x, err
		}
		y, err := b(ids)
		if err != nil || !x.ok || !y.ok {
			return mathValue{}, err
		}
		v, err := f(x.v, y.v)
		return mathValue{v, true}, err
	}
}

// evalMath evaluates the expression or metric returned of a set of metric math (an
// alarm's or a widget's) on one minute's data: exprs are its expressions by id, ids
// all of its ids, and minute the datapoints of its metrics by id (none for a metric
// absent from it).
func evalMath(t *testing.T, where string, exprs map[string]string, ids map[string]bool, returned string, minute map[string]float64) mathValue {
	t.Helper()
	parsed := map[string]mathExpr{}
	for id, src := range exprs {
		e, err := parseMath(src)
		if err != nil {
			t.Fatalf("%s: %s: %v", where, id, err)
		}
		parsed[id] = e
	}
	var value func(string) (mathValue, error)
	value = func(id string) (mathValue, error) {
		if e, ok := parsed[id]; ok {
			return e(value)
		}
		if !ids[id] {
			return mathValue{}, fmt.Errorf("no metric or expression %q", id)
		}
		v, ok := minute[id]
		return mathValue{v, ok}, nil
	}
	v, err := value(returned)
	if err != nil {
		t.Fatalf("%s: %s: %v", where, returned, err)
	}
	return v
}
