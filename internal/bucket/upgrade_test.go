package bucket_test

import (
	"context"
	_ "embed"
	"errors"
	"math/rand/v2"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/rueidis"

	"github.com/bucketgate/bucketgate"
	"github.com/bucketgate/bucketgate/internal/bucket"
	"github.com/bucketgate/bucketgate/internal/lua"
)

// previousScript is bucket.lua of the previous release (main at c09f703, before quotas
// and usage): during a deploy, old and new functions decide on the same keys.
//
//go:embed testdata/bucket-c09f703.lua
var previousScript string

// oldCall runs the previous release's script for q, a request of buckets only (its Go
// side knew nothing else; a shadow rule's capacity negated), laid out as that release
// laid it out, and returns the decision read from its reply; an error fails t.
func oldCall(t *testing.T, c rueidis.Client, q bucketgate.Request) bucketgate.Decision {
	t.Helper()
	var args []string
	switch {
	case q.Op == bucketgate.OpRefund:
		args = append(args, strconv.FormatInt(-q.Cost, 10))
	case q.Op == bucketgate.OpReset:
		args = append(args, lua.OpReset)
	case q.Cost != 1:
		args = append(args, strconv.FormatInt(q.Cost, 10))
	}
	for _, r := range q.Rules {
		args = append(args, r.Name+lua.TokensSuffix, r.Name+lua.StampSuffix)
	}
	for _, r := range q.Rules {
		capacity := r.Capacity
		if r.Shadow {
			capacity = -capacity
		}
		args = append(args, strconv.FormatInt(capacity, 10), strconv.FormatFloat(r.RefillPerSecond, 'f', -1, 64))
	}
	vals, err := c.Do(context.Background(), c.B().Eval().Script(previousScript).Numkeys(1).Key(bucket.Key(q.Identity)).Arg(args...).Build()).AsIntSlice()
	if err != nil || len(vals) != 4 {
		t.Fatalf("the previous script on %+v: %v %v", q, vals, err)
	}
	flags := vals[0]
	d := bucketgate.Decision{Allowed: flags&1 == 1, Remaining: flags >> 17, At: time.UnixMicro(vals[3])}
	if binding := flags >> 1 & 15; binding > 0 {
		d.Rule = q.Rules[binding-1].Name
	}
	return d
}

