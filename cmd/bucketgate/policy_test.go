package main

import (
	"encoding/json"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/iam"

	"github.com/bucketgate/bucketgate/internal/testkit/moto"
)

// policyFile is the operator's IAM policy for the CLI against a deployed stack: every
// action it calls, on the stack's resources. Its placeholders are the stack's.
const policyFile = "iam-policy.json"

// policyResources are the resources each service's actions may be granted on, with
// the placeholders of policyFile: the stack, its table and its operator function
// (unqualified, or an alias or version of it), never the check function: an operator
// needs no grant on it.
var policyResources = map[string][]string{
	"cloudformation": {"arn:aws:cloudformation:REGION:ACCOUNT_ID:stack/STACK_NAME/*"},
	"dynamodb":       {"arn:aws:dynamodb:REGION:ACCOUNT_ID:table/REGISTRY_TABLE_NAME"},
	"lambda":         {"arn:aws:lambda:REGION:ACCOUNT_ID:function:OPERATOR_FUNCTION_NAME", "arn:aws:lambda:REGION:ACCOUNT_ID:function:OPERATOR_FUNCTION_NAME:*"},
}

// statement is a statement of an IAM policy; Action and Resource are a string or a list.
type statement struct {
	Sid      string
	Effect   string
	Action   stringOrList
	Resource stringOrList
}

// stringOrList is an IAM policy element that is a string or a list of strings.
type stringOrList []string

func (l *stringOrList) UnmarshalJSON(b []byte) error {
	var one string
	if err := json.Unmarshal(b, &one); err == nil {
		*l = []string{one}
		return nil
	}
	return json.Unmarshal(b, (*[]string)(l))
}

// The policy grants exactly the actions that a session of every command of the CLI
// (config and usage included: the session ran neither) calls through a stack, each on its own service's resource of the stack (DescribeStacks
// on the stack, DynamoDB's on the registry table, InvokeFunction on the operator
// function), and it is a policy that IAM's syntax accepts (moto's validator).
func TestIAMPolicy(t *testing.T) {
	s := newStackDeployment(t)
	s.env[envStack] = deployedStack
	key := strings.TrimSpace(s.ok("keys", "create", "--plan", "gold"))
	s.ok("accounts", "create", "acme", "--plan", "gold")
	member := strings.TrimSpace(s.ok("keys", "create", "--account", "acme"))
	plans := filepath.Join(t.TempDir(), "plans.yaml")
	if err := os.WriteFile(plans, []byte(bucketsConfig), 0o600); err != nil {
		t.Fatal(err)
	}
	morePlans := filepath.Join(t.TempDir(), "more-plans.yaml")
	if err := os.WriteFile(morePlans, []byte(bucketsConfig+"  silver: [{name: burst, capacity: 20, refillPerSecond: 0.001}]\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	session := [][]string{
		{"config", "put", plans}, {"config", "put", morePlans, "--note", "silver"}, {"config", "show"},
		{"config", "history"}, {"config", "rollback", "1"}, {"usage", key},
		{"keys", "show", key}, {"keys", "list"}, {"keys", "override", key, "--rule", "burst:9:1"},
		{"keys", "clear-overrides", key}, {"keys", "set-plan", key, "basic"}, {"keys", "expire", key, "30d"},
		{"buckets", "show", key}, {"buckets", "refund", "--cost", "1", key}, {"buckets", "reset", key},
		{"keys", "roll", key}, {"keys", "roll", "--overlap", "1h", member}, {"keys", "show", member},
		{"accounts", "show", "acme"}, {"accounts", "list"}, {"accounts", "override", "acme", "--rule", "burst:9:1"},
		{"accounts", "clear-overrides", "acme"}, {"accounts", "set-plan", "acme", "basic"}, {"accounts", "expire", "acme", "30d"},
		{"buckets", "show", "acct:acme"}, {"accounts", "revoke", "acme"},
		{"keys", "revoke", key}, {"version"}, {"help"},
	}
	for _, args := range session {
		s.ok(args...)
	}
	called := s.calls.take()
	// keys init creates a table for local use: a deployed stack's table is the template's,
	// so the policy leaves its actions out.
	localOnly := slices.Sorted(maps.Keys(localOnlyActions))
	delete(s.env, envStack)
	s.ok("keys", "init", "--table", "bucketgate-local") // local use only: no stack
	if init := slices.Compact(slices.Sorted(slices.Values(s.calls.take()))); !slices.Equal(init, localOnly) {
		t.Fatalf("keys init called %v, want %v", init, localOnly)
	}
	ran := map[string]bool{"keys create": true, "keys init": true, "accounts create": true}
	for _, args := range session {
		ran[args[0]] = true
		if len(args) > 1 {
			ran[args[0]+" "+args[1]] = true
		}
	}
	for group := range groups { // a group without commands of its own: usage, version
		if _, commands := map[string]bool{"keys": true, "accounts": true, "buckets": true, "config": true}[group]; !commands && !ran[group] {
			t.Fatalf("the session does not run %s: add it, so that the policy covers what it calls", group)
		}
	}
	for group, commands := range map[string][]string{"keys": slices.Collect(maps.Keys(keysCommands)), "accounts": slices.Collect(maps.Keys(accountsCommands)),
		"buckets": slices.Collect(maps.Keys(bucketsCommands)), "config": slices.Collect(maps.Keys(configCommands))} {
		for _, c := range commands {
			if !ran[group+" "+c] {
				t.Fatalf("the session does not run %s %s: add it, so that the policy covers what it calls", group, c)
			}
		}
	}
	want := slices.Compact(slices.Sorted(slices.Values(called)))

	b, err := os.ReadFile(policyFile)
	if err != nil {
		t.Fatal(err)
	}
	var policy struct {
		Version   string
		Statement []statement
	}
	if err := json.Unmarshal(b, &policy); err != nil {
		t.Fatalf("%s: %v", policyFile, err)
	}
	var granted []string
	for _, st := range policy.Statement {
		if st.Effect != "Allow" || len(st.Action) == 0 || len(st.Resource) == 0 {
			t.Errorf("%s: statement %s: want Allow, actions and resources", policyFile, st.Sid)
		}
		for _, a := range st.Action {
			service, _, _ := strings.Cut(a, ":")
			if !slices.Equal(st.Resource, policyResources[service]) {
				t.Errorf("%s: statement %s grants %s on %v, want %v", policyFile, st.Sid, a, st.Resource, policyResources[service])
			}
			granted = append(granted, a)
		}
	}
	if slices.Sort(granted); !slices.Equal(granted, want) {
		t.Fatalf("%s grants %v; the CLI calls %v (and, for keys init alone, %v)", policyFile, granted, want, localOnly)
	}

	doc := strings.NewReplacer("REGION", moto.Region, "ACCOUNT_ID", moto.AccountID, "STACK_NAME", deployedStack,
		"REGISTRY_TABLE_NAME", table, "OPERATOR_FUNCTION_NAME", checkFunction).Replace(string(b))
	_, err = iam.NewFromConfig(s.moto.Config()).CreatePolicy(t.Context(), &iam.CreatePolicyInput{PolicyName: aws.String("bucketgate-cli"), PolicyDocument: aws.String(doc)})
	if err != nil {
		t.Fatalf("%s, its placeholders filled in, is refused by IAM (moto): %v", policyFile, err)
	}
}
