// Package docs_test holds the README, CONTRIBUTING.md, docs/ and events/README.md to the
// code: links, tables of contents, the commands and flags they show, and their
// transcripts. It has no other files: it only tests. Paths are written relative to the
// repository's root (inRoot).
package docs_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
)

// root is the repository's root, from this package's directory. Paths are written
// relative to it and opened through it, so that go test's cache sees the files read.
const root = ".."

// inRoot returns the path of p, relative to the repository's root, from here.
func inRoot(p string) string { return filepath.Join(root, p) }

// docFiles returns the documents a reader is sent to: the README, CONTRIBUTING.md,
// every docs/*.md and events/README.md (the measured reports apart).
func docFiles(t *testing.T) []string {
	t.Helper()
	return append([]string{"README.md", "CONTRIBUTING.md", "events/README.md", "examples/README.md"}, topicDocs(t)...)
}

// topicDocs returns docs/*.md, relative to the repository's root.
func topicDocs(t *testing.T) []string {
	t.Helper()
	docs, err := filepath.Glob(inRoot("docs/*.md"))
	if err != nil || len(docs) < 7 {
		t.Fatalf("docs/*.md: %v %v", docs, err)
	}
	for i, d := range docs {
		docs[i], _ = filepath.Rel(root, d)
	}
	return docs
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(inRoot(path))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// tocLines is how far into a document its table of contents must be.
const tocLines = 40

var tocItem = regexp.MustCompile(`^- \[[^\]]+\]\(#([^)]+)\)$`)

// Every docs/*.md and CONTRIBUTING.md opens with its table of contents: within its first
// lines, a list of links to its own sections, every second-level heading among them.
func TestEveryDocOpensWithItsContents(t *testing.T) {
	for _, doc := range append(topicDocs(t), "CONTRIBUTING.md") {
		text := readFile(t, doc)
		lines := strings.Split(text, "\n")
		var listed []string
		for _, line := range lines[:min(tocLines, len(lines))] {
			if m := tocItem.FindStringSubmatch(line); m != nil {
				listed = append(listed, m[1])
			}
		}
		if len(listed) < 2 {
			t.Errorf("%s: no table of contents in its first %d lines", doc, tocLines)
			continue
		}
		for _, anchor := range listed {
			if !hasAnchor(text, anchor) {
				t.Errorf("%s: its contents link #%s, which is no heading of it", doc, anchor)
			}
		}
		for _, h := range unlisted(text, listed) {
			t.Errorf("%s: section %q is not in its table of contents", doc, h)
		}
	}
}

// unlisted returns the second-level headings of the Markdown text whose anchors are not
// in listed.
func unlisted(text string, listed []string) []string {
	var out []string
	for _, h := range anchors(text) {
		if h.level == 2 && !slices.Contains(listed, h.anchor) {
			out = append(out, h.text)
		}
	}
	return out
}

// unlisted reads the sections a renderer shows: a ## line of a code block is none, and a
// repeated heading is listed by its own anchor (-1, -2), not its first's.
func TestUnlisted(t *testing.T) {
	const doc = "# Guide\n\n## Usage\n\n```sh\n## a comment\n```\n\n## Usage\n\n### Detail\n\n## Limits\n"
	for _, tc := range []struct {
		name   string
		listed []string
		want   []string
	}{
		{"every section listed", []string{"usage", "usage-1", "limits"}, nil},
		{"a repeat's own anchor missing", []string{"usage", "limits"}, []string{"Usage"}},
		{"the first's anchor missing", []string{"usage-1", "limits"}, []string{"Usage"}},
		{"a section missing", []string{"usage", "usage-1"}, []string{"Limits"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := unlisted(doc, tc.listed); !slices.Equal(got, tc.want) {
				t.Errorf("unlisted(%v) = %q, want %q", tc.listed, got, tc.want)
			}
		})
	}
}

// The README stays a pitch and two quick starts: at most 250 lines.
func TestREADMEIsShort(t *testing.T) {
	if n := strings.Count(readFile(t, "README.md"), "\n"); n > 250 {
		t.Errorf("README.md has %d lines, want at most 250: move the reference to docs/", n)
	}
}

// The layout is written once, in docs/design.md.
func TestLayoutWrittenOnce(t *testing.T) {
	layout := regexp.MustCompile(`(?m)^internal/bucket\s{2,}\S`)
	var in []string
	for _, doc := range docFiles(t) {
		if layout.MatchString(readFile(t, doc)) {
			in = append(in, doc)
		}
	}
	if !slices.Equal(in, []string{"docs/design.md"}) {
		t.Errorf("the layout is written in %v, want docs/design.md alone", in)
	}
}

// events/README.md lists every file in events/.
func TestEveryEventListed(t *testing.T) {
	readme := readFile(t, "events/README.md")
	entries, err := os.ReadDir(inRoot("events"))
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if e.Name() != "README.md" && !strings.Contains(readme, "\n| `"+e.Name()+"` |") {
			t.Errorf("events/README.md has no row for %s", e.Name())
		}
	}
	if len(entries) < 9 {
		t.Fatalf("%d files in events/: is the directory right?", len(entries))
	}
}

