// Package binaries_test tests the shipped binaries end to end: each function is built
// by its Makefile target (the recipe `sam build` runs, for the host's architecture) and
// run as the Lambda service runs it, against a Runtime API server in the test and a real
// redis-server; the CLI is built as `make build` builds it. The package holds tests
// only.
package binaries_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/bucketgate/bucketgate/checkapi"
	"github.com/bucketgate/bucketgate/internal/app"
	"github.com/bucketgate/bucketgate/internal/telemetry"
	"github.com/bucketgate/bucketgate/internal/testkit/redistest"
	"github.com/bucketgate/bucketgate/internal/testkit/runtimeapi"
	"github.com/bucketgate/bucketgate/internal/testkit/samples"
)

// invokeTimeout bounds one invocation of a binary, and exitTimeout how long a binary
// whose init fails may take to exit: generous, for a loaded machine.
const (
	invokeTimeout = 30 * time.Second
	exitTimeout   = 30 * time.Second
)

// decisionTimeout is REDIS_TIMEOUT_MS for the binaries: a loaded machine must not turn
// a decision into a fail-closed one.
const decisionTimeout = "2000"

// root is the repository's root, where the Makefile is.
const root = "../.."

// testVersion is the VERSION the tests build with: the version the binaries must report.
const testVersion = "v0.0.0-binaries-test"

// bootstraps builds both functions once per test binary run, with VERSION testVersion,
// into a directory that TestMain removes.
var bootstraps = sync.OnceValues(func() (map[string]string, error) {
	dir, err := buildDir()
	if err != nil {
		return nil, err
	}
	out := map[string]string{}
	for _, fn := range []string{"AuthorizerFunction", "CheckFunction"} {
		artifacts := filepath.Join(dir, fn)
		if err := makeIn(root, "build-"+fn, "ARTIFACTS_DIR="+artifacts, "LAMBDA_ARCH="+runtime.GOARCH, "VERSION="+testVersion); err != nil {
			return nil, err
		}
		out[fn] = filepath.Join(artifacts, "bootstrap")
	}
	return out, nil
})

// makeIn runs make with args in dir, with the repository's Makefile.
func makeIn(dir string, args ...string) error {
	makefile, err := filepath.Abs(filepath.Join(root, "Makefile"))
	if err != nil {
		return err
	}
	cmd := exec.Command("make", append([]string{"--no-print-directory", "--makefile", makefile}, args...)...)
	cmd.Dir = dir
	if b, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("make %s: %w\n%s", strings.Join(args, " "), err, b)
	}
	return nil
}

// buildDir returns the directory the tests build in, made on first use and removed by
// TestMain.
var buildDir = sync.OnceValues(func() (string, error) {
	dir, err := os.MkdirTemp("", "bucketgate-binaries-")
	made = dir
	return dir, err
})

// made is the directory buildDir made, if it ran.
var made string

func TestMain(m *testing.M) {
	code := m.Run()
	if made != "" {
		os.RemoveAll(made)
	}
	os.Exit(code)
}

// bootstrap returns the path of the built binary of the function with that logical id.
func bootstrap(t *testing.T, logicalID string) string {
	t.Helper()
	bins, err := bootstraps()
	if err != nil {
		t.Fatal(err)
	}
	return bins[logicalID]
}

// function is a bootstrap process serving a Runtime API server. Its output is read
// only once it has exited (see stop).
type function struct {
	api            *runtimeapi.Server
	stdout, stderr *bytes.Buffer
	cmd            *exec.Cmd
	exited         chan struct{} // closed when the process has exited and its output is all copied
	waitErr        error         // Wait's result, once exited is closed
}

// startFunction runs the binary with only env (and AWS_LAMBDA_RUNTIME_API) in its
// environment, as Lambda does, and stops it when the test ends.
func startFunction(t *testing.T, binary string, env map[string]string) *function {
	t.Helper()
	api, err := runtimeapi.New()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = api.Close() })
	cmd := exec.Command(binary)
	f := &function{api: api, stdout: &bytes.Buffer{}, stderr: &bytes.Buffer{}, cmd: cmd, exited: make(chan struct{})}
	cmd.Env = []string{"AWS_LAMBDA_RUNTIME_API=" + api.Addr}
	for k, v := range env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	cmd.Stdout, cmd.Stderr = f.stdout, f.stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		f.waitErr = cmd.Wait()
		close(f.exited)
	}()
	t.Cleanup(f.stop)
	return f
}

// stop kills the process, if it still runs, and waits until its output is all copied.
func (f *function) stop() {
	_ = f.cmd.Process.Kill()
	<-f.exited
}

