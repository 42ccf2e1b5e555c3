package checkclient_test

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/lambda"
	"github.com/aws/aws-lambda-go/lambda/messages"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/aws-sdk-go-v2/credentials"
	awslambda "github.com/aws/aws-sdk-go-v2/service/lambda"

	"github.com/bucketgate/bucketgate/checkapi"
	"github.com/bucketgate/bucketgate/checkclient"
	"github.com/bucketgate/bucketgate/internal/testkit/lambdatest"
)

// failure is how the first attempt of an invocation fails in TestRetries.
type failure int

const (
	// throttled: Lambda refuses the invocation with 429, before the function runs.
	throttled failure = iota
	// failedAfterRun: the function ran, and the service failed after it with a 500.
	failedAfterRun
	// refused: the connection is refused, so nothing reaches Lambda.
	refused
	// timedOut: the function ran past its timeout (a function error, Sandbox.Timedout).
	timedOut
)

// flaky serves the Invoke API, failing the first invocation as first says and answering
// every later one with a decision (one per check of a batch; a release's says it
// released, a reserve's holds a reservation). Its client retries up to
// three times without waiting.
func flaky(t *testing.T, first failure, opts ...checkclient.Option) (*checkclient.Client, *atomic.Int32, *[]string) {
	t.Helper()
	var invocations atomic.Int32
	var ids []string // the requestIds of every invocation, in order (a batch's, joined)
	ok := checkapi.Response{Allowed: true, Reason: checkapi.ReasonOK, Reservation: "r2.n.m", ExpiresAt: "2999-01-01T00:00:00.000Z"}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var batch struct {
			checkapi.Batch
			checkapi.Request
		}
		if err := json.NewDecoder(r.Body).Decode(&batch); err != nil {
			t.Errorf("request body: %v", err)
		}
		id := batch.RequestID
		for _, c := range batch.Checks {
			id += "," + c.RequestID
		}
		ids = append(ids, id)
		n := invocations.Add(1)
		switch {
		case n == 1 && first == throttled:
			lambdatest.ServiceError(w, http.StatusTooManyRequests, "TooManyRequestsException", "Rate exceeded")
		case n == 1 && first == failedAfterRun:
			lambdatest.ServiceError(w, http.StatusInternalServerError, "ServiceException", "internal failure")
		case n == 1 && first == timedOut:
			functionFailed(w, "Sandbox.Timedout", "Task timed out after 5.00 seconds")
		case batch.Checks != nil:
			results := make([]checkapi.Response, len(batch.Checks))
			for i := range results {
				results[i] = ok
			}
			_ = json.NewEncoder(w).Encode(map[string][]checkapi.Response{"results": results})
		case batch.Op == checkapi.OpRelease:
			released := ok
			released.Released = new(true)
			_ = json.NewEncoder(w).Encode(released)
		default:
			_ = json.NewEncoder(w).Encode(ok)
		}
	}))
	t.Cleanup(srv.Close)

	transport := srv.Client().Transport.(*http.Transport).Clone()
	if first == refused {
		closed, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		closedAddr := closed.Addr().String()
		_ = closed.Close()
		var dials atomic.Int32
		var d net.Dialer
		transport.DialContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
			if dials.Add(1) == 1 {
				addr = closedAddr
			}
			return d.DialContext(ctx, network, addr)
		}
	}
	noWait := retry.BackoffDelayerFunc(func(int, error) (time.Duration, error) { return 0, nil })
	client := awslambda.New(awslambda.Options{
		BaseEndpoint: aws.String(srv.URL),
		Region:       lambdatest.Region,
		Credentials:  credentials.NewStaticCredentialsProvider("AKIDTEST", "secret", ""),
		HTTPClient:   &http.Client{Transport: transport},
		Retryer:      retry.NewStandard(func(o *retry.StandardOptions) { o.MaxAttempts, o.Backoff = 3, noWait }),
	})
	return checkclient.New(client, "fn", opts...), &invocations, &ids
}

