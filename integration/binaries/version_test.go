package binaries_test

import (
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"testing"
	"time"
)

// The CLI built as `make build` builds it (make cli) reports the VERSION it was built
// with, to `bucketgate version` and to `bucketgate --version`.
func TestCLIVersion(t *testing.T) {
	dir, err := buildDir()
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "cli")
	if err := makeIn(root, "cli", "BIN="+bin, "VERSION="+testVersion); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"version"}, {"--version"}} {
		out, err := exec.Command(filepath.Join(bin, "bucketgate"), args...).CombinedOutput()
		if err != nil || string(out) != "bucketgate "+testVersion+"\n" {
			t.Errorf("bucketgate %s: %q, %v; want bucketgate %s", args[0], out, err, testVersion)
		}
	}
}

// Built with no version stamp (go build, as go install builds it), the CLI reports the
// main module's version that the go command recorded in its build info: the tag for
// `go install .../cmd/bucketgate@v0.3.0`, the pseudo-version of a checkout. Built
// without version control information too, it reports (devel), and says on stderr that
// the build carries no version and how to build one that does.
func TestCLIVersionFromBuildInfo(t *testing.T) {
	dir, err := buildDir()
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, buildvcs string
	}{
		{"go build", ""}, // a pseudo-version, or (devel) with -buildvcs=false in GOFLAGS or in a git worktree
		{"without version control information", "-buildvcs=false"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			bin := filepath.Join(dir, "bucketgate-unstamped"+tc.buildvcs)
			args := append([]string{"build", "-C", root, "-o", bin}, strings.Fields(tc.buildvcs)...)
			if out, err := exec.Command("go", append(args, "./cmd/bucketgate")...).CombinedOutput(); err != nil {
				t.Fatalf("go build: %v\n%s", err, out)
			}
			info, err := exec.Command("go", "version", "-m", bin).Output()
			if err != nil {
				t.Fatal(err)
			}
			m := regexp.MustCompile(`(?m)^\tmod\tgithub.com/bucketgate/bucketgate\t(\S+)`).FindSubmatch(info)
			switch {
			case m == nil:
				t.Fatalf("go version -m: no main module line:\n%s", info)
			case tc.buildvcs != "" && string(m[1]) != "(devel)":
				t.Fatalf("go build %s: the build info's version is %s, want (devel)", tc.buildvcs, m[1])
			}
			var stderr strings.Builder
			cmd := exec.Command(bin, "version")
			cmd.Stderr = &stderr
			out, err := cmd.Output()
			if err != nil || string(out) != "bucketgate "+string(m[1])+"\n" {
				t.Fatalf("bucketgate version: %q, %v; want the build info's bucketgate %s", out, err, m[1])
			}
			if devel := string(m[1]) == "(devel)"; devel != strings.Contains(stderr.String(), "this build carries no version") || !devel && stderr.Len() != 0 {
				t.Fatalf("bucketgate version of %s: stderr %q; want a note that it carries no version for (devel) alone", m[1], &stderr)
			}
		})
	}
}

// `sam build` runs a function's Makefile target (BuildMethod makefile) in a scratch copy
// of the sources without .git and .aws-sam (aws-lambda-builders' CustomMakeWorkflow),
// with the repository's Makefile: the function built there reports the version of the
// repository's checkout (git describe --tags --always --dirty), as make build's do.
func TestSAMBuildVersion(t *testing.T) {
	want, err := exec.Command("git", "-C", root, "describe", "--tags", "--always", "--dirty").Output()
	if err != nil {
		t.Fatalf("git describe in %s: %v: the tests run in a git checkout", root, err)
	}
	dir := t.TempDir() // each run's own: a copy into an earlier run's scratch fails
	scratch, artifacts := filepath.Join(dir, "sam-scratch"), filepath.Join(dir, "sam-artifacts")
	if err := copySources(root, scratch); err != nil {
		t.Fatal(err)
	}
	if err := makeIn(scratch, "build-CheckFunction", "ARTIFACTS_DIR="+artifacts, "LAMBDA_ARCH="+runtime.GOARCH); err != nil {
		t.Fatal(err)
	}
	// Without REDIS_ADDR its init fails, on a line that carries the version.
	f := startFunction(t, filepath.Join(artifacts, "bootstrap"), nil)
	select {
	case <-f.exited:
	case <-time.After(exitTimeout):
		t.Fatal("the binary did not exit")
	}
	if v := `"version":"` + strings.TrimSpace(string(want)) + `"`; !strings.Contains(f.stderr.String(), v) {
		t.Fatalf("stderr lacks %s:\n%s", v, f.stderr)
	}
}

// copySources copies the tree at src to dst as sam build copies a function's sources:
// everything but .git and .aws-sam, at any depth.
func copySources(src, dst string) error {
	return filepath.WalkDir(src, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.Name() == ".git" || d.Name() == ".aws-sam" {
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil // a worktree's .git is a file
		}
		rel, err := filepath.Rel(src, path)
		if err != nil {
			return err
		}
		target := filepath.Join(dst, rel)
		switch {
		case d.IsDir():
			return os.MkdirAll(target, 0o755)
		case d.Type()&fs.ModeSymlink != 0:
			link, err := os.Readlink(path)
			if err != nil {
				return err
			}
			return os.Symlink(link, target)
		case !d.Type().IsRegular():
			return errors.New(path + ": not a file, a directory or a link")
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		return os.WriteFile(target, b, info.Mode().Perm())
	})
}
