package main

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/alicebob/miniredis/v2"
	"github.com/aws/aws-lambda-go/lambda"
)

// envFunc is a getenv over a fixed environment.
func envFunc(env map[string]string) func(string) string {
	return func(k string) string { return env[k] }
}

func TestNewHandlerFailsWithWhatToSet(t *testing.T) {
	tests := []struct {
		name string
		env  map[string]string
		want string
	}{
		{"no Redis address", map[string]string{}, "set REDIS_ADDR"},
		{"bad inline config", map[string]string{"REDIS_ADDR": "127.0.0.1:1", "RATE_LIMIT_CONFIG": "defaultPlan: gold\nplans: {free: [{name: burst, capacity: 10, refillPerSecond: 1}]}"}, `RATE_LIMIT_CONFIG: rate-limit configuration: defaultPlan: unknown plan "gold"`},
		{"missing config file", map[string]string{"REDIS_ADDR": "127.0.0.1:1", "RATE_LIMIT_CONFIG_FILE": "/nonexistent/limits.yaml"}, "RATE_LIMIT_CONFIG_FILE=/nonexistent/limits.yaml"},
		{"bad fail mode", map[string]string{"REDIS_ADDR": "127.0.0.1:1", "FAIL_MODE": "ajar"}, `FAIL_MODE="ajar"`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := newHandler(envFunc(tc.env), &bytes.Buffer{}, &bytes.Buffer{})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want one containing %q", err, tc.want)
			}
		})
	}
}

func TestNewHandlerWiring(t *testing.T) {
	mr := miniredis.RunT(t)
	mr.SetTime(testTime)
	var metrics, logs bytes.Buffer
	h, err := newHandler(envFunc(map[string]string{"REDIS_ADDR": mr.Addr(), "AWS_LAMBDA_LOG_LEVEL": "DEBUG"}), &metrics, &logs)
	if err != nil {
		t.Fatal(err)
	}
	out, err := lambda.NewHandler(h).Invoke(context.Background(), readEvent(t, "check-single.json"))
	if err != nil {
		t.Fatal(err)
	}
	assertJSONEqual(t, out, `{"allowed":true,"reason":"ok","limit":100,"remaining":99,"retryAfterMs":0,"resetAfterMs":20,"rule":"burst","plan":"pro"}`)
	if !strings.Contains(metrics.String(), `"Function":"check"`) || !strings.Contains(logs.String(), `"msg":"decision"`) {
		t.Fatalf("metrics %q and logs %q: want an EMF line of function check and a debug decision line", &metrics, &logs)
	}
}

// runMainEnv makes TestMainFailsInit's child process run main.
const runMainEnv = "BUCKETGATE_CHECK_TEST_RUN_MAIN"

func TestMainFailsInit(t *testing.T) {
	if os.Getenv(runMainEnv) == "1" {
		main()
		return
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestMainFailsInit$")
	cmd.Env = []string{runMainEnv + "=1", "AWS_LAMBDA_RUNTIME_API=127.0.0.1:9"} // inside Lambda, no REDIS_ADDR
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	err := cmd.Run()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 1 {
		t.Fatalf("main exited with %v, want exit status 1", err)
	}
	if want := "check: init failed: no Redis address: set REDIS_ADDR"; !strings.Contains(stderr.String(), want) {
		t.Fatalf("stderr %q, want %q", &stderr, want)
	}
}
