package checkclient_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/aws/aws-lambda-go/lambda"
	"github.com/aws/aws-lambda-go/lambda/messages"

	"github.com/bucketgate/bucketgate/checkapi"
	"github.com/bucketgate/bucketgate/checkclient"
	"github.com/bucketgate/bucketgate/internal/testkit/lambdatest"
)

// function answers an invocation in a test, as a Lambda handler does.
type function func(payload []byte) ([]byte, error)

func (f function) Invoke(_ context.Context, payload []byte) ([]byte, error) { return f(payload) }

// serve runs fn as a Lambda function called "fn" and returns a client of it.
func serve(t *testing.T, fn function) *checkclient.Client {
	t.Helper()
	srv := lambdatest.Start(t, map[string]lambda.Handler{"fn": fn})
	return checkclient.New(srv.Client(), "fn")
}

func TestRequestEncoding(t *testing.T) {
	tests := []struct {
		name string
		req  checkapi.Request
		want string
	}{
		{"plan, default cost", checkapi.Request{Key: "tenant-42", Plan: "pro"}, `{"key":"tenant-42","plan":"pro"}`},
		{"peek", checkapi.Request{Key: "tenant-42", Cost: new(int64(0))}, `{"key":"tenant-42","cost":0}`},
		{"inline rules", checkapi.Request{Key: "k", Rules: []checkapi.Rule{{Name: "daily", Capacity: 1000, RefillPerSecond: 1000.0 / 86400}}, Cost: new(int64(3))},
			`{"key":"k","rules":[{"name":"daily","capacity":1000,"refillPerSecond":0.011574074074074073}],"cost":3}`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var got []byte
			c := serve(t, func(p []byte) ([]byte, error) {
				got = p
				return json.Marshal(checkapi.Response{Allowed: true, Reason: checkapi.ReasonOK})
			})
			if _, err := c.Check(context.Background(), tc.req); err != nil {
				t.Fatal(err)
			}
			if string(got) != tc.want {
				t.Fatalf("sent %s, want %s", got, tc.want)
			}
		})
	}
}

func TestResponseDecoding(t *testing.T) {
	c := serve(t, func([]byte) ([]byte, error) {
		return []byte(`{"allowed":false,"reason":"limited","limit":10,"remaining":0,"retryAfterMs":1500,"resetAfterMs":10000,"rule":"burst","plan":"free","addedLater":1}`), nil
	})
	res, err := c.Check(context.Background(), checkapi.Request{Key: "k"})
	if err != nil {
		t.Fatal(err)
	}
	want := checkapi.Response{Reason: checkapi.ReasonLimited, Limit: 10, RetryAfterMS: 1500, ResetAfterMS: 10000, Rule: "burst", Plan: "free"}
	if res != want || res.RetryAfter().Seconds() != 1.5 || res.ResetAfter().Seconds() != 10 {
		t.Fatalf("Check = %+v, want %+v (fields added later are ignored)", res, want)
	}
}

func TestErrors(t *testing.T) {
	tests := []struct {
		name  string
		fn    function
		batch int // checks to send; 0 sends one Check
		check func(t *testing.T, err error)
	}{
		{
			name: "invalid request",
			fn: func([]byte) ([]byte, error) {
				return nil, messages.InvokeResponse_Error{Type: checkapi.ErrorTypeInvalidRequest, Message: "cost: got -1, want a whole number"}
			},
			check: func(t *testing.T, err error) {
				var e *checkclient.InvalidRequestError
				if !errors.As(err, &e) || e.Message != "cost: got -1, want a whole number" || e.Function != "fn" {
					t.Fatalf("error %v (%T), want *InvalidRequestError with the function's message", err, err)
				}
			},
		},
		{
			name: "runtime timeout",
			fn: func([]byte) ([]byte, error) {
				return nil, messages.InvokeResponse_Error{Type: "Sandbox.Timedout", Message: "Task timed out after 3.00 seconds"}
			},
			check: func(t *testing.T, err error) {
				var e *checkclient.FunctionError
				if !errors.As(err, &e) || e.Type != "Sandbox.Timedout" || e.Kind != lambdatest.FunctionErrorUnhandled || !strings.Contains(e.Message, "timed out") {
					t.Fatalf("error %v (%T), want *FunctionError of type Sandbox.Timedout", err, err)
				}
			},
		},
		{
			name: "plain Go error",
			fn:   func([]byte) ([]byte, error) { return nil, errors.New("boom") },
			check: func(t *testing.T, err error) {
				var e *checkclient.FunctionError
				if !errors.As(err, &e) || e.Type != "errorString" || e.Message != "boom" {
					t.Fatalf("error %v (%T), want *FunctionError errorString boom", err, err)
				}
			},
		},
		{
			name: "answer is not JSON",
			fn:   func([]byte) ([]byte, error) { return []byte("not json"), nil },
			check: func(t *testing.T, err error) {
				if err == nil || !strings.Contains(err.Error(), `fn answered "not json"`) {
					t.Fatalf("error %v, want one quoting the answer", err)
				}
			},
		},
		{
			name:  "batch answered with too few results",
			fn:    func([]byte) ([]byte, error) { return []byte(`{"results":[{"allowed":true,"reason":"ok"}]}`), nil },
			batch: 2,
			check: func(t *testing.T, err error) {
				if err == nil || !strings.Contains(err.Error(), "1 results for 2 checks") {
					t.Fatalf("error %v, want a result count mismatch", err)
				}
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := serve(t, tc.fn)
			var err error
			if tc.batch == 0 {
				_, err = c.Check(context.Background(), checkapi.Request{Key: "k"})
			} else {
				_, err = c.CheckBatch(context.Background(), make([]checkapi.Request, tc.batch))
			}
			tc.check(t, err)
		})
	}
}
