// Package make_test holds the Makefile to what it promises.
package make_test

import (
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// make test runs the real-server suites once per engine; an engine whose server is not
// installed skips them, which go test reports only with -v. Its normal output must say
// so, in one line per missing engine, naming it (CI fails instead, the suites
// requiring their servers). The make is dry of everything but the loop: go stands in as
// true, vet and the dynalite install are taken as done.
func TestMakeTestSaysWhichEngineIsMissing(t *testing.T) {
	cmd := exec.Command("make", "-s", "-o", "vet", "-o", "internal/testkit/dynalite/node_modules/.package-lock.json",
		"test", "GO=true", "ENGINES=redis-server no-such-server-here")
	cmd.Dir = "../.." // the repository's root
	cmd.Env = slices.DeleteFunc(os.Environ(), func(kv string) bool {
		return strings.HasPrefix(kv, "CI=") || strings.HasPrefix(kv, "BUCKETGATE_REQUIRE_SERVERS=") || strings.HasPrefix(kv, "MAKEFLAGS=")
	})
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("make test: %v\n%s", err, out)
	}
	var skipped []string
	for line := range strings.Lines(string(out)) {
		if strings.Contains(line, "SKIPPED") {
			skipped = append(skipped, strings.TrimSpace(line))
		}
	}
	if len(skipped) != 1 || !strings.Contains(skipped[0], "no-such-server-here") {
		t.Fatalf("make test printed:\n%s\nwant one SKIPPED line, naming no-such-server-here", out)
	}
}
