package stress

import (
	"fmt"
	"os"
	"sync"
)

// harness is the redistest.TB of a stress run: a program, not a test. Fatalf and Skipf
// (redis-server missing) end the run with an error; Cleanup functions run, last first,
// when the run is done, stopping every server it started.
type harness struct {
	root string

	mu       sync.Mutex
	cleanups []func()
}

// fatal is the panic value of harness.Fatalf, recovered by Run.
type fatal struct{ err error }

// newHarness makes a harness whose temporary directories live under a new directory.
func newHarness() (*harness, error) {
	root, err := os.MkdirTemp("", "bucketgate-stress-")
	if err != nil {
		return nil, fmt.Errorf("stress: %w", err)
	}
	return &harness{root: root}, nil
}

// Helper does nothing: there is no test log to attribute lines in.
func (h *harness) Helper() {}

// Fatalf ends the run with the formatted error.
func (h *harness) Fatalf(format string, args ...any) { panic(fatal{fmt.Errorf(format, args...)}) }

// Skipf ends the run too: a stress run needs every part it asks for.
func (h *harness) Skipf(format string, args ...any) { h.Fatalf(format, args...) }

// TempDir returns a new directory, removed when the run is done.
func (h *harness) TempDir() string {
	dir, err := os.MkdirTemp(h.root, "")
	if err != nil {
		h.Fatalf("stress: %v", err)
	}
	return dir
}

// Cleanup registers f to run when the run is done.
func (h *harness) Cleanup(f func()) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.cleanups = append(h.cleanups, f)
}

// close runs the cleanups, last registered first, and removes the directories.
func (h *harness) close() {
	h.mu.Lock()
	fs := h.cleanups
	h.cleanups = nil
	h.mu.Unlock()
	for i := len(fs) - 1; i >= 0; i-- {
		fs[i]()
	}
	_ = os.RemoveAll(h.root)
}
