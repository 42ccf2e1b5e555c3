package bucket_test

import (
	"context"
	"errors"
	"math/rand/v2"
	"reflect"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/bucketgate/bucketgate"
	"github.com/bucketgate/bucketgate/internal/bucket"
	"github.com/bucketgate/bucketgate/internal/lua"
)

// calendar are quotas of every period, and months from the first, a mid-month and the
// latest anchor.
var calendar = []bucketgate.Rule{
	{Name: "daily", Limit: 5, Period: bucketgate.PeriodDay},
	{Name: "weekly", Limit: 5, Period: bucketgate.PeriodWeek},
	{Name: "monthly", Limit: 5, Period: bucketgate.PeriodMonth},
	{Name: "billing15", Limit: 5, Period: bucketgate.PeriodMonth, Anchor: 15},
	{Name: "billing28", Limit: 5, Period: bucketgate.PeriodMonth, Anchor: 28},
	{Name: "billing29", Limit: 5, Period: bucketgate.PeriodMonth, Anchor: 1}, // anchor 1 given
}

// TestCalendarWindows holds the script's calendar to Go's, day by day: every day of
// 2023 to 2032 (common and leap Februaries, every month end and week) and days around
// the turns of 1970, 2000 (a leap day), 2100 and 2200 (none; past 2255 Redis's time in
// microseconds is no longer exact in a double), each at a random time of day: one check takes a token from a quota of every period, and every window
// the script stored, and the decision, are the model's (Go's time package).
func TestCalendarWindows(t *testing.T) {
	m := newMini(t)
	l := bucket.New(m.client)
	rng := rand.New(rand.NewPCG(29, 1))
	var days []time.Time
	for d := time.Date(2023, 1, 1, 0, 0, 0, 0, time.UTC); d.Year() < 2033; d = d.AddDate(0, 0, 1) {
		days = append(days, d)
	}
	for _, around := range []time.Time{
		time.Date(1970, 1, 1, 0, 0, 0, 0, time.UTC), time.Date(2100, 3, 1, 0, 0, 0, 0, time.UTC),
		time.Date(2000, 3, 1, 0, 0, 0, 0, time.UTC), time.Date(2200, 3, 1, 0, 0, 0, 0, time.UTC),
	} {
		for k := -40; k < 30; k++ {
			if d := around.AddDate(0, 0, k); d.Year() >= 1970 {
				days = append(days, d)
			}
		}
	}
	for i, d := range days {
		at := d.Add(time.Duration(rng.Int64N(int64(24 * time.Hour))))
		if i%7 == 0 {
			at = d // midnight itself
		}
		m.SetTime(at)
		q := bucketgate.Request{Identity: "cal-" + strconv.Itoa(i), Rules: calendar, Cost: 1}
		got, err := l.Decide(context.Background(), q)
		if err != nil {
			t.Fatalf("%v: %v", at, err)
		}
		model := bucket.NewModel()
		if want := model.Decide(at, q); !reflect.DeepEqual(got, want) {
			t.Fatalf("%v:\nscript %+v\nmodel  %+v", at, got, want)
		}
		for _, r := range calendar {
			start, end := r.Window(at)
			if got := m.HGet(bucket.Key(q.Identity), r.Name+lua.EndSuffix); got != strconv.FormatInt(end.Unix(), 10) {
				t.Fatalf("%v, %s: the script's window ends at %s, Go's at %d (%v to %v)", at, r.Name, got, end.Unix(), start, end)
			}
			if !start.After(at) && end.After(at) && start.Weekday() != time.Monday && r.Period == bucketgate.PeriodWeek {
				t.Fatalf("%v: week from %v", at, start)
			}
		}
	}
}

