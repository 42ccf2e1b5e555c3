package main

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	awsconfig "github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/cloudformation"
	"github.com/aws/aws-sdk-go-v2/service/cloudformation/types"
	"github.com/aws/smithy-go"

	"github.com/bucketgate/bucketgate/internal/app"
)

// envStack names the deployed stack whose outputs name the table and the operator
// function when --stack is not given.
const envStack = "BUCKETGATE_STACK"

// The outputs of a bucketgate stack (template.yaml), each also exported as
// <stack>-<output>.
const (
	outputAuthorizerArn = "AuthorizerFunctionArn"
	outputCheckArn      = "CheckFunctionArn"
	outputCheckName     = "CheckFunctionName"
	outputOperatorName  = "OperatorFunctionName"
	outputTable         = "RegistryTableName"
)

// stackOutputs are the outputs every bucketgate stack has: a stack with none of them
// was deployed from another template.
var stackOutputs = []string{outputAuthorizerArn, outputCheckArn, outputCheckName, outputTable}

// stackUsage is the paragraph of the usage about --stack.
const stackUsage = `--stack NAME (default: $` + envStack + `), before the group or among a command's flags,
names a deployed bucketgate stack: a command that needs the registry table or the
operator function and is not given it reads it from the stack's outputs ` + outputTable + ` and
` + outputOperatorName + ` (CloudFormation DescribeStacks, once per run). --table and --function win when
given; REGISTRY_TABLE and CHECK_FUNCTION must name the stack's own (a usage error
otherwise). AWS_ENDPOINT_URL_CLOUDFORMATION points it at another endpoint. --stack,
--table and --function given empty (--stack "$S" of an unset S) are a usage error, never
taken as not given.
`

// stack is the deployed stack of a run, read from CloudFormation on first need and
// then kept: at most one DescribeStacks per run.
type stack struct {
	// name is the stack's name or id, "" for none; from says where it was given
	// (--stack or BUCKETGATE_STACK), for the errors.
	name, from string

	read bool
	// region and account are the stack's, once read: a function of the same name
	// elsewhere is another (holds); account is "" when its id does not say it.
	region, account string
	status          string
	outputs         map[string]string // output key -> value
	parameters      map[string]string // parameter key -> value
	err             error
}

// paramConfig is template.yaml's parameter that the functions get as RATE_LIMIT_CONFIG.
const paramConfig = "RateLimitConfig"

// newStack returns the stack named by the --stack flag's value, else by
// BUCKETGATE_STACK; its name is "" when neither is set.
func newStack(e env, flagValue string) *stack {
	if flagValue != "" {
		return &stack{name: flagValue, from: "--stack"}
	}
	return &stack{name: strings.TrimSpace(e.getenv(envStack)), from: envStack}
}

// output returns the value of the first of keys that the stack outputs, reading the
// stack if it has not been read yet. Its error names the stack and what is missing, and
// how the command names it instead (see instead: flag, else variable).
func (s *stack) output(ctx context.Context, flag, variable string, keys ...string) (string, error) {
	if err := s.describe(ctx); err != nil {
		return "", err
	}
	for _, k := range keys {
		if v := s.outputs[k]; v != "" {
			return v, nil
		}
	}
	missing := strings.Join(keys, " or ")
	switch {
	case unfinished(s.status):
		return "", fmt.Errorf("stack %s (%s) has no output %s: its status is %s, a deployment that did not complete: wait for it or deploy again, or %s",
			s.name, s.from, missing, s.status, instead(flag, variable))
	case !slices.ContainsFunc(stackOutputs, func(k string) bool { return s.outputs[k] != "" }):
		return "", fmt.Errorf("stack %s (%s) is not a bucketgate stack: it has none of the outputs %s (status %s)",
			s.name, s.from, strings.Join(stackOutputs, ", "), s.status)
	}
	return "", fmt.Errorf("stack %s (%s) has no output %s (status %s; its outputs: %s): deploy the current template.yaml to it, or %s",
		s.name, s.from, missing, s.status, strings.Join(slices.Sorted(maps.Keys(s.outputs)), ", "), instead(flag, variable))
}

// instead says how a command names another table or function than the stack's: "give
// FLAG" with flag, its flag for it, else (buckets and usage take no --table) "name no
// stack and set VARIABLE", the variable that names one without a stack.
func instead(flag, variable string) string {
	if flag == "" {
		return "name no stack and set " + variable
	}
	return "give " + flag
}

// unfinished reports whether a stack of status is in or after a deployment that did
// not complete (in progress, failed, or rolled back after its creation failed), when it
// may lack outputs that its template has.
func unfinished(status string) bool {
	return strings.HasSuffix(status, "_IN_PROGRESS") || strings.HasSuffix(status, "_FAILED") || status == "ROLLBACK_COMPLETE"
}

