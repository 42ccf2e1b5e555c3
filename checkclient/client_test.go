package checkclient_test

import (
	"context"
	"encoding/json"
	"errors"
	"math"
	"net/http/httptest"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/lambda"
	"github.com/aws/aws-lambda-go/lambda/messages"
	awslambda "github.com/aws/aws-sdk-go-v2/service/lambda"

	"github.com/bucketgate/bucketgate"
	"github.com/bucketgate/bucketgate/checkapi"
	"github.com/bucketgate/bucketgate/checkclient"
	"github.com/bucketgate/bucketgate/internal/localgw"
	"github.com/bucketgate/bucketgate/internal/testkit/lambdatest"
	"github.com/bucketgate/bucketgate/ratelimitheaders"
)

// function answers an invocation in a test, as a Lambda handler does.
type function func(payload []byte) ([]byte, error)

func (f function) Invoke(_ context.Context, payload []byte) ([]byte, error) { return f(payload) }

// serve runs fn as a Lambda function called "fn" and returns a client of it.
func serve(t testing.TB, fn function) *checkclient.Client {
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
		{"plan, default cost", checkapi.Request{Key: "tenant-42", Plan: "pro", RequestID: "r-1"}, `{"key":"tenant-42","plan":"pro","requestId":"r-1"}`},
		{"peek", checkapi.Request{Key: "tenant-42", Cost: checkapi.Cost(0)}, `{"key":"tenant-42","cost":0}`},
		{"inline rules", checkapi.Request{Key: "k", Rules: []checkapi.Rule{{Name: "daily", Capacity: 1000, RefillPerSecond: 1000.0 / 86400}}, Cost: new(int64(3)), RequestID: "r-2"},
			`{"key":"k","rules":[{"name":"daily","capacity":1000,"refillPerSecond":0.011574074074074073}],"cost":3,"requestId":"r-2"}`},
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
	if !reflect.DeepEqual(res, want) || res.RetryAfter().Seconds() != 1.5 || res.ResetAfter().Seconds() != 10 {
		t.Fatalf("Check = %+v, want %+v (fields added later are ignored)", res, want)
	}
}

// answer is a function answering payload without an error.
func answer(payload string) function {
	return func([]byte) ([]byte, error) { return []byte(payload), nil }
}

