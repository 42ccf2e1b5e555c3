package bucketgate_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/bucketgate/bucketgate"
)

// A period's JSON is its name; a quota's JSON has its limit, period and anchor, a
// bucket's its capacity and rate, and neither the other's fields.
func TestPeriodText(t *testing.T) {
	for _, p := range []bucketgate.Period{bucketgate.PeriodDay, bucketgate.PeriodWeek, bucketgate.PeriodMonth} {
		b, err := json.Marshal(p)
		var back bucketgate.Period
		if err != nil || string(b) != `"`+p.String()+`"` || json.Unmarshal(b, &back) != nil || back != p {
			t.Errorf("%v: %s, %v, back %v", p, b, err, back)
		}
	}
	var p bucketgate.Period
	if err := p.UnmarshalText([]byte("Month")); err == nil || err.Error() != `unknown period "Month": want day, week or month` {
		t.Errorf("UnmarshalText(Month) = %v", err)
	}
	for _, bad := range []bucketgate.Period{bucketgate.PeriodNone, bucketgate.PeriodMonth + 1} {
		if _, err := json.Marshal(bad); err == nil {
			t.Errorf("period %v marshals", bad)
		}
	}
	for rule, want := range map[bucketgate.Rule]string{
		{Name: "monthly", Limit: 1000, Period: bucketgate.PeriodMonth, Anchor: 15}: `{"name":"monthly","limit":1000,"period":"month","anchor":15}`,
		{Name: "daily", Limit: 5, Period: bucketgate.PeriodDay, Shadow: true}:      `{"name":"daily","limit":5,"period":"day","shadow":true}`,
		{Name: "burst", Capacity: 10, RefillPerSecond: 0.5}:                        `{"name":"burst","capacity":10,"refillPerSecond":0.5}`,
	} {
		b, err := json.Marshal(rule)
		var back bucketgate.Rule
		if err != nil || string(b) != want || json.Unmarshal(b, &back) != nil || back != rule {
			t.Errorf("%+v: %s (%v), want %s; back %+v", rule, b, err, want, back)
		}
	}
}

// A monthly quota's window holds the time it is asked for, from day Anchor to the same
// day of the next month, whatever the month's length; an Anchor above MaxAnchor (a day
// some months lack, which Validate refuses) has no window, as an unknown Period has none.
func TestWindow(t *testing.T) {
	for anchor := range uint8(bucketgate.MaxAnchor + 1) {
		r := bucketgate.Rule{Name: "m", Limit: 1, Period: bucketgate.PeriodMonth, Anchor: anchor}
		for at := time.Date(2027, time.December, 25, 12, 0, 0, 0, time.UTC); at.Year() < 2029; at = at.Add(23 * time.Hour) {
			start, end := r.Window(at)
			if at.Before(start) || !at.Before(end) || start.Day() != max(1, int(anchor)) || end != start.AddDate(0, 1, 0) {
				t.Fatalf("anchor %d: Window(%v) = %v to %v: want the month from day %d that holds it", anchor, at, start, end, max(1, int(anchor)))
			}
		}
	}
	at := time.Date(2027, time.March, 1, 12, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name string
		rule bucketgate.Rule
	}{
		{"a bucket", bucketgate.Rule{Name: "b", Capacity: 1, RefillPerSecond: 1}},
		{"an anchor on a day February lacks", bucketgate.Rule{Name: "m", Limit: 1, Period: bucketgate.PeriodMonth, Anchor: 29}},
		{"an anchor on the 31st", bucketgate.Rule{Name: "m", Limit: 1, Period: bucketgate.PeriodMonth, Anchor: 31}},
		{"an anchor beyond any month", bucketgate.Rule{Name: "m", Limit: 1, Period: bucketgate.PeriodMonth, Anchor: 255}},
		{"an unknown period", bucketgate.Rule{Name: "m", Limit: 1, Period: bucketgate.PeriodMonth + 1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if start, end := tc.rule.Window(at); !start.IsZero() || !end.IsZero() {
				t.Errorf("Window(%v) = %v to %v: want no window (both zero)", at, start, end)
			}
		})
	}
}
