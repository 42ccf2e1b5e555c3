package main

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/aws/aws-lambda-go/lambda"
	"github.com/aws/aws-lambda-go/lambda/messages"

	"github.com/bucketgate/bucketgate/internal/settings"
	"github.com/bucketgate/bucketgate/internal/testkit/lambdatest"
)

// lambdaFailing is a Lambda endpoint that refuses every Invoke with status and the
// service error errorType, counting the calls.
func lambdaFailing(t *testing.T, status int, errorType string) *atomic.Int32 {
	t.Helper()
	var calls atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		calls.Add(1)
		lambdatest.ServiceError(w, status, errorType, errorType+" from the test")
	}))
	t.Cleanup(srv.Close)
	localAWS(t)
	t.Setenv("AWS_ENDPOINT_URL_LAMBDA", srv.URL)
	t.Setenv("AWS_MAX_ATTEMPTS", "2") // one retry, after a short backoff
	return &calls
}

// localAWS sets the AWS SDK's region and static credentials for the rest of t, and keeps
// it from reading this machine's AWS files or the instance metadata service.
func localAWS(t *testing.T) {
	t.Helper()
	for k, v := range map[string]string{
		"AWS_REGION": "us-east-1", "AWS_ACCESS_KEY_ID": "local", "AWS_SECRET_ACCESS_KEY": "local",
		"AWS_EC2_METADATA_DISABLED": "true", "AWS_CONFIG_FILE": os.DevNull, "AWS_SHARED_CREDENTIALS_FILE": os.DevNull,
	} {
		t.Setenv(k, v)
	}
}

// The service's refusals say what to do, and the SDK retries a failed reset (the
// service's 503), a throttled refund (429) and a refund that failed with a 503, which may
// have come after it ran, as configured (AWS_MAX_ATTEMPTS): the refund carries one
// requestId on every attempt, so that the function applies it once.
func TestInvokeErrors(t *testing.T) {
	tests := []struct {
		name      string
		status    int
		errorType string
		args      []string
		want      string
		calls     int32
	}{
		{"refund, service error", http.StatusServiceUnavailable, "ServiceException", []string{"refund", "--cost", "1", "203.0.113.10"}, "ServiceException", 2},
		{"reset, service error", http.StatusServiceUnavailable, "ServiceException", []string{"reset", "203.0.113.10"}, "ServiceException", 2},
		{"refund, throttled", http.StatusTooManyRequests, "TooManyRequestsException", []string{"refund", "--cost", "1", "203.0.113.10"}, "TooManyRequestsException", 2},
		{"access denied", http.StatusForbidden, "AccessDeniedException", []string{"show", "203.0.113.10"},
			"not allowed to invoke fn: these credentials need lambda:InvokeFunction on it", 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			calls := lambdaFailing(t, tc.status, tc.errorType)
			c := &cli{t: t, env: map[string]string{envCheckFunction: "fn"}}
			c.fails(exitError, tc.want, append([]string{"buckets"}, tc.args...)...)
			if n := calls.Load(); n != tc.calls {
				t.Fatalf("%d calls, want %d", n, tc.calls)
			}
		})
	}
}

// Without a region (and no endpoint of its own), a command fails before any call with an
// error naming AWS_REGION, not the SDK's "Missing Region".
func TestNoRegion(t *testing.T) {
	localAWS(t)
	for _, k := range []string{"AWS_REGION", "AWS_DEFAULT_REGION", "AWS_ENDPOINT_URL", "AWS_ENDPOINT_URL_DYNAMODB", "AWS_ENDPOINT_URL_LAMBDA"} {
		t.Setenv(k, "")
	}
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"keys", []string{"keys", "list"}, "table " + table + ": no AWS region: set AWS_REGION (or the profile's region) to the table's"},
		{"config", []string{"config", "history"}, "table " + table + ": no AWS region"},
		{"buckets", []string{"buckets", "show", "203.0.113.10"}, "function fn: no AWS region: set AWS_REGION (or the profile's region) to the function's"},
		{"usage", []string{"usage", "203.0.113.10"}, "function fn: no AWS region"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := &cli{t: t, env: map[string]string{settings.EnvRegistryTable: table, envCheckFunction: "fn"}}
			c.fails(exitError, "bucketgate: "+tc.want, tc.args...)
		})
	}
}

// A table or a function that is not found is named with the region it was looked for
// in: in another region than the deployment's, the advice to create a table would put
// keys where no function reads them.
func TestNotFoundNamesTheRegion(t *testing.T) {
	t.Run("table", func(t *testing.T) {
		c := newCLI(t)
		t.Setenv("AWS_REGION", "eu-west-3")
		c.fails(exitError, "table bucketgate-keys does not exist in region eu-west-3: check the region (AWS_REGION or the profile's) and the table's name", "keys", "list")
	})
	t.Run("function", func(t *testing.T) {
		lambdaFailing(t, http.StatusNotFound, "ResourceNotFoundException")
		t.Setenv("AWS_REGION", "eu-west-3")
		c := &cli{t: t, env: map[string]string{envCheckFunction: "fn"}}
		c.fails(exitError, "no function fn in region eu-west-3: check the region (AWS_REGION or the profile's), name the deployed stack", "buckets", "show", "203.0.113.10")
	})
	// The function to name is the operator function: the stack's check function refuses
	// the operator's operations.
	t.Run("the output that names it", func(t *testing.T) {
		lambdaFailing(t, http.StatusNotFound, "ResourceNotFoundException")
		c := &cli{t: t, env: map[string]string{envCheckFunction: "fn"}}
		c.fails(exitError, "or set CHECK_FUNCTION or --function to the operator function's name (the stack's output OperatorFunctionName, or CheckFunctionName for a stack without one)", "buckets", "reset", "203.0.113.10")
	})
}