// invoke sends payload and returns the function's answer or its *runtimeapi.FunctionError.
func (f *function) invoke(t *testing.T, payload []byte) ([]byte, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), invokeTimeout)
	defer cancel()
	out, err := f.api.Invoke(ctx, payload)
	if err != nil && !errors.As(err, new(*runtimeapi.FunctionError)) {
		f.stop()
		t.Fatalf("invoke: %v\nstderr: %s", err, f.stderr)
	}
	return out, err
}

// The authorizer binary on real Redis: allowed through the burst, then a Deny policy
// with the 429's context; the HTTP API payload too; and an error once Redis is gone.
func TestAuthorizerBinary(t *testing.T) {
	redis := redistest.Start(t)
	f := startFunction(t, bootstrap(t, "AuthorizerFunction"), map[string]string{
		"REDIS_ADDR":       redis.Addr,
		"REDIS_TIMEOUT_MS": decisionTimeout,
		// A burst of 3 refilled at 1 per 20 minutes: the wall clock cannot refill it
		// during the test.
		"RATE_LIMIT_CONFIG": "defaultPlan: free\nplans: {free: [{name: burst, capacity: 3, refill: 3, per: hour}]}",
	})
	rest := samples.Read(t, "authorizer-rest.json")
	for i := range 4 {
		out, err := f.invoke(t, rest)
		if err != nil {
			t.Fatalf("invocation %d: %v", i+1, err)
		}
		var a events.APIGatewayCustomAuthorizerResponse
		if err := json.Unmarshal(out, &a); err != nil || len(a.PolicyDocument.Statement) != 1 {
			t.Fatalf("invocation %d: answer %s: %v", i+1, out, err)
		}
		effect, ctx := a.PolicyDocument.Statement[0].Effect, a.Context
		if i < 3 {
			if effect != "Allow" || ctx["remaining"] != float64(2-i) {
				t.Fatalf("invocation %d: %s, want Allow with %d remaining", i+1, out, 2-i)
			}
			continue
		}
		if effect != "Deny" || ctx["retryAfter"] != 1200.0 || ctx["remaining"] != 0.0 || ctx["limit"] != 3.0 ||
			ctx["rateLimit"] != `"burst";r=0;t=1200` || ctx["reason"] != "limited" || a.PrincipalID != "ip:203.0.113.10" {
			t.Fatalf("invocation 4: %s, want a Deny with the 429's context", out)
		}
		if _, err := time.Parse(time.RFC3339, ctx["resetAt"].(string)); err != nil {
			t.Errorf("resetAt: %v", err)
		}
	}
	// Events the authorizer cannot answer are refused with its own message, nothing
	// decided: an empty payload, and a name given twice (the event would mean two things).
	for _, bad := range []string{"", `{"type":"REQUEST","methodArn":"arn:aws:execute-api:us-east-1:1:a/b/GET/export","path":"/export","path":"/scores"}`} {
		_, err := f.invoke(t, []byte(bad))
		var fe *runtimeapi.FunctionError
		if !errors.As(err, &fe) || !strings.HasPrefix(fe.Message, "not an API Gateway REQUEST authorizer event: ") {
			t.Fatalf("event %q: %v; want the authorizer's own refusal", bad, err)
		}
	}
	out, err := f.invoke(t, samples.Read(t, "authorizer-http.json"))
	var simple events.APIGatewayV2CustomAuthorizerSimpleResponse
	if err != nil || json.Unmarshal(out, &simple) != nil || !simple.IsAuthorized {
		t.Fatalf("HTTP API payload 2.0 (another identity): %s, %v; want isAuthorized", out, err)
	}
	redis.Stop()
	// Not the REST identity: its denial is in the deny cache, which rightly answers it
	// without Redis until its retry-after.
	_, err = f.invoke(t, samples.Read(t, "authorizer-http.json"))
	var fe *runtimeapi.FunctionError
	if !errors.As(err, &fe) || !strings.HasPrefix(fe.Message, "rate limiter unavailable") {
		t.Fatalf("with Redis stopped: %v; want the function error rate limiter unavailable (API Gateway: 503)", err)
	}
	// The metrics of the invocations within a second of the first wait for the first
	// invocation a second or more after it, which writes them with its own.
	time.Sleep(telemetry.DefaultFlushInterval)
	if _, err := f.invoke(t, samples.Read(t, "authorizer-http.json")); err == nil {
		t.Fatal("with Redis stopped: allowed")
	}
	f.stop()
	wantInitLine(t, f, "authorizer")
	metrics := f.stdout.String()
	decisions := map[string]float64{}
	for line := range strings.Lines(metrics) {
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("stdout line %s: %v", line, err)
		}
		if m["Function"] == "authorizer" {
			o, _ := m["Outcome"].(string)
			n, _ := m["Decisions"].(float64)
			decisions[o] += n
		}
	}
	if want := map[string]float64{"allowed": 4, "limited": 1, "unavailable": 2}; !maps.Equal(decisions, want) {
		t.Errorf("decisions by outcome on stdout %v, want %v:\n%s", decisions, want, metrics)
	}
}

