package bucket_test

import (
	"testing"

	"github.com/bucketgate/bucketgate"
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