// Every invocation keeps the client's retries, one that takes or gives back tokens with
// the same requestId on every attempt, so that the function decides it once; and the
// client's own after a function that timed out. Without requestIds (WithoutRequestIDs),
// one that takes or gives back tokens is sent again only when the function did not run
// (a throttle, a refused connection): after a failure that may have come after it ran (a
// 5xx, a timeout), a second run would take or give back the tokens twice; a peek and a
// reset keep the retries.
func TestRetries(t *testing.T) {
	ctx := context.Background()
	peek := checkapi.Request{Key: "k", Cost: checkapi.Cost(0)}
	refund := checkapi.Request{Key: "k", Plan: "free", Op: checkapi.OpRefund}
	calls := map[string]func(c *checkclient.Client) error{
		"check": func(c *checkclient.Client) error { _, err := c.Check(ctx, checkapi.Request{Key: "k"}); return err },
		"check of cost 5": func(c *checkclient.Client) error {
			_, err := c.Check(ctx, checkapi.Request{Key: "k", Cost: checkapi.Cost(5)})
			return err
		},
		"peek": func(c *checkclient.Client) error { _, err := c.Check(ctx, peek); return err },
		"refund": func(c *checkclient.Client) error {
			_, err := c.Refund(ctx, checkapi.Request{Key: "k", Plan: "free"})
			return err
		},
		"refund through Check": func(c *checkclient.Client) error { _, err := c.Check(ctx, refund); return err },
		"reset": func(c *checkclient.Client) error {
			_, err := c.Reset(ctx, checkapi.Request{Key: "k", Plan: "free"})
			return err
		},
		"batch of peeks": func(c *checkclient.Client) error {
			_, err := c.CheckBatch(ctx, []checkapi.Request{peek, peek})
			return err
		},
		"batch with a check": func(c *checkclient.Client) error {
			_, err := c.CheckBatch(ctx, []checkapi.Request{peek, {Key: "k"}})
			return err
		},
		"batch with a refund": func(c *checkclient.Client) error {
			_, err := c.CheckBatch(ctx, []checkapi.Request{peek, refund})
			return err
		},
		"reserve": func(c *checkclient.Client) error {
			_, err := c.Reserve(ctx, checkapi.Request{Key: "k", Cost: checkapi.Cost(100)})
			return err
		},
		"settle": func(c *checkclient.Client) error {
			_, err := c.Settle(ctx, checkapi.Request{Key: "k"}, "r1.n.m", 80)
			return err
		},
		"cancel": func(c *checkclient.Client) error {
			_, err := c.Cancel(ctx, checkapi.Request{Key: "k"}, "r1.n.m")
			return err
		},
		"settle by the reservation alone": func(c *checkclient.Client) error {
			_, err := c.SettleReservation(ctx, "r2.n.m", 80)
			return err
		},
		"release": func(c *checkclient.Client) error {
			_, err := c.Release(ctx, checkapi.Request{Key: "k"}, "r2.n.m")
			return err
		},
	}
	// sentAgain lists the calls a failure that may have come after the function ran
	// sends again.
	// without requestIds (with them, every call is).
	sentAgain := map[string]bool{"peek": true, "reset": true, "batch of peeks": true, "settle": true, "cancel": true, "release": true, "settle by the reservation alone": true}
	for _, ids := range []bool{true, false} {
		for name, call := range calls {
			for _, f := range []struct {
				name  string
				first failure
			}{{"throttled", throttled}, {"refused", refused}, {"failed after it ran", failedAfterRun}, {"timed out", timedOut}} {
				t.Run(fmt.Sprintf("requestIds %v/%s/%s", ids, name, f.name), func(t *testing.T) {
					var opts []checkclient.Option
					if !ids {
						opts = append(opts, checkclient.WithoutRequestIDs())
					}
					c, invocations, seen := flaky(t, f.first, opts...)
					err := call(c)
					ran := f.first == failedAfterRun || f.first == timedOut // it may have run
					again := ids || !ran || sentAgain[name]
					want := int32(1)
					if f.first != refused && again {
						want = 2 // a refused connection never reaches the server
					}
					if again != (err == nil) || invocations.Load() != want {
						t.Fatalf("error %v after %d invocations, want sent again %v (%d invocations)", err, invocations.Load(), again, want)
					}
					if len(*seen) == 2 && (*seen)[0] != (*seen)[1] {
						t.Fatalf("requestIds %q: want the same on every attempt", *seen)
					}
					if withID := strings.Trim(strings.Join(*seen, ""), ",") != ""; withID != (ids && !sentAgain[name]) {
						t.Fatalf("requestIds %q with requestIds %v", *seen, ids)
					}
				})
			}
		}
	}
}

