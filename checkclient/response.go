package checkclient

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"reflect"
	"slices"
	"strings"
	"time"
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

// responseMembers are the JSON names of checkapi.Response's fields.
var responseMembers = jsonNames(reflect.TypeFor[checkapi.Response]())

// jsonNames returns the JSON member names of struct type t's fields.
func jsonNames(t reflect.Type) []string {
	names := make([]string, 0, t.NumField())
	for f := range t.Fields() {
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		names = append(names, name)
	}
	return names
}

// UnmarshalJSON reads a response strictly, noting which members it had: a member the
// client knows must be spelled exactly as checkapi writes it, appear once and not be
// null (encoding/json alone would match any case, keep the last of two and read null
// as the zero value, so that an answer could say two things and be read as either).
// Members it does not know, added to the contract later, are ignored.
func (r *response) UnmarshalJSON(b []byte) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return errors.New("want a JSON object")
	}
	r.present = make(map[string]bool, len(responseMembers))
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return err
		}
		name, _ := tok.(string) // inside an object, Token returns names as strings
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return err
		}
		switch i := slices.IndexFunc(responseMembers, func(m string) bool { return strings.EqualFold(m, name) }); {
		case i < 0: // added later
		case responseMembers[i] != name:
			return fmt.Errorf("member %q: want %q", name, responseMembers[i])
		case r.present[name]:
			return fmt.Errorf("member %q given twice", name)
		case string(v) == "null":
			return fmt.Errorf("member %q: null", name)
		default:
			r.present[name] = true
		}
	}
	return json.Unmarshal(b, &r.Response)
}

// check reports why r cannot be read as the decision on a request of op: a member
// missing (a release Redis answered says whether the lease was held), an unknown
// reason, a reason that contradicts allowed, a figure below zero.
func (r response) check(op checkapi.Op) error {
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
	if op == checkapi.OpRelease && r.Reason == checkapi.ReasonOK && !r.present["released"] {
		return errors.New(`no "released" in a release's answer`)
	}
	for i, rule := range r.Rules {
		switch {
		case rule.Name == "":
			return fmt.Errorf("rules[%d]: no name", i)
		case rule.Limit < 1 || rule.Remaining < 0 || rule.Remaining > rule.Limit || rule.ResetAfterMS < 0:
			return fmt.Errorf("rules[%d] (%s): %d of %d left, full in %d ms", i, rule.Name, rule.Remaining, rule.Limit, rule.ResetAfterMS)
		case (rule.Period != 0) != (rule.WindowEnd != ""):
			return fmt.Errorf("rules[%d] (%s): period %q with window end %q", i, rule.Name, rule.Period, rule.WindowEnd)
		}
		if rule.WindowEnd != "" {
			if _, err := time.Parse(time.RFC3339, rule.WindowEnd); err != nil {
				return fmt.Errorf("rules[%d] (%s): window end %q: %w", i, rule.Name, rule.WindowEnd, err)
			}
		}
	}
	return nil
}

// checkUsage reports why u cannot be read as the usage asked for: days missing or out
// of order, a count of checks below zero, a total that is not their sum. A day's cost
// may be below its checks, or below zero: a settle corrects the cost of the day it is
// made on.
func checkUsage(u checkapi.Usage) error {
	from, err1 := time.Parse(time.DateOnly, u.From)
	to, err2 := time.Parse(time.DateOnly, u.To)
	switch {
	case u.Identity == "":
		return errors.New("no identity")
	case err1 != nil || err2 != nil || to.Before(from):
		return fmt.Errorf("from %q to %q", u.From, u.To)
	case len(u.Days) != int(to.Sub(from)/(24*time.Hour))+1:
		return fmt.Errorf("%d days from %s to %s", len(u.Days), u.From, u.To)
	}
	var total checkapi.UsageCounts
	for i, d := range u.Days {
		if want := from.AddDate(0, 0, i).Format(time.DateOnly); d.Date != want {
			return fmt.Errorf("days[%d]: date %q, want %s", i, d.Date, want)
		}
		if d.Allowed < 0 || d.Limited < 0 {
			return fmt.Errorf("days[%d]: %d allowed (cost %d), %d limited", i, d.Allowed, d.Cost, d.Limited)
		}
		total.Allowed, total.Limited, total.Cost = total.Allowed+d.Allowed, total.Limited+d.Limited, total.Cost+d.Cost
	}
	if total != u.Total {
		return fmt.Errorf("total %+v, the days add up to %+v", u.Total, total)
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
// can tell alone: a string that is not UTF-8 text, which encoding/json would send with
// U+FFFD in place of the bytes, so that two different keys would be one (and two
// different requestIds one, the second answered as the first, never charged), and what
// encoding/json cannot send at all: an Op or a rule's Period that is none of the
// constants, a rate that is NaN or infinite.
// prefix starts every field's path ("checks[3]." in a batch).
func (c *Client) validate(prefix string, req checkapi.Request) error {
	if _, err := req.Op.MarshalText(); err != nil {
		return c.refuse(fmt.Sprintf("%sop: %v: want one of checkapi's Op constants", prefix, req.Op))
	}
	if !utf8.ValidString(req.Key) {
		return c.refuse(prefix + "key: not UTF-8 text: encoding would replace its bytes with U+FFFD and merge it with other keys")
	}
	for _, f := range []struct{ name, value string }{
		{"identity", req.Identity}, {"plan", req.Plan}, {"requestId", req.RequestID}, {"reservation", req.Reservation},
		{"lease", req.Lease}, {"from", req.From}, {"to", req.To},
	} {
		if !utf8.ValidString(f.value) {
			return c.refuse(prefix + f.name + ": not UTF-8 text: encoding would replace its bytes with U+FFFD")
		}
	}
	for i, r := range req.Rules {
		switch {
		case !utf8.ValidString(r.Name):
			return c.refuse(fmt.Sprintf("%srules[%d].name: not UTF-8 text", prefix, i))
		case math.IsNaN(r.RefillPerSecond) || math.IsInf(r.RefillPerSecond, 0): // JSON has no such number
			return c.refuse(fmt.Sprintf("%srules[%d].refillPerSecond: %v: want a finite number", prefix, i, r.RefillPerSecond))
		}
		if _, err := r.Period.MarshalText(); r.IsQuota() && err != nil {
			return c.refuse(fmt.Sprintf("%srules[%d].period: %v: want day, week or month", prefix, i, r.Period))
		}
	}
	return nil
}

// validateDecision is validate for req, a request answered by a decision: a usage
// report is not one (and would be sent with a requestId, which the function refuses on
// it).
func (c *Client) validateDecision(prefix string, req checkapi.Request) error {
	if req.Op == checkapi.OpUsage {
		return c.refuse(prefix + `op: "usage": a report, not a decision: call Usage`)
	}
	return c.validate(prefix, req)
}

// refuse is the client's own refusal of a request, with message naming the field.
func (c *Client) refuse(message string) error {
	return &InvalidRequestError{Function: c.function, Message: message, Local: true}
}

// unreadable is the error of an answer that is not a decision.
func (c *Client) unreadable(err error) error {
	return &FunctionError{Function: c.function, Type: ErrorTypeUnreadable, Message: err.Error()}
}
