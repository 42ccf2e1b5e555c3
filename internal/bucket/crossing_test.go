package bucket_test

import (
	"context"
	"fmt"
	"reflect"
	"sync"
	"testing"
	"time"

	"github.com/redis/rueidis"

	"github.com/bucketgate/bucketgate"
	"github.com/bucketgate/bucketgate/internal/bucket"
)

// kinds lists d's crossings as "<rule> <kind> <percent>", for comparing.
func kinds(d bucketgate.Decision) []string {
	var out []string
	for _, c := range d.Crossings {
		out = append(out, fmt.Sprintf("%s %s %d", c.Rule, c.Kind, c.Percent))
	}
	return out
}

// wantCrossings runs q and checks that it is allowed as said and crosses exactly want.
func wantCrossings(t *testing.T, l *bucket.Limiter, q bucketgate.Request, allowed bool, want ...string) bucketgate.Decision {
	t.Helper()
	d := decide(t, l, q)
	if got := kinds(d); d.Allowed != allowed || fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("%+v: allowed %v crossing %q, want %v %q", q, d.Allowed, got, allowed, want)
	}
	return d
}

// A quota reports 80% and 100% once in its window and its first denial once; a refund
// below a threshold reported does not make it report again; a reset does. On a real
// server and on miniredis (gopher-lua reads numbers its own way).
func TestQuotaCrossingsOncePerWindow(t *testing.T) {
	t.Run("real", func(t *testing.T) {
		l, _ := real(t)
		quotaCrossings(t, l)
	})
	t.Run("miniredis", func(t *testing.T) { quotaCrossings(t, bucket.New(newMini(t).client)) })
}

func quotaCrossings(t *testing.T, l *bucket.Limiter) {
	quota := bucketgate.Rule{Name: "monthly", Limit: 10, Period: bucketgate.PeriodMonth}
	q := bucketgate.Request{Identity: "key:crossings-quota", Rules: []bucketgate.Rule{quota}, Cost: 1}
	for range 7 {
		wantCrossings(t, l, q, true)
	}
	d := wantCrossings(t, l, q, true, "monthly Quota Threshold Reached 80")
	start, end := quota.Window(d.At)
	if c := d.Crossings[0]; c.Usage != 8 || c.Limit != 10 || !c.WindowStart.Equal(start) || !c.WindowEnd.Equal(end) {
		t.Fatalf("crossing %+v: want usage 8 of 10 in [%v, %v)", c, start, end)
	}
	wantCrossings(t, l, q, true)
	wantCrossings(t, l, q, true, "monthly Quota Threshold Reached 100")
	wantCrossings(t, l, q, false, "monthly Rate Limited 0")
	wantCrossings(t, l, q, false)
	refund := q
	refund.Op, refund.Cost = bucketgate.OpRefund, 5
	wantCrossings(t, l, refund, true)
	for range 5 {
		wantCrossings(t, l, q, true) // 80% and 100% again, reported before
	}
	wantCrossings(t, l, q, false) // denied again, reported before
	reset := q
	reset.Op, reset.Cost = bucketgate.OpReset, 0
	wantCrossings(t, l, reset, true)
	big := q
	big.Cost = 10 // both thresholds in one admission
	wantCrossings(t, l, big, true, "monthly Quota Threshold Reached 80", "monthly Quota Threshold Reached 100")
}

