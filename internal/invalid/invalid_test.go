package invalid_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/bucketgate/bucketgate"
	"github.com/bucketgate/bucketgate/internal/invalid"
)

// TestBare: an error of bucketgate's validation without its "invalid: ", still
// bucketgate.ErrInvalid; any other error as it is; nil for nil.
func TestBare(t *testing.T) {
	tests := []struct {
		name, want string
		err        error
	}{
		{"a rule's", "rule r: capacity 0", (bucketgate.Rule{Name: "r", RefillPerSecond: 1}).Validate()},
		{"another error", "rule r: invalid: capacity 0", errors.New("rule r: invalid: capacity 0")},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := invalid.Bare(tc.err)
			if got := fmt.Sprint(err); !strings.HasPrefix(got, tc.want) {
				t.Errorf("Bare: %q, want it to start %q", got, tc.want)
			}
			if !errors.Is(err, tc.err) {
				t.Errorf("Bare: %v does not wrap %v", err, tc.err)
			}
		})
	}
	if err := invalid.Bare((bucketgate.Rule{Name: "r"}).Validate()); !errors.Is(err, bucketgate.ErrInvalid) {
		t.Errorf("Bare: %v, want bucketgate.ErrInvalid", err)
	}
	if err := invalid.Bare(nil); err != nil {
		t.Errorf("Bare(nil) = %v, want nil", err)
	}
}
