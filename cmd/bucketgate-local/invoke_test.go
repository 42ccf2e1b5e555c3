package main

import (
	"bytes"
	"context"
	"encoding/json"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/bucketgate/bucketgate/checkapi"
	"github.com/bucketgate/bucketgate/internal/settings"
	"github.com/bucketgate/bucketgate/internal/testkit/dynalite"
	"github.com/bucketgate/bucketgate/internal/testkit/samples"
)

// runCLI runs the command line args with env and returns the exit status and output.
func runCLI(t *testing.T, env map[string]string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errOut bytes.Buffer
	code = run(context.Background(), args, getenvOf(env), &out, &errOut)
	return code, out.String(), errOut.String()
}

// Every sample event through its function, on the embedded Redis: the reply on
// stdout, a function error as Lambda reports it.
func TestInvokeSampleEvents(t *testing.T) {
	tests := []struct {
		name  string
		env   map[string]string
		args  []string
		want  map[string]any // top-level fields of the reply
		inCtx map[string]any // fields of its "context"
	}{
		{"check single", nil, []string{"check-single.json"},
			map[string]any{"allowed": true, "reason": "ok", "limit": 100.0, "remaining": 99.0, "resetAfterMs": 20.0, "plan": "pro"}, nil},
		{"check invalid is a function error", nil, []string{"check-invalid.json"},
			map[string]any{"errorType": checkapi.ErrorTypeInvalidRequest, "errorMessage": "checks[1].cost: 11 exceeds capacity 10 of rule burst: it could never be allowed"}, nil},
		{"authorizer REST, anonymous", nil, []string{"authorizer-rest.json"},
			map[string]any{"principalId": "ip:203.0.113.10"}, map[string]any{"plan": "free", "remaining": 9.0, "reason": "ok"}},
		{"authorizer with the sample configuration", map[string]string{"RATE_LIMIT_CONFIG_FILE": samples.Path("authorizer-config.yaml")}, []string{"authorizer-rest-pro.json"},
			nil, map[string]any{"plan": "pro", "remaining": 98.0}},
		{"authorizer with the configuration beside the event", nil, []string{"authorizer-rest-pro.json"},
			map[string]any{"principalId": "key:d6235c28c26508027bdf89583d20ed0a"}, map[string]any{"plan": "pro", "remaining": 98.0}},
		{"a configuration given wins", map[string]string{"RATE_LIMIT_CONFIG": "{defaultPlan: free, plans: {free: [{name: burst, capacity: 10, refillPerSecond: 1}]}}"}, []string{"authorizer-rest-pro.json"},
			map[string]any{"principalId": "ip:198.51.100.23"}, map[string]any{"plan": "free"}},
		{"FUNCTION chosen by flag", nil, []string{"-function", "check", "authorizer-rest.json"},
			map[string]any{"errorType": checkapi.ErrorTypeInvalidRequest}, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			args := append([]string{"invoke"}, tc.args...)
			args[len(args)-1] = samples.Path(args[len(args)-1])
			code, stdout, stderr := runCLI(t, tc.env, args...)
			if code != exitOK {
				t.Fatalf("exit %d, stderr: %s", code, stderr)
			}
			var reply map[string]any
			if err := json.Unmarshal([]byte(stdout), &reply); err != nil {
				t.Fatalf("stdout is not one JSON reply: %v\n%s", err, stdout)
			}
			for k, want := range tc.want {
				if reply[k] != want {
					t.Errorf("%s = %#v, want %#v (reply %s)", k, reply[k], want, stdout)
				}
			}
			ctx, _ := reply["context"].(map[string]any)
			for k, want := range tc.inCtx {
				if ctx[k] != want {
					t.Errorf("context %s = %#v, want %#v (reply %s)", k, ctx[k], want, stdout)
				}
			}
			// The sample configuration, when it applies, is named on stderr: never silently.
			if named := strings.Contains(stderr, "RATE_LIMIT_CONFIG_FILE="+samples.Path("authorizer-config.yaml")+", the sample events' configuration"); named != (tc.env == nil && functionOf(args[len(args)-1]) == "authorizer" && tc.args[0] != "-function") {
				t.Errorf("stderr %q: names the sample configuration %v", stderr, named)
			}
			if _, isErr := reply["errorType"]; isErr != strings.Contains(stderr, "function error") {
				t.Errorf("stderr %q: want it to say function error exactly when the reply is one", stderr)
			}
		})
	}
}

