package testkit_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/bucketgate/bucketgate/internal/testkit"
)

// Which environments require the real-server suites: CI with any value, or
// BUCKETGATE_REQUIRE_SERVERS=1 exactly.
func TestRequired(t *testing.T) {
	tests := []struct {
		name        string
		ci, require string
		want        bool
	}{
		{"neither", "", "", false},
		{"CI=true", "true", "", true},
		{"CI=1", "1", "", true},
		{"CI=false", "false", "", true}, // any value
		{"require=1", "", "1", true},
		{"require=0", "", "0", false},
		{"require=true", "", "true", false}, // 1 only
		{"both", "true", "1", true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv("CI", tc.ci)
			t.Setenv(testkit.RequireEnv, tc.require)
			if got := testkit.Required(); got != tc.want {
				t.Errorf("Required() = %v with CI=%q %s=%q, want %v", got, tc.ci, testkit.RequireEnv, tc.require, tc.want)
			}
		})
	}
}

// recorder is a testing.TB that records Check's verdict instead of ending the test.
type recorder struct {
	testing.TB
	skipped, failed string
}

func (r *recorder) Skipf(format string, args ...any) { r.skipped = fmt.Sprintf(format, args...) }
func (r *recorder) Fatal(args ...any)                { r.failed = fmt.Sprint(args...) }

// What Check does with the error of starting a server: nothing for none; a skip naming
// the error and the variable for a missing server where the suites are not required; a
// failure where they are, and for any other error.
func TestCheck(t *testing.T) {
	errMissing := errors.New("redis-server is not installed")
	missing := fmt.Errorf("start: %w", errMissing)
	broken := errors.New("start: the port was taken")
	tests := []struct {
		name     string
		required bool
		err      error
		want     string // "", "skip" or "fail"
	}{
		{"started", false, nil, ""},
		{"started, required", true, nil, ""},
		{"missing", false, missing, "skip"},
		{"missing, required", true, missing, "fail"},
		{"broken", false, broken, "fail"},
		{"broken, required", true, broken, "fail"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv("CI", "")
			t.Setenv(testkit.RequireEnv, "")
			if tc.required {
				t.Setenv(testkit.RequireEnv, "1")
			}
			r := &recorder{TB: t}
			testkit.Check(r, tc.err, errMissing)
			got := ""
			switch {
			case r.skipped != "" && r.failed != "":
				t.Fatalf("both skipped (%s) and failed (%s)", r.skipped, r.failed)
			case r.skipped != "":
				got = "skip"
				for _, want := range []string{"SKIPPING", missing.Error(), testkit.RequireEnv} {
					if !strings.Contains(r.skipped, want) {
						t.Errorf("skip message %q does not hold %q", r.skipped, want)
					}
				}
			case r.failed != "":
				got = "fail"
				if !strings.Contains(r.failed, tc.err.Error()) {
					t.Errorf("failure %q does not name the error %q", r.failed, tc.err)
				}
			}
			if got != tc.want {
				t.Errorf("Check(%v) with required=%v: %q, want %q", tc.err, tc.required, got, tc.want)
			}
		})
	}
}
