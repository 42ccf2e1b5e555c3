package lambdaerror_test

import (
	"errors"
	"testing"

	"github.com/aws/aws-lambda-go/lambda/messages"
	"github.com/bucketgate/bucketgate/internal/lambdaerror"
	"github.com/bucketgate/bucketgate/internal/testkit/runtimeapi"
)

func TestResponse(t *testing.T) {
	tests := []struct {
		name string
		err  error
		want messages.InvokeResponse_Error
	}{
		{"plain error", errors.New("Unauthorized"), messages.InvokeResponse_Error{Message: "Unauthorized", Type: "errorString"}},
		{"typed error as is", messages.InvokeResponse_Error{Message: "key: required", Type: "InvalidRequest"}, messages.InvokeResponse_Error{Message: "key: required", Type: "InvalidRequest"}},
		{"pointer type", &runtimeapi.FunctionError{Message: "boom"}, messages.InvokeResponse_Error{Message: "boom", Type: "FunctionError"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := lambdaerror.Response(tc.err); got.Message != tc.want.Message || got.Type != tc.want.Type {
				t.Fatalf("Response = %+v, want %+v", got, tc.want)
			}
		})
	}
}
