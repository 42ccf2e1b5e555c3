package template_test

import (
	"reflect"
	"regexp"
	"slices"
	"testing"

	"gopkg.in/yaml.v3"

	"github.com/bucketgate/bucketgate/internal/registry"
	"github.com/bucketgate/bucketgate/internal/settings"
)

// registryResources is the part of template.yaml the registry's invariants read, every
// property as decoded YAML (intrinsic functions as the values they hold).
type registryResources struct {
	Resources map[string]struct {
		Type                string         `yaml:"Type"`
		Condition           string         `yaml:"Condition"`
		DeletionPolicy      string         `yaml:"DeletionPolicy"`
		UpdateReplacePolicy string         `yaml:"UpdateReplacePolicy"`
		Properties          map[string]any `yaml:"Properties"`
	} `yaml:"Resources"`
}

// dynamoActions matches every DynamoDB action the template names.
var dynamoActions = regexp.MustCompile(`dynamodb:[A-Za-z*]+`)

// functionPolicy is the managed policy of what the Go functions may do, beyond their
// logs and traces.
const functionPolicy = "FunctionAccessPolicy"

// The key registry: a DynamoDB table keyed as the registry reads it (on demand,
// point-in-time recovery, encryption, kept when the stack goes), or an existing one;
// both Go functions get its name and may only GetItem on it (their roles carry
// FunctionAccessPolicy: TestTemplateFunctionRoles); a gateway VPC endpoint
// for DynamoDB on the created VPC's route table or the route tables given, since the
// functions run in private subnets (TestTemplateCreatedVpc and TestTemplateExistingVpc
// deploy it).
func TestTemplateRegistry(t *testing.T) {
	var tpl registryResources
	if err := yaml.Unmarshal([]byte(readFile(t, limiter)), &tpl); err != nil {
		t.Fatal(err)
	}
	table, ok := tpl.Resources["RegistryTable"]
	if !ok || table.Type != "AWS::DynamoDB::Table" || table.Condition != "CreateRegistryTable" {
		t.Fatalf("RegistryTable: %+v, want an AWS::DynamoDB::Table under CreateRegistryTable", table)
	}
	p := table.Properties
	wantKey := []any{map[string]any{"AttributeName": registry.KeyAttribute, "KeyType": "HASH"}}
	wantAttr := []any{map[string]any{"AttributeName": registry.KeyAttribute, "AttributeType": "S"}}
	if p["BillingMode"] != "PAY_PER_REQUEST" || !reflect.DeepEqual(p["KeySchema"], wantKey) || !reflect.DeepEqual(p["AttributeDefinitions"], wantAttr) ||
		!reflect.DeepEqual(p["PointInTimeRecoverySpecification"], map[string]any{"PointInTimeRecoveryEnabled": true}) ||
		!reflect.DeepEqual(p["SSESpecification"], map[string]any{"SSEEnabled": true}) || p["DeletionProtectionEnabled"] != true ||
		table.DeletionPolicy != "Retain" || table.UpdateReplacePolicy != "Retain" {
		t.Errorf("RegistryTable %+v: want on-demand, key %s (S), point-in-time recovery, SSE, deletion protection, retained", table, registry.KeyAttribute)
	}

	full := loadTemplate(t, limiter)
	wantResource := []any{"CreateRegistryTable", "RegistryTable.Arn", "arn:${AWS::Partition}:dynamodb:${AWS::Region}:${AWS::AccountId}:table/${ExistingRegistryTable}"}
	for id := range deployedGoFunctions(t) {
		vars := full.function(t, full.Resources[id]).Environment.Variables
		if !reflect.DeepEqual(vars[settings.EnvRegistryTable], []any{"CreateRegistryTable", "RegistryTable", "ExistingRegistryTable"}) {
			t.Errorf("%s: %s = %v, want the created or the existing table", id, settings.EnvRegistryTable, vars[settings.EnvRegistryTable])
		}
	}
	policy := tpl.Resources[functionPolicy]
	var grants []map[string]any
	collectStatements(policy.Properties["PolicyDocument"], &grants)
	n := 0
	for _, s := range grants {
		if !dynamoActions.MatchString(jsonText(t, s["Action"])) {
			continue
		}
		n++
		if s["Action"] != "dynamodb:GetItem" || !reflect.DeepEqual(s["Resource"], wantResource) || s["Effect"] != "Allow" {
			t.Errorf("%s: DynamoDB statement %v, want exactly dynamodb:GetItem on the registry table", functionPolicy, s)
		}
	}
	if policy.Type != "AWS::IAM::ManagedPolicy" || n != 1 {
		t.Errorf("%s (%s): %d DynamoDB statements, want an AWS::IAM::ManagedPolicy with 1", functionPolicy, policy.Type, n)
	}
	// No identity of the stack may do more with DynamoDB (the endpoint's policy, which
	// grants nothing by itself, is TestTemplateSecurity's).
	var iam []string
	for _, r := range tpl.Resources {
		switch r.Type {
		case "AWS::IAM::ManagedPolicy", "AWS::IAM::Role", "AWS::IAM::Policy", "AWS::Serverless::Function":
			iam = append(iam, dynamoActions.FindAllString(jsonText(t, r.Properties), -1)...)
		}
	}
	if actions := slices.Compact(slices.Sorted(slices.Values(iam))); !slices.Equal(actions, []string{"dynamodb:GetItem"}) {
		t.Errorf("the template's IAM policies grant DynamoDB actions %v, want dynamodb:GetItem alone", actions)
	}

	ep, ok := tpl.Resources["DynamoDBEndpoint"]
	if !ok || ep.Type != "AWS::EC2::VPCEndpoint" || ep.Condition != "AddDynamoDBEndpoint" || ep.Properties["VpcEndpointType"] != "Gateway" ||
		ep.Properties["ServiceName"] != "com.amazonaws.${AWS::Region}.dynamodb" ||
		!reflect.DeepEqual(ep.Properties["RouteTableIds"], []any{"CreateVpc", []any{"PrivateRouteTable"}, "RouteTableIds"}) ||
		!reflect.DeepEqual(ep.Properties["VpcId"], []any{"CreateVpc", "Vpc", "VpcId"}) {
		t.Errorf("DynamoDBEndpoint %+v: want a gateway endpoint for DynamoDB on the created route table or RouteTableIds", ep)
	}
}

