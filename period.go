package bucketgate

import (
	"fmt"
	"time"
)

// Period is the calendar period of a quota rule: the window in which it counts what it
// admits. Windows are in UTC and begin at 00:00: a day's every day, a week's on Monday,
// a month's on the rule's Anchor day. The zero Period, PeriodNone, is no period: the
// rule is a token bucket.
type Period uint8

// The periods of a quota.
const (
	// PeriodNone marks a token bucket: a rule that refills, not a quota.
	PeriodNone Period = iota
	// PeriodDay is a UTC day, from 00:00 to the next 00:00.
	PeriodDay
	// PeriodWeek is a week from Monday 00:00 UTC to the next Monday.
	PeriodWeek
	// PeriodMonth is a month from day Anchor 00:00 UTC to the same day of the next month.
	PeriodMonth
)

// periodNames are the periods' names, by Period; PeriodNone has none.
var periodNames = [...]string{PeriodDay: "day", PeriodWeek: "week", PeriodMonth: "month"}

// MaxAnchor is the latest day of the month a monthly quota's window may begin on:
// every month has it.
const MaxAnchor = 28

// String returns the period's name: day, week or month; "" for PeriodNone.
func (p Period) String() string {
	if int(p) < len(periodNames) {
		return periodNames[p]
	}
	return fmt.Sprintf("Period(%d)", uint8(p))
}

// ParsePeriod returns the period called name: day, week or month, exactly.
func ParsePeriod(name string) (Period, bool) {
	for p, n := range periodNames {
		if n != "" && n == name {
			return Period(p), true
		}
	}
	return PeriodNone, false
}

// MarshalText returns the period's name; PeriodNone or an unknown Period is an error.
func (p Period) MarshalText() ([]byte, error) {
	if p == PeriodNone || int(p) >= len(periodNames) {
		return nil, fmt.Errorf("%w: period %v", ErrInvalid, p)
	}
	return []byte(periodNames[p]), nil
}

// UnmarshalText reads a period's name; another is an error naming those there are, an
// ErrInvalid as MarshalText's is.
func (p *Period) UnmarshalText(name []byte) error {
	v, ok := ParsePeriod(string(name))
	if !ok {
		return unknownName(fmt.Sprintf("unknown period %.64q: want day, week or month", name)) // its start, as an Op's
	}
	*p = v
	return nil
}

// Window returns the UTC window of quota r that holds at: its start, and its end (the
// start of the next one). A monthly window begins on day r.Anchor (0 counts as 1) at
// 00:00 UTC, of at's month when at is on or after that day, else of the month before.
// A daily or weekly quota's Anchor, which Validate refuses, is ignored. For a rule of
// no window both are zero: a token bucket (PeriodNone), and a quota that
// Validate refuses for its Period (none of day, week and month) or its monthly Anchor
// (above MaxAnchor: a day some months do not have, so that its windows would begin on
// another day each month, and at need not be in the one returned).
func (r Rule) Window(at time.Time) (start, end time.Time) {
	y, m, d := at.UTC().Date()
	switch r.Period {
	case PeriodDay:
		start = time.Date(y, m, d, 0, 0, 0, 0, time.UTC)
		return start, start.AddDate(0, 0, 1)
	case PeriodWeek:
		sinceMonday := (int(at.UTC().Weekday()) + 6) % 7
		start = time.Date(y, m, d-sinceMonday, 0, 0, 0, 0, time.UTC)
		return start, start.AddDate(0, 0, 7)
	case PeriodMonth:
		a := r.anchor()
		if a > MaxAnchor {
			return time.Time{}, time.Time{}
		}
		if d < a {
			m--
		}
		return time.Date(y, m, a, 0, 0, 0, 0, time.UTC), time.Date(y, m+1, a, 0, 0, 0, 0, time.UTC)
	}
	return time.Time{}, time.Time{}
}

// anchor is the day of the month a monthly quota's window begins on: Anchor, or 1.
func (r Rule) anchor() int {
	if r.Anchor == 0 {
		return 1
	}
	return int(r.Anchor)
}