func TestFunctionOf(t *testing.T) {
	tests := []struct{ event, want string }{
		{"events/check-single.json", "check"},
		{"events/authorizer-rest-pro.json", "authorizer"},
		{"/tmp/check.json", "check"},
		{"scores.json", "scores"},
	}
	for _, tc := range tests {
		if got := functionOf(tc.event); got != tc.want {
			t.Errorf("functionOf(%q) = %q, want %q", tc.event, got, tc.want)
		}
	}
}

func TestCommandLineErrors(t *testing.T) {
	other := filepath.Join(t.TempDir(), "orders-1.json")
	if err := os.WriteFile(other, []byte(`{}`), 0o600); err != nil {
		t.Fatal(err)
	}
	busy, err := net.Listen("tcp", "127.0.0.1:0") // another process's port
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	busyPort := busy.Addr().(*net.TCPAddr).Port // the suggestion is another port: the next
	tests := []struct {
		name     string
		env      map[string]string
		args     []string
		wantCode int
		want     string // in stderr
	}{
		{"no subcommand", nil, nil, exitUsage, "name a subcommand"},
		{"unknown subcommand", nil, []string{"deploy"}, exitUsage, `unknown subcommand "deploy"`},
		{"invoke without event", nil, []string{"invoke"}, exitUsage, "want 1 argument"},
		{"serve with an argument", nil, []string{"serve", "extra"}, exitUsage, "want 0 argument"},
		{"unknown flag", nil, []string{"serve", "-port", "1"}, exitUsage, "-port"},
		{"function not in the file name", nil, []string{"invoke", other}, exitUsage, `no function "orders"`},
		{"unknown function", nil, []string{"invoke", "-function", "billing", samples.Path("check-single.json")}, exitUsage, "want -function authorizer or check"},
		{"missing event file", nil, []string{"invoke", "check-nonexistent.json"}, exitError, "check-nonexistent.json"},
		{"function init fails", map[string]string{"FAIL_MODE": "ajar"}, []string{"invoke", samples.Path("check-single.json")}, exitError, "check init: settings: FAIL_MODE"},
		{"address cannot be listened on", nil, []string{"serve", "-addr", "256.0.0.1:1"}, exitError, "256.0.0.1"},
		{"port in use", nil, []string{"serve", "-addr", busy.Addr().String()}, exitError, "-addr " + busy.Addr().String() + ": the port is in use: stop what listens there, or pick another port (make run PORT=" + strconv.Itoa(busyPort+1) + ")"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			code, stdout, stderr := runCLI(t, tc.env, tc.args...)
			if code != tc.wantCode || !strings.Contains(stderr, tc.want) {
				t.Fatalf("exit %d, stderr %q; want exit %d and %q", code, stderr, tc.wantCode, tc.want)
			}
			if stdout != "" {
				t.Errorf("stdout %q, want nothing", stdout)
			}
		})
	}
}

func TestHelp(t *testing.T) {
	for _, args := range [][]string{{"help"}, {"serve", "-h"}, {"invoke", "-help"}} {
		if code, stdout, _ := runCLI(t, nil, args...); code != exitOK || !strings.Contains(stdout, "bucketgate-local serve") {
			t.Errorf("%v: exit %d, stdout %q", args, code, stdout)
		}
	}
}

// An event file that is not JSON is refused before any function runs, as the Lambda
// service refuses such a payload (InvalidRequestContentException), with the line and
// column of the fault in the file: the functions' own errors named a byte offset, or
// the first field they could not read, and the authorizer's an error type "wrapError".
func TestInvokeEventNotJSON(t *testing.T) {
	tests := []struct {
		name, event, want string
	}{
		{"a comma missing", "{\n  \"key\": \"tenant-42\",\n  \"plan\": \"pro\"\n  \"cost\": 2\n}\n", "(line 4, column 3)"},
		{"a comma too many", "{\n  \"key\": \"tenant-42\",\n  \"plan\": \"pro\",\n}\n", "(line 4, column 1)"},
		{"cut short", "{\n  \"key\": \"tenant-42\",\n  \"plan\": \"pro\"\n", "(line 3, column 16)"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			file := filepath.Join(t.TempDir(), "check-edited.json")
			if err := os.WriteFile(file, []byte(tc.event), 0o600); err != nil {
				t.Fatal(err)
			}
			code, stdout, stderr := runCLI(t, nil, "invoke", file)
			want := file + ": not JSON " + tc.want + ": "
			if code != exitError || !strings.Contains(stderr, want) || !strings.Contains(stderr, "not JSON") {
				t.Fatalf("exit %d, stderr %q; want exit %d and %q, not JSON", code, stderr, exitError, want)
			}
			if stdout != "" {
				t.Errorf("stdout %q: a function ran", stdout)
			}
		})
	}
}

