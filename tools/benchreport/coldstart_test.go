package benchreport

import (
	"context"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

func TestTimeToReady(t *testing.T) {
	ctx := context.Background()
	testdata, err := filepath.Abs("testdata")
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(t.TempDir(), "bootstrap")
	size, err := buildBootstrap(ctx, filepath.Join(testdata, "fakefunction"), runtime.GOOS, runtime.GOARCH, bin)
	if err != nil {
		t.Fatal(err)
	}
	if size <= 0 {
		t.Errorf("size %d, want > 0", size)
	}
	ready, err := timeToReady(ctx, bin, nil)
	if err != nil {
		t.Fatal(err)
	}
	if ready <= 0 {
		t.Errorf("ready after %v, want > 0", ready)
	}

	if _, err := buildBootstrap(ctx, filepath.Join(testdata, "nothing-here"), runtime.GOOS, runtime.GOARCH, bin); err == nil {
		t.Error("building a missing package: want an error")
	}
	if _, err := timeToReady(ctx, "/bin/true", nil); err == nil || !strings.Contains(err.Error(), "exited before asking") {
		t.Errorf("a process that never asks: err = %v", err)
	}
}
