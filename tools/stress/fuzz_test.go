package stress

import (
	"os"
	"path/filepath"
	"slices"
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