// With REGISTRY_TABLE set (as docs/keys.md's session exports it), an authorizer event
// runs against the table, which is the registry, and not with the sample configuration
// beside it: that configuration lists the sample key, which a document beside a table
// may not, and the authorizer's init failed telling to remove the key from a document
// nobody had given.
func TestInvokeWithARegistryTable(t *testing.T) {
	dynalite.Table(t, "bucketgate-keys")
	env := map[string]string{settings.EnvRegistryTable: "bucketgate-keys"}
	tests := []struct {
		name, event, principal string
	}{
		{"anonymous", "authorizer-rest.json", "ip:203.0.113.10"},
		{"the sample key, which the table does not have", "authorizer-rest-pro.json", "ip:198.51.100.23"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			code, stdout, stderr := runCLI(t, env, "invoke", samples.Path(tc.event))
			if code != exitOK {
				t.Fatalf("exit %d, stderr: %s", code, stderr)
			}
			var reply struct {
				PrincipalID string         `json:"principalId"`
				Context     map[string]any `json:"context"`
			}
			if err := json.Unmarshal([]byte(stdout), &reply); err != nil {
				t.Fatalf("stdout is not one JSON reply: %v\n%s", err, stdout)
			}
			if reply.PrincipalID != tc.principal || reply.Context["plan"] != "free" {
				t.Errorf("principal %q on plan %v, want %q on free: %s", reply.PrincipalID, reply.Context["plan"], tc.principal, stdout)
			}
			if !strings.Contains(stderr, "REGISTRY_TABLE=bucketgate-keys is the registry: the sample events' configuration") {
				t.Errorf("stderr does not say the sample configuration is not used: %s", stderr)
			}
		})
	}
}

// An event the authorizer cannot answer is a function error whose errorType says what
// happened, BadEventError, as aws-lambda-go names it after the error's Go type: it was
// "wrapError", fmt's type, which told an operator reading Lambda's logs nothing.
func TestInvokeAuthorizerBadEventType(t *testing.T) {
	tests := []struct{ name, event, want string }{
		{"a TOKEN authorizer's event", `{"type":"TOKEN","methodArn":"arn:aws:execute-api:us-east-1:1:a/s/GET/x"}`, "configure a REQUEST authorizer"},
		{"no methodArn", `{"type":"REQUEST","path":"/x"}`, "methodArn is missing"},
		{"a member given twice", `{"type":"REQUEST","type":"REQUEST"}`, "duplicate object member name"},
		{"an unknown version", `{"type":"REQUEST","version":"3.0"}`, `version "3.0"`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			file := filepath.Join(t.TempDir(), "authorizer-bad.json")
			if err := os.WriteFile(file, []byte(tc.event), 0o600); err != nil {
				t.Fatal(err)
			}
			code, stdout, stderr := runCLI(t, nil, "invoke", file)
			var reply struct{ ErrorType, ErrorMessage string }
			if err := json.Unmarshal([]byte(stdout), &reply); err != nil || code != exitOK {
				t.Fatalf("exit %d, stdout %q (%v), stderr %s", code, stdout, err, stderr)
			}
			if reply.ErrorType != "BadEventError" || !strings.Contains(reply.ErrorMessage, tc.want) {
				t.Errorf("errorType %q, errorMessage %q; want BadEventError and %q", reply.ErrorType, reply.ErrorMessage, tc.want)
			}
		})
	}
}

// A request the authorizer cannot decide, failing closed (Redis down), is a function
// error whose errorType says so, UnavailableError, as the check function's does: it was
// "wrapError", fmt's type.
func TestInvokeAuthorizerUnavailableType(t *testing.T) {
	down := miniAt(t)
	addr := down.Addr()
	down.Close()
	code, stdout, stderr := runCLI(t, map[string]string{"REDIS_ADDR": addr, "FAIL_MODE": "closed"}, "invoke", "../../events/authorizer-rest.json")
	var reply struct{ ErrorType, ErrorMessage string }
	if err := json.Unmarshal([]byte(stdout), &reply); err != nil || code != exitOK {
		t.Fatalf("exit %d, stdout %q (%v), stderr %s", code, stdout, err, stderr)
	}
	if reply.ErrorType != "UnavailableError" || !strings.Contains(reply.ErrorMessage, "rate limiter unavailable") {
		t.Errorf("errorType %q, errorMessage %q; want UnavailableError, rate limiter unavailable", reply.ErrorType, reply.ErrorMessage)
	}
}
