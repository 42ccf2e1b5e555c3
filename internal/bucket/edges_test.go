package bucket_test

import (
	"context"
	"reflect"
	"testing"
	"time"

	"github.com/bucketgate/bucketgate"
	"github.com/bucketgate/bucketgate/internal/bucket"
)

// TestDebtAtTheLargestBounds: a settle far above its estimate takes a rule of the
// largest capacity or limit into its deepest debt (a bucket to minus its capacity, a
// quota over its limit by its limit: 2e9), and every answer decodes: the settle's
// crossings, the first denial's, a peek.
func TestDebtAtTheLargestBounds(t *testing.T) {
	l, _ := real(t)
	for _, tc := range []struct {
		name string
		rule bucketgate.Rule
	}{
		{"a quota of the largest limit", bucketgate.Rule{Name: "monthly", Limit: bucketgate.MaxCapacity, Period: bucketgate.PeriodMonth}},
		{"a bucket of the largest capacity, slowest refill", bucketgate.Rule{Name: "burst", Capacity: bucketgate.MaxCapacity, RefillPerSecond: bucketgate.MaxCapacity / bucketgate.MaxFillTime.Seconds()}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			q := func(op bucketgate.Op, cost int64) bucketgate.Request {
				return bucketgate.Request{Identity: tc.name, Rules: []bucketgate.Rule{tc.rule}, Op: op, Cost: cost}
			}
			decide(t, l, q(bucketgate.OpCheck, 6e8)) // short of 80%
			r := decide(t, l, q(bucketgate.OpReserve, 1))
			settle := q(bucketgate.OpSettle, bucketgate.MaxSettle)
			settle.ID = r.Reservation
			if s := decide(t, l, settle); !s.Allowed || s.Remaining != 0 || s.Settled != bucketgate.MaxSettle {
				t.Fatalf("settle = %+v", s)
			}
			if d := decide(t, l, q(bucketgate.OpCheck, 1)); d.Allowed || d.RetryAfter <= 0 {
				t.Fatalf("a check in debt = %+v", d)
			}
			if p := decide(t, l, q(bucketgate.OpCheck, 0)); p.Rules[0].Remaining != 0 || p.Rules[0].ResetAfter <= 0 {
				t.Fatalf("peek = %+v", p)
			}
		})
	}
}

// TestMonthStartedUnderAClockAhead: a month of 31 days begun by a server whose clock was
// ahead (a failover to a replica behind it), then decided on the replica's clock still in
// the month before: the count stands until the stored end, and every answer decodes.
func TestMonthStartedUnderAClockAhead(t *testing.T) {
	start := time.Date(2027, 3, 1, 0, 0, 0, 0, time.UTC) // March: 31 days
	rules := []bucketgate.Rule{{Name: "monthly", Limit: 1, Period: bucketgate.PeriodMonth}}
	for _, tc := range []struct {
		name   string
		behind time.Duration // the replica's clock behind the first server's
		cost   int64
	}{
		{"a peek, 1 ms behind", time.Millisecond, 0},
		{"a first denial, 2 s behind", 2 * time.Second, 1},
		{"a peek, an hour behind", time.Hour, 0},
		{"a first denial, an hour behind", time.Hour, 1},
		{"a peek, two days behind", 48 * time.Hour, 0},
		{"a first denial, two days behind", 48 * time.Hour, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := newMini(t)
			l := bucket.New(m.client)
			model := bucket.NewModel()
			q := bucketgate.Request{Identity: "ahead", Rules: rules, Cost: 1}
			m.SetTime(start)
			if d := decide(t, l, q); !d.Allowed || !reflect.DeepEqual(d, model.Decide(start, q)) {
				t.Fatalf("first check = %+v", d)
			}
			at := start.Add(-tc.behind + time.Microsecond)
			m.SetTime(at)
			q.Cost = tc.cost
			got, err := l.Decide(context.Background(), q)
			if want := model.Decide(at, q); err != nil || !reflect.DeepEqual(got, want) {
				t.Fatalf("at %v: %+v, %v; model %+v", at, got, err, want)
			}
			if got.Allowed != (tc.cost == 0) {
				t.Fatalf("at %v: %+v, want the month's count to stand", at, got)
			}
		})
	}
}
