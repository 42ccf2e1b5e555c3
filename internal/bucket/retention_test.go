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
