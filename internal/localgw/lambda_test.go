package localgw_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

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
			mux := http.NewServeMux()
			mux.HandleFunc(localgw.InvokePath, func(w http.ResponseWriter, r *http.Request) { localgw.Invoke(w, r, &fn) })
			srv := httptest.NewServer(mux)
			defer srv.Close()
			client := lambda.New(lambda.Options{
				BaseEndpoint: aws.String(srv.URL),
				Region:       "us-east-1",
				Credentials:  credentials.NewStaticCredentialsProvider("local", "local", ""),
				Retryer:      aws.NopRetryer{},
			})
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
