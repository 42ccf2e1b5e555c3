package moto_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awsconfig "github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/cloudformation"
	"github.com/aws/aws-sdk-go-v2/service/sts"

	"github.com/bucketgate/bucketgate/internal/testkit/moto"
)

// template is a stack with one output, exported.
const template = `Resources:
  Nothing: {Type: AWS::CloudFormation::WaitConditionHandle}
Outputs:
  Answer:
    Value: "42"
    Export: {Name: !Sub "${AWS::StackName}-Answer"}
`

// A started server answers the SDK's clients through Env's endpoint variable (as the
// product's clients find it) and through Config (any service).
func TestServerServesTheSDK(t *testing.T) {
	srv := moto.Start(t)
	srv.Setenv(t, "CloudFormation")
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cfg, err := awsconfig.LoadDefaultConfig(ctx)
	if err != nil {
		t.Fatal(err)
	}
	cfn := cloudformation.NewFromConfig(cfg)
	if _, err := cfn.CreateStack(ctx, &cloudformation.CreateStackInput{StackName: aws.String("kit"), TemplateBody: aws.String(template)}); err != nil {
		t.Fatal(err)
	}
	out, err := cfn.DescribeStacks(ctx, &cloudformation.DescribeStacksInput{StackName: aws.String("kit")})
	if err != nil || len(out.Stacks) != 1 || len(out.Stacks[0].Outputs) != 1 {
		t.Fatalf("DescribeStacks = %+v, %v; want the stack with its output", out, err)
	}
	if o := out.Stacks[0].Outputs[0]; aws.ToString(o.OutputKey) != "Answer" || aws.ToString(o.OutputValue) != "42" || aws.ToString(o.ExportName) != "kit-Answer" {
		t.Fatalf("output %s=%s exported as %s; want Answer=42 as kit-Answer", aws.ToString(o.OutputKey), aws.ToString(o.OutputValue), aws.ToString(o.ExportName))
	}

	id, err := sts.NewFromConfig(srv.Config()).GetCallerIdentity(ctx, &sts.GetCallerIdentityInput{})
	if err != nil || aws.ToString(id.Account) != moto.AccountID {
		t.Fatalf("GetCallerIdentity through Config = %+v, %v; want account %s", id, err, moto.AccountID)
	}

}

// Two servers never share a port or a stack.
func TestServersAreApart(t *testing.T) {
	a, b := moto.Start(t), moto.Start(t)
	if a.Addr == b.Addr {
		t.Fatalf("both servers on %s", a.Addr)
	}
	ctx := context.Background()
	if _, err := cloudformation.NewFromConfig(a.Config()).CreateStack(ctx, &cloudformation.CreateStackInput{StackName: aws.String("only-a"), TemplateBody: aws.String(template)}); err != nil {
		t.Fatal(err)
	}
	if _, err := cloudformation.NewFromConfig(b.Config()).DescribeStacks(ctx, &cloudformation.DescribeStacksInput{StackName: aws.String("only-a")}); err == nil {
		t.Fatal("b describes the stack created in a")
	}
}

func TestEndpointVariable(t *testing.T) {
	for service, want := range map[string]string{
		"CloudFormation":  "AWS_ENDPOINT_URL_CLOUDFORMATION",
		"EventBridge":     "AWS_ENDPOINT_URL_EVENTBRIDGE",
		"SQS":             "AWS_ENDPOINT_URL_SQS",
		"Secrets Manager": "AWS_ENDPOINT_URL_SECRETS_MANAGER",
	} {
		if got := moto.EndpointVariable(service); got != want {
			t.Errorf("EndpointVariable(%q) = %s, want %s", service, got, want)
		}
	}
}

// Without moto_server on PATH, a start fails with ErrNoMoto, which Start turns into a
// loud skip, or a failure where the suites are required (testkit.Check).
func TestMissingServer(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	s, err := moto.NewServer()
	if !errors.Is(err, moto.ErrNoMoto) || s != nil || !strings.Contains(err.Error(), "moto_server is not on PATH") {
		t.Fatalf("NewServer without moto_server = %v, %v; want ErrNoMoto saying what to install", s, err)
	}
}
