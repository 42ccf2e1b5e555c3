package docs_test

import (
	"context"
	"errors"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/bucketgate/bucketgate/internal/testkit/redistest"
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

// The service that middleware.Example is, run as a program whose port is taken (by this
// test), exits with a status other than 0, as a service manager's on-failure restart
// and a container's orchestrator need to see: it does not log the error and then shut
// down as cleanly as after a SIGTERM. The Example's file is built as package main with
// its Redis (a miniredis here) and its address (the taken one) put in.
func TestExampleExitsOnAListenError(t *testing.T) {
	m, _ := redistest.Mini(t)
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	src := readFile(t, "middleware/example_test.go")
	for old, new := range map[string]string{
		"package middleware_test\n": "package main\n",
		`"cache.internal:6379"`:     strconv.Quote(m.Addr()),
		`Addr: ":8080"`:             "Addr: " + strconv.Quote(taken.Addr().String()),
	} {
		if !strings.Contains(src, old) {
			t.Fatalf("middleware/example_test.go has no %q", old)
		}
		src = strings.ReplaceAll(src, old, new)
	}
	dir, err := os.MkdirTemp(inRoot("middleware"), "_example") // in the module, to import it; go ./... skips it
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	write(t, filepath.Join(dir, "main.go"), src+"\nfunc main() { Example() }\n")
	program := filepath.Join(t.TempDir(), "service")
	build := exec.Command("go", "build", "-o", program, ".")
	build.Dir = dir
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("middleware.Example does not build as a program: %v\n%s", err, out)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute) // a hang is a failure, not a wait
	defer cancel()
	run := exec.CommandContext(ctx, program)
	run.Env = append(os.Environ(), "RATE_LIMIT_CONFIG=defaultPlan: free\nplans: {free: [{name: burst, capacity: 3, refill: 1, per: day}]}", slowMachineTimeout)
	out, err := run.CombinedOutput()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() < 1 || !strings.Contains(string(out), "address already in use") {
		t.Fatalf("the Example on a taken port: %v (%s), want an exit status above 0 after naming the error", err, out)
	}
}