// The check function binary on real Redis: one check, a batch, and an invalid request
// answered with the function error type callers match on.
func TestCheckBinary(t *testing.T) {
	redis := redistest.Start(t)
	f := startFunction(t, bootstrap(t, "CheckFunction"), map[string]string{"REDIS_ADDR": redis.Addr, "REDIS_TIMEOUT_MS": decisionTimeout})

	out, err := f.invoke(t, samples.Read(t, "check-single.json"))
	var one checkapi.Response
	if err != nil || json.Unmarshal(out, &one) != nil || !one.Allowed || one.Remaining != 99 || one.Plan != "pro" || one.Rule != "burst" {
		t.Fatalf("single: %s, %v", out, err)
	}

	out, err = f.invoke(t, samples.Read(t, "check-batch.json"))
	var batch checkapi.BatchResult
	if err != nil || json.Unmarshal(out, &batch) != nil || len(batch.Results) != 4 {
		t.Fatalf("batch: %s, %v", out, err)
	}
	// The single check spent one of tenant-42's pro tokens, and pro refills 50 a second:
	// 98 left when the batch came within 20 ms, 99 on a machine slow enough to give it back.
	if r := batch.Results[0]; !r.Allowed || r.Remaining < 98 || r.Remaining > 99 {
		t.Errorf("batch result 0: %+v, want allowed with 98 (or, after 20 ms, 99) remaining", r)
	}

	_, err = f.invoke(t, samples.Read(t, "check-invalid.json"))
	var fe *runtimeapi.FunctionError
	if !errors.As(err, &fe) || fe.Type != checkapi.ErrorTypeInvalidRequest ||
		fe.Message != "checks[1].cost: 11 exceeds capacity 10 of rule burst: it could never be allowed" {
		t.Fatalf("invalid: %#v, want the InvalidRequestError naming checks[1].cost", err)
	}
	f.stop()
	wantInitLine(t, f, "check")
}

// wantInitLine fails t unless the stopped function f logged exactly one init line, at
// info: a JSON object naming the function and the version it was built with. (The
// function's own lines are JSON; aws-lambda-go prints the errors of invocations with
// the standard logger.)
func wantInitLine(t *testing.T, f *function, name string) {
	t.Helper()
	var lines []map[string]any
	for line := range strings.Lines(f.stderr.String()) {
		var l map[string]any
		if !strings.HasPrefix(line, "{") {
			continue
		}
		if err := json.Unmarshal([]byte(line), &l); err != nil {
			t.Fatalf("stderr line %q is not JSON: %v", line, err)
		}
		if l["msg"] == app.MsgInit {
			lines = append(lines, l)
		}
	}
	if len(lines) != 1 {
		t.Fatalf("%d init lines, want 1:\n%s", len(lines), f.stderr)
	}
	l := lines[0]
	if l["level"] != "INFO" || l[app.AttrFunction] != name || l[app.AttrVersion] != testVersion || len(l) != 5 {
		t.Fatalf("init line %v: want level INFO, function %s, version %s and its time", l, name, testVersion)
	}
}

// A binary whose init fails (no REDIS_ADDR) never polls the Runtime API and never
// posts to /runtime/init/error (aws-lambda-go has no call for it): it logs one JSON
// error line naming REDIS_ADDR and exits with status 1, which Lambda reports as
// Runtime.ExitError with that log line in CloudWatch.
func TestBinaryInitError(t *testing.T) {
	tests := []struct{ logicalID, function string }{
		{"AuthorizerFunction", "authorizer"},
		{"CheckFunction", "check"},
	}
	for _, tc := range tests {
		t.Run(tc.logicalID, func(t *testing.T) {
			f := startFunction(t, bootstrap(t, tc.logicalID), nil)
			select {
			case <-f.exited:
			case <-time.After(exitTimeout):
				t.Fatal("the binary did not exit")
			}
			var exit *exec.ExitError
			if !errors.As(f.waitErr, &exit) || exit.ExitCode() != 1 {
				t.Fatalf("exit %v, want status 1", f.waitErr)
			}
			for _, want := range []string{`"level":"ERROR"`, `"msg":"init failed"`, `"function":"` + tc.function + `"`, `"version":"` + testVersion + `"`, "no Redis address: set REDIS_ADDR"} {
				if !strings.Contains(f.stderr.String(), want) {
					t.Errorf("stderr lacks %s:\n%s", want, f.stderr)
				}
			}
			select {
			case ie := <-f.api.InitError():
				t.Errorf("init error posted: %+v; aws-lambda-go was not expected to post one", ie)
			default:
			}
		})
	}
}
