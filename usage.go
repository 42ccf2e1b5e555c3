package bucketgate

import "time"

// DayUsage is an identity's usage of one UTC day, as the limiter counted it in Redis:
// the checks it allowed and the cost they took, and the checks it limited. A reserve
// counts as a check of its estimate; its settle (or cancel) corrects the cost by the
// actual cost less the estimate, on the day it is made, and counts no check. Peeks,
// refunds and resets count nothing, and neither does a denial answered without Redis
// (by an in-process deny cache). The zero DayUsage is a day of no checks.
type DayUsage struct {
	// Day is the day's start, 00:00 UTC.
	Day time.Time
	// Allowed counts the checks allowed that took tokens; Cost is the tokens they took,
	// corrected by the day's settles: below Allowed when settles gave back, and below
	// zero on a day whose settles gave back more than its checks took (their reserves
	// counted on earlier days). The sum over days is what was used.
	Allowed, Cost int64
	// Limited counts the checks denied.
	Limited int64
}

// UTCDay returns the start of t's day in UTC, 00:00.
func UTCDay(t time.Time) time.Time {
	y, m, d := t.UTC().Date()
	return time.Date(y, m, d, 0, 0, 0, 0, time.UTC)
}
