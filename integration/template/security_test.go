package template_test

// The stack a security engineer signs (issue 33), as a table: for a deployment (the
// defaults, or the parameters of the row), the value of one property of one resource,
// with Conditions, Fn::If and parameters resolved as CloudFormation resolves them
// (cfn_test.go). A row whose want is absent says the resource or the property is not
// there. Behaviour that a property alone cannot show has a test of its own: the Rules
// (TestTemplateRules), the alarms (alarms_test.go), the stages (stage_test.go), the
// sample backend after the SAM transform (TestTemplateSampleBackendAlone).

import (
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/bucketgate/bucketgate/internal/redisconn"
)

// absent is the want of a row whose resource or property does not exist.
var absent = struct{ absent bool }{true}

// getAtt is the long form of !GetAtt id.attr.
func getAtt(id, attr string) map[string]any { return map[string]any{"Fn::GetAtt": []any{id, attr}} }

// sub is the long form of !Sub s.
func sub(s string) map[string]any { return map[string]any{"Fn::Sub": s} }

// at returns the value at path in v: map keys and list indexes, dot-separated.
func at(v any, path string) (any, bool) {
	for _, k := range strings.Split(path, ".") {
		switch c := v.(type) {
		case map[string]any:
			var ok bool
			if v, ok = c[k]; !ok {
				return nil, false
			}
		case []any:
			i, err := strconv.Atoi(k)
			if err != nil || i < 0 || i >= len(c) {
				return nil, false
			}
			v = c[i]
		default:
			return nil, false
		}
	}
	return v, true
}

// globalEnv is the path of an environment variable every Go function gets, in the
// pseudo-resource Globals.
func globalEnv(name string) string { return "Function.Environment.Variables." + name }

