package checkclient_test

import (
	"context"
	"errors"
	"fmt"
	"log"

	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/lambda"

	"github.com/bucketgate/bucketgate/checkapi"
	"github.com/bucketgate/bucketgate/checkclient"
)

// A service asks the check function whether tenant-42 may make one call on the pro
// plan, and backs off when it may not.
func Example() {
	ctx := context.Background()
	cfg, err := config.LoadDefaultConfig(ctx)
	if err != nil {
		log.Fatal(err)
	}
	checks := checkclient.New(lambda.NewFromConfig(cfg), "bucketgate-check")

	res, err := checks.Check(ctx, checkapi.Request{Key: "tenant-42", Plan: "pro"})
	var invalid *checkclient.InvalidRequestError
	switch {
	case errors.As(err, &invalid):
		log.Fatalf("fix the request: %s", invalid.Message)
	case err != nil:
		log.Fatal(err) // the invocation failed; the limiter did not decide
	case !res.Allowed:
		fmt.Printf("%s: retry in %v\n", res.Reason, res.RetryAfter())
	}
}
