// Package samples finds the repository's sample events and configuration (events/)
// for tests, whatever the directory of the package under test.
package samples

import (
	"os"
	"path/filepath"
	"runtime"
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