// TestTemplateSecurity holds template.yaml to the properties that make each item of
// issue 33, by item.
func TestTemplateSecurity(t *testing.T) {
	existing := []string{"VpcId", "vpc-1", "SubnetIds", "subnet-1,subnet-2", "RouteTableIds", "rtb-1"}
	redis := append(existing, "RedisEndpoint", "redis.internal:6380")
	iam := append(existing, "RedisEndpoint", "c.serverless.use1.cache.amazonaws.com:6379", "RedisUsername", "app", "RedisIamAuthCacheName", "c")
	const secret, key = "arn:aws:secretsmanager:us-east-1:123456789012:secret:redis-AbCdEf", "arn:aws:kms:us-east-1:123456789012:key/1234abcd-12ab"
	withSecret := append(redis, "RedisPasswordSecretArn", secret, "RedisPasswordSecretKmsKeyArn", key)
	account := map[string]any{"aws:PrincipalAccount": "123456789012"}
	tests := []struct {
		item     string // the item, and what the row shows
		params   []string
		resource string // a logical id, or Globals
		path     string
		want     any
	}{
		// 1. Caps.
		{"1 unreserved by default (a new account can reserve nothing)", nil, "AuthorizerFunction", "Properties.ReservedConcurrentExecutions", absent},
		{"1 the authorizer reserved", []string{"AuthorizerReservedConcurrency", "100"}, "AuthorizerFunction", "Properties.ReservedConcurrentExecutions", "100"},
		{"1 the check function unreserved", nil, "CheckFunction", "Properties.ReservedConcurrentExecutions", absent},
		{"1 the check function reserved", []string{"CheckReservedConcurrency", "20"}, "CheckFunction", "Properties.ReservedConcurrentExecutions", "20"},
		{"1 the REST stage throttled", nil, "RestApi", "Properties.MethodSettings.0", map[string]any{"ResourcePath": "/*", "HttpMethod": "*", "ThrottlingRateLimit": "1000", "ThrottlingBurstLimit": "2000"}},
		{"1 the HTTP API throttled", []string{"ApiThrottlingRateLimit", "50", "ApiThrottlingBurstLimit", "80"}, "HttpApi", "Properties.DefaultRouteSettings",
			map[string]any{"ThrottlingRateLimit": "50", "ThrottlingBurstLimit": "80"}},
		{"1 the authorizer's throttles watched", nil, "AuthorizerThrottlesAlarm", "Properties.Dimensions", []any{map[string]any{"Name": "FunctionName", "Value": ref("AuthorizerFunction")}}},
		{"1 the check function's throttles watched", nil, "CheckThrottlesAlarm", "Properties.MetricName", "Throttles"},

		// 2. Alarms that page (their shapes: TestTemplateAlarmShapes; actions: TestTemplateAlarmActions).
		{"2 the created topic encrypted", nil, "AlarmTopic", "Properties.KmsMasterKeyId", ref("AlarmKey")},
		{"2 no topic with AlarmTopicArn", []string{"AlarmTopicArn", "arn:aws:sns:us-east-1:123456789012:on-call"}, "AlarmTopic", "Type", absent},
		{"2 degraded decisions watched", nil, "DegradedAlarm", "Type", "AWS::CloudWatch::Alarm"},
		{"2 invalid registry items watched", nil, "RegistryInvalidItemsAlarm", "Type", "AWS::CloudWatch::Alarm"},
		{"2 the cache's throttled commands watched, by clusterId", nil, "CacheThrottledAlarm", "Properties.Dimensions", []any{map[string]any{"Name": "clusterId", "Value": ref("Cache")}}},
		{"2 no cache alarm for your own Redis", redis, "CacheThrottledAlarm", "Type", absent},
		{"2 the REST API's 5xx watched", nil, "RestApi5xxAlarm", "Type", "AWS::CloudWatch::Alarm"},
		{"2 the HTTP API's 5xx watched", nil, "HttpApi5xxAlarm", "Type", "AWS::CloudWatch::Alarm"},

		// 3. Cache authentication: an IAM user, a default user turned off, TLS.
		{"3 the functions' user authenticates with IAM", nil, "CacheUser", "Properties.AuthenticationMode", map[string]any{"Type": "iam"}},
		{"3 the limiter's keys and no administrative command but INFO for it", nil, "CacheUser", "Properties.AccessString", redisconn.MinimalACL + " +info"},
		{"3 the default user turned off", nil, "CacheDefaultUser", "Properties", map[string]any{
			"UserId": at0(t, "CacheDefaultUser", "Properties.UserId"), "UserName": "default", "Engine": "redis", "AccessString": "off -@all",
			"AuthenticationMode": map[string]any{"Type": "no-password-required"}}},
		{"3 the user group of both", nil, "CacheUserGroup", "Properties.UserIds", []any{ref("CacheUser"), ref("CacheDefaultUser")}},
		{"3 the cache admits the group alone", nil, "Cache", "Properties.UserGroupId", ref("CacheUserGroup")},
		{"3 the functions use IAM", nil, "Globals", globalEnv("REDIS_IAM_AUTH"), "true"},
		{"3 as the created user", nil, "Globals", globalEnv("REDIS_USERNAME"), ref("CacheUser")},
		{"3 on the created cache", nil, "Globals", globalEnv("REDIS_CACHE_NAME"), ref("Cache")},
		{"3 over TLS", nil, "Globals", globalEnv("REDIS_TLS"), "true"},
		{"3 and may connect to it as that user", nil, "FunctionAccessPolicy", "Properties.PolicyDocument.Statement.1", map[string]any{
			"Sid": "ConnectToTheCache", "Effect": "Allow", "Action": "elasticache:Connect", "Resource": []any{getAtt("Cache", "ARN"), getAtt("CacheUser", "Arn")}}},
		{"3 TLS to your own Redis by default", redis, "Globals", globalEnv("REDIS_TLS"), "true"},
		{"3 no IAM to your own Redis unless asked", redis, "Globals", globalEnv("REDIS_IAM_AUTH"), "false"},
		{"3 IAM to your own cache when asked", iam, "Globals", globalEnv("REDIS_USERNAME"), "app"},
		{"3 the functions' group lets nothing out by itself", nil, "FunctionSecurityGroup", "Properties.SecurityGroupEgress",
			[]any{map[string]any{"IpProtocol": "-1", "CidrIp": "127.0.0.1/32", "Description": "nothing (replaces the default allow-all rule)"}}},
		{"3 but to the cache", nil, "FunctionEgressToCache", "Properties", map[string]any{"GroupId": getAtt("FunctionSecurityGroup", "GroupId"),
			"Description": "the cache (primary and reader endpoints)", "IpProtocol": "tcp", "FromPort": 6379, "ToPort": 6380, "DestinationSecurityGroupId": getAtt("CacheSecurityGroup", "GroupId")}},
		{"3 and DynamoDB on 443 (no route leads elsewhere in the created VPC)", nil, "FunctionEgressToDynamoDB", "Properties.CidrIp", "0.0.0.0/0"},
		{"3 DynamoDB's addresses alone when named", []string{"DynamoDBPrefixListId", "pl-02cd2c6b"}, "FunctionEgressToDynamoDB", "Properties.DestinationPrefixListId", "pl-02cd2c6b"},
		{"3 and no other address then", []string{"DynamoDBPrefixListId", "pl-02cd2c6b"}, "FunctionEgressToDynamoDB", "Properties.CidrIp", absent},
		{"3 your own Redis on its port", redis, "FunctionEgressToRedis", "Properties.FromPort", "6380"},
		{"3 no way to Redis of yours with the created cache", nil, "FunctionEgressToRedis", "Type", absent},
		{"3 the X-Ray endpoint when added", []string{"XRayEndpoint", "true"}, "FunctionEgressToXRay", "Properties.DestinationSecurityGroupId", getAtt("XRayEndpointSecurityGroup", "GroupId")},
		{"3 Secrets Manager beside DynamoDB's addresses", append(withSecret, "DynamoDBPrefixListId", "pl-02cd2c6b"), "FunctionEgressToSecretsManager", "Properties.FromPort", 443},
		{"3 nothing made for a group of yours", append(existing, "FunctionSecurityGroupId", "sg-1"), "FunctionEgressToDynamoDB", "Type", absent},
		{"3 the cache lets nothing out", nil, "CacheSecurityGroup", "Properties.SecurityGroupEgress.0.CidrIp", "127.0.0.1/32"},

		// 4. Operator operations apart; no retries.
		{"4 the check function refuses them, naming the operator function", nil, "CheckFunction", "Properties.Environment.Variables.OPERATOR_FUNCTION", ref(operatorFunction)},
		{"4 the operator function serves them", nil, operatorFunction, "Properties.Environment", absent},
		{"4 named for the CLI", nil, operatorFunction, "Properties.FunctionName", sub("${AWS::StackName}-operator")},
		{"4 the authorizer's alias never retried", nil, "AuthorizerFunction", "Properties.EventInvokeConfig", map[string]any{"MaximumRetryAttempts": 0}},
		{"4 nor its $LATEST", nil, "AuthorizerLatestInvokeConfig", "Properties", map[string]any{"FunctionName": ref("AuthorizerFunction"), "Qualifier": "$LATEST", "MaximumRetryAttempts": 0}},
		{"4 the check function's alias never retried", nil, "CheckFunction", "Properties.EventInvokeConfig", map[string]any{"MaximumRetryAttempts": 0}},
		{"4 nor its $LATEST", nil, "CheckLatestInvokeConfig", "Properties", map[string]any{"FunctionName": ref("CheckFunction"), "Qualifier": "$LATEST", "MaximumRetryAttempts": 0}},
		{"4 nor the operator function", nil, operatorFunction, "Properties.EventInvokeConfig", map[string]any{"MaximumRetryAttempts": 0}},

		// 5. Access logs (their lines: the AccessLogs rule) and the account's logging role.
		{"5 the account's role made", nil, "ApiGatewayAccount", "Properties.CloudWatchRoleArn", getAtt("ApiGatewayLoggingRoleForAccount", "Arn")},
		{"5 for API Gateway, to push logs", nil, "ApiGatewayLoggingRoleForAccount", "Properties.ManagedPolicyArns",
			[]any{sub("arn:${AWS::Partition}:iam::aws:policy/service-role/AmazonAPIGatewayPushToCloudWatchLogs")}},
		{"5 made for your own APIs too", []string{"CreateExampleApi", "false"}, "ApiGatewayAccount", "Type", "AWS::ApiGateway::Account"},
		{"5 the account's own role left alone", []string{"ApiGatewayLoggingRole", "existing"}, "ApiGatewayAccount", "Type", absent},
		{"5 REST access logs then too", []string{"ApiGatewayLoggingRole", "existing"}, "RestApi", "Properties.AccessLogSetting.DestinationArn", getAtt("RestApiAccessLogGroup", "Arn")},
		{"5 the stage waits for the account's role", nil, "RestApi", "Properties.AccessLogSetting.DestinationArn",
			map[string]any{"Fn::Select": []any{0, []any{getAtt("RestApiAccessLogGroup", "Arn"), ref("ApiGatewayAccount")}}}},
		{"5 none: no REST access logs", []string{"ApiGatewayLoggingRole", "none"}, "RestApi", "Properties.AccessLogSetting", absent},
		{"5 the HTTP API's need no role", []string{"ApiGatewayLoggingRole", "none"}, "HttpApi", "Properties.AccessLogSettings.DestinationArn", getAtt("HttpApiAccessLogGroup", "Arn")},
		{"5 kept as long as asked", []string{"LogRetentionDays", "365"}, "RestApiAccessLogGroup", "Properties.RetentionInDays", "365"},

		// 6. The backend: https only (TestTemplateBackendUrlPattern), and a secret header.
		{"6 no secret without a backend", nil, "BackendSecret", "Type", absent},
		{"6 a generated secret for it", []string{"HttpBackendUrl", "https://api.example.com"}, "BackendSecret", "Properties.GenerateSecretString",
			map[string]any{"PasswordLength": 48, "ExcludePunctuation": true, "IncludeSpace": false}},

		// 7. Least privilege and hygiene.
		{"7 the created VPC's endpoint reads the registry alone, for this account", nil, "DynamoDBEndpoint", "Properties.PolicyDocument.Statement", []any{map[string]any{
			"Sid": "ReadTheRegistry", "Effect": "Allow", "Principal": "*", "Action": "dynamodb:GetItem", "Resource": getAtt("RegistryTable", "Arn"),
			"Condition": map[string]any{"StringEquals": account}}}},
		{"7 your route tables' endpoint serves this account's tables alone", existing, "DynamoDBEndpoint", "Properties.PolicyDocument.Statement.0.Condition.StringEquals",
			map[string]any{"aws:PrincipalAccount": "123456789012", "aws:ResourceAccount": "123456789012"}},
		{"7 no endpoint where one is", append(existing, "CreateDynamoDBEndpoint", "false"), "DynamoDBEndpoint", "Type", absent},
		{"7 the table protected from deletion", nil, "RegistryTable", "Properties.DeletionProtectionEnabled", true},
		{"7 the cache's storage capped", []string{"CacheMaxDataStorageGB", "20"}, "Cache", "Properties.CacheUsageLimits.DataStorage", map[string]any{"Maximum": "20", "Unit": "GB"}},
		{"7 the cache's compute capped", nil, "Cache", "Properties.CacheUsageLimits.ECPUPerSecond", map[string]any{"Maximum": "100000"}},
		{"7 the engine's version chosen", []string{"CacheEngineVersion", "7"}, "Cache", "Properties.MajorEngineVersion", "7"},
		{"7 the password's secret alone", withSecret, "FunctionAccessPolicy", "Properties.PolicyDocument.Statement.1.Resource", secret},
		{"7 decrypted through Secrets Manager alone", withSecret, "FunctionAccessPolicy", "Properties.PolicyDocument.Statement.2", map[string]any{
			"Sid": "DecryptTheRedisPassword", "Effect": "Allow", "Action": "kms:Decrypt", "Resource": key,
			"Condition": map[string]any{"StringEquals": map[string]any{"kms:ViaService": sub("secretsmanager.${AWS::Region}.amazonaws.com")}}}},
		{"7 TLS 1.2 and up on the REST API's own endpoint", nil, "RestApi", "Properties.SecurityPolicy", "SecurityPolicy_TLS13_1_2_2021_06"},

		// 8. Safe rollout (after the SAM transform: TestTemplateGradualDeployment).
		{"8 the authorizer published as live", nil, "AuthorizerFunction", "Properties.AutoPublishAlias", "live"},
		{"8 deployed as asked", []string{"DeploymentType", "Linear10PercentEvery1Minute"}, "AuthorizerFunction", "Properties.DeploymentPreference.Type", "Linear10PercentEvery1Minute"},
		{"8 the check function published as live", nil, "CheckFunction", "Properties.AutoPublishAlias", "live"},
		{"8 the REST API invokes the alias", nil, "RestApi", "Properties.Auth.Authorizers.RateLimiter.FunctionArn", ref("AuthorizerFunction.Alias")},
		{"8 so does the HTTP API", nil, "HttpApi", "Properties.Auth.Authorizers.RateLimiter.FunctionArn", ref("AuthorizerFunction.Alias")},
		{"8 and APIs of yours", nil, "Outputs", "AuthorizerFunctionArn.Value", ref("AuthorizerFunction.Alias")},
	}
	doc := readTemplate(t, limiter)
	for _, tc := range tests {
		t.Run(tc.item, func(t *testing.T) {
			d := deploy(t, doc, tc.params...)
			if refused := d.refused(t); len(refused) > 0 {
				t.Fatalf("parameters %v refused by %v", tc.params, refused)
			}
			var root any
			switch tc.resource {
			case "Globals":
				root = d.resolve(t, section(doc, "Globals"))
			case "Outputs":
				root = map[string]any{}
				for k, o := range d.outputs(t) {
					root.(map[string]any)[k] = o
				}
			default:
				if r, ok := d.resources(t)[tc.resource]; ok {
					root = map[string]any{"Type": r.Type, "Properties": r.Properties}
				}
			}
			got, ok := at(root, tc.path)
			switch {
			case tc.want == absent && ok:
				t.Errorf("%s %s = %v, want none", tc.resource, tc.path, got)
			case tc.want != absent && (!ok || !reflect.DeepEqual(got, tc.want)):
				t.Errorf("%s %s = %v (there: %v), want %v", tc.resource, tc.path, got, ok, tc.want)
			}
		})
	}
}

