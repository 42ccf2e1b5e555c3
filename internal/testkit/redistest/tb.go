package redistest

// TB is the part of testing.TB that starting and stopping servers needs. Every
// testing.TB is one; a program outside go test (the stress harness) supplies its own,
// whose Fatalf and Skipf end the run and whose Cleanup functions run when it is done.
type TB interface {
	Helper()
	Fatalf(format string, args ...any)
	Skipf(format string, args ...any)
	TempDir() string
	Cleanup(f func())
}
