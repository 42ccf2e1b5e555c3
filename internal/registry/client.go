package registry

import (
	"context"
	"fmt"

	awsconfig "github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
)

// NewClient returns a DynamoDB client with the AWS SDK's default configuration: the
// region, the credentials and the endpoint (AWS_ENDPOINT_URL_DYNAMODB, for local runs)
// as the SDK finds them. It sends no request; credentials are fetched on first use.
func NewClient(ctx context.Context) (*dynamodb.Client, error) {
	cfg, err := awsconfig.LoadDefaultConfig(ctx)
	if err != nil {
		return nil, fmt.Errorf("AWS configuration for DynamoDB: %w", err)
	}
	return dynamodb.NewFromConfig(cfg), nil
}