// at0 returns the value at path of the resource id with the defaults, for a row whose
// want repeats a value the row does not test.
func at0(t *testing.T, id, path string) any {
	t.Helper()
	r := deploy(t, readTemplate(t, limiter)).resources(t)[id]
	v, ok := at(map[string]any{"Properties": r.Properties}, path)
	if !ok {
		t.Fatalf("%s has no %s", id, path)
	}
	return v
}

// The created cache's IAM user is named as its id, which IAM authentication requires,
// and both its id and its group's are made lowercase from the stack's id (a stack name
// may hold capitals, which ElastiCache's ids may not), unique in the account and Region.
func TestTemplateCacheUserIds(t *testing.T) {
	rs := deploy(t, readTemplate(t, limiter)).resources(t)
	fromStackID := sub("bucketgate-${Id}")
	id, name, group := rs["CacheUser"].Properties["UserId"], rs["CacheUser"].Properties["UserName"], rs["CacheUserGroup"].Properties["UserGroupId"]
	if !reflect.DeepEqual(id, name) || !reflect.DeepEqual(group, id) {
		t.Errorf("user id %v, user name %v, group %v: want one value", id, name, group)
	}
	args, _ := id.(map[string]any)["Fn::Sub"].([]any)
	if len(args) != 2 || args[0] != fromStackID["Fn::Sub"] || !strings.Contains(jsonText(t, args[1]), `{"Ref":"AWS::StackId"}`) {
		t.Errorf("user id %v: want bucketgate- and the first part of the stack's id", id)
	}
}

