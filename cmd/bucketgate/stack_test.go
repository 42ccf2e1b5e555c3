package main

import (
	"fmt"
	"maps"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/cloudformation"
	cftypes "github.com/aws/aws-sdk-go-v2/service/cloudformation/types"

	"github.com/bucketgate/bucketgate"
	"github.com/bucketgate/bucketgate/internal/settings"
	"github.com/bucketgate/bucketgate/internal/testkit/moto"
)

// deployedStack is the stack of the test deployment, whose outputs name its table and
// its operator function (the test's check function, serving every operation).
const deployedStack = "bucketgate-test"

// stackDeployment is a deployment whose names the CLI finds in a CloudFormation stack
// in moto: neither REGISTRY_TABLE nor CHECK_FUNCTION is set, and every AWS call the CLI
// makes (DynamoDB to dynalite, Lambda to the Invoke server, CloudFormation to moto)
// goes through a recorder.
type stackDeployment struct {
	*deployment
	moto  *moto.Server
	calls *awsRecorder
}

// newStackDeployment deploys both functions (newDeployment) and creates deployedStack
// in moto with every output of template.yaml's that the CLI reads.
func newStackDeployment(t *testing.T) *stackDeployment {
	t.Helper()
	d, _ := newDeployment(t)
	delete(d.env, settings.EnvRegistryTable)
	delete(d.env, envCheckFunction)
	s := &stackDeployment{deployment: d, moto: moto.Start(t)}
	s.calls = newRecorder(t, map[string]string{"dynamodb": os.Getenv("AWS_ENDPOINT_URL_DYNAMODB"), "lambda": d.lambda.URL, "cloudformation": s.moto.URL})
	for _, service := range []string{"DynamoDB", "Lambda", "CloudFormation"} {
		t.Setenv(moto.EndpointVariable(service), s.calls.URL)
	}
	s.createStack(deployedStack, map[string]string{
		outputTable:         table,
		outputCheckName:     "bucketgate-test-check",
		outputCheckArn:      functionARN("bucketgate-test-check") + ":live",
		outputOperatorName:  checkFunction,
		outputAuthorizerArn: functionARN("bucketgate-test-authorizer"),
	})
	return s
}

// functionARN is the ARN of the function called name in moto's account and region.
func functionARN(name string) string {
	return "arn:aws:lambda:" + moto.Region + ":" + moto.AccountID + ":function:" + name
}

// createStack creates the stack called name in moto, with outputs (by key) exported as
// <stack>-<key>, as template.yaml exports its own.
func (s *stackDeployment) createStack(name string, outputs map[string]string) {
	s.t.Helper()
	s.createStackWith(name, nil, outputs)
}

// createStackWith is createStack of a stack with parameters (by key), strings.
func (s *stackDeployment) createStackWith(name string, parameters, outputs map[string]string) {
	s.t.Helper()
	var b strings.Builder
	var values []cftypes.Parameter
	if len(parameters) > 0 {
		b.WriteString("Parameters:\n")
	}
	for _, k := range slices.Sorted(maps.Keys(parameters)) {
		fmt.Fprintf(&b, "  %s: {Type: String}\n", k)
		values = append(values, cftypes.Parameter{ParameterKey: aws.String(k), ParameterValue: aws.String(parameters[k])})
	}
	b.WriteString("Resources:\n  Nothing: {Type: AWS::CloudFormation::WaitConditionHandle}\n")
	if len(outputs) > 0 {
		b.WriteString("Outputs:\n")
	}
	for _, k := range slices.Sorted(maps.Keys(outputs)) {
		fmt.Fprintf(&b, "  %s:\n    Value: %q\n    Export: {Name: !Sub \"${AWS::StackName}-%s\"}\n", k, outputs[k], k)
	}
	_, err := cloudformation.NewFromConfig(s.moto.Config()).CreateStack(s.t.Context(), &cloudformation.CreateStackInput{
		StackName: aws.String(name), TemplateBody: aws.String(b.String()), Parameters: values,
	})
	if err != nil {
		s.t.Fatalf("create stack %s in moto: %v", name, err)
	}
}