// binaries are the commands built once for the tests that run them.
var binaries struct {
	once sync.Once
	dir  string
	err  error
}

// command returns the path of the repository's command name (bucketgate,
// bucketgate-local), built once into a directory of its own.
func command(t *testing.T, name string) string {
	t.Helper()
	binaries.once.Do(func() {
		binaries.dir, binaries.err = os.MkdirTemp("", "bucketgate-docs")
		for _, c := range []string{"bucketgate", "bucketgate-local"} {
			if binaries.err != nil {
				return
			}
			build := exec.Command("go", "build", "-o", filepath.Join(binaries.dir, c), "./cmd/"+c)
			build.Dir = root
			out, err := build.CombinedOutput()
			if err != nil {
				binaries.err = fmt.Errorf("go build ./cmd/%s: %v\n%s", c, err, out)
			}
		}
	})
	if binaries.err != nil {
		t.Fatal(binaries.err)
	}
	return filepath.Join(binaries.dir, name)
}

// cleanEnv is an environment with none of the variables the commands read: the
// commands run as on a fresh machine, whatever the test's own environment holds.
func cleanEnv(extra ...string) []string {
	env := []string{"PATH=" + os.Getenv("PATH"), "HOME=" + os.Getenv("HOME")}
	for _, k := range []string{"TMPDIR", "GOCACHE", "GOMODCACHE", "GOPATH", "GOPROXY", "GOFLAGS"} {
		if v, ok := os.LookupEnv(k); ok {
			env = append(env, k+"="+v)
		}
	}
	return append(env, extra...)
}

// TestMain runs the tests, then removes the commands they built (command): each run
// left them behind in the temporary directory, about 72 MB a run.
func TestMain(m *testing.M) {
	code := m.Run()
	if binaries.dir != "" {
		if err := os.RemoveAll(binaries.dir); err != nil {
			fmt.Fprintf(os.Stderr, "the commands the tests built: %v\n", err)
		}
	}
	os.Exit(code)
}

// inChild is the variable that makes TestCommandsRemovedAfterTheRun build the commands
// and end, in the run it starts.
const inChild = "BUCKETGATE_DOCS_TEST_CHILD"

// A run of the tests leaves nothing in the temporary directory: the commands it built
// were left there, about 72 MB a run, until some hundred runs filled a machine's disk.
func TestCommandsRemovedAfterTheRun(t *testing.T) {
	if os.Getenv(inChild) != "" {
		command(t, "bucketgate")
		return
	}
	tmp := t.TempDir()
	child := exec.Command(os.Args[0], "-test.run=^TestCommandsRemovedAfterTheRun$")
	child.Env = append(os.Environ(), "TMPDIR="+tmp, inChild+"=1")
	if out, err := child.CombinedOutput(); err != nil {
		t.Fatalf("the run: %v\n%s", err, out)
	}
	left, err := os.ReadDir(tmp)
	if err != nil {
		t.Fatal(err)
	}
	if len(left) > 0 {
		t.Errorf("the run left %d entries in its temporary directory, such as %s", len(left), left[0].Name())
	}
}
