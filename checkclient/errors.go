package checkclient

import (
	"encoding/json"
	"fmt"

	"github.com/bucketgate/bucketgate/checkapi"
)

// InvalidRequestError is the check function's refusal of a request it can never
// decide: a missing key, an unknown plan, a cost out of range, malformed rules, an
// unknown field. Nothing was decided or written. Retrying cannot help.
type InvalidRequestError struct {
	// Function is the function that refused.
	Function string
	// Message names the field at fault and the problem, "checks[3].cost: ..." in a batch.
	Message string
}

// Error returns the function's message.
func (e *InvalidRequestError) Error() string {
	return fmt.Sprintf("checkclient: %s refused the request: %s", e.Function, e.Message)
}

// FunctionError is any other error of the invoked function: a crash, a timeout, an
// init failure, a payload it could not read. Whether a retry helps depends on Type.
type FunctionError struct {
	// Function is the function that failed.
	Function string
	// Kind is the X-Amz-Function-Error header: "Unhandled" or "Handled".
	Kind string
	// Type is the errorType the Lambda runtime reported, e.g. "Sandbox.Timedout" or
	// "Runtime.ExitError"; empty when the payload had none.
	Type string
	// Message is the errorMessage, or the raw payload (shortened) when it had none.
	Message string
}

// Error returns the type and message.
func (e *FunctionError) Error() string {
	return fmt.Sprintf("checkclient: %s failed (%s %s): %s", e.Function, e.Kind, e.Type, e.Message)
}

// functionError turns a function error's payload into an *InvalidRequestError or a
// *FunctionError.
func functionError(function, kind string, payload []byte) error {
	var body struct {
		Message string `json:"errorMessage"`
		Type    string `json:"errorType"`
	}
	if json.Unmarshal(payload, &body) != nil || body.Message == "" {
		body.Message = excerpt(payload)
	}
	if body.Type == checkapi.ErrorTypeInvalidRequest {
		return &InvalidRequestError{Function: function, Message: body.Message}
	}
	return &FunctionError{Function: function, Kind: kind, Type: body.Type, Message: body.Message}
}

// maxExcerpt is the most bytes of an unexpected payload that an error quotes.
const maxExcerpt = 200

// excerpt quotes the start of an unexpected payload for an error.
func excerpt(payload []byte) string {
	if len(payload) > maxExcerpt {
		return fmt.Sprintf("%q...", payload[:maxExcerpt])
	}
	return fmt.Sprintf("%q", payload)
}