// TestWindow holds Rule.Window to the calendar on the days that test it most.
func TestWindow(t *testing.T) {
	day := func(y int, m time.Month, d int) time.Time { return time.Date(y, m, d, 0, 0, 0, 0, time.UTC) }
	tests := []struct {
		name       string
		rule       bucketgate.Rule
		at         time.Time
		start, end time.Time
	}{
		{"a day", calendar[0], day(2026, 11, 25).Add(13 * time.Hour), day(2026, 11, 25), day(2026, 11, 26)},
		{"midnight starts a day", calendar[0], day(2026, 11, 25), day(2026, 11, 25), day(2026, 11, 26)},
		{"a week from Monday", calendar[1], day(2026, 11, 29).Add(23*time.Hour + 59*time.Minute), day(2026, 11, 23), day(2026, 11, 30)},
		{"Monday starts a week", calendar[1], day(2026, 11, 30), day(2026, 11, 30), day(2026, 12, 7)},
		{"a week across the year", calendar[1], day(2027, 1, 1), day(2026, 12, 28), day(2027, 1, 4)},
		{"a month", calendar[2], day(2026, 2, 14), day(2026, 2, 1), day(2026, 3, 1)},
		{"the last of a month", calendar[2], day(2026, 1, 31).Add(time.Hour), day(2026, 1, 1), day(2026, 2, 1)},
		{"a leap February", calendar[2], day(2028, 2, 29), day(2028, 2, 1), day(2028, 3, 1)},
		{"before the anchor: the month before", calendar[3], day(2026, 3, 14), day(2026, 2, 15), day(2026, 3, 15)},
		{"on the anchor", calendar[3], day(2026, 3, 15), day(2026, 3, 15), day(2026, 4, 15)},
		{"anchor 28 across a common February", calendar[4], day(2027, 3, 1), day(2027, 2, 28), day(2027, 3, 28)},
		{"anchor 28 in a leap February", calendar[4], day(2028, 2, 29), day(2028, 2, 28), day(2028, 3, 28)},
		{"anchor 15 across the year", calendar[3], day(2027, 1, 3), day(2026, 12, 15), day(2027, 1, 15)},
		{"a bucket has no window", free[0], day(2026, 1, 1), time.Time{}, time.Time{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			start, end := tt.rule.Window(tt.at)
			if !start.Equal(tt.start) || !end.Equal(tt.end) {
				t.Fatalf("Window(%v) = %v to %v, want %v to %v", tt.at, start, end, tt.start, tt.end)
			}
		})
	}
}

