package bucket

import "github.com/bucketgate/bucketgate"

// newDecision is the Decision on q that the script's figures (and the model's) make: the
// binding rule and the wait rule by index in q.Rules (-1 for none), remaining tokens,
// wait, reset and now in whole milliseconds, milliseconds and microseconds, and the
// shadow denials.
func newDecision(q bucketgate.Request, allowed bool, binding int, remaining, wait, reset, now int64, waitRule int, shadowLimited bucketgate.RuleSet) bucketgate.Decision {
	d := bucketgate.Decision{
		Allowed:       allowed,
		Reason:        bucketgate.ReasonOK,
		Remaining:     remaining,
		ResetAfter:    millisToDuration(reset),
		At:            microsToTime(now),
		ShadowLimited: shadowLimited,
	}
	if binding >= 0 {
		d.Rule, d.Limit = q.Rules[binding].Name, q.Rules[binding].Max()
	}
	switch {
	case !allowed:
		d.Reason, d.RetryAfter = bucketgate.ReasonLimited, millisToDuration(wait)
	case waitRule >= 0:
		d.Shortfall = bucketgate.Shortfall{Rule: q.Rules[waitRule].Name, Limit: q.Rules[waitRule].Max(), Wait: millisToDuration(wait)}
	}
	return d
}
