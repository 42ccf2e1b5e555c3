package localgw_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/lambda/messages"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/lambda"
	"github.com/aws/aws-sdk-go-v2/service/lambda/types"

	"github.com/bucketgate/bucketgate/internal/localgw"
)

// echo answers its payload, or fails with the error it was made with.
type echo struct{ err error }

func (e echo) Invoke(_ context.Context, payload []byte) ([]byte, error) { return payload, e.err }

// pathError is an error whose type is a pointer.
type pathError struct{ msg string }

func (e *pathError) Error() string { return e.msg }

func TestInvoke(t *testing.T) {
	tests := []struct {
		name      string
		err       error
		wantBody  string
		wantError string // X-Amz-Function-Error
	}{
		{"answer", nil, `{"key":"k"}`, ""},
		{"plain error", errors.New("Unauthorized"), `{"errorMessage":"Unauthorized","errorType":"errorString"}`, "Unhandled"},
		{"typed error as is", messages.InvokeResponse_Error{Message: "key: required", Type: "InvalidRequestError"}, `{"errorMessage":"key: required","errorType":"InvalidRequestError"}`, "Unhandled"},
		{"pointer type", &pathError{"boom"}, `{"errorMessage":"boom","errorType":"pathError"}`, "Unhandled"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			mux := http.NewServeMux()
			mux.HandleFunc(localgw.InvokePath, func(w http.ResponseWriter, r *http.Request) { localgw.Invoke(w, r, echo{tc.err}) })
			w := httptest.NewRecorder()
			mux.ServeHTTP(w, httptest.NewRequest(http.MethodPost, "/2015-03-31/functions/bucketgate-check/invocations", strings.NewReader(`{"key":"k"}`)))
			body, _ := io.ReadAll(w.Body)
			if w.Code != http.StatusOK || string(body) != tc.wantBody || w.Header().Get(localgw.HeaderFunctionError) != tc.wantError {
				t.Errorf("%d %s %s %q, want 200 %s %s %q", w.Code, body, localgw.HeaderFunctionError, w.Header().Get(localgw.HeaderFunctionError), tc.wantBody, localgw.HeaderFunctionError, tc.wantError)
			}
		})
	}
}

// counter counts the invocations it answers, with {}.
type counter struct{ runs atomic.Int32 }

func (c *counter) Invoke(context.Context, []byte) ([]byte, error) {
	c.runs.Add(1)
	return []byte(`{}`), nil
}

// bigPayload is a JSON string of n bytes.
func bigPayload(n int) string { return `"` + strings.Repeat("a", n-2) + `"` }

// The AWS SDK's Lambda client gets from Invoke what the Lambda service answers: a payload
// that is not JSON (400, InvalidRequestContentException) or above the invocation type's
// quota (413, RequestTooLargeException) is refused before the function runs, a dry run (204) runs nothing, and an asynchronous invocation runs the function and
// invokeClient returns a Lambda client of the Invoke API served for fn by a test server
// that the end of t closes.
func invokeClient(t *testing.T, fn localgw.Invoker) *lambda.Client {
	mux := http.NewServeMux()
	mux.HandleFunc(localgw.InvokePath, func(w http.ResponseWriter, r *http.Request) { localgw.Invoke(w, r, fn) })
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return lambda.New(lambda.Options{
		BaseEndpoint: aws.String(srv.URL),
		Region:       "us-east-1",
		Credentials:  credentials.NewStaticCredentialsProvider("local", "local", ""),
		Retryer:      aws.NopRetryer{},
	})
}

// answers 202 with no payload.
func TestInvokeAsLambda(t *testing.T) {
	tests := []struct {
		name       string
		payload    string
		typ        types.InvocationType
		wantStatus int32  // 0: the call fails
		wantErr    any    // a pointer to the error type the call fails with
		wantBody   string // the payload answered
		wantRuns   int32
	}{
		{"request-response", `{"key":"k"}`, types.InvocationTypeRequestResponse, http.StatusOK, nil, `{}`, 1},
		{"payload not JSON", `notjson`, types.InvocationTypeRequestResponse, 0, new(*types.InvalidRequestContentException), "", 0},
		{"payload cut short", `{"key":`, types.InvocationTypeRequestResponse, 0, new(*types.InvalidRequestContentException), "", 0},
		{"dry run", `{"key":"k"}`, types.InvocationTypeDryRun, http.StatusNoContent, nil, "", 0},
		{"event", `{"key":"k"}`, types.InvocationTypeEvent, http.StatusAccepted, nil, "", 1},
		{"payload of 6 MB", bigPayload(localgw.MaxPayload), types.InvocationTypeRequestResponse, http.StatusOK, nil, `{}`, 1},
		{"payload above 6 MB", bigPayload(localgw.MaxPayload + 1), types.InvocationTypeRequestResponse, 0, new(*types.RequestTooLargeException), "", 0},
		{"event of 1 MB", bigPayload(localgw.MaxEventPayload), types.InvocationTypeEvent, http.StatusAccepted, nil, "", 1},
		{"event above 1 MB", bigPayload(localgw.MaxEventPayload + 1), types.InvocationTypeEvent, 0, new(*types.RequestTooLargeException), "", 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var fn counter
			client := invokeClient(t, &fn)
			out, err := client.Invoke(t.Context(), &lambda.InvokeInput{FunctionName: aws.String("bucketgate-check"), Payload: []byte(tc.payload), InvocationType: tc.typ})
			switch {
			case tc.wantErr != nil:
				if !errors.As(err, tc.wantErr) {
					t.Errorf("error %v, want a %T", err, tc.wantErr)
				}
			case err != nil:
				t.Fatalf("invoke: %v", err)
			case out.StatusCode != tc.wantStatus || string(out.Payload) != tc.wantBody || out.FunctionError != nil:
				t.Errorf("status %d, payload %q, function error %v: want %d, %q, none", out.StatusCode, out.Payload, aws.ToString(out.FunctionError), tc.wantStatus, tc.wantBody)
			}
			if n := fn.runs.Load(); n != tc.wantRuns {
				t.Errorf("the function ran %d times, want %d", n, tc.wantRuns)
			}
		})
	}
}

