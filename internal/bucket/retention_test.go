package bucket_test

import (
	"reflect"
	"strconv"
	"testing"
	"time"

	"github.com/bucketgate/bucketgate"
	"github.com/bucketgate/bucketgate/internal/bucket"
)

// TestUsageRetentionLowered: once USAGE_RETENTION_DAYS is lowered, an identity active
// every day keeps no more days in its archive than the new number allows: the days kept
// under the old one go at its next day's first write, not never (the archive of an
// active identity never expires, and each day's first write removed only the days that
// fell past keeping since its last active day). Redis and the model agree throughout.
func TestUsageRetentionLowered(t *testing.T) {
	m := newMini(t)
	model := bucket.NewModel()
	q := bucketgate.Request{Identity: "daily", Rules: free, Cost: 1}
	for _, kept := range []int{400, 35} {
		l := bucket.New(m.client, bucket.Usage(kept))
		model.UsageDays = kept
		for i := range 61 {
			if i > 0 {
				m.advance(24 * time.Hour)
			}
			if got, want := decide(t, l, q), model.Decide(m.now, q); !reflect.DeepEqual(got, want) {
				t.Fatalf("%v: redis %+v, model %+v", m.now, got, want)
			}
			compareStored(t, m.client, model, q.Identity, m.now, true)
		}
		today := m.now.Unix() / 86400
		days, err := m.HKeys(bucket.UsageKey(q.Identity))
		if err != nil {
			t.Fatal(err)
		}
		if len(days) > kept-1 {
			t.Errorf("%d days kept: the archive holds %d days, want %d at most", kept, len(days), kept-1)
		}
		for _, d := range days {
			if n, err := strconv.ParseInt(d, 10, 64); err != nil || n <= today-int64(kept) {
				t.Errorf("%d days kept: the archive holds day %s, %d days before today", kept, d, today-n)
			}
		}
	}
}

// TestUsageRetentionRaised: once USAGE_RETENTION_DAYS is raised, an identity whose day's
// usage was first written under the old number (so its key expires when that number
// said) still keeps what a later admission of the day counts for longer: a monthly
// quota's count (and a slow bucket's debt) outlives the old expiry, as the model has it,
// instead of going with the key at the old day's end and admitting the month again. On
// miniredis, whose clock the test moves, and on redis-server (or valkey-server).
func TestUsageRetentionRaised(t *testing.T) {
	for _, tc := range []struct {
		name string
		rule bucketgate.Rule
		cost int64
	}{
		{"a monthly quota", bucketgate.Rule{Name: "monthly", Limit: 100, Period: bucketgate.PeriodMonth}, 100},
		{"a bucket that fills in 20 days", bucketgate.Rule{Name: "slow", Capacity: 100, RefillPerSecond: 100 / (20 * 86400.0)}, 100},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := newMini(t)
			model := bucket.NewModel()
			step := func(kept int, q bucketgate.Request) bucketgate.Decision {
				t.Helper()
				model.UsageDays = kept
				got, want := decide(t, bucket.New(m.client, bucket.Usage(kept)), q), model.Decide(m.now, q)
				if !reflect.DeepEqual(got, want) {
					t.Fatalf("%v: redis %+v, model %+v", m.now, got, want)
				}
				compareStored(t, m.client, model, q.Identity, m.now, true)
				return got
			}
			step(1, bucketgate.Request{Identity: "raised", Rules: free, Cost: 1}) // the day's first usage, kept 1 day
			m.advance(time.Hour)
			q := bucketgate.Request{Identity: "raised", Rules: []bucketgate.Rule{tc.rule}, Cost: tc.cost}
			step(35, q)
			m.advance(2 * 24 * time.Hour) // past the day's end, and the key's expiry under 1 day
			q.Cost = 0
			if d := step(35, q); d.Remaining == tc.rule.Max() {
				t.Fatalf("two days later: %+v; %s is full again: what it spent is lost", d, tc.name)
			}
		})
		t.Run(tc.name+", real", func(t *testing.T) {
			_, c := real(t)
			model := bucket.NewModel()
			var got bucketgate.Decision
			for _, step := range []struct {
				kept int
				q    bucketgate.Request
			}{
				{1, bucketgate.Request{Identity: "raised", Rules: free, Cost: 1}},
				{35, bucketgate.Request{Identity: "raised", Rules: []bucketgate.Rule{tc.rule}, Cost: tc.cost}},
			} {
				model.UsageDays = step.kept
				got = decide(t, bucket.New(c, bucket.Usage(step.kept)), step.q)
				if want := model.Decide(got.At, step.q); !reflect.DeepEqual(got, want) {
					t.Fatalf("%+v: redis %+v, model %+v", step.q, got, want)
				}
				compareExpiry(t, c, model, "raised")
			}
			at := mustInt(t, do(t, c, c.B().Pexpiretime().Key(bucket.Key("raised")).Build()))
			if full := got.At.Add(got.ResetAfter).UnixMilli(); at < full {
				t.Fatalf("the key expires at %d, before %s is full again (%d)", at, tc.name, full)
			}
		})
	}
}
