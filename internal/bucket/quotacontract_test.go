package bucket_test

import (
	"context"
	"testing"
	"time"

	"github.com/bucketgate/bucketgate"
	"github.com/bucketgate/bucketgate/internal/bucket"
)

// quotaStep is one call of TestQuotaContract: at the time given (UTC), the operation
// and cost, and the decision wanted: allowed, the tokens remaining, the retry-after and
// the binding rule.
type quotaStep struct {
	at        time.Time
	op        bucketgate.Op
	cost      int64
	allowed   bool
	remaining int64
	retry     time.Duration
	rule      string
}

// utc is a time of the UTC calendar.
func utc(y int, m time.Month, d, h, mi, s int) time.Time {
	return time.Date(y, m, d, h, mi, s, 0, time.UTC)
}

// TestQuotaContract holds the engine to round 3's quotas on the calendar as the design
// states them, Redis's clock (miniredis's, running bucket.lua) deciding: windows start
// at 00:00 UTC, a week's on Monday, a month's on its anchor day; a quota counts what it
// admitted in its window and refills nothing until the window ends; its retry-after is
// the time until then; a refund gives back to the window in force and a reset clears it;
// quotas and buckets are decided together, all or nothing.
func TestQuotaContract(t *testing.T) {
	monthly := bucketgate.Rule{Name: "monthly", Limit: 3, Period: bucketgate.PeriodMonth, Anchor: 15}
	firstOfMonth := bucketgate.Rule{Name: "billing", Limit: 2, Period: bucketgate.PeriodMonth} // anchor 1 by default
	weekly := bucketgate.Rule{Name: "weekly", Limit: 2, Period: bucketgate.PeriodWeek}
	daily := bucketgate.Rule{Name: "daily", Limit: 5, Period: bucketgate.PeriodDay}
	burst := bucketgate.Rule{Name: "burst", Capacity: 2, RefillPerSecond: 1}
	check, refund, reset := bucketgate.OpCheck, bucketgate.OpRefund, bucketgate.OpReset
	tests := []struct {
		name  string
		rules []bucketgate.Rule
		steps []quotaStep
	}{
		{"a month from its anchor day, no refill within it", []bucketgate.Rule{monthly}, []quotaStep{
			{utc(2026, 11, 15, 0, 0, 0), check, 3, true, 0, 0, "monthly"},
			{utc(2026, 11, 20, 12, 0, 0), check, 1, false, 0, utc(2026, 12, 15, 0, 0, 0).Sub(utc(2026, 11, 20, 12, 0, 0)), "monthly"},
			{utc(2026, 12, 14, 23, 59, 59), check, 1, false, 0, time.Second, "monthly"},
			{utc(2026, 12, 15, 0, 0, 0), check, 1, true, 2, 0, "monthly"},
		}},
		{"a month from day 1 by default", []bucketgate.Rule{firstOfMonth}, []quotaStep{
			{utc(2026, 12, 31, 23, 0, 0), check, 2, true, 0, 0, "billing"},
			{utc(2026, 12, 31, 23, 59, 30), check, 1, false, 0, 30 * time.Second, "billing"},
			{utc(2027, 1, 1, 0, 0, 0), check, 2, true, 0, 0, "billing"},
		}},
		{"a week from Monday", []bucketgate.Rule{weekly}, []quotaStep{
			{utc(2026, 11, 27, 10, 0, 0), check, 2, true, 0, 0, "weekly"}, // a Friday
			{utc(2026, 11, 29, 23, 59, 0), check, 1, false, 0, time.Minute, "weekly"},
			{utc(2026, 11, 30, 0, 0, 0), check, 1, true, 1, 0, "weekly"}, // Monday
		}},
		{"a UTC day", []bucketgate.Rule{daily}, []quotaStep{
			{utc(2026, 11, 27, 23, 0, 0), check, 5, true, 0, 0, "daily"},
			{utc(2026, 11, 27, 23, 50, 0), check, 1, false, 0, 10 * time.Minute, "daily"},
			{utc(2026, 11, 28, 0, 0, 0), check, 5, true, 0, 0, "daily"},
		}},
		{"a refund gives back to the window in force", []bucketgate.Rule{monthly}, []quotaStep{
			{utc(2026, 11, 16, 0, 0, 0), check, 3, true, 0, 0, "monthly"},
			{utc(2026, 11, 16, 0, 0, 1), refund, 2, true, 2, 0, "monthly"},
			{utc(2026, 11, 16, 0, 0, 2), check, 2, true, 0, 0, "monthly"},
			{utc(2026, 11, 16, 0, 0, 3), check, 1, false, 0, utc(2026, 12, 15, 0, 0, 0).Sub(utc(2026, 11, 16, 0, 0, 3)), "monthly"},
		}},
		{"a refund gives nothing back to a window that has ended", []bucketgate.Rule{daily}, []quotaStep{
			{utc(2026, 11, 27, 12, 0, 0), check, 5, true, 0, 0, "daily"},
			{utc(2026, 11, 28, 0, 0, 1), refund, 5, true, 5, 0, "daily"},
			{utc(2026, 11, 28, 0, 0, 2), check, 5, true, 0, 0, "daily"},
			{utc(2026, 11, 28, 0, 0, 3), check, 1, false, 0, 24*time.Hour - 3*time.Second, "daily"},
		}},
		{"a reset clears the window", []bucketgate.Rule{monthly}, []quotaStep{
			{utc(2026, 11, 16, 0, 0, 0), check, 3, true, 0, 0, "monthly"},
			{utc(2026, 11, 16, 0, 0, 1), reset, 0, true, 3, 0, "monthly"},
			{utc(2026, 11, 16, 0, 0, 2), check, 3, true, 0, 0, "monthly"},
		}},
		{"a bucket's denial takes nothing from the quota", []bucketgate.Rule{burst, daily}, []quotaStep{
			{utc(2026, 11, 27, 12, 0, 0), check, 2, true, 0, 0, "burst"},
			{utc(2026, 11, 27, 12, 0, 0), check, 1, false, 0, time.Second, "burst"},
			{utc(2026, 11, 27, 12, 0, 2), check, 2, true, 0, 0, "burst"},
			{utc(2026, 11, 27, 12, 0, 4), check, 1, true, 0, 0, "daily"}, // burst full again, keeps 1; the daily gives its last
			{utc(2026, 11, 27, 12, 0, 5), check, 1, false, 0, 12*time.Hour - 5*time.Second, "daily"},
		}},
		{"a denial by a bucket and a quota waits for the later", []bucketgate.Rule{burst, {Name: "daily", Limit: 2, Period: bucketgate.PeriodDay}}, []quotaStep{
			{utc(2026, 11, 27, 12, 0, 0), check, 2, true, 0, 0, "burst"},
			{utc(2026, 11, 27, 12, 0, 0), check, 1, false, 0, 12 * time.Hour, "daily"},
		}},
		{"a quota's denial takes nothing from the bucket", []bucketgate.Rule{burst, weekly}, []quotaStep{
			{utc(2026, 11, 29, 23, 59, 0), check, 2, true, 0, 0, "burst"},
			{utc(2026, 11, 29, 23, 59, 10), check, 1, false, 0, 50 * time.Second, "weekly"},
			{utc(2026, 11, 30, 0, 0, 0), check, 2, true, 0, 0, "burst"}, // the bucket full, the week new
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := newMini(t)
			l := bucket.New(m.client)
			m.advance(tt.steps[0].at.Sub(m.now))
			for i, s := range tt.steps {
				if s.at.Before(m.now) {
					t.Fatalf("step %d at %v: before the clock, %v", i, s.at, m.now)
				}
				m.advance(s.at.Sub(m.now))
				d := decide(t, l, bucketgate.Request{Identity: "customer", Rules: tt.rules, Op: s.op, Cost: s.cost})
				if d.Allowed != s.allowed || d.Remaining != s.remaining || d.RetryAfter != s.retry || d.Rule != s.rule {
					t.Errorf("step %d at %v: %v %d: allowed %v, %d left, retry after %v, rule %s; want %v, %d, %v, %s",
						i, s.at, s.op, s.cost, d.Allowed, d.Remaining, d.RetryAfter, d.Rule, s.allowed, s.remaining, s.retry, s.rule)
				}
			}
		})
	}
}

