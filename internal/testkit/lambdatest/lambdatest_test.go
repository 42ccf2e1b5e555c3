package lambdatest_test

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/aws/aws-lambda-go/lambda"
	"github.com/aws/aws-sdk-go-v2/aws"
	awslambda "github.com/aws/aws-sdk-go-v2/service/lambda"
	"github.com/aws/aws-sdk-go-v2/service/lambda/types"

	"github.com/bucketgate/bucketgate/internal/testkit/lambdatest"
)

type echo struct{}

func (echo) Invoke(_ context.Context, payload []byte) ([]byte, error) { return payload, nil }

func TestServer(t *testing.T) {
	srv := lambdatest.Start(t, map[string]lambda.Handler{"echo": echo{}})
	ctx := context.Background()
	c := srv.Client()

	out, err := c.Invoke(ctx, &awslambda.InvokeInput{FunctionName: aws.String("echo"), Payload: []byte(`{"a":1}`)})
	if err != nil || string(out.Payload) != `{"a":1}` || out.FunctionError != nil || out.StatusCode != http.StatusOK {
		t.Fatalf("Invoke = %+v, %v: want the payload echoed", out, err)
	}
	if srv.Invocations("echo") != 1 {
		t.Fatalf("%d invocations, want 1", srv.Invocations("echo"))
	}

	out, err = c.Invoke(ctx, &awslambda.InvokeInput{FunctionName: aws.String("arn:aws:lambda:us-east-1:123456789012:function:echo"), Payload: []byte(`{"b":2}`)})
	if err != nil || string(out.Payload) != `{"b":2}` || srv.Invocations("echo") != 2 {
		t.Fatalf("Invoke by ARN = %+v, %v, %d invocations: want the payload echoed by echo", out, err, srv.Invocations("echo"))
	}

	_, err = c.Invoke(ctx, &awslambda.InvokeInput{FunctionName: aws.String("echo"), InvocationType: types.InvocationTypeEvent})
	var bad *types.InvalidParameterValueException
	if !errors.As(err, &bad) {
		t.Fatalf("asynchronous Invoke: error %v (%T), want InvalidParameterValueException", err, err)
	}

	resp, err := http.Post(srv.URL+"/2015-03-31/functions/echo/invocations", "application/json", strings.NewReader(`{}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusForbidden || srv.Invocations("echo") != 2 {
		t.Fatalf("unsigned call: status %d, %d invocations: want 403 and no invocation", resp.StatusCode, srv.Invocations("echo"))
	}
}