// unreadable checks for the error of an answer that is not a decision, mentioning want.
func unreadable(want string) func(t *testing.T, err error) {
	return func(t *testing.T, err error) {
		t.Helper()
		var e *checkclient.FunctionError
		if !errors.As(err, &e) || e.Type != checkclient.ErrorTypeUnreadable || !strings.Contains(err.Error(), want) {
			t.Fatalf("error %v (%T), want a FunctionError of type %s mentioning %s", err, err, checkclient.ErrorTypeUnreadable, want)
		}
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
				if !errors.As(err, &e) || e.Type != "Sandbox.Timedout" || e.Kind != localgw.FunctionErrorUnhandled || !strings.Contains(e.Message, "timed out") {
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
			name:  "answer is not JSON",
			fn:    func([]byte) ([]byte, error) { return []byte("not json"), nil },
			check: unreadable(`"not json"`),
		},
		{
			name:  "batch answered with too few results",
			fn:    answer(`{"results":[{"allowed":true,"reason":"ok"}]}`),
			batch: 2,
			check: unreadable("1 results for 2 checks"),
		},
		{
			name:  "batch answered with too many results",
			fn:    answer(`{"results":[{"allowed":true,"reason":"ok"},{"allowed":true,"reason":"ok"}]}`),
			batch: 1,
			check: unreadable("2 results for 1 checks"),
		},
		{
			name:  "batch answered without results",
			fn:    answer(`{}`),
			batch: 1,
			check: unreadable("0 results for 1 checks"),
		},
		{
			name:  "batch with a result that is not a decision",
			fn:    answer(`{"results":[{"allowed":true,"reason":"ok"},{"allowed":false,"reason":""}]}`),
			batch: 2,
			check: unreadable(`results[1]: reason "": want ok, limited, unavailable or degraded`),
		},
		{
			name: "error payload without the X-Amz-Function-Error header",
			fn:   answer(`{"errorMessage":"Task timed out after 3.00 seconds","errorType":"Sandbox.Timedout"}`),
			check: func(t *testing.T, err error) {
				var e *checkclient.FunctionError
				if !errors.As(err, &e) || e.Type != "Sandbox.Timedout" || e.Kind != "" || !strings.Contains(e.Message, "timed out") {
					t.Fatalf("error %v (%T), want *FunctionError of type Sandbox.Timedout without a kind", err, err)
				}
			},
		},
		{
			name: "error message alone, without the header or a type",
			fn:   answer(`{"errorMessage":"out of memory"}`),
			check: func(t *testing.T, err error) {
				var e *checkclient.FunctionError
				if !errors.As(err, &e) || e.Type != "" || e.Kind != "" || err.Error() != "checkclient: fn failed: out of memory" {
					t.Fatalf("error %q (%T), want \"checkclient: fn failed: out of memory\"", err, err)
				}
			},
		},
		{
			name: "invalid request without the header",
			fn:   answer(`{"errorMessage":"key: missing","errorType":"InvalidRequestError"}`),
			check: func(t *testing.T, err error) {
				var e *checkclient.InvalidRequestError
				if !errors.As(err, &e) || e.Message != "key: missing" || e.Local {
					t.Fatalf("error %v (%T), want the function's *InvalidRequestError", err, err)
				}
			},
		},
		{
			name: "an errorType beside a decision",
			fn:   answer(`{"allowed":false,"reason":"limited","errorType":"Boom"}`),
			check: func(t *testing.T, err error) {
				var e *checkclient.FunctionError
				if !errors.As(err, &e) || e.Type != "Boom" {
					t.Fatalf("error %v (%T), want *FunctionError of type Boom", err, err)
				}
			},
		},
		{name: "empty reason", fn: answer(`{"allowed":false,"reason":""}`), check: unreadable(`reason ""`)},
		{name: "unknown reason", fn: answer(`{"allowed":false,"reason":"throttled"}`), check: unreadable(`reason "throttled"`)},
		{name: "no reason", fn: answer(`{"allowed":false}`), check: unreadable(`no "reason"`)},
		{name: "no allowed", fn: answer(`{"reason":"limited"}`), check: unreadable(`no "allowed"`)},
		{name: "an empty object", fn: answer(`{}`), check: unreadable(`no "allowed"`)},
		{name: "null", fn: answer(`null`), check: unreadable(`want a JSON object`)},
		{name: "allowed in another case", fn: answer(`{"allowed":false,"Allowed":true,"reason":"ok"}`), check: unreadable(`member "Allowed": want "allowed"`)},
		{name: "allowed twice", fn: answer(`{"allowed":false,"reason":"ok","allowed":true}`), check: unreadable(`member "allowed" given twice`)},
		{name: "allowed null", fn: answer(`{"allowed":null,"reason":"limited"}`), check: unreadable(`member "allowed": null`)},
		{name: "a figure null", fn: answer(`{"allowed":false,"reason":"limited","retryAfterMs":null}`), check: unreadable(`member "retryAfterMs": null`)},
		{
			name:  "batch with a result whose reason is given twice",
			fn:    answer(`{"results":[{"allowed":true,"reason":"ok","reason":"limited"}]}`),
			batch: 1,
			check: unreadable(`member "reason" given twice`),
		},
		{
			name:  "a rule's member in another case",
			fn:    answer(`{"allowed":true,"reason":"ok","rules":[{"name":"b","limit":10,"remaining":10,"Remaining":0,"resetAfterMs":0}]}`),
			check: unreadable(`rules[0]: member "Remaining": want "remaining"`),
		},
		{
			name:  "a rule's member twice",
			fn:    answer(`{"allowed":true,"reason":"ok","rules":[{"name":"a","limit":1,"remaining":1},{"name":"b","limit":9,"remaining":0,"remaining":9}]}`),
			check: unreadable(`rules[1]: member "remaining" given twice`),
		},
		{
			name:  "a rule's member null",
			fn:    answer(`{"allowed":true,"reason":"ok","rules":[{"name":"b","limit":10,"remaining":null}]}`),
			check: unreadable(`rules[0]: member "remaining": null`),
		},
		{
			name:  "a rule that is not an object",
			fn:    answer(`{"allowed":true,"reason":"ok","rules":[7]}`),
			check: unreadable(`rules[0]: want a JSON object, got a number`),
		},
		{
			name:  "batch results in another case",
			fn:    answer(`{"Results":[{"allowed":true,"reason":"ok"}]}`),
			batch: 1,
			check: unreadable(`member "Results": want "results"`),
		},
		{
			name:  "batch results twice",
			fn:    answer(`{"results":[{"allowed":false,"reason":"limited"}],"results":[{"allowed":true,"reason":"ok"}]}`),
			batch: 1,
			check: unreadable(`member "results" given twice`),
		},
		{
			name:  "batch with a result's rule member in another case",
			fn:    answer(`{"results":[{"allowed":true,"reason":"ok"},{"allowed":true,"reason":"ok","rules":[{"name":"b","limit":5,"remaining":5,"SHADOW":true}]}]}`),
			batch: 2,
			check: unreadable(`results[1]: rules[0]: member "SHADOW": want "shadow"`),
		},
		{name: "allowed against its reason", fn: answer(`{"allowed":true,"reason":"limited"}`), check: unreadable("allowed true with reason limited")},
		{name: "denied against its reason", fn: answer(`{"allowed":false,"reason":"ok"}`), check: unreadable("allowed false with reason ok")},
		{name: "a negative figure", fn: answer(`{"allowed":false,"reason":"limited","retryAfterMs":-5}`), check: unreadable("a figure below zero")},
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

// TestRefusedBeforeSending: what the client can tell is wrong is an InvalidRequestError
// of its own (Local), and nothing is sent: a batch of the wrong size, a key that is not
// UTF-8 text (encoding/json would send U+FFFD in its place, merging it with other keys),
// an operation that contradicts the method or is none (encoding/json cannot send it), a
// period that is none, a usage report asked as a decision (the
// function would refuse the requestId the client gives a request that is not a peek).
func TestRefusedBeforeSending(t *testing.T) {
	invocations := 0
	c := serve(t, func([]byte) ([]byte, error) {
		invocations++
		return []byte(`{"allowed":true,"reason":"ok"}`), nil
	})
	ctx := context.Background()
	valid := checkapi.Request{Key: "k"}
	calls := []struct {
		name string
		call func() error
		want string
	}{
		{"empty batch", func() error { _, err := c.CheckBatch(ctx, nil); return err }, "checks: 0 checks: want 1 to 100 per call"},
		{"batch above MaxBatch", func() error { _, err := c.CheckBatch(ctx, make([]checkapi.Request, checkapi.MaxBatch+1)); return err }, "checks: 101 checks"},
		{"key with byte 0xff", func() error { _, err := c.Check(ctx, checkapi.Request{Key: "tenant-\xff"}); return err }, "key: not UTF-8 text"},
		{"key with a surrogate", func() error { _, err := c.Check(ctx, checkapi.Request{Key: "\xed\xa0\x80"}); return err }, "key: not UTF-8 text"},
		{"batch key not text", func() error {
			_, err := c.CheckBatch(ctx, []checkapi.Request{valid, {Key: "\xfe"}})
			return err
		}, "checks[1].key: not UTF-8 text"},
		{"identity not text", func() error { _, err := c.Reset(ctx, checkapi.Request{Identity: "ip:\xff"}); return err }, "identity: not UTF-8 text"},
		{"requestId not text", func() error { _, err := c.Check(ctx, checkapi.Request{Key: "k", RequestID: "order-\xff"}); return err }, "requestId: not UTF-8 text"},
		{"batch requestId not text", func() error {
			_, err := c.CheckBatch(ctx, []checkapi.Request{valid, {Key: "k", RequestID: "\x9c\x01"}})
			return err
		}, "checks[1].requestId: not UTF-8 text"},
		{"plan not text", func() error { _, err := c.Check(ctx, checkapi.Request{Key: "k", Plan: "pro\xff"}); return err }, "plan: not UTF-8 text"},
		{"reservation not text", func() error { _, err := c.SettleReservation(ctx, "r2.\xff", 1); return err }, "reservation: not UTF-8 text"},
		{"lease not text", func() error { _, err := c.ReleaseLease(ctx, "r2.\xff"); return err }, "lease: not UTF-8 text"},
		{"release of no lease (a degraded answer holds none)", func() error { _, err := c.Release(ctx, valid, ""); return err }, "lease: missing"},
		{"release of no lease by the lease alone", func() error { _, err := c.ReleaseLease(ctx, ""); return err }, "lease: missing"},
		{"batch release of no lease", func() error {
			_, err := c.CheckBatch(ctx, []checkapi.Request{valid, {Key: "k", Op: checkapi.OpRelease}})
			return err
		}, "checks[1].lease: missing"},
		{"settle of no reservation (a degraded answer holds none)", func() error { _, err := c.Settle(ctx, valid, "", 5); return err }, "reservation: missing"},
		{"cancel of no reservation", func() error { _, err := c.CancelReservation(ctx, ""); return err }, "reservation: missing"},
		{"settle below 0", func() error { _, err := c.Settle(ctx, valid, "r2.n.m", -1); return err }, "actual -1: want the tokens the work used, 0 to 1000000000"},
		{"settle by the id above MaxSettle", func() error { _, err := c.SettleReservation(ctx, "r2.n.m", bucketgate.MaxSettle+1); return err }, "actual 1000000001: want"},
		{"rule name not text", func() error {
			_, err := c.Check(ctx, checkapi.Request{Key: "k", Rules: []checkapi.Rule{{Name: "b\xff", Capacity: 1, RefillPerSecond: 1}}})
			return err
		}, "rules[0].name: not UTF-8 text"},
		{"usage from not text", func() error { _, err := c.Usage(ctx, checkapi.Request{Key: "k", From: "2026-11-\xff"}); return err }, "from: not UTF-8 text"},
		{"rate NaN", func() error {
			_, err := c.Check(ctx, checkapi.Request{Key: "k", Rules: []checkapi.Rule{{Name: "r", Capacity: 1, RefillPerSecond: math.NaN()}}})
			return err
		}, "rules[0].refillPerSecond: NaN: want a finite number"},
		{"batch rate infinite", func() error {
			_, err := c.CheckBatch(ctx, []checkapi.Request{valid, {Key: "k", Rules: []checkapi.Rule{{Name: "a", Capacity: 1, RefillPerSecond: 1}, {Name: "b", Capacity: 1, RefillPerSecond: math.Inf(1)}}}})
			return err
		}, "checks[1].rules[1].refillPerSecond: +Inf: want a finite number"},
		{"unknown operation", func() error { _, err := c.Check(ctx, checkapi.Request{Key: "k", Op: checkapi.Op(99)}); return err }, "op: Op(99): want one of"},
		{"batch period unknown", func() error {
			_, err := c.CheckBatch(ctx, []checkapi.Request{valid, {Key: "k", Rules: []checkapi.Rule{{Name: "q", Limit: 5, Period: bucketgate.Period(7)}}}})
			return err
		}, "checks[1].rules[0].period: Period(7): want day, week or month"},
		{"refund of a reset", func() error { _, err := c.Refund(ctx, checkapi.Request{Key: "k", Op: checkapi.OpReset}); return err }, `op: "reset", sent with refund`},
		{"usage through Check", func() error { _, err := c.Check(ctx, checkapi.Request{Key: "k", Op: checkapi.OpUsage}); return err }, `op: "usage": a report, not a decision: call Usage`},
		{"usage in a batch", func() error {
			_, err := c.CheckBatch(ctx, []checkapi.Request{valid, {Key: "k", Op: checkapi.OpUsage}})
			return err
		}, `checks[1].op: "usage": a report, not a decision: call Usage`},
	}
	for _, tc := range calls {
		err := tc.call()
		var e *checkclient.InvalidRequestError
		if !errors.As(err, &e) || !e.Local || !strings.HasPrefix(e.Message, tc.want) || !strings.Contains(err.Error(), "not sent") {
			t.Errorf("%s: %v, want a local InvalidRequestError starting %q", tc.name, err, tc.want)
		}
	}
	if invocations != 0 {
		t.Fatalf("%d invocations for requests refused before sending", invocations)
	}
}

// TestNilOption: a nil Option, such as a variable a condition left unset, is no setting:
// New passes over it, never panics, and the Client keeps its defaults (a check that
// takes tokens carries a requestId of the client's).
func TestNilOption(t *testing.T) {
	var sent []byte
	srv := lambdatest.Start(t, map[string]lambda.Handler{"fn": function(func(payload []byte) ([]byte, error) {
		sent = payload
		return []byte(`{"allowed":true,"reason":"ok"}`), nil
	})})
	var legacy checkclient.Option // checkclient.WithoutRequestIDs() for a function older than 0.3.0
	c := checkclient.New(srv.Client(), "fn", legacy)
	if _, err := c.Check(context.Background(), checkapi.Request{Key: "k"}); err != nil || !strings.Contains(string(sent), `"requestId":`) {
		t.Fatalf("check through a Client made with a nil Option: %v, sent %s; want it decided, with a requestId", err, sent)
	}
}

// nothingInvoker is an Invoker that answers no output and no error, as a careless test
// double or decorator may.
type nothingInvoker struct{}

func (nothingInvoker) Invoke(context.Context, *awslambda.InvokeInput, ...func(*awslambda.Options)) (*awslambda.InvokeOutput, error) {
	return nil, nil
}

// TestInvokerAnswersNothing: an Invoker that answers neither an output nor an error is
// an error of the call that says so, never a panic, and no decision.
func TestInvokerAnswersNothing(t *testing.T) {
	c := checkclient.New(nothingInvoker{}, "fn")
	ctx := context.Background()
	_, checkErr := c.Check(ctx, checkapi.Request{Key: "k"})
	_, usageErr := c.Usage(ctx, checkapi.Request{Key: "k"})
	for _, err := range []error{checkErr, usageErr} {
		if err == nil || !strings.Contains(err.Error(), "no output") {
			t.Errorf("%v, want an error naming the missing output", err)
		}
	}
}

// TestNoInvoker: a Client without an Invoker (the zero Client, or New's of a nil one)
// answers every call with an error that says so, never a panic.
func TestNoInvoker(t *testing.T) {
	ctx := context.Background()
	for name, c := range map[string]*checkclient.Client{"zero": {}, "New(nil, ...)": checkclient.New(nil, "fn")} {
		_, checkErr := c.Check(ctx, checkapi.Request{Key: "k"})
		_, batchErr := c.CheckBatch(ctx, []checkapi.Request{{Key: "k"}})
		_, usageErr := c.Usage(ctx, checkapi.Request{Key: "k"})
		for _, err := range []error{checkErr, batchErr, usageErr} {
			if err == nil || !strings.Contains(err.Error(), "no Invoker") {
				t.Errorf("%s: %v, want an error naming the missing Invoker", name, err)
			}
		}
	}
}

// TestNoFunctionName: a Client made with an empty function name answers every call
// with an error that names the missing name, sending nothing (the SDK would refuse it
// only after building and signing the request, in its words).
func TestNoFunctionName(t *testing.T) {
	invocations := 0
	srv := lambdatest.Start(t, map[string]lambda.Handler{"fn": function(func([]byte) ([]byte, error) {
		invocations++
		return []byte(`{"allowed":true,"reason":"ok"}`), nil
	})})
	c := checkclient.New(srv.Client(), "")
	ctx := context.Background()
	_, checkErr := c.Check(ctx, checkapi.Request{Key: "k"})
	_, batchErr := c.CheckBatch(ctx, []checkapi.Request{{Key: "k"}})
	_, usageErr := c.Usage(ctx, checkapi.Request{Key: "k"})
	_, settleErr := c.SettleReservation(ctx, "r2.n.m", 1)
	for _, err := range []error{checkErr, batchErr, usageErr, settleErr} {
		if err == nil || !strings.Contains(err.Error(), "no function name") {
			t.Errorf("%v, want an error naming the missing function name", err)
		}
	}
	if invocations != 0 {
		t.Fatalf("%d invocations of a Client with no function name", invocations)
	}
}

// TestOperationsEncoding: Refund, Reset, Reserve, Settle, Cancel and Release send the
// operation and what it needs; SettleReservation, CancelReservation, SettleRequest and
// CancelRequest the reservation alone, ReleaseLease and ReleaseRequest the lease alone.
func TestOperationsEncoding(t *testing.T) {
	var got []string
	c := serve(t, func(p []byte) ([]byte, error) {
		got = append(got, string(p))
		return []byte(`{"allowed":true,"reason":"ok","limit":10,"remaining":10,"released":true,"reservation":"r2.n.m","expiresAt":"2999-01-01T00:00:00.000Z"}`), nil
	})
	ctx := context.Background()
	if _, err := c.Refund(ctx, checkapi.Request{Key: "k", Plan: "free", Cost: checkapi.Cost(2), RequestID: "r"}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Reset(ctx, checkapi.Request{Identity: "ip:192.0.2.1", Plan: "free", Op: checkapi.OpReset}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Reserve(ctx, checkapi.Request{Key: "k", Plan: "free", Cost: checkapi.Cost(500), TTLMS: 60000, RequestID: "q"}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Settle(ctx, checkapi.Request{Key: "k", Plan: "free"}, "r1.n.m", 720); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Cancel(ctx, checkapi.Request{Key: "k", Plan: "free"}, "r1.n.m"); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Release(ctx, checkapi.Request{Key: "k", Plan: "free"}, "r2.n.m"); err != nil {
		t.Fatal(err)
	}
	if _, err := c.SettleReservation(ctx, "r2.n.m", 30); err != nil {
		t.Fatal(err)
	}
	if _, err := c.CancelReservation(ctx, "r2.n.m"); err != nil {
		t.Fatal(err)
	}
	r := httptest.NewRequest("POST", "/v1/chat", nil)
	r.Header.Set(ratelimitheaders.HeaderReservation, "r2.h.m")
	if _, err := c.SettleRequest(ctx, r, 0); err != nil {
		t.Fatal(err)
	}
	if _, err := c.SettleRequest(ctx, httptest.NewRequest("GET", "/", nil), 5); !errors.Is(err, ratelimitheaders.ErrNoReservation) {
		t.Fatalf("SettleRequest without the header: %v, want ErrNoReservation", err)
	}
	if _, err := c.CancelRequest(ctx, r); err != nil {
		t.Fatal(err)
	}
	if _, err := c.CancelRequest(ctx, httptest.NewRequest("GET", "/", nil)); !errors.Is(err, ratelimitheaders.ErrNoReservation) {
		t.Fatalf("CancelRequest without the header: %v, want ErrNoReservation", err)
	}
	if _, err := c.ReleaseLease(ctx, "r2.l.m"); err != nil {
		t.Fatal(err)
	}
	r.Header.Set(ratelimitheaders.HeaderLease, "r2.h.l")
	if _, err := c.ReleaseRequest(ctx, r); err != nil {
		t.Fatal(err)
	}
	if _, err := c.ReleaseRequest(ctx, httptest.NewRequest("GET", "/", nil)); !errors.Is(err, ratelimitheaders.ErrNoLease) {
		t.Fatalf("ReleaseRequest without the header: %v, want ErrNoLease", err)
	}
	want := []string{`{"key":"k","op":"refund","plan":"free","cost":2,"requestId":"r"}`, `{"identity":"ip:192.0.2.1","op":"reset","plan":"free"}`,
		`{"key":"k","op":"reserve","plan":"free","cost":500,"ttlMs":60000,"requestId":"q"}`,
		`{"key":"k","op":"settle","plan":"free","cost":720,"reservation":"r1.n.m"}`,
		`{"key":"k","op":"cancel","plan":"free","reservation":"r1.n.m"}`,
		`{"key":"k","op":"release","plan":"free","lease":"r2.n.m"}`,
		`{"op":"settle","cost":30,"reservation":"r2.n.m"}`, `{"op":"cancel","reservation":"r2.n.m"}`, `{"op":"settle","cost":0,"reservation":"r2.h.m"}`,
		`{"op":"cancel","reservation":"r2.h.m"}`, `{"op":"release","lease":"r2.l.m"}`, `{"op":"release","lease":"r2.h.l"}`}
	if !slices.Equal(got, want) {
		t.Fatalf("sent %q, want %q", got, want)
	}
}

// A release Redis answered (reason ok) says whether the lease was held: an answer
// without "released" is not a release's, and reading Response.Released would find nil;
// one Redis did not answer (unavailable, degraded) has none.
func TestReleaseAnswerWithoutReleased(t *testing.T) {
	ctx := context.Background()
	release := checkapi.Request{Key: "k", Op: checkapi.OpRelease, Lease: "r2.n.m", Rules: []checkapi.Rule{{Name: "streams", Concurrency: 1}}}
	for _, tc := range []struct {
		name, answer string
		batch        bool
		check        func(t *testing.T, err error)
	}{
		{"ok without released", `{"allowed":true,"reason":"ok"}`, false, unreadable(`no "released"`)},
		{"ok without released, in a batch", `{"results":[{"allowed":true,"reason":"ok"}]}`, true, unreadable(`results[0]: no "released"`)},
		{"unavailable without released", `{"allowed":false,"reason":"unavailable","retryAfterMs":1000}`, false, func(t *testing.T, err error) {
			if err != nil {
				t.Fatalf("error %v, want the answer: Redis did not answer, nothing is known of the lease", err)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := serve(t, answer(tc.answer))
			var err error
			if tc.batch {
				_, err = c.CheckBatch(ctx, []checkapi.Request{release})
			} else {
				_, err = c.Release(ctx, checkapi.Request{Key: "k", Rules: release.Rules}, release.Lease)
			}
			tc.check(t, err)
		})
	}
}

// A backend settles (or releases) what its request holds with that request's context,
// as the README and docs/api-gateway.md show (checks.SettleRequest(r.Context(), r, used)):
// when the client hung up mid-stream (or API Gateway's integration timed out), that
// context is canceled; when an http.TimeoutHandler (or a framework's timeout) gave up on
// the request while its handler went on working, its deadline has passed. Either way the
// work is done (or will not be), and the call is sent all the same, the actual cost
// settled (or the estimate cancelled) and the lease returned, not left at the estimate
// and the ttl: with the context's values, within
// RequestCallTimeout of its own.
func TestRequestCallsOutliveTheClient(t *testing.T) {
	var got []string
	srv := lambdatest.Start(t, map[string]lambda.Handler{"fn": function(func(p []byte) ([]byte, error) {
		got = append(got, string(p))
		return []byte(`{"allowed":true,"reason":"ok","limit":10,"remaining":10,"settled":5,"released":true}`), nil
	})})
	seen := &seenContext{Invoker: srv.Client()}
	c := checkclient.New(seen, "fn")
	r := httptest.NewRequest("POST", "/v1/chat", nil)
	r.Header.Set(ratelimitheaders.HeaderReservation, "r2.h.m")
	r.Header.Set(ratelimitheaders.HeaderLease, "r2.h.l")
	type key struct{}
	base := context.WithValue(context.Background(), key{}, "trace-1")
	hungUp, hangUp := context.WithCancel(base)
	hangUp()
	past, cancelPast := context.WithDeadline(base, time.Now().Add(-time.Second))
	defer cancelPast()
	timedOut, cancelTimedOut := context.WithTimeout(base, -time.Second) // a TimeoutHandler's, once it gave up
	cancelTimedOut()                                                    // and its handler's deferred cancel
	for _, call := range []struct {
		name string
		call func(ctx context.Context) error
		sent string
	}{
		{"settle", func(ctx context.Context) error { _, err := c.SettleRequest(ctx, r, 5); return err }, `{"op":"settle","cost":5,"reservation":"r2.h.m"}`},
		{"cancel", func(ctx context.Context) error { _, err := c.CancelRequest(ctx, r); return err }, `{"op":"cancel","reservation":"r2.h.m"}`},
		{"release", func(ctx context.Context) error { _, err := c.ReleaseRequest(ctx, r); return err }, `{"op":"release","lease":"r2.h.l"}`},
	} {
		for _, tc := range []struct {
			name string
			ctx  context.Context
		}{{"client gone", hungUp}, {"past its deadline", past}, {"timed out and canceled", timedOut}} {
			t.Run(call.name+"/"+tc.name, func(t *testing.T) {
				got, seen.ctx = nil, nil
				before := time.Now()
				if err := call.call(tc.ctx); err != nil || !slices.Equal(got, []string{call.sent}) {
					t.Fatalf("%v, sent %q; want %s sent and answered", err, got, call.sent)
				}
				deadline, bounded := seen.ctx.Deadline()
				if !bounded || deadline.Before(before.Add(checkclient.RequestCallTimeout)) || deadline.After(time.Now().Add(checkclient.RequestCallTimeout)) {
					t.Errorf("the call's deadline %v (%t), want RequestCallTimeout after the call", deadline, bounded)
				}
				if v := seen.ctx.Value(key{}); v != "trace-1" {
					t.Errorf("the call's context holds %v, want the request context's value", v)
				}
			})
		}
	}
}

// seenContext is an Invoker that keeps the context of the last Invoke and passes it on.
type seenContext struct {
	checkclient.Invoker
	ctx context.Context
}

func (s *seenContext) Invoke(ctx context.Context, in *awslambda.InvokeInput, optFns ...func(*awslambda.Options)) (*awslambda.InvokeOutput, error) {
	s.ctx = ctx
	return s.Invoker.Invoke(ctx, in, optFns...)
}

// A replayed acquire answers its first lease again, also once that lease has expired
// (its requestId is remembered longer than its ttlMs), while another request may hold
// the slot meanwhile: a lease past its expiresAt (by the client's clock) holds nothing,
// so Check and Reserve answer ErrLeaseExpired instead of an admission. A replayed
// reserve whose reservation is past its expiresAt can no longer be settled: it is
// ErrReservationExpired (both, for a reserve with a lease). A replay whose lease or
// reservation still holds, and a first decision, are answers.
func TestReplayedLeaseExpired(t *testing.T) {
	const (
		past   = `"expiresAt":"2000-01-01T00:00:00.000Z"`
		future = `"expiresAt":"2999-01-01T00:00:00.000Z"`
		lease  = `"lease":"r2.n.m"`
	)
	acquire := checkapi.Request{Key: "k", RequestID: "job-7", Rules: []checkapi.Rule{{Name: "streams", Concurrency: 1}}}
	for _, tc := range []struct {
		name, answer string
		reserve      bool
		expired      bool
		leaseGone    bool // ErrLeaseExpired
		reservedGone bool // ErrReservationExpired
	}{
		{"replayed, expired", `{"allowed":true,"reason":"ok","rule":"streams","limit":1,"replayed":true,` + past + `,` + lease + `}`, false, true, true, false},
		{"a reserve replayed, its lease expired", `{"allowed":true,"reason":"ok","rule":"streams","limit":1,"replayed":true,"reservation":"r2.a.b",` + past + `,` + lease + `}`, true, true, true, true},
		{"replayed, still held", `{"allowed":true,"reason":"ok","rule":"streams","limit":1,"replayed":true,` + future + `,` + lease + `}`, false, false, false, false},
		{"a first decision", `{"allowed":true,"reason":"ok","rule":"streams","limit":1,` + past + `,` + lease + `}`, false, false, false, false},
		{"a replayed reserve without a lease, expired", `{"allowed":true,"reason":"ok","rule":"streams","limit":1,"replayed":true,"reservation":"r2.a.b",` + past + `}`, true, true, false, true},
		{"a replayed reserve without a lease, still held", `{"allowed":true,"reason":"ok","rule":"streams","limit":1,"replayed":true,"reservation":"r2.a.b",` + future + `}`, true, false, false, false},
		{"a first reserve", `{"allowed":true,"reason":"ok","rule":"streams","limit":1,"reservation":"r2.a.b",` + past + `}`, true, false, false, false},
		{"a replayed denial", `{"allowed":false,"reason":"limited","rule":"streams","limit":1,"retryAfterMs":5,"replayed":true}`, false, false, false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := serve(t, answer(tc.answer))
			call := c.Check
			if tc.reserve {
				call = c.Reserve
			}
			req := acquire
			if tc.reserve && !strings.Contains(tc.answer, `"lease"`) { // a plan's rules: none of concurrency
				req.Rules, req.Plan = nil, "pro"
			}
			res, err := call(context.Background(), req)
			switch {
			case tc.expired && (errors.Is(err, checkclient.ErrLeaseExpired) != tc.leaseGone || errors.Is(err, checkclient.ErrReservationExpired) != tc.reservedGone ||
				res.Allowed || !strings.Contains(err.Error(), "2000-01-01T00:00:00.000Z")):
				t.Fatalf("%+v, %v: want ErrLeaseExpired %v, ErrReservationExpired %v, naming when it expired, and no admission", res, err, tc.leaseGone, tc.reservedGone)
			case !tc.expired && err != nil:
				t.Fatalf("error %v, want the answer", err)
			}
		})
	}
}

// What Redis's decision holds is the answer's: an allowed reserve without its
// reservation, or an allowed request with a concurrency rule without its lease, or
// either without when it expires, would be a success the caller cannot settle, release
// or time; the client reads it as no decision, naming the member. What was not allowed
// by Redis (degraded, unavailable, limited) holds nothing, and a plan's rules are the
// function's to know.
func TestHeldAnswerMembers(t *testing.T) {
	const (
		expires = `,"expiresAt":"2999-01-01T00:00:00.000Z"`
		ok      = `{"allowed":true,"reason":"ok","rule":"r","limit":5`
	)
	streams := []checkapi.Rule{{Name: "streams", Concurrency: 2}}
	reserve := checkapi.Request{Key: "k", Op: checkapi.OpReserve, Rules: []checkapi.Rule{{Name: "tokens", Capacity: 10, RefillPerSecond: 1}}}
	acquire := checkapi.Request{Key: "k", Rules: streams}
	both := checkapi.Request{Key: "k", Op: checkapi.OpReserve, Rules: append(slices.Clone(reserve.Rules), streams...)}
	for _, tc := range []struct {
		name, answer string
		req          checkapi.Request
		want         string // in the error; "" for an answer
	}{
		{"a reserve without its reservation", ok + expires + `}`, reserve, `no "reservation"`},
		{"a reserve with it", ok + `,"reservation":"r2.a.b"` + expires + `}`, reserve, ""},
		{"a reserve without its expiry", ok + `,"reservation":"r2.a.b"}`, reserve, `"expiresAt" ""`},
		{"a reserve with an expiry that is no time", ok + `,"reservation":"r2.a.b","expiresAt":"soon"}`, reserve, `"expiresAt" "soon"`},
		{"a degraded reserve", `{"allowed":true,"reason":"degraded","rule":"r","limit":5}`, reserve, ""},
		{"a limited reserve", `{"allowed":false,"reason":"limited","rule":"r","limit":5,"retryAfterMs":9}`, reserve, ""},
		{"a reserve of a plan", ok + expires + `,"reservation":"r2.a.b"}`, checkapi.Request{Key: "k", Op: checkapi.OpReserve, Plan: "pro"}, ""},
		{"an acquire without its lease", ok + expires + `}`, acquire, `no "lease"`},
		{"an acquire with it", ok + `,"lease":"r2.a.b"` + expires + `}`, acquire, ""},
		{"an acquire without its expiry", ok + `,"lease":"r2.a.b"}`, acquire, `"expiresAt" ""`},
		{"a reserve that acquires, without its lease", ok + `,"reservation":"r2.a.b"` + expires + `}`, both, `no "lease"`},
		{"a peek with a concurrency rule", `{"allowed":true,"reason":"ok","rule":"streams","limit":2,"rules":[{"name":"streams","limit":2,"remaining":2,"resetAfterMs":0,"concurrency":true}]}`,
			checkapi.Request{Key: "k", Rules: streams, Cost: checkapi.Cost(0)}, ""},
		{"a check of a plan", ok + `}`, checkapi.Request{Key: "k", Plan: "pro"}, ""},
	} {
		for _, batch := range []bool{false, true} {
			name := tc.name
			if batch {
				name += ", in a batch"
			}
			t.Run(name, func(t *testing.T) {
				var err error
				if batch {
					c := serve(t, answer(`{"results":[`+tc.answer+`]}`))
					_, err = c.CheckBatch(context.Background(), []checkapi.Request{tc.req})
				} else {
					_, err = serve(t, answer(tc.answer)).Check(context.Background(), tc.req)
				}
				switch {
				case tc.want == "" && err != nil:
					t.Fatalf("error %v, want the answer", err)
				case tc.want != "" && batch:
					unreadable("results[0]: "+tc.want)(t, err)
				case tc.want != "":
					unreadable(tc.want)(t, err)
				}
			})
		}
	}
}