// describes returns how many DescribeStacks calls there are among actions.
func describes(actions []string) int {
	return strings.Count(strings.Join(actions, " "), "cloudformation:DescribeStacks")
}

// failsOnce runs args and fails the test unless it exits with status 1, prints nothing
// runsIn makes the deployment's commands run in t with env added to the environment
// until t ends, and forgets the calls made before.
func (s *stackDeployment) runsIn(t *testing.T, env map[string]string) {
	s.t = t
	maps.Copy(s.env, env)
	t.Cleanup(func() { maps.DeleteFunc(s.env, func(k, _ string) bool { _, ok := env[k]; return ok }) })
	s.calls.take()
}

// on stdout and one line on stderr: the error, starting with want.
func (s *stackDeployment) failsOnce(want string, args ...string) {
	s.t.Helper()
	code, stdout, stderr := s.run(args...)
	if code != exitError || stdout != "" || !strings.HasPrefix(stderr, "bucketgate: "+want) || strings.Count(stderr, "\n") != 1 || !strings.HasSuffix(stderr, "\n") {
		s.t.Fatalf("bucketgate %s: exit %d, stdout %q, stderr %q; want exit 1 and the one line %q", strings.Join(args, " "), code, stdout, stderr, want)
	}
}

// The operator names the stack, with --stack (before the group or among the command's
// flags) or BUCKETGATE_STACK, and the keys and buckets commands work through the table
// and the operator function its outputs name (never the check function); each run reads the stack once, and only a
// command that needs a name from it reads it.
func TestStackSession(t *testing.T) {
	s := newStackDeployment(t)
	key := strings.TrimSpace(s.ok("--stack", deployedStack, "keys", "create", "--plan", "gold"))
	id := "key:" + bucketgate.KeyDigest(key)
	if got := s.calls.take(); !slices.Equal(got, []string{"cloudformation:DescribeStacks", "dynamodb:GetItem", "dynamodb:PutItem", "dynamodb:GetItem"}) {
		t.Fatalf("keys create through the stack called %v, want DescribeStacks, GetItem (the table's plans), PutItem, then GetItem (the plans still in force)", got)
	}
	if !strings.Contains(s.items(), id) {
		t.Fatalf("the key is not in the stack's table:\n%s", s.items())
	}
	if show := s.ok("keys", "show", key, "--stack", deployedStack); !strings.Contains(show, "plan       gold\n") {
		t.Fatalf("keys show --stack:\n%s", show)
	}
	s.calls.take()

	s.env[envStack] = deployedStack
	s.authz.decide(t, key)
	s.want(s.bucket("show", key), id, "gold", "burst", 50, 49)
	s.want(s.bucket("reset", key), id, "gold", "burst", 50, 50)
	s.ok("keys", "show", key)
	s.want(s.bucket("show", key, "--plan", "basic"), id, "basic", "burst", 5, 5)
	if got := s.calls.take(); describes(got) != 4 || len(got) != 4+6+3 {
		t.Fatalf("4 commands through BUCKETGATE_STACK called %v: want one DescribeStacks each, and their own calls (keys show: the key's item and the table's document; buckets --plan: the table's document; each buckets command: the key's item, to say if the functions do not know it)", got)
	}

	// What the command line names wins, and the stack is not read.
	for _, args := range [][]string{
		{"keys", "show", key, "--table", table},
		{"buckets", "show", key, "--function", checkFunction},
		{"version"},
		{"help"},
	} {
		code, _, stderr := s.run(args...)
		if got := s.calls.take(); code != exitOK || describes(got) != 0 {
			t.Fatalf("bucketgate %s: exit %d, calls %v, stderr %s: want it done without reading the stack", strings.Join(args, " "), code, got, stderr)
		}
		if args[0] != "keys" && args[0] != "buckets" {
			continue
		}
		if note := " from " + args[3] + ", "; !strings.Contains(stderr, note) || !strings.Contains(stderr, "not from stack "+deployedStack+" ("+envStack+")") {
			t.Fatalf("bucketgate %s: stderr %q: want a note that the stack was not read", strings.Join(args, " "), stderr)
		}
	}

	// A usage error is found before the stack is read.
	s.fails(exitUsage, "--plan is required", "keys", "create")
	s.fails(exitUsage, "given twice", "--stack", deployedStack, "keys", "list", "--stack", "other")
	if got := s.calls.take(); len(got) != 0 {
		t.Fatalf("usage errors called %v", got)
	}

	// A stack deployed before the operator function: its check function served every
	// operation, and the buckets commands invoke it.
	s.createStack("no-operator", map[string]string{outputTable: table, outputCheckName: checkFunction, outputCheckArn: functionARN(checkFunction)})
	s.want(s.bucket("show", key, "--stack", "no-operator"), id, "gold", "burst", 50, 50)
	if got := s.calls.take(); !slices.Equal(got, []string{"cloudformation:DescribeStacks", "dynamodb:GetItem", "lambda:InvokeFunction"}) {
		t.Fatalf("buckets show through a stack without an operator function called %v, want DescribeStacks, GetItem (is the key active?), InvokeFunction", got)
	}
}

