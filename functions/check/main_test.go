package main

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"strings"
	"testing"
)

// runMainEnv makes TestMainFailsInit's child process run main.
const runMainEnv = "BUCKETGATE_CHECK_TEST_RUN_MAIN"

// Inside Lambda (AWS_LAMBDA_RUNTIME_API set) with no REDIS_ADDR, main never reaches the
// Runtime API: it logs one error line saying what to set and exits 1.
func TestMainFailsInit(t *testing.T) {
	if os.Getenv(runMainEnv) == "1" {
		main()
		return
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestMainFailsInit$")
	cmd.Env = []string{runMainEnv + "=1", "AWS_LAMBDA_RUNTIME_API=127.0.0.1:9"}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	err := cmd.Run()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 1 {
		t.Fatalf("main exited with %v, want exit status 1", err)
	}
	for _, want := range []string{`"level":"ERROR"`, `"msg":"init failed"`, `"function":"check"`, "no Redis address: set REDIS_ADDR"} {
		if !strings.Contains(stderr.String(), want) {
			t.Errorf("stderr %q, want %q in it", &stderr, want)
		}
	}
}
