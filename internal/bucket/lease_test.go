package bucket_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/bucketgate/bucketgate"
	"github.com/bucketgate/bucketgate/internal/bucket"
)

// TestLeases: a check with a concurrency rule acquires a lease while fewer than its
// most are in flight, and is denied (the rule binding, a retry-after until the earliest
// lease expires, nothing taken from its bucket) when that many are; a release returns
// the lease once (again: Released false, nothing changed); a lease frees itself at its
// ttl; a check denied by a bucket takes no lease; a reserve acquires too; a peek shows
// the leases in flight, a reset removes them; the set lives as long as its last lease.
func TestLeases(t *testing.T) {
	l, c := real(t)
	ctx := context.Background()
	streams := bucketgate.Rule{Name: "streams", Concurrency: 2}
	tokens := bucketgate.Rule{Name: "tokens", Capacity: 10, RefillPerSecond: 0.001}
	rules := []bucketgate.Rule{streams, tokens} // the concurrency rule first: the script numbers it last
	check := func(cost int64) bucketgate.Decision {
		t.Helper()
		q := bucketgate.Request{Identity: "a", Rules: rules, Cost: cost}
		if cost > 0 {
			q.TTL = time.Minute
		}
		d, err := l.Decide(ctx, q)
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	release := func(id string) (bucketgate.Decision, error) {
		return l.Decide(ctx, bucketgate.Request{Identity: "a", Rules: rules, Op: bucketgate.OpRelease, ID: id})
	}
	d1 := check(1)
	if !d1.Allowed || !strings.HasPrefix(d1.Lease, "r2.") || d1.Expires.Sub(d1.At) < 59*time.Second || d1.Rule != "streams" || d1.Remaining != 1 {
		t.Fatalf("first acquire = %+v", d1)
	}
	d2 := check(1)
	if !d2.Allowed || d2.Lease == d1.Lease || d2.Rule != "streams" || d2.Remaining != 0 {
		t.Fatalf("second acquire = %+v", d2)
	}
	d3 := check(1)
	if d3.Allowed || d3.Rule != "streams" || d3.Limit != 2 || d3.Lease != "" || d3.RetryAfter < 59*time.Second || d3.RetryAfter > time.Minute {
		t.Fatalf("third acquire = %+v; want denied by streams until the first lease expires", d3)
	}
	peek := check(0)
	if peek.Rules[0].Remaining != 0 || peek.Rules[0].ResetAfter < 59*time.Second || peek.Rules[1].Remaining != 8 {
		t.Fatalf("peek = %+v; want no lease left and 8 tokens (the denial took none)", peek.Rules)
	}
	if z := mustInt(t, do(t, c, c.B().Pexpiretime().Key(bucket.LeaseKey("a", "streams")).Build())); z < d2.Expires.UnixMilli() {
		t.Fatalf("the set expires at %d, before its last lease (%d)", z, d2.Expires.UnixMilli())
	}
	if r, err := release(d1.Lease); err != nil || !r.Released {
		t.Fatalf("release = %+v, %v", r, err)
	}
	if r, err := release(d1.Lease); err != nil || r.Released {
		t.Fatalf("release again = %+v, %v; want Released false", r, err)
	}
	if d := check(1); !d.Allowed {
		t.Fatalf("after a release = %+v", d)
	}
	// Refused ids: nothing released.
	forged := d2.Lease[:len(d2.Lease)-2] + "AA"
	other := bucket.New(c, bucket.Secret([]byte("another secret, thirty-two bytes")))
	r, _ := l.Decide(ctx, bucketgate.Request{Identity: "a", Rules: []bucketgate.Rule{tokens}, Op: bucketgate.OpReserve, Cost: 1})
	for name, err := range map[string]error{
		"forged":           func() error { _, err := release(forged); return err }(),
		"malformed":        func() error { _, err := release("r2.x"); return err }(),
		"a reservation id": func() error { _, err := release(r.Reservation); return err }(),
		"of another identity": func() error {
			_, err := l.Decide(ctx, bucketgate.Request{Identity: "b", Rules: rules, Op: bucketgate.OpRelease, ID: d2.Lease})
			return err
		}(),
		"of other rules": func() error {
			_, err := l.Decide(ctx, bucketgate.Request{Identity: "a", Rules: []bucketgate.Rule{streams}, Op: bucketgate.OpRelease, ID: d2.Lease})
			return err
		}(),
		"of another secret": func() error {
			_, err := other.Decide(ctx, bucketgate.Request{Identity: "a", Rules: rules, Op: bucketgate.OpRelease, ID: d2.Lease})
			return err
		}(),
	} {
		if !errors.Is(err, bucketgate.ErrConflict) || !strings.Contains(err.Error(), "not an id this limiter made") {
			t.Errorf("release of a lease %s: %v, want ErrConflict", name, err)
		}
	}
	if n := mustInt(t, do(t, c, c.B().Zcard().Key(bucket.LeaseKey("a", "streams")).Build())); n != 2 {
		t.Fatalf("%d leases after the refused releases, want 2", n)
	}

	// Denied by a bucket: no lease taken.
	if d, err := l.Decide(ctx, bucketgate.Request{Identity: "b", Rules: rules, Cost: 10}); err != nil || !d.Allowed {
		t.Fatal(d, err)
	}
	if d, _ := l.Decide(ctx, bucketgate.Request{Identity: "b", Rules: rules, Cost: 1}); d.Allowed || d.Rule != "tokens" || d.Lease != "" {
		t.Fatalf("a check the bucket denies = %+v", d)
	}
	if n := mustInt(t, do(t, c, c.B().Zcard().Key(bucket.LeaseKey("b", "streams")).Build())); n != 1 {
		t.Fatalf("%d leases after a denial by the bucket, want 1", n)
	}

	// A lease frees itself at its ttl; a concurrency rule alone; a reserve acquires.
	alone := []bucketgate.Rule{{Name: "one", Concurrency: 1}}
	short, err := l.Decide(ctx, bucketgate.Request{Identity: "c", Rules: alone, Cost: 1, TTL: 20 * time.Millisecond})
	if err != nil || !short.Allowed || short.Rule != "one" || short.Remaining != 0 {
		t.Fatal(short, err)
	}
	if d, _ := l.Decide(ctx, bucketgate.Request{Identity: "c", Rules: alone, Cost: 1}); d.Allowed || d.RetryAfter > 20*time.Millisecond {
		t.Fatalf("while the lease is held = %+v", d)
	}
	time.Sleep(30 * time.Millisecond)
	res, err := l.Decide(ctx, bucketgate.Request{Identity: "c", Rules: append([]bucketgate.Rule{tokens}, alone...), Op: bucketgate.OpReserve, Cost: 3})
	if err != nil || !res.Allowed || res.Lease == "" || res.Reservation == "" || res.Lease == res.Reservation {
		t.Fatalf("a reserve after the lease expired = %+v, %v; want a lease and a reservation", res, err)
	}
	if d, err := l.Decide(ctx, bucketgate.Request{Identity: "c", Rules: alone, Op: bucketgate.OpRelease, ID: short.Lease}); err != nil || d.Released {
		t.Fatalf("release of an expired lease = %+v, %v; want Released false", d, err)
	}
	// Reset: the leases go.
	if _, err := l.Decide(ctx, bucketgate.Request{Identity: "a", Rules: rules, Op: bucketgate.OpReset}); err != nil {
		t.Fatal(err)
	}
	if n := mustInt(t, do(t, c, c.B().Exists().Key(bucket.LeaseKey("a", "streams")).Build())); n != 0 {
		t.Fatal("the leases outlived a reset")
	}
}
