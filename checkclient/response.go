package checkclient

import (
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
	"github.com/bucketgate/bucketgate/internal/madekey"
	"github.com/bucketgate/bucketgate/internal/strictjson"
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

// ruleMembers are the JSON names of checkapi.RuleStatus's fields.
var ruleMembers = jsonNames(reflect.TypeFor[checkapi.RuleStatus]())

// UnmarshalJSON reads a response strictly, noting which members it had: a member the
// client knows, of the response or of one of its rules, must be spelled exactly as
// checkapi writes it, appear once and not be null (encoding/json alone would match any
// case, keep the last of two and read null as the zero value, so that an answer could
// say two things and be read as either). Members it does not know, added to the
// contract later, are ignored.
func (r *response) UnmarshalJSON(b []byte) error {
	d := strictjson.New(b)
	defer d.Release()
	present, err := readMembers(d, "", responseMembers, func(name string) error {
		if name != "rules" {
			return d.Skip()
		}
		return readArray(d, name, func(path string) error {
			_, err := readMembers(d, path, ruleMembers, nil)
			return err
		})
	})
	if err != nil {
		return err
	}
	r.present = present
	return json.Unmarshal(b, &r.Response)
}

// batchAnswer is a batch's answer as it arrives: its results, each read as strictly as
// a response, and the results member itself.
type batchAnswer struct {
	Results []response
}

// UnmarshalJSON reads a batch's answer strictly, as response.UnmarshalJSON does; an
// error in a result names it ("results[3]: ...").
func (a *batchAnswer) UnmarshalJSON(b []byte) error {
	d := strictjson.New(b)
	defer d.Release()
	_, err := readMembers(d, "", []string{"results"}, func(name string) error {
		return readArray(d, name, func(path string) error {
			v, err := d.Value()
			if err != nil {
				return err
			}
			var r response
			if err := r.UnmarshalJSON(v); err != nil {
				return fmt.Errorf("%s: %w", path, err)
			}
			a.Results = append(a.Results, r)
			return nil
		})
	})
	return err
}

// usageAnswer is a usage report as it arrives.
type usageAnswer struct {
	checkapi.Usage
}

// The JSON names of a usage report's members, of its days' and of its total's.
var (
	usageMembers  = jsonNames(reflect.TypeFor[checkapi.Usage]())
	countsMembers = jsonNames(reflect.TypeFor[checkapi.UsageCounts]())
	dayMembers    = append([]string{"date"}, countsMembers...)
)

// UnmarshalJSON reads a usage report strictly, as response.UnmarshalJSON does a
// decision: its members, its days' and its total's.
func (u *usageAnswer) UnmarshalJSON(b []byte) error {
	d := strictjson.New(b)
	defer d.Release()
	_, err := readMembers(d, "", usageMembers, func(name string) error {
		switch name {
		case "days":
			return readArray(d, name, func(path string) error {
				_, err := readMembers(d, path, dayMembers, nil)
				return err
			})
		case "total":
			_, err := readMembers(d, name, countsMembers, nil)
			return err
		}
		return d.Skip()
	})
	if err != nil {
		return err
	}
	return json.Unmarshal(b, &u.Usage)
}

// readMembers reads the object d is at, path in the answer ("" the answer itself,
// "rules[2]"), strictly: a member named in names must be spelled so, appear once and not
// be null, else the error names it; value reads the value of each (nil: skips it).
// Other members, added to the contract later, are skipped. It returns the names present.
func readMembers(d *strictjson.Decoder, path string, names []string, value func(name string) error) (map[string]bool, error) {
	if k := d.Kind(); k != '{' {
		return nil, fmt.Errorf("%swant a JSON object, got %s", at(path), strictjson.KindArticle(k))
	}
	present := make(map[string]bool, len(names))
	err := d.Object(func(name string) error {
		i := slices.IndexFunc(names, func(m string) bool { return strings.EqualFold(m, name) })
		switch {
		case i < 0: // added later
			return d.Skip()
		case names[i] != name:
			return fmt.Errorf("%smember %q: want %q", at(path), name, names[i])
		case d.Kind() == 'n':
			return fmt.Errorf("%smember %q: null", at(path), name)
		}
		present[names[i]] = true
		if value == nil {
			return d.Skip()
		}
		return value(names[i])
	})
	if se := (*strictjson.Error)(nil); errors.As(err, &se) && se.Problem == strictjson.Duplicate {
		return nil, fmt.Errorf("%smember %q given twice", at(se.Path(true)), se.Name)
	}
	return present, err
}

// readArray reads the array d is at, the value of member name, calling element with d
// at each element and its path ("rules[2]").
func readArray(d *strictjson.Decoder, name string, element func(path string) error) error {
	if k := d.Kind(); k != '[' {
		return fmt.Errorf("member %q: want an array, got %s", name, strictjson.KindArticle(k))
	}
	i := 0
	return d.Array(func() error {
		i++
		return element(fmt.Sprintf("%s[%d]", name, i-1))
	})
}

// at is path as an error's prefix: "rules[2]: ", or "" for the answer itself.
func at(path string) string {
	if path == "" {
		return ""
	}
	return path + ": "
}

// check reports why r cannot be read as the decision on req: a member missing (a
// release Redis answered says whether the lease was held; a reserve Redis allowed
// answers its reservation, a check or a reserve with a concurrency rule its lease, and
// either when it expires), an unknown reason, a reason that contradicts allowed, a
// figure below zero.
func (r response) check(req checkapi.Request) error {
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
	if err := r.checkHeld(req); err != nil {
		return err
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

// checkHeld reports what r, an answer to req, lacks of what Redis's decision holds: a
// release's "released", an allowed reserve's "reservation", the "lease" of an allowed
// check (or reserve) with a concurrency rule in req.Rules, and the "expiresAt" of
// either. Without them the caller could not settle, release, or tell when it ends.
func (r response) checkHeld(req checkapi.Request) error {
	if r.Reason != checkapi.ReasonOK { // degraded, unavailable or limited: nothing held
		return nil
	}
	switch {
	case req.Op == checkapi.OpRelease && !r.present["released"]:
		return errors.New(`no "released" in a release's answer`)
	case req.Op == checkapi.OpReserve && r.Reservation == "":
		return errors.New(`no "reservation" in an allowed reserve's answer: nothing to settle`)
	case acquires(req) && r.Lease == "":
		return errors.New(`no "lease" in the allowed answer of a request with a concurrency rule: nothing to release`)
	}
	if r.Reservation == "" && r.Lease == "" {
		return nil
	}
	if _, err := time.Parse(time.RFC3339, r.ExpiresAt); err != nil {
		return fmt.Errorf(`"expiresAt" %q with a reservation or a lease: want RFC 3339`, r.ExpiresAt)
	}
	return nil
}

// acquires reports whether req, when allowed, acquires a lease: a check that takes
// tokens, or a reserve, with a concurrency rule in its own rules (a plan's are unknown
// here).
func acquires(req checkapi.Request) bool {
	if req.Op != checkapi.OpReserve && (req.Op != checkapi.OpCheck || req.Cost != nil && *req.Cost == 0) {
		return false
	}
	return slices.ContainsFunc(req.Rules, checkapi.Rule.IsConcurrency)
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
// can tell alone: a release without a lease, a settle or a cancel without a
// reservation (what a degraded answer holds: nothing), an API key bucketgate made as a
// key, in an identity, or in a plan, a rule's name, a day, a reservation or a lease
// (madekey), a string that is not UTF-8
// text, which encoding/json would send with U+FFFD in place of the bytes, so that two
// different keys would be one (and two different requestIds one, the second answered
// as the first, never charged), and what encoding/json cannot send at all: an Op or a rule's Period that is none of the
// constants, a rate that is NaN or infinite.
// prefix starts every field's path ("checks[3]." in a batch).
func (c *Client) validate(prefix string, req checkapi.Request) error {
	if _, err := req.Op.MarshalText(); err != nil {
		return c.refuse(fmt.Sprintf("%sop: %v: want one of checkapi's Op constants", prefix, req.Op))
	}
	switch {
	case req.Op == checkapi.OpRelease && req.Lease == "":
		return c.refuse(prefix + "lease: missing: a release needs the lease a check answered (a degraded answer holds none: nothing to release)")
	case (req.Op == checkapi.OpSettle || req.Op == checkapi.OpCancel) && req.Reservation == "":
		return c.refuse(fmt.Sprintf("%sreservation: missing: a %v needs the reservation a reserve answered (a degraded answer holds none: nothing to settle)", prefix, req.Op))
	}
	if !utf8.ValidString(req.Key) {
		return c.refuse(prefix + "key: not UTF-8 text: encoding would replace its bytes with U+FFFD and merge it with other keys")
	}
	errs := []error{madekey.InKey(prefix+"key", req.Key), madekey.InIdentity(prefix+"identity", req.Identity), madekey.InField(prefix+"plan", req.Plan)}
	for i, r := range req.Rules {
		errs = append(errs, madekey.InField(fmt.Sprintf("%srules[%d].name", prefix, i), r.Name))
	}
	errs = append(errs, madekey.InField(prefix+"from", req.From), madekey.InField(prefix+"to", req.To),
		madekey.InField(prefix+"reservation", req.Reservation), madekey.InField(prefix+"lease", req.Lease))
	for _, err := range errs {
		if err != nil { // refused as the function refuses it, before the key leaves the process
			return c.refuse(err.Error())
		}
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