// TestCalendarDifferential holds the script to the model while Redis's clock (miniredis,
// which answers TIME from SetTime and runs the same bucket.lua) moves across the month
// ends of a common and a leap February, a year end and week ends: random checks, peeks,
// refunds and resets of buckets and quotas of every period (shadow ones too; a quota now
// and then under another period, as a changed plan gives it), with usage
// kept 3 days (so that the days past keeping are pruned within the run) from two of the
// starts and none from the others, and time steps from milliseconds to days. Every decision, every stored field and every key's expiry
// (and so its disappearance) are the model's.
func TestCalendarDifferential(t *testing.T) {
	starts := []time.Time{
		time.Date(2027, 2, 26, 20, 0, 0, 0, time.UTC),   // a common February's end, then March
		time.Date(2028, 2, 27, 22, 0, 0, 0, time.UTC),   // a leap February
		time.Date(2026, 12, 27, 23, 30, 0, 0, time.UTC), // a Sunday night, then the year's end
		time.Date(2026, 11, 14, 23, 59, 0, 0, time.UTC), // the eve of anchor 15
	}
	for i, start := range starts {
		t.Run(start.Format(time.DateOnly), func(t *testing.T) {
			m := newMini(t)
			m.now = start
			m.SetTime(start)
			kept := 3 * (1 - i%2)
			l := bucket.New(m.client, bucket.Usage(kept))
			model := bucket.NewModel()
			model.UsageDays = kept
			seed := uint64(time.Now().UnixNano())
			t.Logf("seed %d", seed)
			rng := rand.New(rand.NewPCG(seed, 29))
			pool := append(slices.Clone(calendar),
				bucketgate.Rule{Name: "burst", Capacity: 6, RefillPerSecond: 0.5},
				bucketgate.Rule{Name: "hourly", Capacity: 20, RefillPerSecond: 20.0 / 3600},
				bucketgate.Rule{Name: "trial", Limit: 4, Period: bucketgate.PeriodDay, Shadow: true},
				bucketgate.Rule{Name: "newburst", Capacity: 3, RefillPerSecond: 0.2, Shadow: true},
			)
			ids := []string{"cal-a", "cal{b}", "cal%c"}
			counts := map[string]int{}
			for range 2500 {
				id := ids[rng.IntN(len(ids))]
				switch step := rng.IntN(100); {
				case step < 60:
					m.advance(time.Duration(rng.Int64N(int64(3 * time.Second))))
				case step < 80:
					m.advance(time.Duration(rng.Int64N(int64(3 * time.Hour))))
				case step < 84:
					m.advance(time.Duration(rng.Int64N(int64(2 * 24 * time.Hour))))
				}
				// Redis expires a key once its time is past the expiry's millisecond,
				// miniredis on the millisecond: step over it.
				if exp := mustInt(t, m.client.Do(context.Background(), m.client.B().Pexpiretime().Key(bucket.Key(id)).Build())); exp == m.now.UnixMilli() {
					m.advance(time.Millisecond)
				}
				q := randomRequest(rng, id, pool)
				for i, r := range q.Rules {
					if r.IsQuota() && rng.IntN(20) == 0 { // as a plan that changed its period has it
						q.Rules[i].Period, q.Rules[i].Anchor = bucketgate.PeriodDay+bucketgate.Period(rng.IntN(3)), 0
						counts["period changed"]++
					}
				}
				got := decide(t, l, q)
				want := model.Decide(m.now, q)
				if !reflect.DeepEqual(got, want) {
					t.Fatalf("%v, %+v:\nscript %+v\nmodel  %+v", m.now, q, got, want)
				}
				compareStored(t, m.client, model, id, m.now, true)
				if counts["ok"]%40 == 0 {
					compareUsage(t, l, model, id, m.now.AddDate(0, 0, -kept-2), m.now, m.now)
				}
				if len(model.State(id, m.now).Archive) > 1 {
					counts["archive of days"]++
				}
				counts[string(got.Reason)]++
				for _, r := range q.Rules {
					if r.Name == got.Rule && r.IsQuota() {
						counts["quota binds "+string(got.Reason)]++
					}
				}
				if q.Op != bucketgate.OpCheck {
					counts[q.Op.String()]++
				}
			}
			t.Logf("ends %v; %v", m.now, counts)
			if counts["quota binds limited"] < 50 || counts["quota binds ok"] < 50 || counts["refund"] < 50 || counts["reset"] < 20 ||
				kept > 0 && counts["archive of days"] < 100 || counts["period changed"] < 20 {
				t.Errorf("workload too one-sided to mean much: %v", counts)
			}
			if m.now.Sub(start) < 14*24*time.Hour {
				t.Errorf("the clock moved %v: too little to cross the windows", m.now.Sub(start))
			}
			for _, id := range ids {
				compareStored(t, m.client, model, id, m.now, true)
			}
		})
	}
}