// A stack the CLI cannot use, named by --stack or BUCKETGATE_STACK, is a one-line
// error naming the stack and what is missing, with exit status 1; nothing is written
// and the check function is not invoked.
func TestStackBadInput(t *testing.T) {
	s := newStackDeployment(t)
	key := strings.TrimSpace(s.ok("--stack", deployedStack, "keys", "create", "--plan", "gold"))
	s.createStack("other-app", map[string]string{"BucketName": "photos", "QueueUrl": "https://sqs.example/q"})
	s.createStack("no-outputs", nil)
	s.createStack("checks-only", map[string]string{outputCheckName: checkFunction})
	s.createStack("keys-only", map[string]string{outputTable: table})
	notOurs := "is not a bucketgate stack: it has none of the outputs AuthorizerFunctionArn, CheckFunctionArn, CheckFunctionName, RegistryTableName (status CREATE_COMPLETE)"
	tests := []struct {
		name, stack string // stack: --stack; BUCKETGATE_STACK when the name starts with "env"
		args        []string
		want        string
	}{
		{"missing stack", "nope", []string{"keys", "create", "--plan", "gold"}, "stack nope (--stack) does not exist in region us-east-1"},
		{"env: missing stack", "nope", []string{"buckets", "reset", key}, "stack nope (BUCKETGATE_STACK) does not exist in region us-east-1"},
		{"another template", "other-app", []string{"keys", "revoke", key}, "stack other-app (--stack) " + notOurs},
		{"env: another template", "other-app", []string{"buckets", "refund", "--cost", "1", key}, "stack other-app (BUCKETGATE_STACK) " + notOurs},
		{"no outputs at all", "no-outputs", []string{"keys", "expire", key, "2001-01-01"}, "stack no-outputs (--stack) " + notOurs},
		{"no table output", "checks-only", []string{"keys", "set-plan", key, "basic"},
			"stack checks-only (--stack) has no output RegistryTableName (status CREATE_COMPLETE; its outputs: CheckFunctionName): deploy the current template.yaml to it, or give --table"},
		// buckets and usage take no --table: the way to another table is REGISTRY_TABLE.
		{"buckets: no table output", "checks-only", []string{"buckets", "show", "--plan", "gold", key},
			"stack checks-only (--stack) has no output RegistryTableName (status CREATE_COMPLETE; its outputs: CheckFunctionName): deploy the current template.yaml to it, or name no stack and set REGISTRY_TABLE"},
		{"env: usage: no table output", "checks-only", []string{"usage", bucketgate.TenantPrefix + keyID(key)[len(bucketgate.KeyPrefix):]},
			"stack checks-only (BUCKETGATE_STACK) has no output RegistryTableName (status CREATE_COMPLETE; its outputs: CheckFunctionName): deploy the current template.yaml to it, or name no stack and set REGISTRY_TABLE"},
		{"env: no function output", "keys-only", []string{"buckets", "reset", key},
			"stack keys-only (BUCKETGATE_STACK) has no output OperatorFunctionName or CheckFunctionName (status CREATE_COMPLETE; its outputs: RegistryTableName): deploy the current template.yaml to it, or give --function"},
	}
	items, invoked := s.items(), s.lambda.Invocations(checkFunction)
	s.calls.take()
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s.t = t
			args := tc.args
			if strings.HasPrefix(tc.name, "env") {
				s.env[envStack] = tc.stack
				defer delete(s.env, envStack)
			} else {
				args = append([]string{"--stack", tc.stack}, args...)
			}
			s.failsOnce(tc.want, args...)
			if got := s.calls.take(); !slices.Equal(got, []string{"cloudformation:DescribeStacks"}) {
				t.Fatalf("called %v: want DescribeStacks alone", got)
			}
		})
	}
	t.Run("no region", func(t *testing.T) {
		s.t = t
		t.Setenv("AWS_REGION", "")
		t.Setenv("AWS_DEFAULT_REGION", "")
		s.failsOnce("stack "+deployedStack+" (--stack): no AWS region: set AWS_REGION (or the profile's region) to the stack's",
			"--stack", deployedStack, "buckets", "reset", key)
		if got := s.calls.take(); len(got) != 0 {
			t.Fatalf("called %v without a region", got)
		}
	})
	t.Run("no credentials", func(t *testing.T) {
		s.t = t
		t.Setenv("AWS_ACCESS_KEY_ID", "")
		t.Setenv("AWS_SECRET_ACCESS_KEY", "")
		noCredentials := "no AWS credentials: set AWS_PROFILE to a configured profile"
		s.failsOnce("stack "+deployedStack+" (--stack): "+noCredentials, "--stack", deployedStack, "keys", "show", key)
		s.failsOnce("table "+table+": "+noCredentials, "keys", "show", "--table", table, key)
		s.failsOnce("function "+checkFunction+": "+noCredentials, "buckets", "reset", "--function", checkFunction, key)
		if got := s.calls.take(); len(got) != 0 {
			t.Fatalf("called %v without credentials", got)
		}
	})
	// A name CloudFormation takes for no stack (a typo with '_', a space) is refused
	// before any call: a usage error for --stack, an error for BUCKETGATE_STACK.
	t.Run("no stack's name", func(t *testing.T) {
		s.t = t
		want := `stack "bucketgate_prod" (--stack) is no stack's name or id: want a letter, then letters, digits or '-' (at most 128), or a stack's ARN`
		s.fails(exitUsage, want, "--stack", "bucketgate_prod", "keys", "show", key)
		s.env[envStack] = "bucketgate prod"
		defer delete(s.env, envStack)
		s.failsOnce(`stack "bucketgate prod" (BUCKETGATE_STACK) is no stack's name or id`, "buckets", "reset", key)
		if got := s.calls.take(); len(got) != 0 {
			t.Fatalf("called %v for a name that is no stack's", got)
		}
	})
	s.t = t
	if after := s.items(); after != items {
		t.Fatalf("bad stacks wrote to the table:\nbefore %s\nafter  %s", items, after)
	}
	if n := s.lambda.Invocations(checkFunction); n != invoked {
		t.Fatalf("bad stacks invoked the check function %d times", n-invoked)
	}
	// The stack that lacks one output still serves the commands that need the other.
	s.ok("--stack", "checks-only", "buckets", "show", key)
	s.ok("--stack", "keys-only", "keys", "show", key)
}

