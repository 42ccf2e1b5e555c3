package bucket_test

import (
	"reflect"
	"strconv"
	"testing"
	"time"

	"github.com/bucketgate/bucketgate"
	"github.com/bucketgate/bucketgate/internal/bucket"
)

// pro is the built-in pro plan's burst: the same bucket as free's, a larger capacity
// and a faster refill.
var pro = []bucketgate.Rule{{Name: "burst", Capacity: 100, RefillPerSecond: 50}}

// TestRefundNeverLowersABucket: a refund under a plan of a smaller capacity (or a slower
// rate) than the one that spent the bucket leaves it where it is, or raises it; never
// does it cap the bucket down to its own capacity, or lose the refill the faster plan
// gives. The script and the model agree at every step.
func TestRefundNeverLowersABucket(t *testing.T) {
	tests := []struct {
		name       string
		spend      []bucketgate.Rule // the plan of the check
		cost       int64
		wait       time.Duration     // between the check and the refund
		refund     []bucketgate.Rule // the plan the refund names
		give       int64
		wantTokens float64 // the stored count after the refund
		wantPeek   int64   // remaining tokens of a peek under spend, wait after the refund
	}{
		{"a smaller capacity than the level leaves it", pro, 60, 0, free, 1, 40, 40},
		{"a slower rate keeps the faster refill", pro, 95, time.Second, free, 1, 6, 100},
		{"a slower rate, the refill short of capacity", pro, 99, 100 * time.Millisecond, free, 3, 4, 4 + 10},
		{"the same plan gives back", free, 10, 0, free, 3, 3, 3},
		{"the same plan, never above capacity", free, 2, 0, free, 5, 10, 10},
		{"a larger capacity raises it", free, 10, 0, pro, 20, 20, 10},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m := newMini(t)
			l := bucket.New(m.client)
			model := bucket.NewModel()
			step := func(q bucketgate.Request) bucketgate.Decision {
				t.Helper()
				got := decide(t, l, q)
				want := model.Decide(m.now, q)
				if !reflect.DeepEqual(got, want) {
					t.Fatalf("%+v:\nscript %+v\nmodel  %+v", q, got, want)
				}
				return got
			}
			step(bucketgate.Request{Identity: "tenant:x", Rules: tc.spend, Cost: tc.cost})
			before, _ := model.Bucket("tenant:x", "burst")
			m.advance(tc.wait)
			step(bucketgate.Request{Identity: "tenant:x", Rules: tc.refund, Cost: tc.give, Op: bucketgate.OpRefund})
			after, _ := model.Bucket("tenant:x", "burst")
			if after.Tokens != tc.wantTokens || after.Stamp != before.Stamp {
				t.Fatalf("after the refund: %v tokens at %d, want %v at the check's stamp %d", after.Tokens, after.Stamp, tc.wantTokens, before.Stamp)
			}
			if got := m.HGet(bucket.Key("tenant:x"), "burst:tokens"); got != strconv.FormatFloat(tc.wantTokens, 'f', -1, 64) {
				t.Fatalf("Redis holds %s tokens, want %v", got, tc.wantTokens)
			}
			m.advance(tc.wait)
			if d := step(bucketgate.Request{Identity: "tenant:x", Rules: tc.spend, Cost: 0}); d.Remaining != tc.wantPeek {
				t.Fatalf("peek under the spending plan: %d remaining, want %d", d.Remaining, tc.wantPeek)
			}
		})
	}
}