// Usage refuses a range it cannot read, and stored usage the script did not write.
func TestUsageReadRefuses(t *testing.T) {
	m := newMini(t)
	l := bucket.New(m.client, bucket.Usage(35))
	ctx := context.Background()
	day := epoch.Unix() / 86400
	for _, tc := range []struct {
		name        string
		id          string
		first, last time.Time
		want        error
	}{
		{"reversed", "a", epoch, epoch.AddDate(0, 0, -1), bucketgate.ErrInvalid},
		{"longer than kept at most", "a", epoch.AddDate(0, 0, -bucket.MaxUsageDays), epoch, bucketgate.ErrInvalid},
		{"no identity", "", epoch, epoch, bucketgate.ErrInvalid},
	} {
		if _, err := l.Usage(ctx, tc.id, tc.first, tc.last); !errors.Is(err, tc.want) {
			t.Errorf("%s: %v, want %v", tc.name, err, tc.want)
		}
	}
	if days, err := l.Usage(ctx, "a", epoch.AddDate(0, 0, -bucket.MaxUsageDays+1), epoch); err != nil || len(days) != bucket.MaxUsageDays {
		t.Errorf("the longest range: %d days, %v", len(days), err)
	}
	for _, tc := range []struct{ name, key, field, value string }{
		{"a count that is not a number", bucket.Key("b"), lua.UsageField(day, lua.UsageAllowed), "x"},
		{"a negative count", bucket.Key("b"), lua.UsageField(day, lua.UsageLimited), "-1"},
		{"an archived day of two counts", bucket.UsageKey("b"), strconv.FormatInt(day-1, 10), "1 2"},
		{"a negative count of checks allowed", bucket.Key("b"), lua.UsageField(day, lua.UsageAllowed), "-1"},
		{"a cost above one each of -2^53", bucket.Key("b"), lua.UsageField(day, lua.UsageExtra), "-9007199254740992"},
		{"a cost above one each not whole", bucket.Key("b"), lua.UsageField(day, lua.UsageExtra), "-1.5"},
		{"an archived day of negative checks", bucket.UsageKey("b"), strconv.FormatInt(day-1, 10), "-1 4 0"},
		{"an archived day of negative limited", bucket.UsageKey("b"), strconv.FormatInt(day-1, 10), "1 4 -1"},
		{"an archived day of cost -2^53", bucket.UsageKey("b"), strconv.FormatInt(day-1, 10), "1 -9007199254740992 0"},
		{"an archived day padded", bucket.UsageKey("b"), strconv.FormatInt(day-1, 10), "05 5 0"},
		{"an archived day of a padded negative cost", bucket.UsageKey("b"), strconv.FormatInt(day-1, 10), "1 -05 0"},
	} {
		m.FlushAll()
		m.HSet(tc.key, tc.field, tc.value)
		if _, err := l.Usage(ctx, "b", epoch.AddDate(0, 0, -2), epoch); !errors.Is(err, bucket.ErrBadState) {
			t.Errorf("%s: %v, want ErrBadState", tc.name, err)
		}
	}
	// A settle corrects the cost of the day it is made on: below the checks, or below
	// zero when its reserve was counted on an earlier day. Read as stored.
	m.FlushAll()
	m.HSet(bucket.Key("b"), lua.UsageField(day, lua.UsageAllowed), "0", lua.UsageField(day, lua.UsageExtra), "-3650")
	m.HSet(bucket.UsageKey("b"), strconv.FormatInt(day-1, 10), "5 4 0")
	days, err := l.Usage(ctx, "b", epoch.AddDate(0, 0, -1), epoch)
	today := bucketgate.UTCDay(epoch)
	want := []bucketgate.DayUsage{{Day: today.AddDate(0, 0, -1), Allowed: 5, Cost: 4}, {Day: today, Cost: -3650}}
	if err != nil || !reflect.DeepEqual(days, want) {
		t.Errorf("costs corrected by settles: %+v, %v; want %+v", days, err, want)
	}
	m.FlushAll()
	if err := m.Set(bucket.UsageKey("b"), "not a hash"); err != nil {
		t.Fatal(err)
	}
	if _, err := l.Usage(ctx, "b", epoch, epoch); !errors.Is(err, bucket.ErrBadState) {
		t.Errorf("an archive of another type: %v, want ErrBadState", err)
	}
}