// A stack read, without the output a command needs: the error says why it may lack it.
func TestStackOutputErrors(t *testing.T) {
	tests := []struct {
		name, status string
		outputs      map[string]string
		want         string
	}{
		{"rolled back at creation", "ROLLBACK_COMPLETE", nil,
			"stack s (--stack) has no output RegistryTableName: its status is ROLLBACK_COMPLETE, a deployment that did not complete: wait for it or deploy again, or give --table"},
		{"being created", "CREATE_IN_PROGRESS", nil, "its status is CREATE_IN_PROGRESS, a deployment that did not complete"},
		{"update failed", "UPDATE_ROLLBACK_FAILED", map[string]string{outputCheckName: "f"}, "its status is UPDATE_ROLLBACK_FAILED, a deployment that did not complete"},
		{"another template", "UPDATE_COMPLETE", map[string]string{"Url": "u"}, "stack s (--stack) is not a bucketgate stack: it has none of the outputs AuthorizerFunctionArn, CheckFunctionArn, CheckFunctionName, RegistryTableName (status UPDATE_COMPLETE)"},
		{"an older template", "UPDATE_ROLLBACK_COMPLETE", map[string]string{outputCheckName: "f", "Url": "u"},
			"stack s (--stack) has no output RegistryTableName (status UPDATE_ROLLBACK_COMPLETE; its outputs: CheckFunctionName, Url): deploy the current template.yaml to it, or give --table"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := &stack{name: "s", from: "--stack", read: true, status: tc.status, outputs: tc.outputs}
			if _, err := s.output(t.Context(), "--table", settings.EnvRegistryTable, outputTable); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want %q", err, tc.want)
			}
		})
	}
}

