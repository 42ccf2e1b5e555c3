package check

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/bucketgate/bucketgate/internal/config"
	"github.com/bucketgate/bucketgate/internal/madekey"
	"github.com/bucketgate/bucketgate/internal/strictjson"
)

// This file reads the payload strictly through package strictjson, so that every
// error names the field at fault by its path ("checks[3].rules[0].capacity") and no
// value is coerced: member names match exactly, a name may appear once, strings are
// UTF-8 with no lone surrogate (which a lenient decoder turns into U+FFFD, so that two
// different keys a caller sent would be one), and numbers that must be whole are whole.
// The payload is checked whole as it is first read; the values are then read member by
// member from their text.

// members returns the members of the one JSON object in raw, by name. It refuses
// anything else, a name not in allowed, a repeated name, a null value (an absent member
// is left out) and data after the object.
func members(path string, raw []byte, allowed []string) (map[string][]byte, error) {
	if kind := jsonKind(raw); kind != "object" {
		return nil, fmt.Errorf("%s: got %s, want a JSON object", where(path), kind)
	}
	d := strictjson.New(raw)
	defer d.Release()
	m := make(map[string][]byte, len(allowed))
	err := d.Object(func(name string) error {
		if !slices.Contains(allowed, name) {
			return fmt.Errorf("%s: unknown field (want %s)", field(path, fmt.Sprintf("%.*q", maxQuoted, name)), strings.Join(allowed, ", "))
		}
		v, err := d.Value()
		if err == nil && jsonKind(v) == "null" { // an encoder's absent value: refused as itself, never as what the member's presence means
			return fmt.Errorf("%s: got null: give a value, or leave the member out (no member is ever null)", field(path, name))
		}
		m[name] = v
		return err
	})
	switch {
	case err != nil:
		return nil, jsonError(path, err)
	case d.End() != nil:
		return nil, fmt.Errorf("%s: data after the JSON object", where(path))
	}
	return m, nil
}

// jsonError words err, about the JSON text of the value at path: a *strictjson.Error
// names the place by its own path.
func jsonError(path string, err error) error {
	var se *strictjson.Error
	if !errors.As(err, &se) {
		return err
	}
	path = join(path, se.Path(true))
	switch se.Problem {
	case strictjson.Duplicate:
		return fmt.Errorf("%s: given twice", field(path, strictjson.PathName(se.Name)))
	case strictjson.LoneSurrogate:
		return fmt.Errorf("%s: %s at byte %d is half of a UTF-16 surrogate pair: JSON decoding would replace it with U+FFFD, so send text (or the pair)",
			where(path), se.Char, se.InString)
	case strictjson.InvalidUTF8:
		return fmt.Errorf("%s: byte %#x at byte %d is not UTF-8: JSON decoding would replace it with U+FFFD, so send text", where(path), se.Char[0], se.InString)
	}
	return fmt.Errorf("%s: invalid JSON: %s", where(path), se.Describe())
}

// stringValue decodes the JSON string at path.
func stringValue(path string, raw []byte) (string, error) {
	if jsonKind(raw) != "string" {
		return "", fmt.Errorf("%s: got %s, want a string", path, jsonKind(raw))
	}
	return strictjson.Text(raw), nil
}

// textValue decodes the JSON string at path as stringValue does, refusing one that is
// or holds an API key bucketgate made, unquoted (madekey.InField): every text of a check
// but its key and identity (refused with their own errors) and its requestId (which rests
// nowhere: its record is named by a digest of it).
func textValue(path string, raw []byte) (string, error) {
	s, err := stringValue(path, raw)
	if err == nil {
		err = madekey.InField(path, s)
	}
	if err != nil {
		return "", err
	}
	return s, nil
}

// boolValue decodes the JSON boolean at path.
func boolValue(path string, raw []byte) (bool, error) {
	if jsonKind(raw) != "boolean" {
		return false, fmt.Errorf("%s: got %s, want true or false", path, describe(raw))
	}
	return raw[0] == 't', nil
}

// arrayValue splits the JSON array at path into its first most elements, and counts
// them all: n. The elements past most are read (the text is checked whole) but not
// kept, so that an array of millions of elements in a payload of a few megabytes,
// refused for its length, costs no more memory than its text.
func arrayValue(path string, raw []byte, most int) (elems [][]byte, n int, err error) {
	if jsonKind(raw) != "array" {
		return nil, 0, fmt.Errorf("%s: got %s, want an array", path, jsonKind(raw))
	}
	d := strictjson.New(raw)
	defer d.Release()
	err = d.Array(func() error {
		v, err := d.Value()
		if n++; n <= most {
			elems = append(elems, v)
		}
		return err
	})
	return elems, n, jsonError(path, err)
}

// wholeValue decodes the JSON number at path when it is written as a whole number
// (no fraction, no exponent) that fits an int64; want describes the range the caller
// accepts, for the error, which says how to write it when raw is a whole number written
// with a fraction or an exponent (5.0 and 1e3 from a client whose numbers are floats).
func wholeValue(path string, raw []byte, want string) (int64, error) {
	n, err := strconv.ParseInt(string(raw), 10, 64)
	if kind := jsonKind(raw); kind != "number" || err != nil {
		if f, ferr := strconv.ParseFloat(string(raw), 64); kind == "number" && ferr == nil && f == math.Trunc(f) && math.Abs(f) < 1<<53 {
			want += ", written without a fraction or an exponent"
		}
		return 0, fmt.Errorf("%s: got %s, want %s", path, describe(raw), want)
	}
	return n, nil
}

// numberValue decodes the finite JSON number at path; one that is not 0 but rounds to
// 0 (1e-400) is an error, which its rule's would report as 0.
func numberValue(path string, raw []byte) (float64, error) {
	f, err := strconv.ParseFloat(string(raw), 64)
	if jsonKind(raw) != "number" || err != nil {
		return 0, fmt.Errorf("%s: got %s, want a finite number", path, describe(raw))
	}
	if config.RoundsToZero(string(raw), f) {
		return 0, fmt.Errorf("%s: got %s, which rounds to 0: want a finite number", path, describe(raw))
	}
	return f, nil
}

// jsonKind names the kind of the JSON value raw: "nothing" when there is none.
func jsonKind(raw []byte) string {
	raw = bytes.TrimLeft(raw, " \t\r\n")
	if len(raw) == 0 {
		return "nothing"
	}
	return strictjson.KindName(jsontext.Value(raw).Kind())
}

// maxShown is the most bytes of a number that an error shows.
const maxShown = 32

// maxQuoted is the most characters of a name from the payload (a field's, a plan's) that
// an error quotes: the name may be megabytes long, and the error is the function's
// answer and a log line.
const maxQuoted = 2 * maxShown

// describe shows a number as written (its first maxShown bytes) and any other value
// by its kind.
func describe(raw []byte) string {
	switch {
	case jsonKind(raw) != "number":
		return jsonKind(raw)
	case len(raw) > maxShown:
		return string(raw[:maxShown]) + "..."
	}
	return string(raw)
}

// field is the path of member name of the object at path.
func field(path, name string) string { return join(path, name) }

// join is the path of the value at rest (a path itself) inside the value at path.
func join(path, rest string) string {
	switch {
	case path == "":
		return rest
	case rest == "":
		return path
	case rest[0] == '[':
		return path + rest
	}
	return path + "." + rest
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
