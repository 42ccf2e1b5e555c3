// Package checkclient calls bucketgate's check function from Go through the AWS SDK's
// Lambda Invoke: typed requests and responses (package checkapi), one invocation per
// Check or CheckBatch, and the function's errors as typed Go errors.
//
//	cfg, err := config.LoadDefaultConfig(ctx)
//	...
//	checks := checkclient.New(lambda.NewFromConfig(cfg), "bucketgate-check")
//	res, err := checks.Check(ctx, checkapi.Request{Key: "tenant-42", Plan: "pro"})
//	if err == nil && !res.Allowed {
//		// wait res.RetryAfter()
//	}
package checkclient

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/lambda"
	"github.com/aws/aws-sdk-go-v2/service/lambda/types"

	"github.com/bucketgate/bucketgate/checkapi"
)

// Invoker invokes a Lambda function; *lambda.Client is one.
type Invoker interface {
	Invoke(ctx context.Context, in *lambda.InvokeInput, optFns ...func(*lambda.Options)) (*lambda.InvokeOutput, error)
}

// Client invokes one check function. It is safe for concurrent use if its Invoker is
// (*lambda.Client is).
type Client struct {
	invoker  Invoker
	function string
}

// New returns a Client that invokes function (a name, a name:alias, or an ARN)
// through invoker, synchronously.
func New(invoker Invoker, function string) *Client {
	return &Client{invoker: invoker, function: function}
}

// Check decides one request. Its error is an *InvalidRequestError when the function
// refused req (nothing was decided or written), a *FunctionError when the function
// failed otherwise, and else the SDK's error for an invocation that did not happen.
// A Redis outage is not an error: it is a Response with reason unavailable (or
// degraded when the function fails open).
func (c *Client) Check(ctx context.Context, req checkapi.Request) (checkapi.Response, error) {
	var res checkapi.Response
	err := c.invoke(ctx, req, &res)
	return res, err
}

// CheckBatch decides up to checkapi.MaxBatch requests in one invocation, one after
// another in order: results[i] answers reqs[i]. Each check is atomic, the batch is
// not. Errors are as for Check; an invalid request anywhere (or more than MaxBatch)
// refuses the whole batch before anything is decided, and the error names the index
// ("checks[3].cost: ...").
func (c *Client) CheckBatch(ctx context.Context, reqs []checkapi.Request) ([]checkapi.Response, error) {
	var res checkapi.BatchResult
	if err := c.invoke(ctx, checkapi.Batch{Checks: reqs}, &res); err != nil {
		return nil, err
	}
	if len(res.Results) != len(reqs) {
		return nil, fmt.Errorf("checkclient: %s answered %d results for %d checks", c.function, len(res.Results), len(reqs))
	}
	return res.Results, nil
}

// invoke sends in and decodes the answer into out.
func (c *Client) invoke(ctx context.Context, in, out any) error {
	payload, err := json.Marshal(in)
	if err != nil {
		return fmt.Errorf("checkclient: encode request: %w", err)
	}
	o, err := c.invoker.Invoke(ctx, &lambda.InvokeInput{
		FunctionName:   aws.String(c.function),
		InvocationType: types.InvocationTypeRequestResponse,
		Payload:        payload,
	})
	if err != nil {
		return fmt.Errorf("checkclient: invoke %s: %w", c.function, err)
	}
	if o.FunctionError != nil {
		return functionError(c.function, *o.FunctionError, o.Payload)
	}
	if err := json.Unmarshal(o.Payload, out); err != nil {
		return fmt.Errorf("checkclient: %s answered %s: %w", c.function, excerpt(o.Payload), err)
	}
	return nil
}
