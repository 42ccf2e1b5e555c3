package bucket_test

import (
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/bucketgate/bucketgate"
	"github.com/bucketgate/bucketgate/internal/bucket"
)

// TestSettleUsage: a settle corrects the usage's cost by its actual cost less its
// estimate, on the day it is made, and counts no check: reserve 4000 and settle at 350
// reports 350; a cancel leaves 0; a settle over the estimate adds the extra; a second
// settle and an expired one correct nothing. A reserve at 23:59 settled at 00:01 leaves
// the first day its estimate and the next a cost below zero, the two adding up to the
// actual cost; the settle, the next day's first usage, moves the first day to the
// archive as a check would. Redis and the model agree on every decision, on the stored
// fields and their expiry, and on Usage.
func TestSettleUsage(t *testing.T) {
	m := newMini(t)
	l := bucket.New(m.client, bucket.Usage(35))
	model := bucket.NewModel()
	model.UsageDays = 35
	rules := []bucketgate.Rule{{Name: "tokens", Capacity: 100000, RefillPerSecond: 1}, {Name: "monthly", Limit: 1000000, Period: bucketgate.PeriodMonth}}
	day1 := bucketgate.UTCDay(epoch)
	at := func(when time.Time) { m.advance(when.Sub(m.now)) } // TIME and expiry, either way
	type ids struct{ redis, model string }
	do := func(id string, op bucketgate.Op, cost int64, r ids) (bucketgate.Decision, ids, error) {
		t.Helper()
		q := bucketgate.Request{Identity: id, Rules: rules, Op: op, Cost: cost}
		mq := q
		q.ID, mq.ID = r.redis, r.model
		got, want, err := decideBoth(t, l, model, q, mq)
		if err != nil {
			return got, ids{}, err
		}
		held := ids{got.Reservation, want.Reservation}
		got.Reservation, want.Reservation = "", ""
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("%v %d: redis %+v, model %+v", op, cost, got, want)
		}
		return got, held, nil
	}
	usage := func(id string, first, last time.Time, want ...bucketgate.DayUsage) {
		t.Helper()
		compareStored(t, m.client, model, id, m.now, true)
		compareUsage(t, l, model, id, first, last, m.now)
		got := usageOf(t, l, id, first, last)
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("%s's usage: %+v, want %+v", id, got, want)
		}
	}

	// The LLM backend's reservation: max_tokens 4000, 350 used.
	at(day1.Add(10 * time.Hour))
	_, r, _ := do("llm", bucketgate.OpReserve, 4000, ids{})
	usage("llm", day1, day1, bucketgate.DayUsage{Day: day1, Allowed: 1, Cost: 4000})
	if s, _, err := do("llm", bucketgate.OpSettle, 350, r); err != nil || s.Settled != 350 {
		t.Fatalf("settle 350: %+v, %v", s, err)
	}
	usage("llm", day1, day1, bucketgate.DayUsage{Day: day1, Allowed: 1, Cost: 350})
	// Settled before: the first outcome, no correction.
	if s, _, err := do("llm", bucketgate.OpSettle, 3999, r); err != nil || !s.Replayed || s.Settled != 350 {
		t.Fatalf("settle again: %+v, %v", s, err)
	}
	// A cancel leaves nothing; a settle over the estimate adds the extra; checks count.
	_, c, _ := do("llm", bucketgate.OpReserve, 500, ids{})
	do("llm", bucketgate.OpCancel, 0, c)
	_, o, _ := do("llm", bucketgate.OpReserve, 10, ids{})
	do("llm", bucketgate.OpSettle, 25, o)
	do("llm", bucketgate.OpCheck, 3, ids{})
	usage("llm", day1, day1, bucketgate.DayUsage{Day: day1, Allowed: 4, Cost: 350 + 25 + 3})
	// An expired reservation stays charged at its estimate: no correction.
	q := bucketgate.Request{Identity: "llm", Rules: rules, Op: bucketgate.OpReserve, Cost: 40, TTL: time.Second}
	e, err := l.Decide(t.Context(), q)
	if err != nil || !e.Allowed {
		t.Fatalf("reserve 40: %+v, %v", e, err)
	}
	model.Hold(e.At, bucketgate.Request{Identity: "llm", Rules: rules, Op: bucketgate.OpReserve, Cost: 40, TTL: time.Second}, bucket.DefaultIdempotency)
	at(m.now.Add(2 * time.Second))
	q.Op, q.Cost, q.ID, q.TTL = bucketgate.OpSettle, 1, e.Reservation, 0
	if _, err := l.Decide(t.Context(), q); err == nil || !strings.Contains(err.Error(), "expired") {
		t.Fatalf("an expired settle: %v", err)
	}
	usage("llm", day1, day1, bucketgate.DayUsage{Day: day1, Allowed: 5, Cost: 350 + 25 + 3 + 40})

	// Across midnight: reserved at 23:59, settled at 00:01 (the next day's first usage,
	// which moves the first day to the archive).
	day2 := day1.AddDate(0, 0, 1)
	at(day2.Add(-time.Minute))
	_, r, _ = do("night", bucketgate.OpReserve, 4000, ids{})
	at(day2.Add(time.Minute))
	do("night", bucketgate.OpSettle, 350, r)
	usage("night", day1, day2, bucketgate.DayUsage{Day: day1, Allowed: 1, Cost: 4000}, bucketgate.DayUsage{Day: day2, Cost: -3650})
	// Over the estimate across midnight: the next day takes the extra.
	at(day2.Add(time.Hour))
	do("night", bucketgate.OpCheck, 2, ids{})
	at(day2.AddDate(0, 0, 1).Add(-time.Minute))
	_, o, _ = do("night", bucketgate.OpReserve, 10, ids{})
	day3 := day2.AddDate(0, 0, 1)
	at(day3.Add(time.Minute))
	do("night", bucketgate.OpSettle, 30, o)
	usage("night", day1, day3, bucketgate.DayUsage{Day: day1, Allowed: 1, Cost: 4000},
		bucketgate.DayUsage{Day: day2, Allowed: 2, Cost: -3650 + 2 + 10}, bucketgate.DayUsage{Day: day3, Cost: 20})

	// A clock behind after a failover: a settle writes day 2 again, in the state hash
	// beside day 3; the next day's first write adds it to day 2 archived before, whose
	// cost is below zero.
	_, r, _ = do("night", bucketgate.OpReserve, 100, ids{})
	at(day3.Add(-time.Hour))
	do("night", bucketgate.OpSettle, 1, r)
	at(day3.AddDate(0, 0, 1).Add(time.Minute))
	do("night", bucketgate.OpCheck, 1, ids{})
	day4 := day3.AddDate(0, 0, 1)
	usage("night", day1, day4, bucketgate.DayUsage{Day: day1, Allowed: 1, Cost: 4000},
		bucketgate.DayUsage{Day: day2, Allowed: 2, Cost: -3650 + 2 + 10 - 99}, bucketgate.DayUsage{Day: day3, Allowed: 1, Cost: 20 + 100},
		bucketgate.DayUsage{Day: day4, Allowed: 1, Cost: 1})
}

// usageOf returns id's usage from first to last, failing the test on an error.
func usageOf(t *testing.T, l *bucket.Limiter, id string, first, last time.Time) []bucketgate.DayUsage {
	t.Helper()
	days, err := l.Usage(t.Context(), id, first, last)
	if err != nil {
		t.Fatalf("Usage(%q): %v", id, err)
	}
	return days
}
