// Package lambdaerror says what the Lambda service reports when a Go handler returns an
// error: the payload of a function error, as make invoke and the tests print it.
package lambdaerror

import (
	"reflect"

	"github.com/aws/aws-lambda-go/lambda/messages"
)

// Response is what the aws-lambda-go runtime posts to the error endpoint for a
// handler's error, and so what the Lambda service reports as a function error's
// payload: a messages.InvokeResponse_Error as it is (not unwrapped), else the error's
// text and the name of its type. make invoke prints it as Lambda would report it.
func Response(err error) messages.InvokeResponse_Error {
	if ive, ok := err.(messages.InvokeResponse_Error); ok { //nolint:errorlint // the runtime does not unwrap either
		return ive
	}
	t := reflect.TypeOf(err)
	if t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	return messages.InvokeResponse_Error{Message: err.Error(), Type: t.Name()}
}