// HttpBackendUrl takes an https URL and nothing else: a client's headers, API keys
// included, never travel to the backend in clear text.
func TestTemplateBackendUrlPattern(t *testing.T) {
	pattern := allowedPattern(t, "HttpBackendUrl")
	for url, want := range map[string]bool{
		"": true, "https://api.example.com": true, "https://api.example.com/v2": true, "https://10.0.0.5:8443/api": true,
		"http://api.example.com": false, "https://api.example.com/": false, "https://api.example.com/v2?x=1": false, "ftp://files.example.com": false,
		"HTTP://api.example.com": false, "api.example.com": false,
	} {
		if got := pattern.MatchString(url); got != want {
			t.Errorf("HttpBackendUrl %q: allowed %v, want %v", url, got, want)
		}
	}
	for param, cases := range map[string]map[string]bool{
		"RedisPasswordSecretArn": {"": true, "arn:aws:secretsmanager:us-east-1:123456789012:secret:redis-AbCdEf": true, "redis-password": false,
			"arn:aws:ssm:us-east-1:123456789012:parameter/redis": false,
			// A partial ARN (no random suffix): Secrets Manager finds the secret by it,
			// but the functions' grant on it would never match the secret's ARN.
			"arn:aws:secretsmanager:us-east-1:123456789012:secret:redis":                      false,
			"arn:aws:secretsmanager:us-east-1:123456789012:secret:prod/redis-password-AbCdEf": true},
		"RedisPasswordSecretKmsKeyArn": {"": true, "arn:aws:kms:us-east-1:123456789012:key/1234abcd-12ab-34cd-56ef-1234567890ab": true, "alias/aws/secretsmanager": false},
		"AlarmTopicArn":                {"": true, "arn:aws:sns:eu-west-1:123456789012:on-call": true, "on-call": false},
		"AlarmEmail":                   {"": true, "on-call@example.com": true, "on-call": false, "a@b@example.com": false},
		"DynamoDBPrefixListId":         {"": true, "pl-02cd2c6b": true, "com.amazonaws.us-east-1.dynamodb": false},
		// ElastiCache stores the name in lowercase: the functions' elasticache:Connect
		// grant names the cache by it, and another case would never match.
		"RedisIamAuthCacheName": {"": true, "orders-cache": true, "c": true, "Orders-Cache": false, "orders cache": false,
			"arn:aws:elasticache:us-east-1:123456789012:replicationgroup:orders-cache": false},
	} {
		pattern := allowedPattern(t, param)
		for v, want := range cases {
			if got := pattern.MatchString(v); got != want {
				t.Errorf("%s %q: allowed %v, want %v", param, v, got, want)
			}
		}
	}
}