// functionFailed answers an invocation as Lambda does when the function failed: 200,
// X-Amz-Function-Error: Unhandled, and the error's type and message.
func functionFailed(w http.ResponseWriter, errorType, message string) {
	w.Header().Set("X-Amz-Function-Error", "Unhandled")
	_ = json.NewEncoder(w).Encode(map[string]string{"errorType": errorType, "errorMessage": message})
}

// exitedAtInit is the errorMessage of Lambda's Runtime.ExitError for a function whose
// process exited during its init (app.Main on a bad configuration), which aws-lambda-go
// does not report to the Runtime API's /init/error: the same as a crash's.
const exitedAtInit = "RequestId: 1b7e2c40-5d0f-4a8e-9b3c-2f6d8e1a7c55 Error: Runtime exited with error: exit status 1"

// A request that is safe to send again is sent again after a function error another run
// may not meet (a timeout, a crash, Redis not answering a usage report), up to
// WithFunctionRetries times (DefaultFunctionRetries), its requestId the same each time;
// a crash or an init failure (Runtime.ExitError, Runtime.InitError), which a bad
// configuration repeats with a cold start each time, once at most;
// never after a refusal that would come again (an invalid request, a conflict, an answer
// that is not a decision), nor past ctx's deadline.
func TestFunctionErrorRetries(t *testing.T) {
	usage := checkapi.Usage{Identity: "key:k", From: "2026-11-26", To: "2026-11-26", Days: []checkapi.UsageDay{{Date: "2026-11-26"}}}
	tests := []struct {
		name     string
		fails    int    // invocations that fail before one answers
		errType  string // their errorType
		message  string // their errorMessage; empty: "failed"
		usage    bool   // a usage report, else a check
		opts     []checkclient.Option
		deadline time.Duration // of ctx; 0: none
		want     int32         // invocations
		ok       bool          // the call succeeds
	}{
		{name: "a timeout, then an answer", fails: 1, errType: "Sandbox.Timedout", want: 2, ok: true},
		{name: "a crash, then an answer", fails: 1, errType: "Runtime.ExitError", want: 2, ok: true},
		{name: "two timeouts, then an answer", fails: 2, errType: "Sandbox.Timedout", want: 3, ok: true},
		{name: "an init failure each time", fails: 3, errType: "Runtime.ExitError", message: exitedAtInit, want: 2},
		{name: "an init failure each time, WithFunctionRetries(5)", fails: 6, errType: "Runtime.ExitError", message: exitedAtInit, opts: []checkclient.Option{checkclient.WithFunctionRetries(5)}, want: 2},
		{name: "an init failure reported by the runtime each time", fails: 3, errType: "Runtime.InitError", message: "RequestId: 1b7e2c40-5d0f-4a8e-9b3c-2f6d8e1a7c55 Error: init failed", want: 2},
		{name: "an init failure reported by the runtime, then an answer", fails: 1, errType: "Runtime.InitError", want: 2, ok: true},
		{name: "a timeout, an init failure, then an answer", fails: 2, errType: "Sandbox.Timedout,Runtime.ExitError", want: 3, ok: true},
		{name: "three timeouts", fails: 3, errType: "Sandbox.Timedout", want: 3},
		{name: "Redis not answering a usage report, then an answer", fails: 1, errType: checkapi.ErrorTypeUnavailable, usage: true, want: 2, ok: true},
		{name: "Redis holding what is not usage", fails: 1, errType: checkapi.ErrorTypeUnavailable, message: "usage of tenant:abc: " + checkapi.NotUsage + ": bad state", usage: true, want: 1},
		{name: "a usage report of a function whose configuration does not load", fails: 1, errType: checkapi.ErrorTypeUnavailable,
			message: "usage of key:8254c329a92850f6d539dd376f4816ee: " + checkapi.NoConfiguration + ": no configuration: routs: unknown field", usage: true, want: 1},
		{name: "a usage report the registry could not resolve, then an answer", fails: 1, errType: checkapi.ErrorTypeUnavailable,
			message: "usage of key:8254c329a92850f6d539dd376f4816ee: the registry could not say whose usage it is: throttled", usage: true, want: 2, ok: true},
		{name: "a conflict", fails: 1, errType: checkapi.ErrorTypeConflict, want: 1},
		{name: "an invalid request", fails: 1, errType: checkapi.ErrorTypeInvalidRequest, want: 1},
		{name: "an answer that is not a decision", fails: 1, errType: "", want: 1},
		{name: "an answer too large for Lambda", fails: 1, errType: "Function.ResponseSizeTooLarge", want: 1},
		{name: "a runtime that cannot start", fails: 1, errType: "Runtime.InvalidEntrypoint", want: 1},
		{name: "a panic of the function's code", fails: 1, errType: "boundsError", want: 1},
		{name: "out of memory, then an answer", fails: 1, errType: "Runtime.OutOfMemory", want: 2, ok: true},
		{name: "an unknown runtime error, then an answer", fails: 1, errType: "Runtime.Unknown", want: 2, ok: true},
		{name: "WithFunctionRetries(0)", fails: 1, errType: "Sandbox.Timedout", opts: []checkclient.Option{checkclient.WithFunctionRetries(0)}, want: 1},
		{name: "WithFunctionRetries(5)", fails: 4, errType: "Sandbox.Timedout", opts: []checkclient.Option{checkclient.WithFunctionRetries(5)}, want: 5, ok: true},
		{name: "a deadline before the wait ends", fails: 1, errType: "Sandbox.Timedout", deadline: 20 * time.Millisecond, want: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var invocations atomic.Int32
			var ids []string
			srv := lambdatest.Start(t, map[string]lambda.Handler{"fn": function(func(payload []byte) ([]byte, error) {
				var req checkapi.Request
				if err := json.Unmarshal(payload, &req); err != nil {
					t.Errorf("request %s: %v", payload, err)
				}
				ids = append(ids, req.RequestID)
				if n := invocations.Add(1); int(n) <= tt.fails {
					if tt.errType == "" {
						return []byte(`{"allowed": "maybe"}`), nil
					}
					types := strings.Split(tt.errType, ",") // one per failed invocation, the last for the rest
					return nil, messages.InvokeResponse_Error{Type: types[min(int(n), len(types))-1], Message: cmp.Or(tt.message, "failed")}
				}
				if tt.usage {
					return json.Marshal(usage)
				}
				return json.Marshal(checkapi.Response{Allowed: true, Reason: checkapi.ReasonOK})
			})})
			c := checkclient.New(srv.Client(), "fn", tt.opts...)
			ctx := context.Background()
			if tt.deadline > 0 {
				var cancel context.CancelFunc
				ctx, cancel = context.WithTimeout(ctx, tt.deadline)
				defer cancel()
			}
			var err error
			if tt.usage {
				_, err = c.Usage(ctx, checkapi.Request{Key: "k"})
			} else {
				_, err = c.Check(ctx, checkapi.Request{Key: "k"})
			}
			if got := invocations.Load(); got != tt.want || (err == nil) != tt.ok {
				t.Fatalf("%d invocations, error %v: want %d, success %v", got, err, tt.want, tt.ok)
			}
			for _, id := range ids {
				if id != ids[0] || !tt.usage && id == "" {
					t.Fatalf("requestIds %q: want one on every attempt of a check", ids)
				}
			}
		})
	}
}

