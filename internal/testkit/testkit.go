// Package testkit holds what the test kits under it share: whether a suite that needs a
// real server (redis-server, valkey-server, dynalite) may skip where the server is not
// installed. The kits themselves are its subpackages; the product never imports them.
package testkit

import (
	"errors"
	"os"
	"os/exec"
	"testing"
)

// RequireEnv, set to 1, makes a missing server a test failure instead of a skip. CI
// (any value) does the same.
const RequireEnv = "BUCKETGATE_REQUIRE_SERVERS"

// Required reports whether the environment requires the real-server suites (CI, or
// RequireEnv=1), so that a missing server fails them instead of skipping them.
func Required() bool { return os.Getenv("CI") != "" || os.Getenv(RequireEnv) == "1" }

// Check ends t for err, the error of starting a server, if there is one: an error
// wrapping missing (the server is not installed) skips t with a loud message, or fails
// it where the suites are Required; any other error fails t.
func Check(t testing.TB, err, missing error) {
	t.Helper()
	switch {
	case err == nil:
	case errors.Is(err, missing) && !Required():
		t.Skipf("SKIPPING real-server test: %v; CI (or %s=1) fails instead of skipping", err, RequireEnv)
	default:
		t.Fatal(err)
	}
}

// LookPath returns the path of the program a test runs, such as node: where it is not
// installed, t is skipped with a loud message, or fails where the suites are Required.
func LookPath(t testing.TB, program string) string {
	t.Helper()
	path, err := exec.LookPath(program)
	Check(t, err, exec.ErrNotFound)
	return path
}
