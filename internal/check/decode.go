package check

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"unicode/utf16"
	"unicode/utf8"
)

// This file reads JSON strictly, member by member, so that every error names the
// field at fault by its path ("checks[3].rules[0].capacity") and no value is coerced:
// member names match exactly (encoding/json alone would match them in any case), a
// name may appear once, and numbers that must be whole are whole.

// members returns the members of the one JSON object in raw, by name. It refuses
// anything else, a name not in allowed, a repeated name and data after the object.
func members(path string, raw []byte, allowed []string) (map[string]json.RawMessage, error) {
	if kind := kindOf(raw); kind != "object" {
		return nil, fmt.Errorf("%s: got %s, want a JSON object", where(path), kind)
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	if _, err := dec.Token(); err != nil { // the '{' that kindOf saw
		return nil, syntaxError(path, err)
	}
	m := make(map[string]json.RawMessage, len(allowed))
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, syntaxError(path, err)
		}
		name, _ := tok.(string) // inside an object, Token returns names as strings
		switch {
		case !slices.Contains(allowed, name):
			return nil, fmt.Errorf("%s: unknown field (want %s)", field(path, strconv.Quote(name)), strings.Join(allowed, ", "))
		case m[name] != nil:
			return nil, fmt.Errorf("%s: given twice", field(path, name))
		}
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, syntaxError(field(path, name), err)
		}
		m[name] = v
	}
	if _, err := dec.Token(); err != nil { // the closing '}'
		return nil, syntaxError(path, err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("%s: data after the JSON object", where(path))
	}
	return m, nil
}

// syntaxError describes a JSON syntax error in the value at path.
func syntaxError(path string, err error) error {
	if errors.Is(err, io.EOF) {
		err = io.ErrUnexpectedEOF
	}
	return fmt.Errorf("%s: invalid JSON: %w", where(path), err)
}

// stringValue decodes the JSON string at path.
func stringValue(path string, raw json.RawMessage) (string, error) {
	var s string
	if kindOf(raw) != "string" || json.Unmarshal(raw, &s) != nil {
		return "", fmt.Errorf("%s: got %s, want a string", path, kindOf(raw))
	}
	return s, nil
}

// textValue decodes the JSON string at path when decoding keeps it exactly: it refuses
// bytes that are not UTF-8 and escaped UTF-16 surrogates that do not make a pair, which
// encoding/json (like most decoders) turns into U+FFFD, so that two different strings a
// caller sent would decode to one.
func textValue(path string, raw json.RawMessage) (string, error) {
	s, err := stringValue(path, raw)
	if err != nil || !strings.ContainsRune(s, utf8.RuneError) {
		return s, err // no U+FFFD: nothing was replaced
	}
	body := bytes.TrimSpace(raw)
	body = body[1 : len(body)-1] // a well-formed JSON string: stringValue decoded it
	for i := 0; i < len(body); {
		switch c := body[i]; {
		case c == '\\' && body[i+1] == 'u':
			r := hexRune(body[i+2 : i+6])
			if !utf16.IsSurrogate(r) {
				i += 6
				continue
			}
			if r < 0xdc00 && i+12 <= len(body) && body[i+6] == '\\' && body[i+7] == 'u' {
				if low := hexRune(body[i+8 : i+12]); low >= 0xdc00 && low <= 0xdfff {
					i += 12 // a pair: one character
					continue
				}
			}
			return "", fmt.Errorf("%s: %s at byte %d is half of a UTF-16 surrogate pair: JSON decoding would replace it with U+FFFD, so send text (or the pair)",
				path, body[i:i+6], i+1)
		case c == '\\':
			i += 2
		case c < utf8.RuneSelf:
			i++
		default:
			r, size := utf8.DecodeRune(body[i:])
			if r == utf8.RuneError && size == 1 {
				return "", fmt.Errorf("%s: byte %#x at byte %d is not UTF-8: JSON decoding would replace it with U+FFFD, so send text", path, c, i+1)
			}
			i += size
		}
	}
	return s, nil
}

// hexRune reads four hex digits.
func hexRune(hex []byte) rune {
	n, _ := strconv.ParseUint(string(hex), 16, 32) // JSON allows hex digits alone here
	return rune(n)
}

// boolValue decodes the JSON boolean at path.
func boolValue(path string, raw json.RawMessage) (bool, error) {
	var b bool
	if kindOf(raw) != "boolean" || json.Unmarshal(raw, &b) != nil {
		return false, fmt.Errorf("%s: got %s, want true or false", path, describe(raw))
	}
	return b, nil
}

// arrayValue splits the JSON array at path into its elements.
func arrayValue(path string, raw json.RawMessage) ([]json.RawMessage, error) {
	var elems []json.RawMessage
	if kindOf(raw) != "array" || json.Unmarshal(raw, &elems) != nil {
		return nil, fmt.Errorf("%s: got %s, want an array", path, kindOf(raw))
	}
	return elems, nil
}

// wholeValue decodes the JSON number at path when it is written as a whole number
// (no fraction, no exponent) that fits an int64; want describes the range the caller
// accepts, for the error.
func wholeValue(path string, raw json.RawMessage, want string) (int64, error) {
	n, err := strconv.ParseInt(string(raw), 10, 64)
	if kindOf(raw) != "number" || err != nil {
		return 0, fmt.Errorf("%s: got %s, want %s", path, describe(raw), want)
	}
	return n, nil
}

// numberValue decodes the finite JSON number at path.
func numberValue(path string, raw json.RawMessage) (float64, error) {
	var f float64
	if kindOf(raw) != "number" || json.Unmarshal(raw, &f) != nil {
		return 0, fmt.Errorf("%s: got %s, want a finite number", path, describe(raw))
	}
	return f, nil
}

// kindOf names the kind of the JSON value starting raw, by its first byte.
func kindOf(raw []byte) string {
	raw = bytes.TrimLeft(raw, " \t\r\n")
	if len(raw) == 0 {
		return "nothing"
	}
	switch raw[0] {
	case '{':
		return "object"
	case '[':
		return "array"
	case '"':
		return "string"
	case 't', 'f':
		return "boolean"
	case 'n':
		return "null"
	case '-', '0', '1', '2', '3', '4', '5', '6', '7', '8', '9':
		return "number"
	}
	return "invalid JSON"
}

// maxShown is the most bytes of a number that an error shows.
const maxShown = 32

// describe shows a number as written (its first maxShown bytes) and any other value
// by its kind.
func describe(raw []byte) string {
	switch {
	case kindOf(raw) != "number":
		return kindOf(raw)
	case len(raw) > maxShown:
		return string(raw[:maxShown]) + "..."
	}
	return string(raw)
}

// field is the path of member name of the object at path.
func field(path, name string) string {
	if path == "" {
		return name
	}
	return path + "." + name
}

// index is the path of element i of the array at path.
func index(path string, i int) string { return fmt.Sprintf("%s[%d]", path, i) }

// where names the value at path in an error: the path, or "request" for the payload.
func where(path string) string {
	if path == "" {
		return "request"
	}
	return path
}
