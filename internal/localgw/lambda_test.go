package localgw_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/aws/aws-lambda-go/lambda/messages"

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
