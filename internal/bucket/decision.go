package bucket

import (
	"time"

	"github.com/bucketgate/bucketgate"
)

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

// windowStart is the start of the window of quota r that ends at end, as stored: a day,
// a week or a month before it (end is on a day every month has), whatever r's anchor,
// which a plan may have edited since the window was stored (its count stands until its
// end): r's window holding end's last second began on r's anchor, in no window stored.
// A window stored under another period than r's (a daily quota made monthly) is
// told as one of r's period.
func windowStart(r bucketgate.Rule, end time.Time) time.Time {
	switch r.Period {
	case bucketgate.PeriodDay:
		return end.AddDate(0, 0, -1)
	case bucketgate.PeriodWeek:
		return end.AddDate(0, 0, -7)
	}
	return end.AddDate(0, -1, 0)
}

// newCrossings is what q crossed at at, as the script's figures (and the model's) say:
// the rules of its first denials (limited) and of quotas reaching 80% and 100% of their
// limit, and two figures per rule (figs[2i], figs[2i+1]): a quota's count and its
// window's end (Unix seconds), a bucket's floor of tokens (below 0 for a settle's debt)
// and the ms until it is full.
// Nil when none.
func newCrossings(q bucketgate.Request, at time.Time, limited, reached80, reached100 bucketgate.RuleSet, figs []int64) []bucketgate.Crossing {
	var cs []bucketgate.Crossing
	for i, r := range q.Rules {
		c := bucketgate.Crossing{Rule: r.Name, Quota: r.IsQuota(), Limit: r.Max(), Usage: figs[2*i]}
		if r.IsQuota() {
			c.WindowEnd = time.Unix(figs[2*i+1], 0).UTC()
			c.WindowStart = windowStart(r, c.WindowEnd)
		} else {
			c.Usage = r.Capacity - figs[2*i]
			c.WindowStart = at.UTC()
			c.WindowEnd = c.WindowStart.Add(millisToDuration(figs[2*i+1]))
		}
		if limited.Has(i) {
			c.Kind = bucketgate.CrossingLimited
			cs = append(cs, c)
		}
		c.Kind = bucketgate.CrossingThreshold
		if reached80.Has(i) {
			c.Percent = 80
			cs = append(cs, c)
		}
		if reached100.Has(i) {
			c.Percent = 100
			cs = append(cs, c)
		}
	}
	return cs
}
