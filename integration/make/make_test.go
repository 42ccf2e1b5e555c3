// Package make_test holds the Makefile to what it promises.
package make_test

import (
	"os"
	"os/exec"
	"path/filepath"
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

// make dynalite on a machine without Node.js and npm fails saying what it needs, not
// with the shell's "node: No such file or directory" after a line about tests skipping.
// The install runs into a copy of the pinned package, with nothing on PATH.
func TestMakeDynaliteWithoutNode(t *testing.T) {
	makeBin, err := exec.LookPath("make")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	for _, name := range []string{"package.json", "package-lock.json"} {
		b, err := os.ReadFile(filepath.Join("../../internal/testkit/dynalite", name))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	cmd := exec.Command(makeBin, "--no-print-directory", "dynalite", "DYNALITE_DIR="+dir, "DYNALITE_PORT=1")
	cmd.Dir = "../.."
	cmd.Env = append(slices.DeleteFunc(os.Environ(), func(kv string) bool {
		return strings.HasPrefix(kv, "CI=") || strings.HasPrefix(kv, "PATH=") || strings.HasPrefix(kv, "MAKEFLAGS=")
	}), "PATH="+t.TempDir())
	out, err := cmd.CombinedOutput()
	if err == nil || !strings.Contains(string(out), "make dynalite needs Node.js and npm (apt-get install nodejs npm)") {
		t.Fatalf("make dynalite without node: %v\n%s\nwant a failure that says it needs Node.js and npm", err, out)
	}
}
