package checkclient

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/bucketgate/bucketgate/checkapi"
)

// InvalidRequestError is the refusal of a request that can never be decided: a missing
// key, an unknown plan (but a settle's, a cancel's or a release's, removed by a reload
// since the reserve or the acquire: a conflict), a cost out of range, malformed rules,
// an unknown field. The
// check function refuses it, or the client before sending it (Local) when it can tell
// alone: a batch of the wrong size, a release without a lease or a settle without a
// reservation, a key, a requestId or another string that is not UTF-8 text, an Op or a
// rule's Period that is none of the constants, an API key bucketgate made as a key or
// in an identity (which would leave the process in the payload). Nothing was
// decided or written. Retrying cannot help.
type InvalidRequestError struct {
	// Function is the function that refused, or that the request was for.
	Function string
	// Message names the field at fault and the problem, "checks[3].cost: ..." in a batch.
	Message string
	// Local reports the client's own refusal: the request was not sent.
	Local bool
}

// Error returns the message, and who refused.
func (e *InvalidRequestError) Error() string {
	if e.Local {
		return fmt.Sprintf("checkclient: request for %s not sent: %s", e.Function, e.Message)
	}
	return fmt.Sprintf("checkclient: %s refused the request: %s", e.Function, e.Message)
}

// ErrLeaseExpired is wrapped by the error of a check or a reserve answered by a replay
// (the RequestID was decided before) of an admission whose lease had expired by the
// client's clock: the replay answers the first decision again, lease and all, but a
// lease past its ExpiresAt holds no slot, and another request may hold it meanwhile.
// Nothing was decided or written; acquiring again needs a new RequestID. A lease
// released since holds no slot either, though its ExpiresAt is ahead: its replay is
// answered as the admission, with no error, since neither the function nor the client
// can tell; send a RequestID again only while its lease is held.
//
// ExpiresAt is by Redis's clock, and the answer carries no time of Redis's to judge it
// by (a replay's figures are all the first decision's), so a client's clock apart from
// Redis's by d moves the line by d: behind, a lease that expired less than d ago is
// answered as the admission; ahead, one with less than d left is this error, though
// it holds (its slot then frees at its ExpiresAt). Where that matters, keep the
// clocks in step, or treat a Replayed admission whose ExpiresAt is within your bound
// of the skew as expired.
var ErrLeaseExpired = errors.New("the replayed lease has expired: it holds no slot")

// ErrReservationExpired is wrapped by the error of a reserve answered by a replay (the
// RequestID was decided before) of an admission whose reservation had expired by the
// client's clock: the replay answers the first decision again, reservation and all, but
// a reservation past its ExpiresAt stays charged at its estimate and can no longer be
// settled (a settle of it is a conflict). Nothing was decided or written; reserving
// again needs a new RequestID. The client's clock judges it as it judges
// ErrLeaseExpired, with the same limit; a reserve with a concurrency rule that replays
// both expired wraps both.
var ErrReservationExpired = errors.New("the replayed reservation has expired: it can no longer be settled")

// ErrorTypeUnreadable is the Type of a FunctionError for an answer that is not a
// decision: not JSON, a member missing (a release's "released" when Redis answered it
// too, an allowed reserve's "reservation", an allowed acquire's "lease", their
// "expiresAt"), in another case, given twice or null, an unknown reason, a reason that
// contradicts allowed, a batch answered with another count of results.
const ErrorTypeUnreadable = "checkclient.Unreadable"

// FunctionError is any other error of the invoked function: a crash, a timeout, an
// init failure, a payload it could not read, an answer that is not a decision. Whether a
// retry helps depends on Type.
type FunctionError struct {
	// Function is the function that failed.
	Function string
	// Kind is the X-Amz-Function-Error header: "Unhandled" or "Handled"; empty for an
	// error payload that came without it, and for an unreadable answer.
	Kind string
	// Type is the errorType the Lambda runtime reported, e.g. "Sandbox.Timedout" or
	// "Runtime.ExitError", or ErrorTypeUnreadable; empty when the payload had none.
	Type string
	// Message is the errorMessage, or the raw payload (shortened) when it had none.
	Message string
}

// Error returns the type and message.
func (e *FunctionError) Error() string {
	if e.Type == ErrorTypeUnreadable {
		return fmt.Sprintf("checkclient: %s answered what is not a decision: %s", e.Function, e.Message)
	}
	what := strings.TrimSpace(e.Kind + " " + e.Type)
	if what == "" { // an error payload with a message alone
		return fmt.Sprintf("checkclient: %s failed: %s", e.Function, e.Message)
	}
	return fmt.Sprintf("checkclient: %s failed (%s): %s", e.Function, what, e.Message)
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
