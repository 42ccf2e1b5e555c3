package main

import (
	"errors"
	"net/http"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/lambda"

	"github.com/bucketgate/bucketgate/checkapi"
	"github.com/bucketgate/bucketgate/checkclient"
)

// The local gateway's address serves the check function to the AWS SDK's Lambda client
// (AWS_ENDPOINT_URL_LAMBDA), on the Redis the authorizer uses: checkclient decides
// there, and sees the buckets the gateway's requests spent.
func TestCheckFunctionAtTheGatewaysAddress(t *testing.T) {
	g := startGateway(t, map[string]string{"REDIS_ADDR": miniAt(t).Addr()})
	checks := checkclient.New(lambda.New(lambda.Options{
		BaseEndpoint: aws.String(g.url),
		Region:       "us-east-1",
		Credentials:  credentials.NewStaticCredentialsProvider("local", "local", ""),
	}), "bucketgate-check")
	res, err := checks.Check(t.Context(), checkapi.Request{Key: "tenant-42", Plan: "pro"})
	if err != nil || !res.Allowed || res.Remaining != 99 {
		t.Fatalf("check: %+v, %v: want allowed, 99 left", res, err)
	}
	for range 10 {
		if r := g.get(t, "/scores", ""); r.status != http.StatusOK {
			t.Fatalf("gateway: %d", r.status)
		}
	}
	res, err = checks.Check(t.Context(), checkapi.Request{Identity: "ip:127.0.0.1", Cost: checkapi.Cost(0)})
	if err != nil || res.Remaining != 0 || res.Plan != "free" {
		t.Fatalf("peek at the gateway's caller: %+v, %v: want its free burst spent", res, err)
	}
	var invalid *checkclient.InvalidRequestError
	if _, err := checks.Check(t.Context(), checkapi.Request{Key: "tenant-42", Plan: "gold"}); !errors.As(err, &invalid) {
		t.Fatalf("unknown plan: %v, want an InvalidRequestError", err)
	}
}