// agree returns nil when the stack is unnamed, or when value, which the variable
// named, is what the first of keys that the stack outputs names (same compares the
// two); else a usage error naming both: the operator named the stack, and a variable
// left in the shell (a dev table) must not send the command elsewhere. flag is the
// command's flag that names one instead ("" when it has none); kind names what it is,
// "table" or "function", as their flags do. A stack that cannot be read is its error.
func (s *stack) agree(ctx context.Context, kind, variable, value, flag string, same func(a, b string) bool, keys ...string) error {
	if s.name == "" {
		return nil
	}
	v, err := s.output(ctx, flag, variable, keys...)
	if err != nil || same(value, v) {
		return err
	}
	key := keys[slices.IndexFunc(keys, func(k string) bool { return s.outputs[k] == v })]
	other := instead(flag, variable) + " to " + value
	if flag != "" {
		other = instead(flag, variable) + " " + value
	}
	where := ""
	if s.account != "" {
		where = " of account " + s.account
	}
	return fmt.Errorf("%w: %s names %s %s, but stack %s (%s)%s in region %s names %s %s (its output %s): to use the stack's, unset %s or set it to %s; to use %s, %s",
		errUsage, variable, kind, value, s.name, s.from, where, s.region, kind, v, key, variable, v, value, other)
}

// holds reports whether function, a name or (partial) ARN of a function, may be one of
// the stack's, once read: an ARN of another region or account than the stack's names
// another function, whatever its name.
func (s *stack) holds(function string) bool {
	m := functionName.FindStringSubmatch(function)
	if m == nil {
		return false
	}
	region, account := m[functionName.SubexpIndex("region")], m[functionName.SubexpIndex("account")]
	return (region == "" || region == s.region) && (account == "" || s.account == "" || account == s.account)
}

// passOver notes on stderr that the stack, if one is named, is not read for what: its
// flag from gave it.
func (s *stack) passOver(e env, what, from string) {
	if s.name != "" {
		fmt.Fprintf(e.stderr, "%s from %s, not from stack %s (%s)\n", what, from, s.name, s.from)
	}
}

// stackName matches what CloudFormation takes for a stack: its name (a letter, then
// letters, digits or '-', at most 128) or its id, an ARN.
var stackName = regexp.MustCompile(`^(?:[a-zA-Z][-a-zA-Z0-9]{0,127}|arn:aws[-a-z]*:cloudformation:[-a-zA-Z0-9:/._+]+)$`)

// describe reads the stack's status and outputs with DescribeStacks, once: a name that is
// no stack's (a usage error when --stack gave it) and a stack deleted (named by its id,
// which DescribeStacks still answers for) are errors.
func (s *stack) describe(ctx context.Context) error {
	if s.read {
		return s.err
	}
	s.read = true
	if !stackName.MatchString(s.name) {
		s.err = fmt.Errorf("stack %q (%s) is no stack's name or id: want a letter, then letters, digits or '-' (at most 128), or a stack's ARN", s.name, s.from)
		if s.from == "--stack" {
			s.err = fmt.Errorf("%w: %w", errUsage, s.err)
		}
		return s.err
	}
	cfg, err := awsconfig.LoadDefaultConfig(ctx)
	switch {
	case err != nil:
		s.err = fmt.Errorf("AWS configuration for CloudFormation: %w", err)
		return s.err
	case cfg.Region == "":
		s.err = fmt.Errorf("stack %s (%s): %w to the stack's", s.name, s.from, app.ErrNoRegion)
		return s.err
	}
	if err := readCredentials(ctx, cfg.Credentials); err != nil {
		s.err = fmt.Errorf("stack %s (%s): %w", s.name, s.from, err)
		return s.err
	}
	out, err := cloudformation.NewFromConfig(cfg).DescribeStacks(ctx, &cloudformation.DescribeStacksInput{StackName: aws.String(s.name)})
	var api smithy.APIError
	refused := refusal(err, fmt.Sprintf("stack %s (%s)", s.name, s.from), fmt.Sprintf("read stack %s (%s)", s.name, s.from), "cloudformation:DescribeStacks")
	switch {
	case errors.As(err, &api) && api.ErrorCode() == "ValidationError" && strings.Contains(api.ErrorMessage(), "does not exist"),
		err == nil && len(out.Stacks) == 0:
		s.err = fmt.Errorf("stack %s (%s) does not exist in region %s: name a deployed bucketgate stack of that region (AWS_REGION or the profile's)", s.name, s.from, cfg.Region)
	case refused != nil:
		s.err = refused
	case err != nil:
		s.err = fmt.Errorf("stack %s (%s): %w", s.name, s.from, err)
	case out.Stacks[0].StackStatus == types.StackStatusDeleteComplete: // named by its id: its outputs name what was deleted with it
		s.err = fmt.Errorf("stack %s (%s) was deleted (status %s): name a deployed bucketgate stack of region %s", s.name, s.from, out.Stacks[0].StackStatus, cfg.Region)
	default:
		st := out.Stacks[0]
		s.region, s.status = cfg.Region, string(st.StackStatus)
		if id := strings.Split(aws.ToString(st.StackId), ":"); len(id) > 4 { // arn:PARTITION:cloudformation:REGION:ACCOUNT:stack/...
			s.account = id[4]
		}
		s.outputs = map[string]string{}
		for _, o := range st.Outputs {
			s.outputs[aws.ToString(o.OutputKey)] = aws.ToString(o.OutputValue)
		}
		s.parameters = map[string]string{}
		for _, p := range st.Parameters {
			s.parameters[aws.ToString(p.ParameterKey)] = aws.ToString(p.ParameterValue)
		}
	}
	return s.err
}
