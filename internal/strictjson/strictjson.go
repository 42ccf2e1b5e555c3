// Package strictjson reads JSON strictly, through jsontext (the module
// github.com/go-json-experiment/json, what encoding/json/v2 is built from): RFC 8259
// and no more, no name twice in an object, UTF-8 in every string (escapes included: no
// lone surrogate), nothing but white space after the value, nesting bounded. It is the
// one JSON reader of the authorizer's events and of the check function's payloads:
// names are matched exactly (escapes decoded) by the caller, and a text that breaks a
// rule is an *Error saying where and what, for each contract to word.
package strictjson

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/go-json-experiment/json/jsontext"
)

// Decoder reads one JSON text. Strings and names without escapes come back as parts of
// the text (copied once), so that reading one allocates nothing. The zero Decoder is
// unusable; use New.
type Decoder struct {
	dec  jsontext.Decoder
	buf  bytes.Buffer
	raw  []byte
	text string
}

var decoders = sync.Pool{New: func() any { return new(Decoder) }}

// New returns a Decoder of raw, one JSON text, from a pool: Release it when done with
// it and with every string it returned.
func New(raw []byte) *Decoder {
	d := decoders.Get().(*Decoder)
	d.raw, d.text = raw, string(raw)
	d.buf = *bytes.NewBuffer(raw) // the decoder reads the buffer's bytes in place
	d.dec.Reset(&d.buf)
	return d
}

// Release returns d to the pool.
func (d *Decoder) Release() {
	d.dec.Reset(bytes.NewBuffer(nil))
	d.raw, d.text, d.buf = nil, "", bytes.Buffer{}
	decoders.Put(d)
}

// Kind returns the kind of the next value without reading it: '{', '[', '"', '0' (a
// number), 't' or 'f' (true, false), 'n' (null), or 0 when there is none (the text
// ended) or it is not JSON.
func (d *Decoder) Kind() jsontext.Kind { return d.dec.PeekKind() }

// Object reads an object, calling member with each name and d at its value: member
// must read the value.
func (d *Decoder) Object(member func(name string) error) error {
	if _, err := d.dec.ReadToken(); err != nil { // '{'
		return d.fail(err)
	}
	for d.dec.PeekKind() != '}' {
		name, err := d.String()
		if err != nil {
			return err
		}
		if err := member(name); err != nil {
			return err
		}
	}
	_, err := d.dec.ReadToken() // '}'
	return d.fail(err)
}

// Array reads an array, calling element with d at each element: element must read it.
func (d *Decoder) Array(element func() error) error {
	if _, err := d.dec.ReadToken(); err != nil { // '['
		return d.fail(err)
	}
	for d.dec.PeekKind() != ']' {
		if err := element(); err != nil {
			return err
		}
	}
	_, err := d.dec.ReadToken() // ']'
	return d.fail(err)
}

// String reads a string (or an object's name): a part of the text when it holds no
// escape.
func (d *Decoder) String() (string, error) {
	v, err := d.dec.ReadValue()
	if err != nil {
		return "", d.fail(err)
	}
	if bytes.IndexByte(v, '\\') < 0 {
		end := int(d.dec.InputOffset())
		return d.text[end-len(v)+1 : end-1], nil
	}
	s, err := jsontext.AppendUnquote(nil, v)
	return string(s), err
}

// Value reads the next value and returns its text, a part of the text given to New.
func (d *Decoder) Value() ([]byte, error) {
	v, err := d.dec.ReadValue()
	if err != nil {
		return nil, d.fail(err)
	}
	end := int(d.dec.InputOffset())
	return d.raw[end-len(v) : end], nil
}

// Skip reads the next value, whatever it is.
func (d *Decoder) Skip() error { return d.fail(d.dec.SkipValue()) }

// End reports anything but white space after the value read: ErrDataAfter.
func (d *Decoder) End() error {
	if _, err := d.dec.ReadToken(); err != io.EOF {
		return ErrDataAfter
	}
	return nil
}

// ErrDataAfter is End's error.
var ErrDataAfter = errors.New("data after the JSON value")

// Problem is what an *Error found wrong.
type Problem uint8

// The problems of an *Error.
const (
	// Truncated: the text ends before its value does.
	Truncated Problem = iota + 1
	// Syntax: a character where none of its kind may be.
	Syntax
	// Duplicate: an object's name given twice; Name is the name.
	Duplicate
	// InvalidUTF8: a byte of a string is not UTF-8.
	InvalidUTF8
	// LoneSurrogate: a \u escape of a string is half of a UTF-16 surrogate pair.
	LoneSurrogate
	// ControlChar: a control character in a string, unescaped.
	ControlChar
)