// The design's usage example: three checks of cost 3 allowed and three limited on one
// UTC day are {"allowed": 3, "limited": 3, "cost": 9}, on that day alone.
func TestUsageOfTheDesignsExample(t *testing.T) {
	m := newMini(t)
	l := bucket.New(m.client, bucket.Usage(35))
	day := utc(2026, 11, 25, 9, 0, 0)
	m.advance(day.Sub(m.now))
	q := bucketgate.Request{Identity: "key:example", Rules: []bucketgate.Rule{{Name: "monthly", Limit: 9, Period: bucketgate.PeriodMonth}}, Cost: 3}
	for i := range 6 {
		if d := decide(t, l, q); d.Allowed != (i < 3) {
			t.Fatalf("check %d: allowed %v", i, d.Allowed)
		}
	}
	days, err := l.Usage(context.Background(), q.Identity, day.AddDate(0, 0, -1), day)
	want := []bucketgate.DayUsage{{Day: utc(2026, 11, 24, 0, 0, 0)}, {Day: utc(2026, 11, 25, 0, 0, 0), Allowed: 3, Cost: 9, Limited: 3}}
	if err != nil || len(days) != 2 || days[0] != want[0] || days[1] != want[1] {
		t.Fatalf("usage = %+v, %v; want %+v", days, err, want)
	}
}