// While the table holds no document, the functions decide by their own
// RATE_LIMIT_CONFIG, the stack's parameter RateLimitConfig (empty: the built-in plans):
// a command that finds the table through the stack checks plans against that, never
// against this shell's document.
func TestStackParameterDocument(t *testing.T) {
	s := newStackDeployment(t)
	outputs := map[string]string{outputTable: table, outputCheckName: checkFunction, outputCheckArn: functionARN(checkFunction)}
	s.createStackWith("with-config", map[string]string{"RateLimitConfig": "defaultPlan: platinum\nplans: {platinum: [{name: burst, capacity: 9, refillPerSecond: 1}]}\n"}, outputs)
	s.createStackWith("built-in", map[string]string{"RateLimitConfig": ""}, outputs)
	for _, tc := range []struct {
		name, stack, plan string
		registryTable     string // REGISTRY_TABLE, the stack's table too
		want              string // on stderr; "" for success
	}{
		{"the stack's plan", "with-config", "platinum", "", ""},
		{"this shell's plan", "with-config", "gold", "", `unknown plan "gold": not in the configuration document (configured: platinum; from stack with-config's parameter RateLimitConfig`},
		{"the built-in plan", "built-in", "free", "", ""},
		{"this shell's plan, the stack's built-in", "built-in", "gold", "", `unknown plan "gold": not in the configuration document (configured: enterprise, free, pro; from stack built-in's parameter RateLimitConfig`},
		{"the stack's plan, REGISTRY_TABLE its table", "with-config", "platinum", table, ""},
		{"this shell's plan, REGISTRY_TABLE its table", "with-config", "gold", table, `unknown plan "gold": not in the configuration document (configured: platinum; from stack with-config's parameter RateLimitConfig`},
	} {
		s.env[settings.EnvRegistryTable] = tc.registryTable
		code, _, stderr := s.run("--stack", tc.stack, "keys", "create", "--plan", tc.plan)
		if tc.want == "" && code != exitOK || tc.want != "" && (code != exitError || !strings.Contains(stderr, tc.want)) {
			t.Errorf("%s: keys create --plan %s through stack %s: exit %d\n%s\nwant %q", tc.name, tc.plan, tc.stack, code, stderr, tc.want)
		}
	}
}

// Through the stack alone (no REGISTRY_TABLE), the buckets commands take a registered
// tenant as the functions' log lines name it, tenant:<digest>, from the stack's table,
// as they do with REGISTRY_TABLE: never the buckets of a tenant whose key is those
// digits, with a note that no registered tenant has it; and, as every run, they read
// the stack once.
func TestStackBucketsTakeATenantAsTheLogsNameIt(t *testing.T) {
	s := newStackDeployment(t)
	s.ok("--stack", deployedStack, "keys", "create", "--tenant", "acme-svc", "--plan", "gold")
	logged := bucketgate.LogForm("tenant:acme-svc")
	for _, args := range [][]string{{"buckets", "show"}, {"buckets", "reset"}, {"usage"}} {
		s.calls.take()
		code, stdout, stderr := s.run(append([]string{"--stack", deployedStack}, append(args, logged)...)...)
		if code != exitOK || !strings.Contains(stdout, "tenant:acme-svc") || strings.Contains(stderr, "no registered tenant") {
			t.Errorf("%s %s through the stack: exit %d\n%s%s\nwant the %s of tenant:acme-svc", strings.Join(args, " "), logged, code, stdout, stderr, args[0])
		}
		if got := s.calls.take(); describes(got) != 1 {
			t.Errorf("%s %s through the stack called %v: want one DescribeStacks a run", strings.Join(args, " "), logged, got)
		}
	}
}