// The sample backend, as deployed (after the SAM transform): a role of its own that may
// write its own log group and nothing else, no VPC, none of the Go functions'
// environment, no traces (its role may not write them), a log group of its own.
func TestTemplateSampleBackendAlone(t *testing.T) {
	rs := deploy(t, samTranslate(t, limiter)).resources(t)
	fn := rs["SampleBackendFunction"].Properties
	if fn["Role"] == nil || !reflect.DeepEqual(fn["Role"], getAtt("SampleBackendRole", "Arn")) {
		t.Errorf("Role %v, want SampleBackendRole's", fn["Role"])
	}
	for _, p := range []string{"VpcConfig", "Environment"} {
		if v, ok := fn[p]; ok {
			t.Errorf("%s %v: want none", p, v)
		}
	}
	if tracing, _ := fn["TracingConfig"].(map[string]any); tracing["Mode"] != "PassThrough" {
		t.Errorf("TracingConfig %v: want PassThrough", fn["TracingConfig"])
	}
	if logging, _ := fn["LoggingConfig"].(map[string]any); !reflect.DeepEqual(logging["LogGroup"], ref("SampleBackendLogGroup")) {
		t.Errorf("LoggingConfig %v: want its own log group", logging)
	}
	role := rs["SampleBackendRole"].Properties
	want := []any{map[string]any{"PolicyName": "logs", "PolicyDocument": map[string]any{"Version": "2012-10-17", "Statement": []any{map[string]any{
		"Effect": "Allow", "Action": []any{"logs:CreateLogStream", "logs:PutLogEvents"}, "Resource": getAtt("SampleBackendLogGroup", "Arn")}}}}}
	if !reflect.DeepEqual(role["Policies"], want) || role["ManagedPolicyArns"] != nil {
		t.Errorf("SampleBackendRole %v: want its own logs and nothing else", role)
	}
	if _, ok := rs["SampleBackendFunctionRole"]; ok {
		t.Errorf("SAM made a role for the sample backend: it has its own")
	}
}