// During a deploy, the previous release's script and this one decide on one identity's
// keys, interleaved, on a real server: this release's checks with a bucket, a monthly
// quota and usage; the previous one's checks, refunds and resets of the bucket alone (its
// plan had no quota). Every decision of either is the model's for the bucket (the
// previous refund, which refilled to now, is read back into the model); the quota never
// admits more than its limit and loses no count; the usage of the day loses no check; and
// the previous script never shortens the key's life, nor touches a field it does not
// know. The marks of crossings are read by the previous script as the numbers they
// mark (a marked stamp, a marked window's end), and this release's crossings are the
// model's.
func TestUpgradeFromPreviousRelease(t *testing.T) {
	_, c := real(t)
	ctx := context.Background()
	const limit = 40
	burst := bucketgate.Rule{Name: "burst", Capacity: 8, RefillPerSecond: 2}
	monthly := bucketgate.Rule{Name: "monthly", Limit: limit, Period: bucketgate.PeriodMonth}
	l := bucket.New(c, bucket.Usage(35))
	model := bucket.NewModel()
	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 31))
	const id = "key:0123456789abcdef0123456789abcdef"
	key := bucket.Key(id)
	newChecks, limited := 0, 0
	counts := map[string]int{}
	used := func() int64 { // the quota's count in its window
		return storedState(t, c, id).Quotas[monthly.Name].Used
	}
	foreign := func() map[string]string { // the fields the previous script does not know
		all, err := c.Do(ctx, c.B().Hgetall().Key(key).Build()).AsStrMap()
		if err != nil {
			t.Fatal(err)
		}
		for f := range all {
			if f == burst.Name+lua.TokensSuffix || f == burst.Name+lua.StampSuffix {
				delete(all, f)
			}
		}
		return all
	}
	for i := range 1500 {
		if rng.IntN(20) == 0 {
			shiftStamps(t, c, model, id, []bucketgate.Rule{burst}, time.Duration(rng.Int64N(int64(3*time.Second))))
		}
		if rng.IntN(2) == 0 { // this release
			cost := int64(1 + rng.IntN(2))
			q := bucketgate.Request{Identity: id, Rules: []bucketgate.Rule{burst, monthly}, Cost: cost}
			if rng.IntN(8) == 0 {
				q.Op, q.Cost = bucketgate.OpRefund, 1
			}
			was := used()
			got := decide(t, l, q)
			model.UsageDays = 35
			want := model.Decide(got.At, q)
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("step %d, this release's %+v:\nredis %+v\nmodel %+v", i, q, got, want)
			}
			count := was // the count after: a check's cost more when allowed, a refund's less
			switch {
			case q.Op == bucketgate.OpRefund:
				count = max(0, was-q.Cost)
			case got.Allowed:
				count = was + q.Cost
			}
			if now := used(); now != count || now > limit {
				t.Fatalf("step %d: the quota counted %d, then %d after %+v (%+v): want %d, at most %d", i, was, now, q, got, count, limit)
			}
			for _, c := range got.Crossings {
				counts[string(c.Kind)+" "+c.Rule]++
			}
			if q.Op == bucketgate.OpCheck {
				newChecks++
				if !got.Allowed {
					limited++
				}
				if !got.Allowed && got.Rule == monthly.Name {
					counts["quota limited"]++
				}
			}
			counts["new "+q.Op.String()]++
			continue
		}
		// The previous release, on the bucket alone.
		before, known := mustInt(t, do(t, c, c.B().Pexpiretime().Key(key).Build())), foreign()
		q := bucketgate.Request{Identity: id, Rules: []bucketgate.Rule{burst}, Cost: 1}
		switch rng.IntN(10) {
		case 0:
			q.Op, q.Cost = bucketgate.OpRefund, 1+rng.Int64N(3)
		case 1:
			q.Op, q.Cost = bucketgate.OpReset, 0
		}
		got := oldCall(t, c, q)
		if q.Op != bucketgate.OpRefund {
			model.UsageDays = 0 // the previous release counted no usage
			want := model.Decide(got.At, q)
			if got.Allowed != want.Allowed || got.Rule != want.Rule || got.Remaining != want.Remaining {
				t.Fatalf("step %d, the previous release's %+v:\nredis %+v\nmodel %+v", i, q, got, want)
			}
		}
		// The model reads back what it wrote: a refund refilled to now; a check wrote its
		// stamp without the mark of a first denial, and a denial marked none (so that this
		// release may report a bucket's first denial once more during a deploy).
		if b, ok := storedState(t, c, id).Buckets[burst.Name]; ok {
			if b.Limited {
				counts["old read a marked stamp"]++
			}
			model.SetBucket(id, burst.Name, b)
		}
		counts["old "+q.Op.String()]++
		after := mustInt(t, do(t, c, c.B().Pexpiretime().Key(key).Build()))
		// A reset that removes the last fields removes the key: fine when they were all
		// the previous release's own (the rest is checked below).
		if before > 0 && (after > 0 && after < before || after == -2 && len(known) > 0) {
			t.Fatalf("step %d: the previous release's %v moved the key's expiry %d -> %d", i, q.Op, before, after)
		}
		if now := foreign(); !reflect.DeepEqual(now, known) {
			t.Fatalf("step %d: the previous release's %v changed fields it does not know:\n%v\n-> %v", i, q.Op, known, now)
		}
	}
	t.Logf("operations: %v; the quota counts %d of %d, this release limited %d", counts, used(), limit, limited)
	switch {
	case counts["quota limited"] == 0 || counts["old reset"] == 0 || counts["old refund"] == 0 ||
		counts["old read a marked stamp"] == 0 || counts["Rate Limited burst"] == 0 || counts["Rate Limited monthly"] == 0:
		t.Fatalf("too one-sided to mean much: %v, limited %d", counts, limited)
	}
	var usage bucketgate.DayUsage
	for _, u := range model.Usage(id, time.Now().Add(-24*time.Hour), time.Now(), time.Now()) {
		usage.Allowed, usage.Limited = usage.Allowed+u.Allowed, usage.Limited+u.Limited
	}
	if int(usage.Allowed+usage.Limited) != newChecks {
		t.Fatalf("usage counts %d checks, this release made %d", usage.Allowed+usage.Limited, newChecks)
	}
	compareStored(t, c, model, id, time.Now(), true)
}