// After a plan edits a quota's period or anchor, the count stored stands until the
// window stored with it ends (the script's rule): a crossing in that window reports it,
// from its start to its end, as a consumer of the events bills it. Its start was the
// edited rule's window holding the end's last second (the 15th for an anchor 1 made 15),
// a window no rule ever counted in. On a real server.
func TestCrossingInAWindowStoredBeforeAnEdit(t *testing.T) {
	monthly := func(anchor uint8) bucketgate.Rule {
		return bucketgate.Rule{Name: "q", Limit: 10, Period: bucketgate.PeriodMonth, Anchor: anchor}
	}
	for _, tc := range []struct {
		name     string
		old, now bucketgate.Rule
	}{
		{"anchor 1 made 15", monthly(1), monthly(15)},
		{"anchor 15 made 1", monthly(15), monthly(1)},
		{"anchor 28 made 2", monthly(28), monthly(2)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l, _ := real(t)
			q := bucketgate.Request{Identity: "key:edited", Rules: []bucketgate.Rule{tc.old}, Cost: 1}
			first := decide(t, l, q)
			start, end := tc.old.Window(first.At)
			q.Rules, q.Cost = []bucketgate.Rule{tc.now}, 7
			d := wantCrossings(t, l, q, true, "q Quota Threshold Reached 80")
			if !d.At.Before(end) {
				t.Skipf("the stored window ended between the two decisions (%v)", end)
			}
			if c := d.Crossings[0]; c.Usage != 8 || !c.WindowStart.Equal(start) || !c.WindowEnd.Equal(end) {
				t.Fatalf("crossing %+v: want usage 8 in the window stored, [%v, %v)", c, start, end)
			}
		})
	}
}

// A bucket reports its first denial once until it is full again, rule by rule.
func TestBucketCrossingsUntilFull(t *testing.T) {
	l, c := real(t)
	burst := bucketgate.Rule{Name: "burst", Capacity: 2, RefillPerSecond: 0.01}
	hourly := bucketgate.Rule{Name: "hourly", Capacity: 3, RefillPerSecond: 0.001}
	const id = "key:crossings-bucket"
	q := bucketgate.Request{Identity: id, Rules: []bucketgate.Rule{burst}, Cost: 1}
	wantCrossings(t, l, q, true)
	wantCrossings(t, l, q, true)
	d := wantCrossings(t, l, q, false, "burst Rate Limited 0")
	if c := d.Crossings[0]; c.Usage != 2 || c.Limit != 2 || !c.WindowStart.Equal(d.At) || c.WindowEnd.Sub(d.At) > 200*time.Second || c.WindowEnd.Sub(d.At) < 199*time.Second {
		t.Fatalf("crossing %+v at %v: want usage 2 of 2 until full in 200 s", c, d.At)
	}
	wantCrossings(t, l, q, false)
	shiftStamps(t, c, nil, id, q.Rules, 100*time.Second) // one token back: still not full
	wantCrossings(t, l, q, true)
	wantCrossings(t, l, q, false)
	shiftStamps(t, c, nil, id, q.Rules, 300*time.Second) // full: the next admission ends the window
	wantCrossings(t, l, q, true)
	wantCrossings(t, l, q, true)
	wantCrossings(t, l, q, false, "burst Rate Limited 0")
	// Two rules: each reports its own first denial.
	both := bucketgate.Request{Identity: "key:crossings-two", Rules: []bucketgate.Rule{burst, hourly}, Cost: 2}
	wantCrossings(t, l, both, true)
	wantCrossings(t, l, both, false, "burst Rate Limited 0", "hourly Rate Limited 0")
	wantCrossings(t, l, both, false)
}

