// Package invalid tells an error of bucketgate's validation (a rule's or a request's)
// where a field's path already names what is at fault: the configuration's errors and
// the check function's invalid requests.
package invalid

import (
	"strings"

	"github.com/bucketgate/bucketgate"
)

// Bare returns err, an error of bucketgate's validation, told without the "invalid: "
// that bucketgate.ErrInvalid puts before it (rules[0]: rule r: capacity 0, not rules[0]:
// invalid: rule r: capacity 0); nil for nil. errors.Is finds bucketgate.ErrInvalid in
// it all the same.
func Bare(err error) error {
	if err == nil {
		return nil
	}
	return bareError{err}
}

// bareError is Bare's error.
type bareError struct{ err error }

func (e bareError) Error() string {
	return strings.TrimPrefix(e.err.Error(), bucketgate.ErrInvalid.Error()+": ")
}

// Unwrap returns the validation's error.
func (e bareError) Unwrap() error { return e.err }