// The first config put to a table found through the stack replaces the functions' own
// document, the stack's parameter RateLimitConfig: it refuses, as any later put does, a
// document that would change which requests an own rule of a key limits.
func TestStackFirstConfigPutRescopesOwnRules(t *testing.T) {
	s := newStackDeployment(t)
	const plans = "defaultPlan: free\nplans:\n  free: [{name: burst, capacity: 100, refillPerSecond: 10}]\n"
	upload := plans + "routes:\n  - {method: POST, path: /uploads, rules: [{name: uploads, capacity: 20, refill: 20, per: minute}]}\n"
	s.createStackWith("uploads", map[string]string{"RateLimitConfig": upload},
		map[string]string{outputTable: table, outputCheckName: checkFunction, outputCheckArn: functionARN(checkFunction)})
	id := keyID(strings.TrimSpace(s.ok("--stack", "uploads", "keys", "create", "--plan", "free", "--rule", "uploads:2:0.01")))
	before := s.items()
	code, _, stderr := s.run("--stack", "uploads", "config", "put", file(t, "v1.yaml", plans))
	if code != exitError || !strings.Contains(stderr, "\n  "+id+" (plan free): rule uploads limited the requests of routes[0] alone, and would limit every request") {
		t.Fatalf("the first config put through the stack: exit %d\n%s\nwant a refusal naming %s", code, stderr, id)
	}
	if after := s.items(); after != before {
		t.Fatalf("the refused put wrote:\n%s", after)
	}

	// Expired, the key is passed over by the put; made active again, it is compared with
	// the document in force when it expired: the stack's, as the table held none.
	s.ok("--stack", "uploads", "keys", "expire", id, "2021-01-01")
	s.ok("--stack", "uploads", "config", "put", file(t, "v1.yaml", plans))
	code, _, stderr = s.run("--stack", "uploads", "keys", "expire", id, "never")
	if code != exitError || !strings.Contains(stderr, "\n  "+id+" (plan free): rule uploads limited the requests of routes[0] alone, and would limit every request") {
		t.Fatalf("keys expire never after the first put: exit %d\n%s\nwant a refusal naming %s", code, stderr, id)
	}
}

// buckets --plan names a plan of the table's document whether the table is
// REGISTRY_TABLE or the stack's: a plan it lacks is refused the same way, before the
// operator function is invoked.
func TestStackBucketsPlanFromTheTable(t *testing.T) {
	s := newStackDeployment(t)
	s.ok("--stack", deployedStack, "config", "put", file(t, "v.yaml", noGoldDoc))
	const want = `unknown plan "gold": not in version 1 of the configuration document of table ` + table + ` (configured: free, pro)`
	for _, tc := range []struct {
		name string
		env  map[string]string
		args []string
	}{
		{"REGISTRY_TABLE", map[string]string{settings.EnvRegistryTable: table}, []string{"--function", checkFunction}},
		{"the stack's table", nil, []string{"--stack", deployedStack}},
	} {
		t.Run(tc.name, func(sub *testing.T) {
			s.t = sub
			defer func() { s.t = t }()
			for k, v := range tc.env {
				s.env[k] = v
				defer delete(s.env, k)
			}
			sent := s.lambda.Invocations(checkFunction)
			s.fails(exitError, want, append([]string{"buckets", "show", "--plan", "gold"}, append(tc.args, "ip:192.0.2.1")...)...)
			if n := s.lambda.Invocations(checkFunction); n != sent {
				sub.Fatalf("the operator function was invoked (%d times): want the plan refused before", n-sent)
			}
		})
	}
}

