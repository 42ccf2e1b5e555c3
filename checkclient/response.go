package checkclient

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"unicode/utf8"

	"github.com/bucketgate/bucketgate/checkapi"
)

// response is a checkapi.Response as it arrives, with what it must carry to be read as
// a decision.
type response struct {
	checkapi.Response
	present map[string]bool // the members the answer had
}

// required are the members without which an answer is not a decision.
var required = []string{"allowed", "reason"}

// UnmarshalJSON reads a response, noting which members it had.
func (r *response) UnmarshalJSON(b []byte) error {
	var members map[string]json.RawMessage
	if err := json.Unmarshal(b, &members); err != nil {
		return err
	}
	r.present = make(map[string]bool, len(members))
	for name := range members {
		r.present[name] = true
	}
	return json.Unmarshal(b, &r.Response)
}

// check reports why r cannot be read as a decision: a member missing, an unknown
// reason, a reason that contradicts allowed, a figure below zero.
func (r response) check() error {
	for _, name := range required {
		if !r.present[name] {
			return fmt.Errorf("no %q", name)
		}
	}
	var allowed bool
	switch r.Reason {
	case checkapi.ReasonOK, checkapi.ReasonDegraded:
		allowed = true
	case checkapi.ReasonLimited, checkapi.ReasonUnavailable:
	default:
		return fmt.Errorf("reason %q: want %s, %s, %s or %s", r.Reason,
			checkapi.ReasonOK, checkapi.ReasonLimited, checkapi.ReasonUnavailable, checkapi.ReasonDegraded)
	}
	switch {
	case r.Allowed != allowed:
		return fmt.Errorf("allowed %v with reason %s", r.Allowed, r.Reason)
	case r.Limit < 0 || r.Remaining < 0 || r.RetryAfterMS < 0 || r.ResetAfterMS < 0:
		return errors.New("a figure below zero")
	}
	return nil
}

// errorPayload reports whether an answer is a function error's payload: an object with
// an errorType or errorMessage member, as the Lambda runtime writes one.
func errorPayload(payload []byte) bool {
	var e struct {
		Type    *string `json:"errorType"`
		Message *string `json:"errorMessage"`
	}
	return json.Unmarshal(payload, &e) == nil && (e.Type != nil || e.Message != nil)
}

// validate refuses what the function would (or JSON could not carry) that the client
// can tell alone: a key or identity that is not UTF-8 text, which encoding/json would
// send with U+FFFD in place of the bytes, so that two different keys would be one, and a
// rate that is NaN or infinite, which encoding/json cannot send at all.
// prefix starts every field's path ("checks[3]." in a batch).
func (c *Client) validate(prefix string, req checkapi.Request) error {
	if !utf8.ValidString(req.Key) {
		return c.refuse(prefix + "key: not UTF-8 text: encoding would replace its bytes with U+FFFD and merge it with other keys")
	}
	if !utf8.ValidString(req.Identity) {
		return c.refuse(prefix + "identity: not UTF-8 text")
	}
	for i, r := range req.Rules {
		if math.IsNaN(r.RefillPerSecond) || math.IsInf(r.RefillPerSecond, 0) { // JSON has no such number
			return c.refuse(fmt.Sprintf("%srules[%d].refillPerSecond: %v: want a finite number", prefix, i, r.RefillPerSecond))
		}
	}
	return nil
}

// refuse is the client's own refusal of a request, with message naming the field.
func (c *Client) refuse(message string) error {
	return &InvalidRequestError{Function: c.function, Message: message, Local: true}
}

// unreadable is the error of an answer that is not a decision.
func (c *Client) unreadable(err error) error {
	return &FunctionError{Function: c.function, Type: ErrorTypeUnreadable, Message: err.Error()}
}