// A context that ends while an attempt is out ends the call with an error that wraps its
// own (context.DeadlineExceeded or context.Canceled), not with a decision or a function
// error, and the attempt is not sent again: the function, which Lambda runs to its end,
// may have decided it.
func TestContextEndsMidAttempt(t *testing.T) {
	tests := []struct {
		name string
		ctx  func(started <-chan struct{}) (context.Context, context.CancelFunc)
		want error
	}{
		{"its deadline passes", func(<-chan struct{}) (context.Context, context.CancelFunc) {
			return context.WithTimeout(context.Background(), 50*time.Millisecond)
		}, context.DeadlineExceeded},
		{"its caller cancels it", func(started <-chan struct{}) (context.Context, context.CancelFunc) {
			ctx, cancel := context.WithCancel(context.Background())
			go func() { <-started; cancel() }()
			return ctx, cancel
		}, context.Canceled},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			started, release := make(chan struct{}, 1), make(chan struct{})
			var invocations atomic.Int32
			srv := lambdatest.Start(t, map[string]lambda.Handler{"fn": function(func([]byte) ([]byte, error) {
				invocations.Add(1)
				started <- struct{}{}
				<-release // until the call has returned
				return json.Marshal(checkapi.Response{Allowed: true, Reason: checkapi.ReasonOK})
			})})
			defer close(release) // before the server closes, which waits for the function
			ctx, cancel := tt.ctx(started)
			defer cancel()
			_, err := checkclient.New(srv.Client(), "fn").Check(ctx, checkapi.Request{Key: "k"})
			var fe *checkclient.FunctionError
			if !errors.Is(err, tt.want) || errors.As(err, &fe) || invocations.Load() > 1 {
				t.Fatalf("error %v after %d invocations: want one wrapping %v, and no attempt sent again", err, invocations.Load(), tt.want)
			}
		})
	}
}

