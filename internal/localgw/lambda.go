package localgw

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"reflect"
	"time"

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
	// headerInvocationType is the request header that names the invocation type:
	// RequestResponse (the default), Event or DryRun.
	headerInvocationType = "X-Amz-Invocation-Type"
	// headerErrorType names the error of a refused call, as the AWS SDK reads it.
	headerErrorType = "X-Amzn-ErrorType"
	// MaxPayload is the largest payload of a synchronous invocation, in bytes (6 MB), and
	// MaxEventPayload of an asynchronous one (1 MB): Lambda's quotas.
	MaxPayload      = 6 << 20
	MaxEventPayload = 1 << 20
)

// FunctionTimeout is the functions' Timeout in template.yaml: how long Lambda lets an
// invocation run, and so how far the deadline of the context it gives the function is
// from the invocation's start (see Context).
const FunctionTimeout = 5 * time.Second

// Context returns the context Lambda gives an invocation that starts now: ctx's values,
// a deadline FunctionTimeout away, and not ctx's cancellation, for Lambda runs an
// invocation whose caller hung up (a client whose context ended) to its end. Call its
// CancelFunc when the invocation is done.
func Context(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.WithoutCancel(ctx), FunctionTimeout)
}

// Invoke answers the Lambda Invoke call r with the function h, as the Lambda service
// does: r's body is the payload, and h's answer is the response's body; when h fails,
// the body is the function error's payload (ErrorResponse) and the header
// X-Amz-Function-Error says Unhandled. A payload above Lambda's quota (MaxPayload, or
// MaxEventPayload for an Event) is refused (413, RequestTooLargeException) and one that
// is not JSON (400, InvalidRequestContentException), running nothing; a DryRun runs
// nothing (204), and an Event invocation runs h before it answers 202 with no payload.
// h runs with the context Lambda gives a function (Context): a deadline
// FunctionTimeout away, and no cancellation when the caller hangs up. So the AWS SDK's Lambda client, pointed at a server that routes InvokePath here
// (AWS_ENDPOINT_URL_LAMBDA), invokes h in-process.
func Invoke(w http.ResponseWriter, r *http.Request, h Invoker) {
	most := MaxPayload
	if r.Header.Get(headerInvocationType) == "Event" {
		most = MaxEventPayload
	}
	payload, err := io.ReadAll(io.LimitReader(r.Body, int64(most)+1))
	switch {
	case err != nil:
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	case len(payload) > most:
		refuse(w, http.StatusRequestEntityTooLarge, "RequestTooLargeException", fmt.Sprintf("Request must be smaller than %d bytes for the InvokeFunction operation", most+1))
		return
	}
	if err := NotJSON(payload); err != nil {
		refuse(w, http.StatusBadRequest, "InvalidRequestContentException", "Could not parse request body into json: the payload is "+err.Error())
		return
	}
	if r.Header.Get(headerInvocationType) == "DryRun" {
		w.WriteHeader(http.StatusNoContent)
		return
	}
	ctx, cancel := Context(r.Context())
	defer cancel()
	if r.Header.Get(headerInvocationType) == "Event" {
		_, _ = h.Invoke(ctx, payload) // Lambda reports nothing of an asynchronous invocation to its caller
		w.WriteHeader(http.StatusAccepted)
		return
	}
	out, err := h.Invoke(ctx, payload)
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Amz-Executed-Version", "$LATEST")
	if err != nil {
		w.Header().Set(HeaderFunctionError, FunctionErrorUnhandled)
		out, _ = json.Marshal(ErrorResponse(err)) // strings only: cannot fail
	}
	_, _ = w.Write(out)
}

// refuse answers an Invoke call the Lambda service refuses before the function runs:
// status, the error's type in X-Amzn-ErrorType, and its message.
func refuse(w http.ResponseWriter, status int, errorType, message string) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set(headerErrorType, errorType)
	w.WriteHeader(status)
	body, _ := json.Marshal(map[string]string{"Type": "User", "message": message}) // strings only: cannot fail
	_, _ = w.Write(body)
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