// Error is a text that is not strict JSON.
type Error struct {
	// Problem is what is wrong.
	Problem Problem
	// Pointer is the value at fault, as a JSON Pointer (RFC 6901): for Duplicate, the
	// object.
	Pointer jsontext.Pointer
	// Offset is where in the text, in bytes from 0.
	Offset int64
	// InString is, for a problem in a string, where in it, in bytes from 1 after its
	// opening quote; 0 otherwise.
	InString int64
	// Char is the character at fault: the first of a literal that breaks, the byte that
	// is not UTF-8, the control character; for LoneSurrogate, the escape's text.
	Char string
	// Name is the name given twice (Duplicate).
	Name string
	// Err is jsontext's error.
	Err error

	closer byte // for a Syntax comma right before a '}' or ']', that closing byte
	empty  byte // with closer, '{' or '[' when the comma is in an empty object or array
}

// Error describes the problem at its place, as a JSON Pointer.
func (e *Error) Error() string {
	return fmt.Sprintf("%s: %s", e.Pointer, e.Describe())
}

// Unwrap returns jsontext's error.
func (e *Error) Unwrap() error { return e.Err }

// Describe says what is wrong, without the place.
func (e *Error) Describe() string {
	switch e.Problem {
	case Truncated:
		return "unexpected EOF"
	case Duplicate:
		return fmt.Sprintf("duplicate object member name %.*q", MaxPathName, e.Name)
	case InvalidUTF8:
		return fmt.Sprintf("invalid UTF-8 in a string at offset %d", e.Offset)
	case LoneSurrogate:
		return fmt.Sprintf("invalid UTF-8 in a string: a lone surrogate before offset %d", e.Offset+int64(len(e.Char)))
	case ControlChar:
		return fmt.Sprintf("invalid control character %q in a string at offset %d", e.char(), e.Offset)
	}
	switch {
	case e.empty == '{':
		return fmt.Sprintf("invalid character ',' before '%c' at offset %d: an empty object has no comma: write {}", e.closer, e.Offset)
	case e.empty == '[':
		return fmt.Sprintf("invalid character ',' before '%c' at offset %d: an empty array has no comma: write []", e.closer, e.Offset)
	case e.closer != 0:
		return fmt.Sprintf("invalid character ',' before '%c' at offset %d: no comma may follow the last member or element", e.closer, e.Offset)
	}
	// jsontext's own words say what was expected there: a ',' or '}' after an
	// object's value, a ':' after its name, a value, the rest of a literal.
	if se := (*jsontext.SyntacticError)(nil); errors.As(e.Err, &se) && se.Err != nil {
		return fmt.Sprintf("%s at offset %d", se.Err, e.Offset)
	}
	return fmt.Sprintf("invalid character %q at offset %d", e.char(), e.Offset)
}

// char is Char as a character, for %q.
func (e *Error) char() rune {
	if e.Char == "" {
		return utf8.RuneError
	}
	return rune(e.Char[0])
}

// Path returns the Pointer as a path of names joined by '.' and, with indices, array
// elements as [i] ("checks[3].rules"); without, array elements are not named
// ("multiValueHeaders.Accept"). A name of other bytes than letters, digits, '_' and
// '-' is quoted. The Pointer's tokens that are all digits are array
// indices.
func (e *Error) Path(indices bool) string {
	var b strings.Builder
	for tok := range e.Pointer.Tokens() {
		switch {
		case isIndex(tok) && !indices:
		case isIndex(tok):
			b.WriteString("[" + tok + "]")
		default:
			if b.Len() > 0 {
				b.WriteByte('.')
			}
			b.WriteString(PathName(tok))
		}
	}
	return b.String()
}

// PathName returns an object's name as a path shows it: as it is when it is letters,
// digits, '_' and '-', else quoted, so that no name reads as part of the path or of
// the message after it. A name of more than MaxPathName bytes is quoted, and cut to its
// first MaxPathName characters: a name may be megabytes long, and a path goes into
// errors and log lines.
func PathName(name string) string {
	if len(name) > MaxPathName || name == "" || strings.Trim(name, plainName) != "" {
		return fmt.Sprintf("%.*q", MaxPathName, name)
	}
	return name
}

// MaxPathName is the longest name, in bytes, that PathName shows whole.
const MaxPathName = 64

