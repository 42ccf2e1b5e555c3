package strictjson_test

import (
	"errors"
	"testing"

	"github.com/bucketgate/bucketgate/internal/strictjson"
)

// walk reads the next value of d whole, objects and arrays member by member.
func walk(d *strictjson.Decoder) error {
	switch d.Kind() {
	case '{':
		return d.Object(func(string) error { return walk(d) })
	case '[':
		return d.Array(func() error { return walk(d) })
	}
	return d.Skip()
}

// A syntax error says what was expected where the text broke, as encoding/json's does:
// a comma missing between two members is no missing value, and a literal cut short
// names the character that cut it.
func TestSyntaxErrorWording(t *testing.T) {
	tests := []struct{ name, text, want string }{
		{"a comma missing between members", `{"a":1 "b":2}`, `invalid character '"' after object value (expecting ',' or '}') at offset 7`},
		{"a colon missing", `{"a" 1}`, `invalid character '1' after object name (expecting ':') at offset 5`},
		{"a comma missing between elements", `[1 2]`, `invalid character '2' after array element (expecting ',' or ']') at offset 3`},
		{"an object closed by ]", `{"a":1]`, `invalid character ']' after object value (expecting ',' or '}') at offset 6`},
		{"an array closed by }", `[1}`, `invalid character '}' after array element (expecting ',' or ']') at offset 2`},
		{"a value that is none", `{"a":x}`, `invalid character 'x' at start of value at offset 5`},
		{"a comma after the last member", "{\"a\":1, \n}", `invalid character ',' before '}' at offset 6: no comma may follow the last member or element`},
		{"a comma after the last element", `[1,]`, `invalid character ',' before ']' at offset 2: no comma may follow the last member or element`},
		{"a comma in an empty object", "{ , }", `invalid character ',' before '}' at offset 2: an empty object has no comma: write {}`},
		{"a comma in an empty array", `[,]`, `invalid character ',' before ']' at offset 1: an empty array has no comma: write []`},
		{"a comma in an empty array in an object", `{"a":[,]}`, `invalid character ',' before ']' at offset 6: an empty array has no comma: write []`},
		{"a comma before the first member", `{,"a":1}`, `invalid character ',' at start of value at offset 1`},
		{"a literal cut short", `{"a":tru}`, `invalid character '}' in literal true (expecting 'e') at offset 8`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			d := strictjson.New([]byte(tc.text))
			defer d.Release()
			var se *strictjson.Error
			if err := walk(d); !errors.As(err, &se) || se.Problem != strictjson.Syntax {
				t.Fatalf("%v, want a Syntax *Error", err)
			}
			if got := se.Describe(); got != tc.want {
				t.Errorf("Describe() = %s\nwant         %s", got, tc.want)
			}
		})
	}
}
