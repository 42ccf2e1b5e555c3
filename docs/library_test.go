package docs_test

import (
	"slices"
	"strings"
	"testing"
)

// The service that docs/library.md and the middleware's package doc show is
// middleware.Example, which go vet compiles, line for line but for its service's
// routes: a reader who copies either copies a program whose errors are checked (a port
// in use) and whose shutdown closes the Limiter within the stop timeout.
func TestLibraryShowsTheExample(t *testing.T) {
	example := codeLines(goFunc(t, readFile(t, "middleware/example_test.go"), "Example"))
	for _, tc := range []struct {
		name    string
		snippet string
	}{
		{"docs/library.md", codeBlock(t, readFile(t, "docs/library.md"), "## A service, limited", "go")},
		{"the package doc", docSnippet(t, readFile(t, "middleware/middleware.go"))},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rest := example
			for _, line := range codeLines(tc.snippet) {
				i := slices.Index(rest, line)
				if i < 0 {
					t.Fatalf("%q is not a line of middleware.Example (after the lines before it)", line)
				}
				rest = rest[i+1:]
			}
		})
	}
}

// goFunc returns the body of the function name of Go source src.
func goFunc(t *testing.T, src, name string) string {
	t.Helper()
	return between(t, src, "\nfunc "+name+"() {\n", "\n}\n")
}

// docSnippet returns the code block of a Go doc comment in src: its lines indented by
// a tab.
func docSnippet(t *testing.T, src string) string {
	t.Helper()
	var lines []string
	for line := range strings.Lines(src) {
		code, ok := strings.CutPrefix(line, "//\t")
		if !ok && len(lines) > 0 {
			break
		}
		if ok {
			lines = append(lines, code)
		}
	}
	if len(lines) == 0 {
		t.Fatal("no code block in the package doc")
	}
	return strings.Join(lines, "")
}

// codeLines returns the lines of Go code, each without its indentation and its line
// comment, empty ones left out.
func codeLines(code string) []string {
	var lines []string
	for line := range strings.Lines(code) {
		line, _, _ = strings.Cut(line, " //")
		if line = strings.TrimSpace(line); line != "" && !strings.HasPrefix(line, "//") {
			lines = append(lines, line)
		}
	}
	return lines
}

// docs/library.md tells a service that adopts the middleware beside a stack of the
// previous release what waits until the stack is upgraded: they decide on the same keys
// for as long as both run.
func TestLibraryBesideAStackOfThePreviousRelease(t *testing.T) {
	text := strings.Join(strings.Fields(section(t, "docs/library.md", "One set of buckets")), " ")
	for _, says := range []string{"A middleware of 0.3.0 beside a stack that release 0.2 deployed", "(deploy.md#gradual-deployments)", "upgrade notes"} {
		if !strings.Contains(text, says) {
			t.Errorf("docs/library.md's One set of buckets does not say %q", says)
		}
	}
}
