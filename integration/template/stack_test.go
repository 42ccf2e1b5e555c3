package template_test

// The limiter's stack deployed on paper (cfn_test.go): with no parameter it creates a
// VPC that works with no way out of it; with an existing VPC it uses what it is given;
// the Rules refuse what cannot work; CreateExampleApi=false leaves the limiter alone;
// its outputs are exported for the examples and the CLI.

import (
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"
	"testing"
)

// ref is the long form of !Ref id.
func ref(id string) map[string]any { return map[string]any{"Ref": id} }

// ofType returns the logical ids of the resources of type typ, sorted.
func ofType(rs map[string]resource, typ string) []string {
	var ids []string
	for id, r := range rs {
		if r.Type == typ {
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)
	return ids
}

// vpcConfig returns a function's VpcConfig with Globals applied (the Go functions have
// none of their own).
func vpcConfig(t *testing.T, d deployment) map[string]any {
	t.Helper()
	globals, _ := section(d.doc, "Globals")["Function"].(map[string]any)
	c, _ := d.resolve(t, globals["VpcConfig"]).(map[string]any)
	if c == nil {
		t.Fatal("Globals set no VpcConfig")
	}
	return c
}

// ec2InCreatedVpc are the EC2 resource types a created VPC may hold: nothing that leads
// out of it (NAT or internet gateways, routes, peering, transit gateways, addresses).
var ec2InCreatedVpc = []string{"AWS::EC2::VPC", "AWS::EC2::Subnet", "AWS::EC2::RouteTable", "AWS::EC2::SubnetRouteTableAssociation", "AWS::EC2::SecurityGroup",
	"AWS::EC2::SecurityGroupEgress", "AWS::EC2::VPCEndpoint"}

// With no parameter the stack creates a VPC: two private subnets in the first two
// Availability Zones of the Region, their route table with no route out (no NAT, no
// internet gateway), the DynamoDB gateway endpoint on that table, the functions and the
// cache in both subnets with security groups of their own; no X-Ray endpoint unless asked.
func TestTemplateCreatedVpc(t *testing.T) {
	for _, xray := range []string{"false", "true"} {
		t.Run("XRayEndpoint="+xray, func(t *testing.T) {
			d := deploy(t, readTemplate(t, limiter), "XRayEndpoint", xray)
			rs := d.resources(t)
			for id, r := range rs {
				if strings.HasPrefix(r.Type, "AWS::EC2::") && !slices.Contains(ec2InCreatedVpc, r.Type) {
					t.Errorf("%s: %s in the created VPC, which must have no way out", id, r.Type)
				}
			}
			vpcs, subnets := ofType(rs, "AWS::EC2::VPC"), ofType(rs, "AWS::EC2::Subnet")
			if len(vpcs) != 1 || len(subnets) != 2 {
				t.Fatalf("VPCs %v, subnets %v: want one VPC and two subnets", vpcs, subnets)
			}
			var zones []any
			for _, id := range subnets {
				p := rs[id].Properties
				zones = append(zones, p["AvailabilityZone"])
				if !reflect.DeepEqual(p["VpcId"], ref(vpcs[0])) || p["MapPublicIpOnLaunch"] == true {
					t.Errorf("%s: %v: want a private subnet of %s", id, p, vpcs[0])
				}
			}
			wantZones := []any{
				map[string]any{"Fn::Select": []any{0, map[string]any{"Fn::GetAZs": ""}}},
				map[string]any{"Fn::Select": []any{1, map[string]any{"Fn::GetAZs": ""}}},
			}
			if !reflect.DeepEqual(zones, wantZones) {
				t.Errorf("Availability Zones %v, want the Region's first two", zones)
			}
			if p := rs[vpcs[0]].Properties; p["EnableDnsSupport"] != true || p["EnableDnsHostnames"] != true {
				t.Errorf("%s: %v: want DNS support and hostnames (private DNS of interface endpoints)", vpcs[0], p)
			}
			tables := map[string]bool{}
			for _, id := range ofType(rs, "AWS::EC2::SubnetRouteTableAssociation") {
				p := rs[id].Properties
				if slices.ContainsFunc(subnets, func(s string) bool { return reflect.DeepEqual(p["SubnetId"], ref(s)) }) {
					tables[fmt.Sprint(p["RouteTableId"])] = true
				}
			}
			var onEndpoint []any
			xrayEndpoints := 0
			for _, id := range ofType(rs, "AWS::EC2::VPCEndpoint") {
				p := rs[id].Properties
				switch service, _ := p["ServiceName"].(map[string]any); service["Fn::Sub"] {
				case "com.amazonaws.${AWS::Region}.dynamodb":
					onEndpoint, _ = p["RouteTableIds"].([]any)
					if p["VpcEndpointType"] != "Gateway" || !reflect.DeepEqual(p["VpcId"], ref(vpcs[0])) {
						t.Errorf("%s: %v: want a gateway endpoint in the created VPC", id, p)
					}
				case "com.amazonaws.${AWS::Region}.xray":
					xrayEndpoints++
					if p["VpcEndpointType"] != "Interface" || p["PrivateDnsEnabled"] != true || !reflect.DeepEqual(p["SubnetIds"], []any{ref(subnets[0]), ref(subnets[1])}) {
						t.Errorf("%s: %v: want an interface endpoint with private DNS in both subnets", id, p)
					}
				default:
					t.Errorf("%s: endpoint of %v", id, p["ServiceName"])
				}
			}
			var endpointTables []string
			for _, rt := range onEndpoint {
				endpointTables = append(endpointTables, fmt.Sprint(rt))
			}
			if len(tables) == 0 || !slices.Equal(slices.Sorted(maps.Keys(tables)), slices.Sorted(slices.Values(endpointTables))) {
				t.Errorf("the DynamoDB endpoint is on %v, the subnets' route tables are %v", endpointTables, slices.Sorted(maps.Keys(tables)))
			}
			if want := map[string]int{"false": 0, "true": 1}[xray]; xrayEndpoints != want {
				t.Errorf("%d X-Ray endpoints, want %d", xrayEndpoints, want)
			}
			inSubnets := []any{ref(subnets[0]), ref(subnets[1])}
			c := vpcConfig(t, d)
			functionGroup := []any{map[string]any{"Fn::GetAtt": []any{"FunctionSecurityGroup", "GroupId"}}}
			if !reflect.DeepEqual(c["SubnetIds"], inSubnets) || !reflect.DeepEqual(c["SecurityGroupIds"], functionGroup) {
				t.Errorf("the functions' VpcConfig %v: want both subnets and the created security group", c)
			}
			if cache := rs["Cache"].Properties; !reflect.DeepEqual(cache["SubnetIds"], inSubnets) {
				t.Errorf("the cache's subnets %v, want both", cache["SubnetIds"])
			}
		})
	}
}

// With an existing VPC the stack creates no network but the security groups it is not
// given, and the DynamoDB endpoint on the route tables given, or none with
// RegistryRoute=nat; the functions run in the subnets given.
func TestTemplateExistingVpc(t *testing.T) {
	tests := []struct {
		name       string
		params     []string
		wantTables []any // the DynamoDB endpoint's; nil: no endpoint
		wantGroup  any   // the functions' security group
	}{
		{"route tables", []string{"RouteTableIds", "rtb-1,rtb-2"}, []any{"rtb-1", "rtb-2"},
			map[string]any{"Fn::GetAtt": []any{"FunctionSecurityGroup", "GroupId"}}},
		{"NAT and a security group of its own", []string{"RegistryRoute", "nat", "FunctionSecurityGroupId", "sg-1"}, nil, "sg-1"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			d := deploy(t, readTemplate(t, limiter), append([]string{"VpcId", "vpc-1", "SubnetIds", "subnet-1,subnet-2"}, tc.params...)...)
			if refused := d.refused(t); len(refused) > 0 {
				t.Fatalf("refused by %v", refused)
			}
			rs := d.resources(t)
			for _, typ := range []string{"AWS::EC2::VPC", "AWS::EC2::Subnet", "AWS::EC2::RouteTable"} {
				if ids := ofType(rs, typ); len(ids) > 0 {
					t.Errorf("%v: an existing VPC gets no %s", ids, typ)
				}
			}
			ep, ok := rs["DynamoDBEndpoint"]
			if ok != (tc.wantTables != nil) || ok && (!reflect.DeepEqual(ep.Properties["RouteTableIds"], tc.wantTables) || ep.Properties["VpcId"] != "vpc-1") {
				t.Errorf("DynamoDB endpoint %v (created %v), want one on %v in vpc-1", ep.Properties, ok, tc.wantTables)
			}
			c := vpcConfig(t, d)
			if !reflect.DeepEqual(c["SubnetIds"], []any{"subnet-1", "subnet-2"}) || !reflect.DeepEqual(c["SecurityGroupIds"], []any{tc.wantGroup}) {
				t.Errorf("the functions' VpcConfig %v", c)
			}
			for _, id := range []string{"CacheSecurityGroup", "FunctionSecurityGroup"} {
				if g, ok := rs[id]; ok && g.Properties["VpcId"] != "vpc-1" {
					t.Errorf("%s in %v, want vpc-1", id, g.Properties["VpcId"])
				}
			}
		})
	}
}

