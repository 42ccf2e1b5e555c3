package stress

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/bucketgate/bucketgate/tools/internal/repo"
)

func TestLastExecs(t *testing.T) {
	out := []byte(`fuzz: elapsed: 0s, gathering baseline coverage: 0/146 completed
fuzz: elapsed: 0s, gathering baseline coverage: 146/146 completed, now fuzzing with 2 workers
fuzz: elapsed: 3s, execs: 11253 (3750/sec), new interesting: 4 (total: 150)
fuzz: elapsed: 6s, execs: 23001 (3916/sec), new interesting: 4 (total: 150)
PASS
ok  	github.com/bucketgate/bucketgate/internal/settings	6.074s
`)
	if n, ok := lastExecs(out); !ok || n != 23001 {
		t.Fatalf("lastExecs = %d, %v", n, ok)
	}
	if _, ok := lastExecs([]byte("FAIL\tbuild failed\n")); ok {
		t.Fatal("found execs in a failed build")
	}
}

func TestFindFuzzTargets(t *testing.T) {
	root := t.TempDir()
	files := map[string]string{
		"a/a_test.go":          "package a\n\nfunc FuzzOne(f *testing.F) {}\n\nfunc FuzzTwo(f *testing.F) {}\n\nfunc TestX(t *testing.T) {}\n",
		"a/b/b_test.go":        "package b\n\nfunc FuzzThree(f *testing.F) {}\n",
		"a/a.go":               "package a\n\nfunc FuzzNot(f *testing.F) {}\n",
		"a/testdata/x_test.go": "package x\n\nfunc FuzzData(f *testing.F) {}\n",
		".git/y_test.go":       "package y\n\nfunc FuzzHidden(f *testing.F) {}\n",
		"tools/go.mod":         "module example.com/tools\n",
		"tools/z/z_test.go":    "package z\n\nfunc FuzzNested(f *testing.F) {}\n",
	}
	for name, src := range files {
		path := filepath.Join(root, name)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got, err := findFuzzTargets(root)
	if err != nil {
		t.Fatal(err)
	}
	want := []fuzzTarget{{"./a", "FuzzOne"}, {"./a", "FuzzTwo"}, {"./a/b", "FuzzThree"}}
	if !slices.Equal(got, want) {
		t.Fatalf("got %v, want %v", got, want)
	}
}

// The product's own fuzz targets are found, those of the engine among them.
func TestFindsTheProductsFuzzTargets(t *testing.T) {
	root, err := repo.Root()
	if err != nil {
		t.Fatal(err)
	}
	got, err := findFuzzTargets(root)
	if err != nil {
		t.Fatal(err)
	}
	dirs := map[string]bool{}
	for _, ft := range got {
		dirs[ft.dir] = true
	}
	if len(got) < 2 || !dirs["./internal/bucket"] {
		t.Fatalf("found %v", got)
	}
}

// Canned fuzz outputs: a run fails the stress run only when it found a failing input;
// the coordinator's own deadline under load (golang/go#75804), with no input written,
// is a note, and so is any other error without a failing input.
func TestClassifyFuzz(t *testing.T) {
	const progress = "fuzz: elapsed: 0s, gathering baseline coverage: 0/146 completed\nfuzz: elapsed: 3s, execs: 40304 (13431/sec), new interesting: 4 (total: 150)\n"
	exit1 := errors.New("exit status 1")
	tests := []struct {
		name    string
		output  string
		err     error
		written []string
		failed  bool
		note    string // in the note; "" for none
	}{
		{"pass", progress + "PASS\nok  \tgithub.com/bucketgate/bucketgate/internal/check\t3.1s\n", nil, nil, false, ""},
		{"the coordinator's deadline", progress + "--- FAIL: FuzzParse (3.20s)\n    context deadline exceeded\nFAIL\nexit status 1\nFAIL\tgithub.com/bucketgate/bucketgate/internal/check\t3.202s\n",
			exit1, nil, false, "golang/go#75804"},
		{"a failing input", progress + "--- FAIL: FuzzParse (0.31s)\n    --- FAIL: FuzzParse (0.00s)\n        parse_fuzz_test.go:50: error \"x\" does not start with the field at fault\n\n    Failing input written to testdata/fuzz/FuzzParse/582528ddfad69eb5\n    To re-run:\n    go test -run=FuzzParse/582528ddfad69eb5\nFAIL\n",
			exit1, []string{"582528ddfad69eb5"}, true, ""},
		{"a failing input and the deadline", progress + "    Failing input written to testdata/fuzz/FuzzParse/1\n    context deadline exceeded\nFAIL\n", exit1, nil, true, ""},
		{"an input written, its line lost", progress + "signal: killed\n", errors.New("signal: killed"), []string{"9f2c"}, true, ""},
		{"a seed entry fails", "--- FAIL: FuzzParse (0.00s)\n    --- FAIL: FuzzParse/seed#3 (0.00s)\n        failure while testing seed corpus entry: FuzzParse/seed#3\nFAIL\n", exit1, nil, true, ""},
		{"killed past fuzztime and the slack", progress, errors.New("signal: killed"), nil, false, "signal: killed"},
		// go test exits 0 when -fuzz matches no target (a build tag, a renamed target):
		// nothing was fuzzed, which is no pass.
		{"no target fuzzed", "testing: warning: no fuzz tests to fuzz\nPASS\nok  \tgithub.com/bucketgate/bucketgate/internal/check\t0.01s\n", nil, nil, false, "no input"},
		{"no progress line", "PASS\nok  \tgithub.com/bucketgate/bucketgate/internal/check\t15.1s\n", nil, nil, false, "no input"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			failed, note := classifyFuzz([]byte(tc.output), tc.err, tc.written)
			if failed != tc.failed || (tc.note == "") != (note == "") || !strings.Contains(note, tc.note) {
				t.Fatalf("classifyFuzz = %v, %q; want failed %v, a note with %q", failed, note, tc.failed, tc.note)
			}
		})
	}
}

// A note is reported in the summary, never counted among its failures.
func TestFuzzNoteIsNoFailure(t *testing.T) {
	s := Summary{Fuzz: []FuzzResult{
		{Package: "./internal/check", Target: "FuzzParse", Execs: 40304, Note: "infrastructure: the fuzz coordinator reported its own deadline (golang/go#75804), no failing input"},
		{Package: "./internal/bucket", Target: "FuzzDecode", Execs: 9},
	}}
	if f := s.Failures(); len(f) != 0 {
		t.Fatalf("failures %v, want none", f)
	}
	var out strings.Builder
	s.Write(&out, nil, nil)
	if !strings.Contains(out.String(), "- NOTE, not the product's: fuzz ./internal/check FuzzParse: infrastructure") ||
		!strings.Contains(out.String(), "| ./internal/check | FuzzParse | 40304 | infrastructure note (below) |") {
		t.Fatalf("summary:\n%s", &out)
	}
}