// roleManagedPolicies are the managed policies a Go function's role may carry: the
// stack's own, and X-Ray's write actions, which name no resource (X-Ray has none). An
// AWS-managed policy with logs actions (AWSLambdaBasicExecutionRole,
// AWSLambdaVPCAccessExecutionRole, which SAM attaches to a role of its making) grants
// them on every log group of the account.
var roleManagedPolicies = []any{ref(functionPolicy), sub("arn:${AWS::Partition}:iam::aws:policy/AWSXrayWriteOnlyAccess")}

// lambdaNetworkActions are the actions Lambda takes with a VPC function's role to manage
// its network interfaces, which take no narrower resource than "*"
// (ec2:DescribeNetworkInterfaces works on "*" alone).
var lambdaNetworkActions = []any{"ec2:CreateNetworkInterface", "ec2:DescribeNetworkInterfaces", "ec2:DescribeSubnets", "ec2:DeleteNetworkInterface",
	"ec2:AssignPrivateIpAddresses", "ec2:UnassignPrivateIpAddresses"}

// lambdaAlone is the condition of lambdaNetworkActions: Lambda's own calls for the
// network interfaces carry no lambda:SourceFunctionArn, and every call made from a
// function's execution environment (its code) does, so that the function's code may
// call none of them.
var lambdaAlone = map[string]any{"Null": map[string]any{"lambda:SourceFunctionArn": "true"}}