// timingOut is a function that fails as Lambda reports a timeout: after it may have
// given the tokens back.
type timingOut struct{}

func (timingOut) Invoke(context.Context, []byte) ([]byte, error) {
	return nil, messages.InvokeResponse_Error{Type: "Sandbox.Timedout", Message: "Task timed out after 3.00 seconds"}
}

// A function that failed (a timeout, a crash) may have refunded or reset before it
// failed: the error says so, and says to show the bucket before sending a refund again,
// which would give its tokens back twice.
func TestBucketsAfterAFunctionError(t *testing.T) {
	srv := lambdatest.Start(t, map[string]lambda.Handler{"fn": timingOut{}})
	localAWS(t)
	t.Setenv("AWS_ENDPOINT_URL_LAMBDA", srv.URL)
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"refund", []string{"refund", "--cost", "1", "203.0.113.10"}, "Task timed out after 3.00 seconds: the refund may or may not have happened: show the bucket before sending it again"},
		{"reset", []string{"reset", "203.0.113.10"}, "Task timed out after 3.00 seconds: the reset may or may not have happened: show the bucket, or send it again"},
		{"show", []string{"show", "203.0.113.10"}, "Task timed out after 3.00 seconds: the bucket could not be read"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := &cli{t: t, env: map[string]string{envCheckFunction: "fn"}}
			c.fails(exitError, tc.want, append([]string{"buckets"}, tc.args...)...)
		})
	}
}

// A --function or CHECK_FUNCTION that is no function's name or ARN fails before any
// call, saying what one is (a usage error for --function), as --stack does; a name, an
// alias or version after ':', an ARN and a partial ARN are invoked.
func TestFunctionNameChecked(t *testing.T) {
	calls := lambdaFailing(t, http.StatusNotFound, "ResourceNotFoundException")
	arn := "arn:aws:lambda:us-east-1:123456789012:function:bucketgate-operator"
	tests := []struct {
		name     string
		flag     bool // --function, else CHECK_FUNCTION
		function string
		code     int
		want     string
	}{
		{"a space", true, "bucketgate operator", exitUsage, `function "bucketgate operator" (--function) is no function's name or ARN`},
		{"a slash", false, "bucketgate/operator", exitError, `function "bucketgate/operator" (CHECK_FUNCTION) is no function's name or ARN`},
		{"an empty qualifier", true, "bucketgate-operator:", exitUsage, `function "bucketgate-operator:" (--function) is no function's name or ARN`},
		{"too long", true, strings.Repeat("f", 65), exitUsage, "is no function's name or ARN"},
		{"a name", true, "bucketgate-Operator_1", exitError, "no function bucketgate-Operator_1 in region"},
		{"an alias", false, "bucketgate-operator:live", exitError, "no function bucketgate-operator:live in region"},
		{"a version", true, "bucketgate-operator:$LATEST", exitError, "no function bucketgate-operator:$LATEST in region"},
		{"an ARN", true, arn + ":7", exitError, "no function " + arn + ":7 in region"},
		{"a partial ARN", true, "123456789012:function:bucketgate-operator", exitError, "no function 123456789012:function:bucketgate-operator in region"},
	}
	// Before the table is read for --plan, or --stack's outputs for the function: any
	// endpoint answers at the Lambda server, counted, with an error.
	t.Setenv("AWS_ENDPOINT_URL_DYNAMODB", os.Getenv("AWS_ENDPOINT_URL_LAMBDA"))
	t.Setenv("AWS_ENDPOINT_URL_CLOUDFORMATION", os.Getenv("AWS_ENDPOINT_URL_LAMBDA"))
	t.Run("before the table and the stack", func(t *testing.T) {
		c := &cli{t: t, env: map[string]string{settings.EnvRegistryTable: "bucketgate-keys", envStack: "bucketgate"}}
		before := calls.Load()
		c.fails(exitUsage, "is no function's name or ARN", "buckets", "show", "--plan", "pro", "--function", "bucketgate operator", "203.0.113.10")
		c.fails(exitUsage, "is no function's name or ARN", "usage", "--function", "bucketgate operator", "key:"+strings.Repeat("a", 32))
		if calls.Load() != before {
			t.Errorf("called AWS for a function that is no function's name")
		}
	})
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := &cli{t: t, env: map[string]string{}}
			args := []string{"buckets", "show", "203.0.113.10"}
			if tc.flag {
				args = []string{"buckets", "show", "--function", tc.function, "203.0.113.10"}
			} else {
				c.env[envCheckFunction] = tc.function
			}
			before := calls.Load()
			c.fails(tc.code, tc.want, args...)
			if called := calls.Load() != before; called != (tc.code == exitError && !strings.Contains(tc.want, "no function's name")) {
				t.Errorf("%s: called Lambda: %v", tc.function, called)
			}
		})
	}
}