// plainName are the bytes of a name a path shows as it is.
const plainName = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-"

// isIndex reports whether a Pointer token is an array index. A name of digits alone
// reads as one too: paths are for people.
func isIndex(tok string) bool {
	return tok != "" && strings.Trim(tok, "0123456789") == ""
}

// fail returns err, jsontext's, as an *Error about d's text; nil stays nil.
func (d *Decoder) fail(err error) error {
	if err == nil {
		return nil
	}
	return d.failed(err)
}

// failed is fail of an error.
func (d *Decoder) failed(err error) error {
	var se *jsontext.SyntacticError
	switch {
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		e := &Error{Problem: Truncated, Offset: int64(len(d.raw)), Err: err}
		if errors.As(err, &se) {
			e.Pointer = se.JSONPointer
		}
		return e
	case !errors.As(err, &se):
		return err
	case errors.Is(err, jsontext.ErrDuplicateName):
		return &Error{Problem: Duplicate, Pointer: se.JSONPointer.Parent(), Name: se.JSONPointer.LastToken(), Offset: se.ByteOffset, Err: err}
	}
	e := &Error{Problem: Syntax, Pointer: se.JSONPointer, Offset: se.ByteOffset, Err: err}
	off := int(se.ByteOffset)
	start := d.tokenStart()
	if off >= len(d.raw) {
		e.Problem = Truncated
		return e
	}
	c := d.raw[off]
	switch {
	case start < off && d.raw[start] == '"': // in a string
		e.InString = int64(off - start)
		switch {
		case c == '\\' && off+6 <= len(d.raw) && d.raw[off+1] == 'u' && isSurrogate(d.raw[off+2:off+6]):
			e.Problem, e.Char = LoneSurrogate, string(d.raw[off:off+6])
		case c < ' ':
			e.Problem, e.Char = ControlChar, string([]byte{c})
		case c >= utf8.RuneSelf:
			e.Problem, e.Char = InvalidUTF8, string([]byte{c})
		default:
			e.Char = string([]byte{c})
		}
	case start < off && start < len(d.raw) && strings.IndexByte("tfn", d.raw[start]) >= 0: // a literal that breaks
		e.Char = string(d.raw[start : start+1])
	default:
		e.Char = string([]byte{c})
		if c == ',' {
			if next := bytes.TrimLeft(d.raw[off+1:], " \t\r\n"); len(next) > 0 && (next[0] == '}' || next[0] == ']') {
				e.closer = next[0]
				if kind, n := d.dec.StackIndex(d.dec.StackDepth()); n == 0 {
					e.empty = byte(kind)
				}
			}
		}
	}
	return e
}

// tokenStart returns where the token jsontext failed on starts: after the last token it
// read, its white space and separator.
func (d *Decoder) tokenStart() int {
	i := int(d.dec.InputOffset())
	for i < len(d.raw) && strings.IndexByte(" \t\r\n:,", d.raw[i]) >= 0 {
		i++
	}
	return i
}

// isSurrogate reports whether hex, four hex digits, is a UTF-16 surrogate.
func isSurrogate(hex []byte) bool {
	h := strings.ToLower(string(hex))
	return len(h) == 4 && h[0] == 'd' && h[1] >= '8' && h[1] <= 'f' && strings.Trim(h[2:], "0123456789abcdef") == ""
}

// Kinds of values, as errors name them.
var kindNames = map[jsontext.Kind]string{
	'{': "object", '[': "array", '"': "string", '0': "number", 't': "boolean", 'f': "boolean", 'n': "null",
}

// KindName names a kind (see Decoder.Kind) for an error: object, array, string,
// number, boolean, null, or "invalid JSON" for 0.
func KindName(k jsontext.Kind) string {
	if n, ok := kindNames[k]; ok {
		return n
	}
	return "invalid JSON"
}

// KindArticle is KindName with its article: "an object", "a string", "null".
func KindArticle(k jsontext.Kind) string {
	switch n := KindName(k); n {
	case "object", "array":
		return "an " + n
	case "null", "invalid JSON":
		return n
	default:
		return "a " + n
	}
}

// Text returns the value of v, a JSON string that a Decoder has read (so valid).
func Text(v []byte) string {
	if bytes.IndexByte(v, '\\') < 0 {
		return string(v[1 : len(v)-1])
	}
	s, _ := jsontext.AppendUnquote(nil, v) // valid: read by a Decoder
	return string(s)
}
