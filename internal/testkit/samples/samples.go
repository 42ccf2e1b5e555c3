// Package samples finds the repository's sample events and configuration (events/)
// for tests, whatever the directory of the package under test.
package samples

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// Dir returns the absolute path of the repository's events/ directory, found from this
// source file's place in the repository (internal/testkit/samples).
func Dir() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..", "..", "events")
}

// Path returns the path of the file called name in events/.
func Path(name string) string { return filepath.Join(Dir(), name) }

// Read returns the content of the file called name in events/, failing t when it
// cannot be read.
func Read(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(Path(name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// LambdaEvents returns the directory of aws-lambda-go's own sample events
// (events/testdata of the module this repository requires), read in place from the
// module cache, never copied.
func LambdaEvents(t testing.TB) string {
	t.Helper()
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", "github.com/aws/aws-lambda-go").Output()
	if err != nil {
		t.Fatalf("locate aws-lambda-go: %v", err)
	}
	return filepath.Join(strings.TrimSpace(string(out)), "events", "testdata")
}

// ReadLambdaEvent returns aws-lambda-go's sample event called name (see LambdaEvents).
func ReadLambdaEvent(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(LambdaEvents(t), name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}