// TestQuotaChangesPeriod: a quota whose rule changes period under the same name (a plan
// or a registry override from monthly to daily) keeps its count only until the window
// of its new period ends, as a plan change keeps a count; a window stored under a clock
// ahead still keeps its count to its end. The script and the model agree on each.
func TestQuotaChangesPeriod(t *testing.T) {
	at := func(d string, h, min int) time.Time {
		day, err := time.Parse(time.DateOnly, d)
		if err != nil {
			t.Fatal(err)
		}
		return day.Add(time.Duration(h)*time.Hour + time.Duration(min)*time.Minute)
	}
	quota := func(p bucketgate.Period) []bucketgate.Rule {
		return []bucketgate.Rule{{Name: "calls", Limit: 5, Period: p}}
	}
	for _, tc := range []struct {
		name     string
		spent    time.Time         // 5 spent then, under from
		from, to []bucketgate.Rule // the rule before and after the change
		checked  time.Time         // a check then, under to: denied
		until    time.Time         // until then
	}{
		{"month to day", at("2026-11-20", 10, 0), quota(bucketgate.PeriodMonth), quota(bucketgate.PeriodDay), at("2026-11-20", 11, 0), at("2026-11-21", 0, 0)},
		{"month to day, the day before the month's last", at("2026-11-29", 10, 0), quota(bucketgate.PeriodMonth), quota(bucketgate.PeriodDay), at("2026-11-29", 11, 0), at("2026-11-30", 0, 0)},
		{"month to day on the month's last day", at("2026-11-30", 10, 0), quota(bucketgate.PeriodMonth), quota(bucketgate.PeriodDay), at("2026-11-30", 11, 0), at("2026-12-01", 0, 0)},
		{"month to week", at("2026-11-05", 10, 0), quota(bucketgate.PeriodMonth), quota(bucketgate.PeriodWeek), at("2026-11-05", 11, 0), at("2026-11-09", 0, 0)},
		{"month to week, the month ending a day after the week", at("2026-11-26", 10, 0), quota(bucketgate.PeriodMonth), quota(bucketgate.PeriodWeek), at("2026-11-26", 11, 0), at("2026-11-30", 0, 0)},
		{"month to week, the month ending before the week: to the month's end", at("2026-12-30", 10, 0), quota(bucketgate.PeriodMonth), quota(bucketgate.PeriodWeek), at("2026-12-30", 11, 0), at("2027-01-01", 0, 0)},
		{"month of anchor 14 to week, ending on a Monday", at("2026-11-20", 10, 0), []bucketgate.Rule{{Name: "calls", Limit: 5, Period: bucketgate.PeriodMonth, Anchor: 14}}, quota(bucketgate.PeriodWeek), at("2026-11-20", 11, 0), at("2026-11-23", 0, 0)},
		// The first call under the new period in the last hour of a day whose next day
		// ends the stored window: the month's count stands to this day's end, not the next.
		{"month to day, the last hour of the day before the month's last", at("2026-11-29", 10, 0), quota(bucketgate.PeriodMonth), quota(bucketgate.PeriodDay), at("2026-11-29", 23, 30), at("2026-11-30", 0, 0)},
		{"week to day, the last hour of Saturday", at("2026-11-28", 10, 0), quota(bucketgate.PeriodWeek), quota(bucketgate.PeriodDay), at("2026-11-28", 23, 30), at("2026-11-29", 0, 0)},
		{"week to day", at("2026-11-23", 10, 0), quota(bucketgate.PeriodWeek), quota(bucketgate.PeriodDay), at("2026-11-23", 11, 0), at("2026-11-24", 0, 0)},
		{"day to week: the day's count to the day's end", at("2026-11-25", 10, 0), quota(bucketgate.PeriodDay), quota(bucketgate.PeriodWeek), at("2026-11-25", 11, 0), at("2026-11-26", 0, 0)},
		{"day to month: the day's count to the day's end", at("2026-11-25", 10, 0), quota(bucketgate.PeriodDay), quota(bucketgate.PeriodMonth), at("2026-11-25", 11, 0), at("2026-11-26", 0, 0)},
		{"week to month: the week's count to the week's end", at("2026-11-24", 10, 0), quota(bucketgate.PeriodWeek), quota(bucketgate.PeriodMonth), at("2026-11-24", 11, 0), at("2026-11-30", 0, 0)},
		// A week's end on a Monday is a month's of the anchor of that day: the count
		// stands to it, as a new anchor applies from the end of the window in progress.
		{"week to month, the week ending after the month: to the week's end", at("2026-11-30", 10, 0), quota(bucketgate.PeriodWeek), quota(bucketgate.PeriodMonth), at("2026-11-30", 11, 0), at("2026-12-07", 0, 0)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := newMini(t)
			l := bucket.New(m.client)
			model := bucket.NewModel()
			m.SetTime(tc.spent)
			q := bucketgate.Request{Identity: "changed", Rules: tc.from, Cost: 5}
			if got, want := decide(t, l, q), model.Decide(tc.spent, q); !got.Allowed || !reflect.DeepEqual(got, want) {
				t.Fatalf("spending the quota:\nscript %+v\nmodel  %+v", got, want)
			}
			m.SetTime(tc.checked)
			q = bucketgate.Request{Identity: "changed", Rules: tc.to, Cost: 1}
			got, want := decide(t, l, q), model.Decide(tc.checked, q)
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("after the change:\nscript %+v\nmodel  %+v", got, want)
			}
			if wait := tc.until.Sub(tc.checked); got.Allowed || got.RetryAfter != wait {
				t.Fatalf("after the change: allowed %v, retry after %v; want denied until %v (%v)", got.Allowed, got.RetryAfter, tc.until, wait)
			}
			compareStored(t, m.client, model, "changed", tc.checked, false)
			m.SetTime(tc.until)
			if got, want := decide(t, l, q), model.Decide(tc.until, q); !got.Allowed || !reflect.DeepEqual(got, want) {
				t.Fatalf("when the window ends:\nscript %+v\nmodel  %+v", got, want)
			}
			compareStored(t, m.client, model, "changed", tc.until, false)
		})
	}
	// A daily window stored under a clock ahead that had passed midnight ends a day
	// later than the calendar's: its count stands to its end.
	m := newMini(t)
	l := bucket.New(m.client)
	now := at("2026-11-25", 23, 59).Add(59*time.Second + 900*time.Millisecond)
	m.SetTime(now)
	ahead := at("2026-11-27", 0, 0).Unix()
	m.HSet(bucket.Key("ahead"), "calls"+lua.UsedSuffix, "5", "calls"+lua.EndSuffix, strconv.FormatInt(ahead, 10))
	if d := decide(t, l, bucketgate.Request{Identity: "ahead", Rules: quota(bucketgate.PeriodDay), Cost: 1}); d.Allowed || d.RetryAfter != time.Unix(ahead, 0).Sub(now) {
		t.Fatalf("a window stored under a clock ahead: %+v, want denied until %v", d, time.Unix(ahead, 0).UTC())
	}
	// On redis-server, by its clock: a daily quota finding a month's window ten days
	// away denies until the day's end, and stores that end.
	rl, c := real(t)
	end := bucketgate.UTCDay(redisTime(t, c)).AddDate(0, 0, 1)
	do(t, c, c.B().Hset().Key(bucket.Key("real")).FieldValue().FieldValue("calls"+lua.UsedSuffix, "5").
		FieldValue("calls"+lua.EndSuffix, strconv.FormatInt(end.AddDate(0, 0, 10).Unix(), 10)).Build())
	d := decide(t, rl, bucketgate.Request{Identity: "real", Rules: quota(bucketgate.PeriodDay), Cost: 1})
	if d.Allowed || d.RetryAfter > 24*time.Hour {
		t.Fatalf("redis-server: %+v, want denied until %v", d, end)
	}
	if got, err := do(t, c, c.B().Hget().Key(bucket.Key("real")).Field("calls"+lua.EndSuffix).Build()).ToString(); err != nil || got != "+"+strconv.FormatInt(end.Unix(), 10) {
		t.Fatalf("redis-server: the window stored ends at %q (%v), want +%d (marked)", got, err, end.Unix())
	}
}