// A stack named by its id after it was deleted (DescribeStacks still answers for it, as
// DELETE_COMPLETE) is refused as deleted, before its outputs, the deleted table's and
// function's names, are used.
func TestStackDeleted(t *testing.T) {
	s := newStackDeployment(t)
	s.createStack("gone", map[string]string{outputTable: table, outputOperatorName: checkFunction, outputCheckName: checkFunction})
	cfn := cloudformation.NewFromConfig(s.moto.Config())
	out, err := cfn.DescribeStacks(t.Context(), &cloudformation.DescribeStacksInput{StackName: aws.String("gone")})
	if err != nil {
		t.Fatal(err)
	}
	id := aws.ToString(out.Stacks[0].StackId)
	if _, err := cfn.DeleteStack(t.Context(), &cloudformation.DeleteStackInput{StackName: aws.String("gone")}); err != nil {
		t.Fatal(err)
	}
	items, invoked := s.items(), s.lambda.Invocations(checkFunction)
	for _, args := range [][]string{{"keys", "list"}, {"buckets", "show", "203.0.113.10"}} {
		s.failsOnce("stack "+id+" (--stack) was deleted (status DELETE_COMPLETE): name a deployed bucketgate stack", append([]string{"--stack", id}, args...)...)
	}
	if got := s.calls.take(); slices.ContainsFunc(got, func(a string) bool { return a != "cloudformation:DescribeStacks" }) {
		t.Fatalf("called %v: want DescribeStacks alone", got)
	}
	if s.items() != items || s.lambda.Invocations(checkFunction) != invoked {
		t.Fatal("a deleted stack's outputs were used")
	}
}

// An operator who names a stack means its table and its operator function: a
// REGISTRY_TABLE or CHECK_FUNCTION left in the shell that names another (a dev table)
// is refused as a usage error naming both, before the table is read or the function
// invoked, unless --table or --function says which to use; one that names the stack's
// own goes on silently.
func TestStackRefusesAnotherNameInTheEnvironment(t *testing.T) {
	s := newStackDeployment(t)
	key := strings.TrimSpace(s.ok("--stack", deployedStack, "keys", "create", "--plan", "gold"))
	s.createStack("prod", map[string]string{outputTable: "bucketgate-prod", outputOperatorName: "prod-operator", outputCheckName: "prod-check"})
	tableConflict := "REGISTRY_TABLE names table " + table + ", but stack prod (%s) of account " + moto.AccountID + " in region " + moto.Region + " names table bucketgate-prod (its output RegistryTableName): to use the stack's, unset REGISTRY_TABLE or set it to bucketgate-prod; to use " + table + ", "
	otherRegion := strings.Replace(functionARN(checkFunction), ":"+moto.Region+":", ":eu-west-1:", 1)
	otherAccount := "111122223333:function:" + checkFunction
	functionConflict := "CHECK_FUNCTION names function " + checkFunction + ", but stack prod (%s) of account " + moto.AccountID + " in region " + moto.Region + " names function prod-operator (its output OperatorFunctionName): to use the stack's, unset CHECK_FUNCTION or set it to prod-operator; to use " + checkFunction + ", give --function " + checkFunction
	tests := []struct {
		name string
		env  map[string]string
		args []string
		want string // the usage error; "" for success without a line on stderr
	}{
		{"--stack, another table", map[string]string{settings.EnvRegistryTable: table}, []string{"--stack", "prod", "keys", "list"}, fmt.Sprintf(tableConflict, "--stack") + "give --table " + table},
		{"BUCKETGATE_STACK, another table", map[string]string{settings.EnvRegistryTable: table, envStack: "prod"}, []string{"keys", "revoke", key}, fmt.Sprintf(tableConflict, envStack) + "give --table " + table},
		{"--stack, another function", map[string]string{envCheckFunction: checkFunction}, []string{"buckets", "reset", key, "--stack", "prod"}, fmt.Sprintf(functionConflict, "--stack")},
		{"BUCKETGATE_STACK, another function", map[string]string{envCheckFunction: checkFunction, envStack: "prod"}, []string{"usage", key}, fmt.Sprintf(functionConflict, envStack)},
		{"buckets, another table", map[string]string{settings.EnvRegistryTable: table}, []string{"buckets", "show", key, "--stack", "prod", "--function", checkFunction}, fmt.Sprintf(tableConflict, "--stack") + "name no stack and set REGISTRY_TABLE to " + table},
		{"the stack's table", map[string]string{settings.EnvRegistryTable: table}, []string{"--stack", deployedStack, "keys", "show", key}, ""},
		{"the stack's function and table", map[string]string{settings.EnvRegistryTable: table, envCheckFunction: checkFunction, envStack: deployedStack}, []string{"buckets", "show", key}, ""},
		{"the stack's function, by its ARN", map[string]string{envCheckFunction: functionARN(checkFunction)}, []string{"buckets", "show", key, "--stack", deployedStack}, ""},
		// An ARN of another region or account names another function of the same name.
		{"the stack's function's name, in another region", map[string]string{envCheckFunction: otherRegion}, []string{"buckets", "show", key, "--stack", deployedStack},
			"CHECK_FUNCTION names function " + otherRegion + ", but stack " + deployedStack + " (--stack) of account " + moto.AccountID + " in region " + moto.Region + " names function " + checkFunction},
		{"the stack's function's name, in another account", map[string]string{envCheckFunction: otherAccount, envStack: deployedStack}, []string{"usage", key},
			"CHECK_FUNCTION names function " + otherAccount + ", but stack " + deployedStack + " (BUCKETGATE_STACK) of account " + moto.AccountID + " in region " + moto.Region + " names function " + checkFunction},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s.runsIn(t, tc.env)
			code, stdout, stderr := s.run(tc.args...)
			calls := s.calls.take()
			if tc.want == "" {
				if code != exitOK || stderr != "" {
					t.Fatalf("bucketgate %s: exit %d, stderr %q: want it done silently", strings.Join(tc.args, " "), code, stderr)
				}
				return
			}
			if code != exitUsage || stdout != "" || !strings.Contains(stderr, tc.want) {
				t.Fatalf("bucketgate %s: exit %d, stdout %q, stderr %q: want exit %d and %q", strings.Join(tc.args, " "), code, stdout, stderr, exitUsage, tc.want)
			}
			if !slices.Equal(calls, []string{"cloudformation:DescribeStacks"}) {
				t.Fatalf("bucketgate %s called %v: want DescribeStacks alone", strings.Join(tc.args, " "), calls)
			}
		})
	}
	// --table and --function say which to use: the stack is not read for them.
	s.t = t
	s.env[settings.EnvRegistryTable], s.env[envCheckFunction] = "bucketgate-dev", "dev-operator"
	if _, _, stderr := s.run("--stack", "prod", "keys", "show", key, "--table", table); !strings.Contains(stderr, "table "+table+" from --table, not from stack prod (--stack)") {
		t.Fatalf("keys show --table: stderr %q", stderr)
	}
}

