package dynalite_test

import (
	"context"
	"net"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/bucketgate/bucketgate/internal/testkit/dynalite"
)

// A started server is a DynamoDB endpoint for the AWS SDK with Env's variables; a closed
// one no longer listens.
func TestServerServesTheSDK(t *testing.T) {
	srv := dynalite.Start(t)
	db := srv.Client(t)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	_, err := db.CreateTable(ctx, &dynamodb.CreateTableInput{
		TableName:            aws.String("kit"),
		BillingMode:          types.BillingModePayPerRequest,
		AttributeDefinitions: []types.AttributeDefinition{{AttributeName: aws.String("id"), AttributeType: types.ScalarAttributeTypeS}},
		KeySchema:            []types.KeySchemaElement{{AttributeName: aws.String("id"), KeyType: types.KeyTypeHash}},
	})
	if err != nil {
		t.Fatal(err)
	}
	out, err := db.ListTables(ctx, &dynamodb.ListTablesInput{})
	if err != nil || len(out.TableNames) != 1 || out.TableNames[0] != "kit" {
		t.Fatalf("ListTables = %v, %v; want [kit]", out, err)
	}
	srv.Close()
	srv.Close() // twice is fine
	if c, err := net.DialTimeout("tcp", srv.Addr, time.Second); err == nil {
		c.Close()
		t.Fatalf("%s still accepts connections after Close", srv.Addr)
	}
}

// Two servers never share a port or a table.
func TestServersAreApart(t *testing.T) {
	a, b := dynalite.Start(t), dynalite.Start(t)
	if a.Addr == b.Addr {
		t.Fatalf("both servers on %s", a.Addr)
	}
}
