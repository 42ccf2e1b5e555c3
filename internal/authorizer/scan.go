package authorizer

import (
	"errors"
	"fmt"
	"strings"
	"unicode/utf16"
	"unicode/utf8"
)

// scanner reads one JSON text strictly (RFC 8259), in one pass: no name twice in any
// object, valid UTF-8 in every string (escapes included: no lone surrogate), no control
// character in a string, nothing but white space after the value, at most maxDepth
// nested objects and arrays. Strings come back as parts of data (the payload, copied
// once) when they hold no escape, so that reading one allocates nothing.
type scanner struct {
	data  string
	pos   int
	depth int
	names []string // the names of the objects being read, innermost last
	path  []string // the member being read, by the names from the outermost object in
}

// maxDepth bounds how deeply objects and arrays nest, as encoding/json/jsontext does.
const maxDepth = 10000

// errEOF is the error of a text that ends before its value does.
var errEOF = errors.New("unexpected EOF")

// JSON kinds, as a value's first byte tells them: for an error naming what was found.
func kindOf(c byte) string {
	switch c {
	case '{':
		return "an object"
	case '[':
		return "an array"
	case '"':
		return "a string"
	case 'n':
		return "null"
	case 't', 'f':
		return "a boolean"
	}
	return "a number"
}

func (s *scanner) ws() {
	for s.pos < len(s.data) {
		switch s.data[s.pos] {
		case ' ', '\t', '\n', '\r':
			s.pos++
		default:
			return
		}
	}
}

// peek returns the first byte of the next value, after white space.
func (s *scanner) peek() (byte, error) {
	s.ws()
	if s.pos >= len(s.data) {
		return 0, errEOF
	}
	return s.data[s.pos], nil
}

func (s *scanner) syntax(what string) error {
	if s.pos >= len(s.data) {
		return errEOF
	}
	return s.errorf("invalid character %q %s at offset %d", s.data[s.pos], what, s.pos)
}

// errorf is an error about the text at the member being read, named by its path
// ("requestContext.identity.sourceIp: ..."), or about the whole text outside any object.
func (s *scanner) errorf(format string, args ...any) error {
	err := fmt.Errorf(format, args...)
	if len(s.path) == 0 {
		return err
	}
	return fmt.Errorf("%s: %w", strings.Join(s.path, "."), err)
}

// object reads an object, calling member for each name with the scanner at its value;
// member must read the value. It refuses a name given twice.
func (s *scanner) object(member func(name string) error) error {
	first := len(s.names)
	var seen map[string]struct{} // for a long object; its first names are in s.names
	defer func() { clear(s.names[first:]); s.names = s.names[:first] }()
	return s.container('{', '}', func() error {
		if c, err := s.peek(); err != nil {
			return err
		} else if c != '"' {
			return s.syntax("looking for an object member name")
		}
		name, err := s.str()
		if err != nil {
			return err
		}
		if seen != nil {
			if _, dup := seen[name]; dup {
				return s.errorf("duplicate object member name %q", name)
			}
			seen[name] = struct{}{}
		} else {
			for _, other := range s.names[first:] {
				if other == name {
					return s.errorf("duplicate object member name %q", name)
				}
			}
			if s.names = append(s.names, name); len(s.names)-first > 32 {
				seen = make(map[string]struct{}, 64)
				for _, other := range s.names[first:] {
					seen[other] = struct{}{}
				}
			}
		}
		if c, err := s.peek(); err != nil {
			return err
		} else if c != ':' {
			return s.syntax("after an object member name")
		}
		s.pos++
		s.path = append(s.path, name)
		err = member(name)
		s.path[len(s.path)-1] = "" // a part of data: not kept past it
		s.path = s.path[:len(s.path)-1]
		return err
	})
}

// array reads an array, calling element with the scanner at each element; element must
// read it.
func (s *scanner) array(element func() error) error { return s.container('[', ']', element) }

// container reads an object or an array, between open and end, calling item at each
// member or element: item must read it.
func (s *scanner) container(open, end byte, item func() error) error {
	if c, err := s.peek(); err != nil {
		return err
	} else if c != open {
		return s.syntax("looking for " + kindOf(open))
	}
	if s.depth++; s.depth > maxDepth {
		return s.errorf("more than %d nested objects and arrays", maxDepth)
	}
	defer func() { s.depth-- }()
	s.pos++
	for n := 0; ; n++ {
		c, err := s.peek()
		if err != nil {
			return err
		}
		if n == 0 && c == end {
			s.pos++
			return nil
		}
		if err := item(); err != nil {
			return err
		}
		c, err = s.peek()
		switch {
		case err != nil:
			return err
		case c == ',':
			s.pos++
		case c == end:
			s.pos++
			return nil
		default:
			return s.syntax("after a member of " + kindOf(open))
		}
	}
}

// skip reads any value.
func (s *scanner) skip() error {
	c, err := s.peek()
	if err != nil {
		return err
	}
	switch c {
	case '{':
		return s.object(func(string) error { return s.skip() })
	case '[':
		return s.array(s.skip)
	case '"':
		_, err := s.str()
		return err
	case 't':
		return s.literal("true")
	case 'f':
		return s.literal("false")
	case 'n':
		return s.literal("null")
	}
	return s.number()
}

// null reads null if it is next, and reports whether it was.
func (s *scanner) null() (bool, error) {
	if c, err := s.peek(); err != nil || c != 'n' {
		return false, err
	}
	return true, s.literal("null")
}