// The Rules refuse, before anything is created, each combination of parameters that
// cannot work, by the assertion that names it, and no combination that can; every
// assertion of the template is the refusal of one case here.
func TestTemplateRules(t *testing.T) {
	existing := []string{"VpcId", "vpc-1", "SubnetIds", "subnet-1,subnet-2"}
	tests := []struct {
		name   string
		params []string
		want   string // the assertion that refuses it; "" for none
	}{
		{"the defaults: a VPC of its own", nil, ""},
		{"a VPC of its own, traced", []string{"XRayEndpoint", "true"}, ""},
		{"the limiter alone", []string{"CreateExampleApi", "false"}, ""},
		{"the example REST API in front of your service", []string{"HttpBackendUrl", "https://api.example.com"}, ""},
		{"an existing VPC with its route tables", append(existing, "RouteTableIds", "rtb-1"), ""},
		{"an existing VPC through NAT, said on purpose", append(existing, "RegistryRoute", "nat"), ""},
		{"an existing VPC, security group and Redis with a password", append(existing, "RouteTableIds", "rtb-1", "FunctionSecurityGroupId", "sg-1",
			"RedisEndpoint", "redis.internal:6379", "RedisPasswordSecretArn", "arn:aws:secretsmanager:us-east-1:123456789012:secret:redis-AbCdEf"), ""},
		{"an existing Redis with IAM authentication", append(existing, "RouteTableIds", "rtb-1", "RedisEndpoint", "c.serverless.use1.cache.amazonaws.com:6379",
			"RedisUsername", "app", "RedisIamAuthCacheName", "c"), ""},
		{"an existing Redis without AUTH or TLS", append(existing, "RouteTableIds", "rtb-1", "RedisEndpoint", "redis.internal:6379", "RedisTls", "false"), ""},
		{"a password under a key of yours", append(existing, "RouteTableIds", "rtb-1", "RedisEndpoint", "redis.internal:6379",
			"RedisPasswordSecretArn", "arn:aws:secretsmanager:us-east-1:123456789012:secret:redis-AbCdEf", "RedisPasswordSecretKmsKeyArn", "arn:aws:kms:us-east-1:123456789012:key/1234abcd-12ab"), ""},
		{"a second stack on route tables that have an endpoint", append(existing, "RouteTableIds", "rtb-1", "CreateDynamoDBEndpoint", "false"), ""},
		{"alarms to a topic of yours", []string{"AlarmTopicArn", "arn:aws:sns:us-east-1:123456789012:on-call"}, ""},
		{"alarms mailed", []string{"AlarmEmail", "on-call@example.com"}, ""},
		{"caps, and a linear rollout", []string{"AuthorizerReservedConcurrency", "100", "CheckReservedConcurrency", "20", "DeploymentType", "Linear10PercentEvery1Minute"}, ""},
		{"REST access logs through the account's own role", []string{"ApiGatewayLoggingRole", "existing"}, ""},

		{"a VPC without subnets", []string{"VpcId", "vpc-1", "RouteTableIds", "rtb-1"}, "ExistingVpc[0]"},
		{"a VPC without a route to DynamoDB", existing, "ExistingVpc[1]"},
		{"route tables and NAT both", append(existing, "RouteTableIds", "rtb-1", "RegistryRoute", "nat"), "ExistingVpc[2]"},
		{"subnets without their VPC", []string{"SubnetIds", "subnet-1"}, "CreatedVpc[0]"},
		{"a security group without its VPC", []string{"FunctionSecurityGroupId", "sg-1"}, "CreatedVpc[1]"},
		{"route tables without their VPC", []string{"RouteTableIds", "rtb-1"}, "CreatedVpc[2]"},
		{"NAT in a VPC without one", []string{"RegistryRoute", "nat"}, "CreatedVpc[3]"},
		{"an existing Redis from a VPC that reaches nothing", []string{"RedisEndpoint", "redis.internal:6379"}, "CreatedVpc[4]"},
		{"a password for the created cache", append(existing, "RouteTableIds", "rtb-1", "RedisPasswordSecretArn", "arn:aws:secretsmanager:us-east-1:123456789012:secret:redis-AbCdEf"), "CreatedCache[0]"},
		{"IAM authentication to the created cache", append(existing, "RouteTableIds", "rtb-1", "RedisUsername", "app", "RedisIamAuthCacheName", "c"), "CreatedCache[0]"},
		{"a user for the created cache", []string{"RedisUsername", "app"}, "CreatedCache[0]"},
		{"TLS off to the created cache", []string{"RedisTls", "false"}, "CreatedCache[1]"},
		{"an endpoint the created VPC lacks", []string{"CreateDynamoDBEndpoint", "false"}, "ExistingDynamoDBEndpoint[0]"},
		{"an endpoint of their own and NAT both", append(existing, "RegistryRoute", "nat", "CreateDynamoDBEndpoint", "false"), "ExistingDynamoDBEndpoint[1]"},
		{"a password in clear text", append(existing, "RouteTableIds", "rtb-1", "RedisEndpoint", "redis.internal:6379", "RedisTls", "false",
			"RedisPasswordSecretArn", "arn:aws:secretsmanager:us-east-1:123456789012:secret:redis-AbCdEf"), "RedisAuthentication[0]"},
		{"an IAM token in clear text", append(existing, "RouteTableIds", "rtb-1", "RedisEndpoint", "redis.internal:6379", "RedisTls", "false",
			"RedisUsername", "app", "RedisIamAuthCacheName", "c"), "RedisAuthentication[0]"},
		{"IAM authentication without a user", append(existing, "RouteTableIds", "rtb-1", "RedisEndpoint", "c.serverless.use1.cache.amazonaws.com:6379",
			"RedisIamAuthCacheName", "c"), "RedisAuthentication[1]"},
		{"IAM authentication and a password", append(existing, "RouteTableIds", "rtb-1", "RedisEndpoint", "c.serverless.use1.cache.amazonaws.com:6379",
			"RedisUsername", "app", "RedisIamAuthCacheName", "c", "RedisPasswordSecretArn", "arn:aws:secretsmanager:us-east-1:123456789012:secret:redis-AbCdEf"), "RedisAuthentication[2]"},
		{"a key without its secret", []string{"RedisPasswordSecretKmsKeyArn", "arn:aws:kms:us-east-1:123456789012:key/1234abcd-12ab"}, "RedisAuthentication[3]"},
		{"an email for a topic of yours", []string{"AlarmTopicArn", "arn:aws:sns:us-east-1:123456789012:on-call", "AlarmEmail", "on-call@example.com"}, "Alarms[0]"},
		{"an X-Ray endpoint in your own VPC", append(existing, "RouteTableIds", "rtb-1", "XRayEndpoint", "true"), "TracingEndpoint[0]"},
		{"a backend without the example API", []string{"CreateExampleApi", "false", "HttpBackendUrl", "https://api.example.com"}, "ExampleBackend[0]"},
	}
	doc := readTemplate(t, limiter)
	refusing := map[string]bool{}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var want []string
			if tc.want != "" {
				want = []string{tc.want}
				refusing[tc.want] = true
			}
			if got := deploy(t, doc, tc.params...).refused(t); !slices.Equal(got, want) {
				t.Errorf("refused by %v, want %v", got, want)
			}
		})
	}
	for a := range deploy(t, doc).assertions(t) {
		if !refusing[a.String()] {
			t.Errorf("assertion %s (%q) refuses no case of this test", a, a.description)
		}
	}
}

