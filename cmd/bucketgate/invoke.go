package main

import (
	"context"
	"errors"
	"fmt"

	awsconfig "github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/lambda"
	"github.com/aws/aws-sdk-go-v2/service/lambda/types"
	"github.com/aws/smithy-go"

	"github.com/bucketgate/bucketgate/checkclient"
)

// newCheckClient returns a client of the check function called function, with the AWS
// SDK's default configuration (AWS_ENDPOINT_URL_LAMBDA included), which must name a
// region unless it names an endpoint. The client gives a
// refund a requestId of its own, so that a retry of it is decided once.
func newCheckClient(ctx context.Context, function string) (*checkclient.Client, error) {
	cfg, err := awsconfig.LoadDefaultConfig(ctx)
	if err != nil {
		return nil, fmt.Errorf("AWS configuration for Lambda: %w", err)
	}
	c := lambda.NewFromConfig(cfg)
	if o := c.Options(); o.Region == "" && o.BaseEndpoint == nil {
		return nil, fmt.Errorf("function %s: %w to the function's", function, errNoRegion)
	}
	return checkclient.New(c, function), nil
}

// errNoRegion is wrapped by the error of a client that has neither a region nor an
// endpoint of its own (AWS_ENDPOINT_URL_<SERVICE>): the SDK's, "Missing Region", names no
// setting.
var errNoRegion = errors.New("no AWS region: set AWS_REGION (or the profile's region)")

// explainInvoke turns the errors of an invocation of function into ones that say what
// to do.
func explainInvoke(err error, function string) error {
	var (
		invalid *checkclient.InvalidRequestError
		missing *types.ResourceNotFoundException
		api     smithy.APIError
	)
	switch {
	case errors.As(err, &invalid):
		return fmt.Errorf("%s refused the request, nothing was changed: %s", function, invalid.Message)
	case errors.As(err, &missing):
		return fmt.Errorf("no function %s: name the deployed stack with --stack or %s, or set %s or --function to the check function's name (the stack's output %s): %w",
			function, envStack, envCheckFunction, outputCheckName, err)
	case errors.As(err, &api) && api.ErrorCode() == "AccessDeniedException":
		return fmt.Errorf("not allowed to invoke %s: these credentials need lambda:InvokeFunction on it: %w", function, err)
	}
	return err
}