// Each Go function, as deployed (after the SAM transform), has a role of its own that
// Lambda alone may assume: it may write its own log group and no
// other (never create one), send traces, let Lambda (never the function's code) manage
// its VPC interfaces, and do what
// FunctionAccessPolicy grants; no managed policy of AWS's grants more.
func TestTemplateFunctionRoles(t *testing.T) {
	doc := samTranslate(t, limiter)
	for _, params := range [][]string{nil, {"VpcId", "vpc-1", "SubnetIds", "subnet-1,subnet-2", "RouteTableIds", "rtb-1", "FunctionSecurityGroupId", "sg-1"}} {
		rs := deploy(t, doc, params...).resources(t)
		roles := map[string]string{}
		for _, id := range slices.Sorted(maps.Keys(deployedGoFunctions(t))) {
			t.Run(fmt.Sprint(id, params), func(t *testing.T) {
				fn := rs[id].Properties
				att, _ := fn["Role"].(map[string]any)["Fn::GetAtt"].([]any)
				if len(att) != 2 || att[1] != "Arn" {
					t.Fatalf("Role %v: want a role of the template", fn["Role"])
				}
				roleID := att[0].(string)
				if other, ok := roles[roleID]; ok {
					t.Errorf("role %s shared with %s: each function's log group is its own", roleID, other)
				}
				roles[roleID] = id
				role := rs[roleID].Properties
				trust := map[string]any{"Version": "2012-10-17", "Statement": []any{map[string]any{"Effect": "Allow", "Principal": map[string]any{"Service": "lambda.amazonaws.com"},
					"Action": "sts:AssumeRole"}}}
				if !reflect.DeepEqual(role["AssumeRolePolicyDocument"], trust) {
					t.Errorf("%s trust %v: want Lambda alone", roleID, role["AssumeRolePolicyDocument"])
				}
				managed, _ := role["ManagedPolicyArns"].([]any)
				for _, p := range managed {
					if !slices.ContainsFunc(roleManagedPolicies, func(a any) bool { return reflect.DeepEqual(a, p) }) {
						t.Errorf("%s: managed policy %v: want %v alone", roleID, p, roleManagedPolicies)
					}
				}
				if !slices.ContainsFunc(managed, func(p any) bool { return reflect.DeepEqual(p, ref(functionPolicy)) }) {
					t.Errorf("%s: ManagedPolicyArns %v: want %s", roleID, managed, functionPolicy)
				}
				var grants []map[string]any
				collectStatements(role["Policies"], &grants)
				collectStatements(rs[functionPolicy].Properties["PolicyDocument"], &grants)
				logGroup, _ := fn["LoggingConfig"].(map[string]any)["LogGroup"].(map[string]any)["Ref"].(string)
				ownLogs := map[string]any{"Effect": "Allow", "Action": []any{"logs:CreateLogStream", "logs:PutLogEvents"}, "Resource": getAtt(logGroup, "Arn")}
				network := map[string]any{"Effect": "Allow", "Action": lambdaNetworkActions, "Resource": "*", "Condition": lambdaAlone}
				var logs, ec2 int
				for _, s := range grants {
					s = maps.Clone(s)
					delete(s, "Sid")
					actions := jsonText(t, s["Action"])
					switch {
					case strings.Contains(actions, "logs:"):
						logs++
						if !reflect.DeepEqual(s, ownLogs) {
							t.Errorf("%s: %v: want %v", roleID, s, ownLogs)
						}
					case strings.Contains(actions, "ec2:"):
						ec2++
						if !reflect.DeepEqual(s, network) {
							t.Errorf("%s: %v: want %v", roleID, s, network)
						}
					}
				}
				if logs != 1 || ec2 != 1 {
					t.Errorf("%s: %d statements of logs actions and %d of ec2 actions, want one each (%v)", roleID, logs, ec2, grants)
				}
			})
		}
	}
}