// cancelAfter is an Invoker that cancels a call's context once the first invocation
// has answered: the caller gives up during the wait before a retry.
type cancelAfter struct {
	checkclient.Invoker
	cancel context.CancelFunc
}

func (c cancelAfter) Invoke(ctx context.Context, in *awslambda.InvokeInput, optFns ...func(*awslambda.Options)) (*awslambda.InvokeOutput, error) {
	defer c.cancel()
	return c.Invoker.Invoke(ctx, in, optFns...)
}

// A context canceled during the wait before a retry (the function timed out, and the
// caller gave up meanwhile) ends the call with an error that wraps the context's, as
// one canceled while an attempt is out does, beside the function's error that led to
// the wait: a caller that stops on errors.Is(err, context.Canceled) stops here too.
func TestContextEndsWhileWaitingToRetry(t *testing.T) {
	var invocations atomic.Int32
	srv := lambdatest.Start(t, map[string]lambda.Handler{"fn": function(func([]byte) ([]byte, error) {
		invocations.Add(1)
		return nil, messages.InvokeResponse_Error{Type: "Sandbox.Timedout", Message: "Task timed out after 5.00 seconds"}
	})})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	_, err := checkclient.New(cancelAfter{srv.Client(), cancel}, "fn").Check(ctx, checkapi.Request{Key: "k", RequestID: "r-1"})
	var fe *checkclient.FunctionError
	if !errors.Is(err, context.Canceled) || !errors.As(err, &fe) || fe.Type != "Sandbox.Timedout" || invocations.Load() != 1 {
		t.Fatalf("error %v after %d invocations: want one wrapping context.Canceled and the function's timeout, and no retry", err, invocations.Load())
	}
}
