package check

import (
	"fmt"

	"github.com/bucketgate/bucketgate"
	"github.com/bucketgate/bucketgate/checkapi"
)

// MsgOperatorRefused is the message of the warning line for a payload that asks a
// service-facing check function (Handler.OperatorFunction set) for an operator's
// operation.
const MsgOperatorRefused = "operator operation refused"

// operatorOnly returns why a service-facing function refuses checks, naming the first
// operator's operation among them and the function that serves it; nil when it serves
// them all: OperatorFunction is empty, or every check is a service's (a check or a
// refund of its own key's buckets).
func (h *Handler) operatorOnly(checks []check, batch bool) error {
	if h.OperatorFunction == "" {
		return nil
	}
	for i, c := range checks {
		path := ""
		if batch {
			path = index(fieldChecks, i)
		}
		var what string
		switch {
		case c.explicit:
			what = fmt.Sprintf("%s: the buckets of one of the authorizer's identities", field(path, fieldIdentity))
		case c.req.Op == bucketgate.OpReset:
			what = fmt.Sprintf("%s: %s", field(path, fieldOp), checkapi.OpReset)
		default:
			continue
		}
		return fmt.Errorf("%s is an operator's operation, which this function does not serve: invoke %s (the stack's OperatorFunctionName; bucketgate buckets --stack does)",
			what, h.OperatorFunction)
	}
	return nil
}