func (s *scanner) literal(word string) error {
	if !strings.HasPrefix(s.data[s.pos:], word) {
		if len(s.data)-s.pos < len(word) && strings.HasPrefix(word, s.data[s.pos:]) {
			return errEOF
		}
		return s.syntax("looking for a value")
	}
	s.pos += len(word)
	return nil
}

// number reads a number: -? (0 | [1-9][0-9]*) (. [0-9]+)? ([eE] [+-]? [0-9]+)?
func (s *scanner) number() error {
	if s.pos < len(s.data) && s.data[s.pos] == '-' {
		s.pos++
	}
	switch {
	case s.pos >= len(s.data):
		return errEOF
	case s.data[s.pos] == '0':
		s.pos++
	case s.data[s.pos] >= '1' && s.data[s.pos] <= '9':
		s.digits()
	default:
		return s.syntax("looking for a value")
	}
	if s.pos < len(s.data) && s.data[s.pos] == '.' {
		s.pos++
		if s.digits() == 0 {
			return s.syntax("in a number's fraction")
		}
	}
	if s.pos < len(s.data) && (s.data[s.pos] == 'e' || s.data[s.pos] == 'E') {
		s.pos++
		if s.pos < len(s.data) && (s.data[s.pos] == '+' || s.data[s.pos] == '-') {
			s.pos++
		}
		if s.digits() == 0 {
			return s.syntax("in a number's exponent")
		}
	}
	return nil
}

func (s *scanner) digits() int {
	start := s.pos
	for s.pos < len(s.data) && s.data[s.pos] >= '0' && s.data[s.pos] <= '9' {
		s.pos++
	}
	return s.pos - start
}

// str reads a string and returns its value: a part of data when it holds no escape.
func (s *scanner) str() (string, error) {
	s.pos++ // the opening quote
	start := s.pos
	for s.pos < len(s.data) {
		c := s.data[s.pos]
		switch {
		case c == '"':
			s.pos++
			return s.data[start : s.pos-1], nil
		case c == '\\':
			return s.unescape(start)
		case c < 0x20:
			return "", s.errorf("invalid control character %q in a string at offset %d", c, s.pos)
		case c < utf8.RuneSelf:
			s.pos++
		default:
			r, size := utf8.DecodeRuneInString(s.data[s.pos:])
			if r == utf8.RuneError && size == 1 {
				return "", s.errorf("invalid UTF-8 in a string at offset %d", s.pos)
			}
			s.pos += size
		}
	}
	return "", errEOF
}

// unescape reads the rest of a string that started at start and holds an escape at
// s.pos, and returns its value, a new string.
func (s *scanner) unescape(start int) (string, error) {
	b := make([]byte, 0, s.pos-start+16)
	b = append(b, s.data[start:s.pos]...)
	for s.pos < len(s.data) {
		c := s.data[s.pos]
		switch {
		case c == '"':
			s.pos++
			return string(b), nil
		case c == '\\':
			if s.pos+1 >= len(s.data) {
				return "", errEOF
			}
			e := s.data[s.pos+1]
			s.pos += 2
			switch e {
			case '"', '\\', '/':
				b = append(b, e)
			case 'b':
				b = append(b, '\b')
			case 'f':
				b = append(b, '\f')
			case 'n':
				b = append(b, '\n')
			case 'r':
				b = append(b, '\r')
			case 't':
				b = append(b, '\t')
			case 'u':
				r, err := s.hex4()
				if err != nil {
					return "", err
				}
				if utf16.IsSurrogate(r) {
					if !strings.HasPrefix(s.data[s.pos:], `\u`) {
						return "", s.errorf("invalid UTF-8 in a string: a lone surrogate before offset %d", s.pos)
					}
					s.pos += 2
					r2, err := s.hex4()
					if err != nil {
						return "", err
					}
					if r = utf16.DecodeRune(r, r2); r == utf8.RuneError {
						return "", s.errorf("invalid UTF-8 in a string: a lone surrogate before offset %d", s.pos)
					}
				}
				b = utf8.AppendRune(b, r)
			default:
				s.pos--
				return "", s.syntax("in a string escape")
			}
		case c < 0x20:
			return "", s.errorf("invalid control character %q in a string at offset %d", c, s.pos)
		case c < utf8.RuneSelf:
			b = append(b, c)
			s.pos++
		default:
			r, size := utf8.DecodeRuneInString(s.data[s.pos:])
			if r == utf8.RuneError && size == 1 {
				return "", s.errorf("invalid UTF-8 in a string at offset %d", s.pos)
			}
			b = append(b, s.data[s.pos:s.pos+size]...)
			s.pos += size
		}
	}
	return "", errEOF
}

// hex4 reads the four hex digits of a \u escape.
func (s *scanner) hex4() (rune, error) {
	if len(s.data)-s.pos < 4 {
		return 0, errEOF
	}
	var r rune
	for _, c := range []byte(s.data[s.pos : s.pos+4]) {
		r <<= 4
		switch {
		case c >= '0' && c <= '9':
			r |= rune(c - '0')
		case c >= 'a' && c <= 'f':
			r |= rune(c - 'a' + 10)
		case c >= 'A' && c <= 'F':
			r |= rune(c - 'A' + 10)
		default:
			return 0, s.syntax("in a \\u escape")
		}
		s.pos++
	}
	return r, nil
}