// waiter reports the context each invocation runs with: started gets its deadline, and
// ended, once the context is done or release is closed, its error (nil: not done).
type waiter struct {
	started chan time.Time
	ended   chan error
	release chan struct{}
}

func (w *waiter) Invoke(ctx context.Context, _ []byte) ([]byte, error) {
	deadline, _ := ctx.Deadline()
	w.started <- deadline
	select {
	case <-ctx.Done():
		w.ended <- ctx.Err()
	case <-w.release:
		w.ended <- nil
	}
	return []byte(`{}`), nil
}

// A function runs with the context Lambda gives an invocation: a deadline the
// functions' Timeout (FunctionTimeout) after it started, so that its own deadlines (the
// guard's margin, a registry read's) are those it meets deployed; and not cancelled when
// its caller hangs up (a checkclient whose context ended), which Lambda never tells a
// function: a decision once begun is made whole, as it is deployed.
func TestInvokeContextIsLambdas(t *testing.T) {
	// noticeWithin is how long the test gives the server to notice its caller hung
	// up: past it, a function whose context was to be cancelled would have seen it.
	const noticeWithin = time.Second
	for _, typ := range []types.InvocationType{types.InvocationTypeRequestResponse, types.InvocationTypeEvent} {
		t.Run(string(typ), func(t *testing.T) {
			fn := &waiter{started: make(chan time.Time, 1), ended: make(chan error, 1), release: make(chan struct{})}
			client := invokeClient(t, fn)
			ctx, hangUp := context.WithCancel(t.Context())
			called := make(chan error, 1)
			before := time.Now()
			go func() {
				_, err := client.Invoke(ctx, &lambda.InvokeInput{FunctionName: aws.String("bucketgate-check"), Payload: []byte(`{}`), InvocationType: typ})
				called <- err
			}()
			deadline := <-fn.started
			if deadline.IsZero() || deadline.Before(before) || deadline.After(time.Now().Add(localgw.FunctionTimeout)) {
				t.Errorf("the function's deadline %v: want one the functions' Timeout (%v) after it started, %v", deadline, localgw.FunctionTimeout, before)
			}
			hangUp()
			if err := <-called; err == nil {
				t.Fatal("the call outlived its context")
			}
			var err error
			select {
			case err = <-fn.ended:
			case <-time.After(noticeWithin):
				close(fn.release)
				err = <-fn.ended
			}
			if errors.Is(err, context.Canceled) {
				t.Fatalf("the function's context: %v when its caller hung up; Lambda runs an invocation to its end", err)
			}
		})
	}
}

// A payload that is not JSON is refused with where it stops being JSON, its line and
// column, as the Lambda service's message names them and make invoke does for an event
// file: the message said "the payload is not JSON" and nothing of where.
func TestInvokeNotJSONSaysWhere(t *testing.T) {
	tests := []struct{ name, payload, want string }{
		{"a comma missing", "{\n  \"key\": \"tenant-42\"\n  \"cost\": 2\n}", "(line 3, column 3)"},
		{"a comma too many", "{\n  \"key\": \"tenant-42\",\n}", "(line 3, column 1)"},
		{"cut short", "{\n  \"key\":", "(line 2, column 8)"},
		{"not JSON at all", "notjson", "(line 1, column 2)"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var fn counter
			w := httptest.NewRecorder()
			localgw.Invoke(w, httptest.NewRequest(http.MethodPost, "/2015-03-31/functions/f/invocations", strings.NewReader(tc.payload)), &fn)
			var body struct{ Message string }
			if err := json.Unmarshal(w.Body.Bytes(), &body); err != nil {
				t.Fatalf("body %q: %v", w.Body, err)
			}
			if w.Code != http.StatusBadRequest || !strings.Contains(body.Message, tc.want) || !strings.Contains(body.Message, "not JSON") {
				t.Errorf("%d %q, want 400 naming %s", w.Code, body.Message, tc.want)
			}
			if fn.runs.Load() != 0 {
				t.Errorf("the function ran")
			}
		})
	}
}
