package bucketgate_test

import (
	"encoding/json"
	"testing"

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
