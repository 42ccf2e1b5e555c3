// Package samples finds the repository's sample events and configuration (events/)
// for tests, whatever the directory of the package under test.
package samples

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/bucketgate/bucketgate/internal/settings"
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

// WithAPIKey returns the REST authorizer event with the API key header
// (settings.DefaultAPIKeyHeader) set to key, in headers alone.
func WithAPIKey(t testing.TB, event []byte, key string) []byte {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(event, &m); err != nil {
		t.Fatal(err)
	}
	m["headers"] = map[string]any{settings.DefaultAPIKeyHeader: key}
	delete(m, "multiValueHeaders")
	out, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return out
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

// PathVariant is a spelling of a request path and whether it falls under the route
// pattern /export.
type PathVariant struct {
	Path  string `json:"path"`
	Match bool   `json:"match"`
}

// PathVariants returns the table in path-variants.json, beside this file: the spellings
// of request paths that a backend resolves to /export (and must match the route /export)
// and those it does not. The configuration's tests and the authorizer's both run it.
func PathVariants(t testing.TB) []PathVariant {
	t.Helper()
	_, file, _, _ := runtime.Caller(0)
	raw, err := os.ReadFile(filepath.Join(filepath.Dir(file), "path-variants.json"))
	if err != nil {
		t.Fatal(err)
	}
	var table struct {
		Variants []PathVariant `json:"variants"`
	}
	if err := json.Unmarshal(raw, &table); err != nil {
		t.Fatal(err)
	}
	return table.Variants
}
