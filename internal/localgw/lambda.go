package localgw

import (
	"encoding/json"
	"io"
	"net/http"
	"reflect"

	"github.com/aws/aws-lambda-go/lambda/messages"
)

// The parts of the Lambda Invoke API that Invoke speaks.
const (
	// InvokePath is the route of the Invoke operation, {name} the function's name.
	InvokePath = "POST /2015-03-31/functions/{name}/invocations"
	// HeaderFunctionError carries FunctionErrorUnhandled when the function returned an
	// error.
	HeaderFunctionError = "X-Amz-Function-Error"
	// FunctionErrorUnhandled is the HeaderFunctionError value of a function error.
	FunctionErrorUnhandled = "Unhandled"
)

// Invoke answers the synchronous Lambda Invoke call r with the function h, as the Lambda
// service does: r's body is the payload, and h's answer is the response's body; when h
// fails, the body is the function error's payload (ErrorResponse) and the header
// X-Amz-Function-Error says Unhandled. So the AWS SDK's Lambda client, pointed at a
// server that routes InvokePath here (AWS_ENDPOINT_URL_LAMBDA), invokes h in-process.
func Invoke(w http.ResponseWriter, r *http.Request, h Invoker) {
	payload, err := io.ReadAll(r.Body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	out, err := h.Invoke(r.Context(), payload)
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Amz-Executed-Version", "$LATEST")
	if err != nil {
		w.Header().Set(HeaderFunctionError, FunctionErrorUnhandled)
		out, _ = json.Marshal(ErrorResponse(err)) // strings only: cannot fail
	}
	_, _ = w.Write(out)
}

// ErrorResponse is what the aws-lambda-go runtime posts to the error endpoint for a
// handler's error, and so what the Lambda service reports as a function error's
// payload: a messages.InvokeResponse_Error as it is (not unwrapped), else the error's
// text and the name of its type.
func ErrorResponse(err error) messages.InvokeResponse_Error {
	if ive, ok := err.(messages.InvokeResponse_Error); ok { //nolint:errorlint // the runtime does not unwrap either
		return ive
	}
	t := reflect.TypeOf(err)
	if t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	return messages.InvokeResponse_Error{Message: err.Error(), Type: t.Name()}
}
