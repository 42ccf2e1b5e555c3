package main

import (
	"errors"
	"fmt"
	"strings"

	"github.com/aws/smithy-go"
)

// policyFileHint points an operator AWS refused to the policy the CLI needs.
const policyFileHint = "cmd/bucketgate/iam-policy.json grants every action the CLI calls (docs/deploy.md, IAM of the CLI)"

// refusal returns the error, saying what to do, of err, a call on resource (such as
// "table T") that AWS refused for the credentials: not allowed (AccessDenied), to what
// (such as "use table T"), naming action (or, for "", the service's action of the
// operation) and AWS's own message, with the action and the resource it reported, and
// the CLI's policy; or credentials AWS does not take (expired, unknown). It returns nil
// for any other error.
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
		return fmt.Errorf("not allowed to %s: these credentials need %s on it (%s): %w", what, action, policyFileHint, err)
	case "ExpiredToken", "ExpiredTokenException", "UnrecognizedClientException", "InvalidClientTokenId":
		return fmt.Errorf("%s: AWS refused these credentials: renew them (aws sso login for an SSO profile), or set AWS_PROFILE to a configured profile, or AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY (and AWS_SESSION_TOKEN) to valid ones: %w", resource, err)
	}
	return nil
}