// isAPIResource reports whether a transformed resource belongs to an API: API Gateway's
// resources, and Lambda permissions for API Gateway. The Region's API Gateway account
// setting (ApiGatewayLoggingRole=create) is no API's: it is made for REST APIs of yours
// too.
func isAPIResource(r map[string]any) bool {
	typ, _ := r["Type"].(string)
	p, _ := r["Properties"].(map[string]any)
	return strings.HasPrefix(typ, "AWS::ApiGateway") && typ != "AWS::ApiGateway::Account" ||
		typ == "AWS::Lambda::Permission" && p["Principal"] == "apigateway.amazonaws.com"
}

// CreateExampleApi=false deploys the limiter alone: after the SAM transform no API
// Gateway resource, no permission for API Gateway and no function but the Go ones
// remain, nor an output naming an API; with the default they are all there.
func TestTemplateWithoutExampleApi(t *testing.T) {
	doc := samTranslate(t, limiter)
	for _, create := range []string{"true", "false"} {
		d := deploy(t, doc, "CreateExampleApi", create)
		var apis, functions []string
		for id, r := range section(doc, "Resources") {
			r, _ := r.(map[string]any)
			cond, _ := r["Condition"].(string)
			switch {
			case !d.holds(t, cond):
			case isAPIResource(r):
				apis = append(apis, id)
			case r["Type"] == "AWS::Lambda::Function":
				functions = append(functions, id)
			}
		}
		slices.Sort(functions)
		goIDs := slices.Sorted(maps.Keys(deployedGoFunctions(t)))
		outputs := d.outputs(t)
		_, restURL := outputs["RestApiUrl"]
		_, httpURL := outputs["HttpApiUrl"]
		switch {
		case create == "false" && (len(apis) > 0 || !slices.Equal(functions, goIDs) || restURL || httpURL):
			t.Errorf("CreateExampleApi=false: API resources %v, functions %v, API outputs %v %v: want none but %v", apis, functions, restURL, httpURL, goIDs)
		case create == "true" && (len(apis) < 6 || len(functions) != len(goIDs)+1 || !restURL || !httpURL):
			t.Errorf("CreateExampleApi=true: API resources %v, functions %v, API outputs %v %v: want both APIs and the sample backend", apis, functions, restURL, httpURL)
		}
	}
}