// During a deploy, the previous release's script decides on keys that this release's
// reservations, settles, leases, idempotent checks and shadow rules also write: it never
// fails on what they leave (short of a settle above its estimate, whose debt it refuses
// as CHANGELOG.md says, which this test does not make), and this release never fails on
// what the previous one leaves: each identity keeps being decided by both.
func TestUpgradePreviousReleaseBesideHoldsAndLeases(t *testing.T) {
	_, c := real(t)
	ctx := context.Background()
	burst := bucketgate.Rule{Name: "burst", Capacity: 5, RefillPerSecond: 40}
	slow := bucketgate.Rule{Name: "slow", Capacity: 9, RefillPerSecond: 3, Shadow: true}
	daily := bucketgate.Rule{Name: "daily", Limit: 400, Period: bucketgate.PeriodDay}
	streams := bucketgate.Rule{Name: "streams", Concurrency: 2}
	rules := []bucketgate.Rule{burst, slow, daily, streams}
	l := bucket.New(c, bucket.Usage(35))
	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 70))
	type hold struct{ identity, id string }
	var reserved []hold
	counts := map[string]int{}
	for i := range 2000 {
		id := "key:0123456789abcdef0123456789abcde" + strconv.Itoa(rng.IntN(2))
		if rng.IntN(2) == 1 { // the previous release
			q := bucketgate.Request{Identity: id, Rules: []bucketgate.Rule{burst, slow}, Cost: 1 + rng.Int64N(2)}
			switch rng.IntN(10) {
			case 0:
				q.Op = bucketgate.OpRefund
			case 1:
				q.Op, q.Cost = bucketgate.OpReset, 0
			}
			oldCall(t, c, q)
			counts["old "+q.Op.String()]++
			continue
		}
		q := bucketgate.Request{Identity: id, Rules: rules, Cost: 1 + rng.Int64N(2), TTL: time.Duration(20+rng.IntN(200)) * time.Millisecond}
		switch rng.IntN(8) {
		case 0:
			q.Op, q.TTL = bucketgate.OpRefund, 0
		case 1, 2:
			q.Op = bucketgate.OpReserve
		case 3:
			q.RequestID, q.Cost, q.TTL = "request-"+strconv.Itoa(rng.IntN(3)), 1, 100*time.Millisecond // the same request: some replayed
		case 4:
			q.Cost, q.TTL = 0, 0
		}
		d, err := l.Decide(ctx, q)
		if err != nil {
			t.Fatalf("step %d, this release's %+v after the previous one: %v", i, q, err)
		}
		if d.Replayed {
			counts["replayed"]++
		}
		if d.Reservation != "" {
			reserved = append(reserved, hold{id, d.Reservation})
		}
		if d.Lease != "" && rng.IntN(2) == 0 {
			if _, err := l.Decide(ctx, bucketgate.Request{Identity: id, Rules: rules, Op: bucketgate.OpRelease, ID: d.Lease}); err != nil {
				t.Fatalf("step %d: release of %s: %v", i, d.Lease, err)
			}
			counts["released"]++
		}
		if len(reserved) > 3 || len(reserved) > 0 && rng.IntN(3) == 0 {
			h := reserved[0]
			reserved = reserved[1:]
			settle := bucketgate.Request{Identity: h.identity, Rules: rules, Op: bucketgate.OpSettle, ID: h.id, Cost: rng.Int64N(2)} // at most the estimate
			if rng.IntN(4) == 0 {
				settle.Op, settle.Cost = bucketgate.OpCancel, 0
			}
			s, err := l.Decide(ctx, settle)
			switch {
			case errors.Is(err, bucketgate.ErrConflict) && strings.Contains(err.Error(), "expired"):
				counts["expired"]++
			case err != nil:
				t.Fatalf("step %d: %v of %s: %v", i, settle.Op, h.id, err)
			case s.Settled >= 0:
				counts[settle.Op.String()]++
			}
		}
		counts["new "+q.Op.String()]++
		if rng.IntN(25) == 0 {
			time.Sleep(time.Duration(rng.IntN(60)) * time.Millisecond) // some refill, some ttls pass
		}
	}
	t.Logf("operations: %v", counts)
	for _, what := range []string{"old check", "old refund", "old reset", "new reserve", "settle", "cancel", "released", "replayed"} {
		if counts[what] == 0 {
			t.Fatalf("no %s: too one-sided to mean much: %v", what, counts)
		}
	}
}
