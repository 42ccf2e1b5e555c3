package main

import (
	"context"
	"errors"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	awsconfig "github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/lambda"
	"github.com/aws/aws-sdk-go-v2/service/lambda/types"

	"github.com/bucketgate/bucketgate/checkclient"
	"github.com/bucketgate/bucketgate/internal/app"
)

// operator is the function the buckets and usage commands invoke: its name, a client of
// it, and the region it is looked for in, for the errors.
type operator struct {
	name   string
	client *checkclient.Client
	region string
}

// newOperator returns the operator function called function, with a client of the AWS
// SDK's default configuration (AWS_ENDPOINT_URL_LAMBDA included), which must name a
// region unless it names an endpoint; a function's ARN of another region than the
// configuration's is a usage error, as Invoke reaches no function of another region.
// The client gives a refund a requestId of its own, so that a retry of it is decided
// once.
func newOperator(ctx context.Context, function string) (operator, error) {
	cfg, err := awsconfig.LoadDefaultConfig(ctx)
	if err != nil {
		return operator{}, fmt.Errorf("AWS configuration for Lambda: %w", err)
	}
	c := lambda.NewFromConfig(cfg)
	if o := c.Options(); o.Region == "" && o.BaseEndpoint == nil {
		return operator{}, fmt.Errorf("function %s: %w to the function's", function, app.ErrNoRegion)
	}
	if m := functionName.FindStringSubmatch(function); m != nil && cfg.Region != "" {
		if region := m[functionName.SubexpIndex("region")]; region != "" && region != cfg.Region {
			return operator{}, fmt.Errorf("%w: function %s is in region %s, but this CLI invokes functions in region %s (AWS_REGION or the profile's), and Lambda invokes none of another region: set AWS_REGION=%s, or name a function of region %s",
				errUsage, function, region, cfg.Region, region, cfg.Region)
		}
	}
	if err := readCredentials(ctx, cfg.Credentials); err != nil {
		return operator{}, fmt.Errorf("function %s: %w", function, err)
	}
	return operator{name: function, client: checkclient.New(c, function), region: cfg.Region}, nil
}

// errNoCredentials is wrapped by the error of a client whose credentials could not be
// read: the SDK's ("get identity: get credentials: failed to refresh cached
// credentials, ...", after a wait for the instance metadata service) names no setting.
var errNoCredentials = errors.New("no AWS credentials: set AWS_PROFILE to a configured profile (aws configure; aws sso login renews an SSO one), or AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY")

// readCredentials reads creds as a client's first request would (the client caches
// them, so that request reads none again), and answers errNoCredentials with the SDK's
// reason when they cannot be read.
func readCredentials(ctx context.Context, creds aws.CredentialsProvider) error {
	if creds == nil {
		return errNoCredentials
	}
	if _, err := creds.Retrieve(ctx); err != nil {
		return fmt.Errorf("%w: %w", errNoCredentials, err)
	}
	return nil
}

// inRegion is " in region R", or "" for no region (an endpoint of its own).
func inRegion(region string) string {
	if region == "" {
		return ""
	}
	return " in region " + region
}

// explain turns the errors of an invocation of the function into ones that say what to
// do.
func (o operator) explain(err error) error {
	var (
		invalid *checkclient.InvalidRequestError
		missing *types.ResourceNotFoundException
	)
	switch {
	case errors.As(err, &invalid):
		return fmt.Errorf("%s refused the request, nothing was changed: %s", o.name, invalid.Message)
	case errors.As(err, &missing):
		return fmt.Errorf("no function %s%s: check the region (AWS_REGION or the profile's), name the deployed stack with --stack or %s, or set %s or --function to the operator function's name (the stack's output %s, or %s for a stack without one): %w",
			o.name, inRegion(o.region), envStack, envCheckFunction, outputOperatorName, outputCheckName, err)
	}
	if r := refusal(err, "function "+o.name, "invoke "+o.name, "lambda:InvokeFunction"); r != nil {
		return r
	}
	return err
}
