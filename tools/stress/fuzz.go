package stress

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// FuzzResult is one fuzz target's run.
type FuzzResult struct {
	// Package is the target's package directory, relative to the module root.
	Package string
	// Target is the fuzz function's name.
	Target string
	// Execs is how many inputs the fuzzer ran, as its last progress line says.
	Execs int64
	// Failed reports a failing input: one the fuzzer wrote (a new file under
	// testdata/fuzz, or its "Failing input written to" line) or a seed corpus entry that
	// failed. Only that fails the stress run. Tail is the end of the output then, or
	// with a Note.
	Failed bool
	// Note says why a run that found no failing input still ended in error: the fuzz
	// coordinator's own deadline under load (golang/go#75804), or anything else that is
	// not a product failure. Reported, never failed.
	Note string
	Tail string
}

var (
	fuzzFunc  = regexp.MustCompile(`(?m)^func (Fuzz\w+)\(\w+ \*testing\.F\)`)
	fuzzExecs = regexp.MustCompile(`execs: (\d+)`)
)

// fuzzTarget is a fuzz function and the package directory that holds it.
type fuzzTarget struct{ dir, name string }

// findFuzzTargets lists every fuzz function in the _test.go files of the module at
// root, leaving out modules nested in it (tools/) and folders go ignores.
func findFuzzTargets(root string) ([]fuzzTarget, error) {
	var out []fuzzTarget
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && path != root && (ignoredDir(d.Name()) || isModule(path)) {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, "_test.go") {
			return nil
		}
		src, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(root, filepath.Dir(path))
		if err != nil {
			return err
		}
		for _, m := range fuzzFunc.FindAllSubmatch(src, -1) {
			out = append(out, fuzzTarget{dir: "./" + filepath.ToSlash(rel), name: string(m[1])})
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("find fuzz targets: %w", err)
	}
	return out, nil
}

// ignoredDir reports whether go leaves out a folder called name from ./... patterns.
func ignoredDir(name string) bool {
	return strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_") || name == "testdata"
}

// isModule reports whether dir holds a go.mod of its own.
func isModule(dir string) bool {
	_, err := os.Stat(filepath.Join(dir, "go.mod"))
	return err == nil
}

// lastExecs returns the exec count of the fuzzer's last progress line in out.
func lastExecs(out []byte) (int64, bool) {
	m := fuzzExecs.FindAllSubmatch(out, -1)
	if len(m) == 0 {
		return 0, false
	}
	n, err := strconv.ParseInt(string(m[len(m)-1][1]), 10, 64)
	return n, err == nil
}

// tailLines bounds the output quoted for a failed fuzz target.
const tailLines = 15

// tail returns the last tailLines lines of out.
func tail(out []byte) string {
	var lines []string
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for sc.Scan() {
		lines = append(lines, sc.Text())
	}
	return strings.Join(lines[max(0, len(lines)-tailLines):], "\n")
}

// fuzzSlack is how long a fuzz target may run past its fuzz time (building the
// instrumented test binary, the baseline coverage) before it counts as hung.
const fuzzSlack = 3 * time.Minute

// runFuzz runs every fuzz target under root for fuzzTime each, one after another, with
// the go tool goTool. The seed corpora are the targets' own (the sample events of
// events/ among them) and the fuzz cache. Each run is judged by classifyFuzz.
func runFuzz(ctx context.Context, goTool, root string, fuzzTime time.Duration, progress func(FuzzResult)) ([]FuzzResult, error) {
	targets, err := findFuzzTargets(root)
	if err != nil {
		return nil, err
	}
	var out []FuzzResult
	for _, t := range targets {
		corpus := filepath.Join(root, t.dir, "testdata", "fuzz", t.name)
		before := corpusFiles(corpus)
		tctx, cancel := context.WithTimeout(ctx, fuzzTime+fuzzSlack)
		cmd := exec.CommandContext(tctx, goTool, "test", "-run", "^$", "-fuzz", "^"+t.name+"$", "-fuzztime", fuzzTime.String(), t.dir)
		cmd.Dir = root
		output, runErr := cmd.CombinedOutput()
		cancel()
		var written []string
		for name := range corpusFiles(corpus) {
			if !before[name] {
				written = append(written, name)
			}
		}
		execs, _ := lastExecs(output)
		r := FuzzResult{Package: t.dir, Target: t.name, Execs: execs}
		r.Failed, r.Note = classifyFuzz(output, runErr, written)
		if r.Failed || r.Note != "" {
			r.Tail = fmt.Sprintf("%v\n%s", runErr, tail(output))
		}
		progress(r)
		out = append(out, r)
	}
	return out, nil
}

// Lines of go test's fuzzing output that mean an input failed.
const (
	failingInputWritten = "Failing input written to"
	seedEntryFailed     = "failure while testing seed corpus entry"
	deadlineExceeded    = "context deadline exceeded"
)

// classifyFuzz judges one fuzz run from its output, its exit error and the corpus files
// it wrote (written): failed only when it found a failing input (a file written, the
// "Failing input written to" line, a seed corpus entry that failed). An error without
// one is a note: the coordinator's own deadline (golang/go#75804: under load, Go's fuzz
// coordinator can report the end of -fuzztime as a failure), or whatever else stopped
// it, which a failing input would have shown. A run without error that ran no input
// (no progress line with executions: -fuzz matched no target) is a note too, not a pass.
func classifyFuzz(output []byte, runErr error, written []string) (failed bool, note string) {
	switch {
	case len(written) > 0 || bytes.Contains(output, []byte(failingInputWritten)) || bytes.Contains(output, []byte(seedEntryFailed)):
		return true, ""
	case runErr == nil:
		if n, ok := lastExecs(output); !ok || n == 0 {
			return false, "infrastructure: the run ended without error but fuzzed no input"
		}
		return false, ""
	case bytes.Contains(output, []byte(deadlineExceeded)):
		return false, "infrastructure: the fuzz coordinator reported its own deadline (golang/go#75804), no failing input"
	}
	return false, fmt.Sprintf("infrastructure: the run ended with %v and wrote no failing input", runErr)
}

// corpusFiles returns the names of the files in dir, a fuzz target's corpus; none when
// it does not exist.
func corpusFiles(dir string) map[string]bool {
	entries, _ := os.ReadDir(dir) // a missing corpus holds nothing
	files := make(map[string]bool, len(entries))
	for _, e := range entries {
		files[e.Name()] = true
	}
	return files
}