// The outputs the examples, the CLI and an existing Redis's security group read are
// there, exported as <stack>-<output> (limiterExports checks every output's export),
// with the values they name.
func TestTemplateExports(t *testing.T) {
	outputs := deploy(t, readTemplate(t, limiter)).outputs(t)
	limiterExports(t)
	want := map[string]any{
		// The aliases, which gradual deployments shift: an API of your own invokes the
		// authorizer's, services the check function's.
		"AuthorizerFunctionArn":   ref("AuthorizerFunction.Alias"),
		"CheckFunctionArn":        ref("CheckFunction.Alias"),
		"CheckFunctionName":       ref("CheckFunction"),
		"OperatorFunctionName":    ref(operatorFunction),
		"RegistryTableName":       ref("RegistryTable"), // the created one, by default
		"FunctionSecurityGroupId": map[string]any{"Fn::GetAtt": []any{"FunctionSecurityGroup", "GroupId"}},
		"AlarmTopicArn":           ref("AlarmTopic"), // the created one, by default
	}
	for name, value := range want {
		if o, ok := outputs[name]; !ok || !reflect.DeepEqual(o["Value"], value) {
			t.Errorf("output %s: %v, want the value %v", name, o, value)
		}
	}
	withTable := deploy(t, readTemplate(t, limiter), "ExistingRegistryTable", "keys").outputs(t)
	if v := withTable["RegistryTableName"]["Value"]; v != "keys" {
		t.Errorf("RegistryTableName with ExistingRegistryTable=keys: %v", v)
	}
	const topic = "arn:aws:sns:us-east-1:123456789012:on-call"
	if v := deploy(t, readTemplate(t, limiter), "AlarmTopicArn", topic).outputs(t)["AlarmTopicArn"]["Value"]; v != topic {
		t.Errorf("AlarmTopicArn with AlarmTopicArn=%s: %v", topic, v)
	}
	backend := deploy(t, readTemplate(t, limiter), "HttpBackendUrl", "https://api.example.com").outputs(t)
	if _, ok := outputs["BackendSecretArn"]; ok || !reflect.DeepEqual(backend["BackendSecretArn"]["Value"], ref("BackendSecret")) {
		t.Errorf("BackendSecretArn %v (default %v): want the secret with HttpBackendUrl alone", backend["BackendSecretArn"], outputs["BackendSecretArn"])
	}
}