// A function named by an ARN of another region than the CLI's, with or without a stack,
// is refused as a usage error naming both regions, before any Invoke: Lambda invokes a
// function of the client's region only, and moto (as the CLI's loopback Lambda) took the
// ARN's name alone, invoking the function of that name in the CLI's region instead.
func TestFunctionOfAnotherRegion(t *testing.T) {
	s := newStackDeployment(t)
	key := strings.TrimSpace(s.ok("--stack", deployedStack, "keys", "create", "--plan", "gold"))
	s.env[settings.EnvRegistryTable] = table
	otherRegion := strings.Replace(functionARN(checkFunction), ":"+moto.Region+":", ":eu-west-1:", 1)
	tests := []struct {
		name     string
		env      map[string]string
		args     []string
		function string // as given
	}{
		{"CHECK_FUNCTION", map[string]string{envCheckFunction: otherRegion}, []string{"buckets", "show", key}, otherRegion},
		{"--function", nil, []string{"usage", key, "--function", otherRegion}, otherRegion},
		{"--function with a stack", nil, []string{"buckets", "show", key, "--stack", deployedStack, "--function", otherRegion + ":live"}, otherRegion + ":live"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s.runsIn(t, tc.env)
			code, stdout, stderr := s.run(tc.args...)
			for _, call := range s.calls.take() {
				if strings.HasPrefix(call, "lambda:") {
					t.Errorf("bucketgate %s called %s", strings.Join(tc.args, " "), call)
				}
			}
			want := "function " + tc.function + " is in region eu-west-1, but this CLI invokes functions in region " + moto.Region + " (AWS_REGION or the profile's)"
			if code != exitUsage || stdout != "" || !strings.Contains(stderr, want) {
				t.Fatalf("bucketgate %s: exit %d, stdout %q, stderr %q: want exit %d and %q", strings.Join(tc.args, " "), code, stdout, stderr, exitUsage, want)
			}
		})
	}
}