// collectStatements appends every IAM statement (a map with an Action) found in v,
// inside the branches of !If too.
func collectStatements(v any, out *[]map[string]any) {
	switch v := v.(type) {
	case map[string]any:
		if _, ok := v["Action"]; ok {
			*out = append(*out, v)
			return
		}
		for _, e := range v {
			collectStatements(e, out)
		}
	case []any:
		for _, e := range v {
			collectStatements(e, out)
		}
	}
}

// The check function is named <stack>-check, so that the operator's CLI and the client
// examples find it by their default name, bucketgate-check, in the stack samconfig.toml
// deploys.
func TestTemplateCheckFunctionName(t *testing.T) {
	tpl := loadTemplate(t, limiter)
	var props struct {
		FunctionName yaml.Node `yaml:"FunctionName"`
	}
	tpl.Resources["CheckFunction"].properties(t, &props)
	if props.FunctionName.Tag != "!Sub" || props.FunctionName.Value != "${AWS::StackName}-check" {
		t.Fatalf("CheckFunction FunctionName %s %q, want !Sub ${AWS::StackName}-check", props.FunctionName.Tag, props.FunctionName.Value)
	}
	stack := regexp.MustCompile(`(?m)^stack_name = "([^"]+)"$`).FindStringSubmatch(readFile(t, "samconfig.toml"))
	if stack == nil || stack[1]+"-check" != "bucketgate-check" {
		t.Fatalf("samconfig.toml's stack %v does not give the function the CLI's default name bucketgate-check", stack)
	}
}