// Two limiters (two functions' clients) on one real server, checking one identity at
// once: every crossing is reported exactly once.
func TestCrossingsOnceUnderConcurrency(t *testing.T) {
	l1, c := real(t)
	l2 := bucket.New(c)
	quota := bucketgate.Rule{Name: "daily", Limit: 50, Period: bucketgate.PeriodDay}
	burst := bucketgate.Rule{Name: "burst", Capacity: 40, RefillPerSecond: 0.001}
	q := bucketgate.Request{Identity: "key:crossings-concurrent", Rules: []bucketgate.Rule{burst, quota}, Cost: 1}
	var mu sync.Mutex
	got := map[string]int{}
	var wg sync.WaitGroup
	for w := range 8 {
		l := l1
		if w%2 == 1 {
			l = l2
		}
		wg.Go(func() {
			for range 15 {
				d := decide(t, l, q)
				mu.Lock()
				for _, k := range kinds(d) {
					got[k]++
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	want := map[string]int{"burst Rate Limited 0": 1, "daily Quota Threshold Reached 80": 1}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("crossings %v, want %v", got, want)
	}
}

// TestQuotaCrossingsAfterLimitChange: the thresholds a quota reported in its window are
// of the limit they were reported against: after a limit raised (or lowered) in the
// window, reaching 80% and 100% of the new limit reports them again, once; a refund
// under the same limit still reports nothing again. The model agrees, event by event
// and field by field. On a real server and on miniredis.
func TestQuotaCrossingsAfterLimitChange(t *testing.T) {
	monthly := func(limit int64) []bucketgate.Rule {
		return []bucketgate.Rule{{Name: "monthly", Limit: limit, Period: bucketgate.PeriodMonth}}
	}
	type step struct {
		rules []bucketgate.Rule
		op    bucketgate.Op
		cost  int64
		want  []string
	}
	r80, r100 := "monthly Quota Threshold Reached 80", "monthly Quota Threshold Reached 100"
	for _, tc := range []struct {
		name  string
		steps []step
	}{
		{"raised after 100%", []step{
			{monthly(10), bucketgate.OpCheck, 10, []string{r80, r100}},
			{monthly(100), bucketgate.OpCheck, 69, nil},
			{monthly(100), bucketgate.OpCheck, 1, []string{r80}},
			{monthly(100), bucketgate.OpCheck, 19, nil},
			{monthly(100), bucketgate.OpCheck, 1, []string{r100}},
			{monthly(100), bucketgate.OpRefund, 30, nil},
			{monthly(100), bucketgate.OpCheck, 30, nil},
		}},
		{"raised after 80%, both in one step", []step{
			{monthly(10), bucketgate.OpCheck, 8, []string{r80}},
			{monthly(20), bucketgate.OpCheck, 12, []string{r80, r100}},
		}},
		{"lowered after 80%", []step{
			{monthly(100), bucketgate.OpCheck, 85, []string{r80}},
			{monthly(90), bucketgate.OpCheck, 5, []string{r80, r100}}, // 80% of 90 was never reported
			{monthly(200), bucketgate.OpCheck, 70, []string{r80}},
		}},
		{"lowered, then raised back", []step{
			{monthly(100), bucketgate.OpCheck, 85, []string{r80}},
			{monthly(90), bucketgate.OpCheck, 5, []string{r80, r100}},
			// The mark remembers one limit, 90's: 80% of 100 is reported again (documented).
			{monthly(100), bucketgate.OpCheck, 10, []string{r80, r100}},
		}},
		{"the same limit, after a refund", []step{
			{monthly(10), bucketgate.OpCheck, 9, []string{r80}},
			{monthly(10), bucketgate.OpRefund, 5, nil},
			{monthly(10), bucketgate.OpCheck, 6, []string{r100}},
		}},
	} {
		run := func(t *testing.T, l *bucket.Limiter, c rueidis.Client) {
			model := bucket.NewModel()
			for i, s := range tc.steps {
				q := bucketgate.Request{Identity: "changed limit", Rules: s.rules, Op: s.op, Cost: s.cost}
				d := wantCrossings(t, l, q, true, s.want...)
				if want := model.Decide(d.At, q); !reflect.DeepEqual(d, want) {
					t.Fatalf("step %d:\nscript %+v\nmodel  %+v", i+1, d, want)
				}
				compareStored(t, c, model, "changed limit", d.At, false)
			}
		}
		onRealAndMini(t, tc.name, run)
	}
}

// TestQuotaCrossingsAfterALimitCutBelowTheCount: thresholds are reported by admissions
// only (docs/operations.md): a limit cut below the count already (a plan change) denies
// the rest of the window, so neither 80% nor 100% of it is reported there; its first
// denial is a Rate Limited, once. The model agrees, decision by decision. On a real
// server and on miniredis.
func TestQuotaCrossingsAfterALimitCutBelowTheCount(t *testing.T) {
	monthly := func(limit int64) []bucketgate.Rule {
		return []bucketgate.Rule{{Name: "monthly", Limit: limit, Period: bucketgate.PeriodMonth}}
	}
	run := func(t *testing.T, l *bucket.Limiter, c rueidis.Client) {
		model := bucket.NewModel()
		for _, s := range []struct {
			name    string
			rules   []bucketgate.Rule
			cost    int64
			allowed bool
			want    []string
		}{
			{"80% of the old limit", monthly(100), 85, true, []string{"monthly Quota Threshold Reached 80"}},
			{"the first denial under the cut", monthly(50), 1, false, []string{"monthly Rate Limited 0"}},
			{"a second denial", monthly(50), 1, false, nil},
			{"a peek", monthly(50), 0, true, nil},
		} {
			q := bucketgate.Request{Identity: "cut limit", Rules: s.rules, Cost: s.cost}
			d := wantCrossings(t, l, q, s.allowed, s.want...)
			if want := model.Decide(d.At, q); !reflect.DeepEqual(d, want) {
				t.Fatalf("%s:\nscript %+v\nmodel  %+v", s.name, d, want)
			}
			compareStored(t, c, model, "cut limit", d.At, false)
		}
	}
	onRealAndMini(t, "cut", run)
}

// TestQuotaLimitMarkNotANumber: a quota's "<rule>:limit" mark that is not a number
// (written by hand, or by another version) is stored input: an admission crossing a
// threshold under the window's mark reads it as no limit written (the marks are of this
// limit), as one missing (an earlier release's marks) is, reports what is left to
// report, and writes the limit, never stopping the identity's checks. On a real server
// and on miniredis.
func TestQuotaLimitMarkNotANumber(t *testing.T) {
	quota := bucketgate.Rule{Name: "monthly", Limit: 10, Period: bucketgate.PeriodMonth}
	for _, tc := range []struct {
		name string
		mark string
		none bool // the field removed instead
	}{
		{"a word", "ten", false},
		{"empty", "", false},
		{"a list", "10 20", false},
		{"a number and more", "10x", false},
		{"none, an earlier release's", "", true},
	} {
		run := func(t *testing.T, l *bucket.Limiter, c rueidis.Client) {
			q := bucketgate.Request{Identity: "mark " + tc.name, Rules: []bucketgate.Rule{quota}, Cost: 8}
			wantCrossings(t, l, q, true, "monthly Quota Threshold Reached 80")
			if tc.none {
				do(t, c, c.B().Hdel().Key(bucket.Key(q.Identity)).Field("monthly:limit").Build())
			} else {
				do(t, c, c.B().Hset().Key(bucket.Key(q.Identity)).FieldValue().FieldValue("monthly:limit", tc.mark).Build())
			}
			q.Cost = 2
			wantCrossings(t, l, q, true, "monthly Quota Threshold Reached 100")
			if got, err := c.Do(context.Background(), c.B().Hget().Key(bucket.Key(q.Identity)).Field("monthly:limit").Build()).ToString(); err != nil || got != "10" {
				t.Fatalf("the mark became %q (%v), want 10", got, err)
			}
		}
		onRealAndMini(t, tc.name, run)
	}
}

// onRealAndMini runs run as two subtests named name: on a real server, and on miniredis.
func onRealAndMini(t *testing.T, name string, run func(*testing.T, *bucket.Limiter, rueidis.Client)) {
	t.Run(name+", real", func(t *testing.T) {
		l, c := real(t)
		run(t, l, c)
	})
	t.Run(name+", miniredis", func(t *testing.T) {
		m := newMini(t)
		run(t, bucket.New(m.client), m.client)
	})
}
