package main

import (
	"errors"
	"fmt"
	"strings"

	"github.com/aws/smithy-go"
)

// policyFileHint points an operator AWS refused to the policy the CLI needs.
const policyFileHint = "cmd/bucketgate/iam-policy.json grants every action the CLI calls (docs/deploy.md, IAM of the CLI)"

// localOnlyHint is the hint of a refused action of bucketgate keys init, which
// policyFileHint's file leaves out.
const localOnlyHint = "bucketgate keys init creates a table for local use: a deployed stack's table is template.yaml's, and cmd/bucketgate/iam-policy.json grants no dynamodb:CreateTable"

// localOnlyActions are the actions of bucketgate keys init (its waiter's DescribeTable
// too), which the CLI's policy leaves out.
var localOnlyActions = map[string]bool{"dynamodb:CreateTable": true, "dynamodb:DescribeTable": true}

// refusal returns the error, saying what to do, of err, a call on resource (such as
// "table T") that AWS refused for the credentials: not allowed (AccessDenied), to what
// (such as "use table T"), naming action (or, for "", the service's action of the
// operation) and AWS's own message, with the action and the resource it reported, and
// the CLI's policy (or, for keys init's actions, that the policy leaves them out);
// credentials AWS does not take (expired, unknown); or a signature it does not take (a
// secret key that is not the key id's, a clock that is off). It returns nil for any
// other error.
func refusal(err error, resource, what, action string) error {
	var api smithy.APIError
	if !errors.As(err, &api) {
		return nil
	}
	switch api.ErrorCode() {
	case "AccessDenied", "AccessDeniedException":
		var op *smithy.OperationError
		if action == "" && errors.As(err, &op) {
			action = strings.ToLower(op.Service()) + ":" + op.Operation()
		}
		hint := policyFileHint
		if localOnlyActions[action] {
			hint = localOnlyHint
		}
		return fmt.Errorf("not allowed to %s: these credentials need %s on it (%s): %w", what, action, hint, err)
	case "ExpiredToken", "ExpiredTokenException", "UnrecognizedClientException", "InvalidClientTokenId":
		return fmt.Errorf("%s: AWS refused these credentials: renew them (aws sso login for an SSO profile), or set AWS_PROFILE to a configured profile, or AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY (and AWS_SESSION_TOKEN) to valid ones: %w", resource, err)
	case "InvalidSignatureException", "SignatureDoesNotMatch":
		return fmt.Errorf("%s: AWS refused the request's signature: check that AWS_SECRET_ACCESS_KEY (or the profile's secret key) is the one of its key id, and that this machine's clock is right: %w", resource, err)
	}
	return nil
}
