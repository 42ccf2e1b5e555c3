package guard

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/bucketgate/bucketgate"
)

// TestWallClockAcrossFreezes: the deny cache and the circuit breaker tell time by the
// wall clock. The clock's times come with a monotonic reading (time.Now's), which may
// stand still while a Lambda environment is frozen between invocations: kept, it would
// serve a cached denial, or keep the circuit open, after a freeze that outlasted its
// wait. None of the times they keep carries it (a Time's String shows " m=" when it does).
func TestWallClockAcrossFreezes(t *testing.T) {
	now := time.Now()
	if !strings.Contains(now.String(), " m=") {
		t.Fatal("time.Now has no monotonic reading here: this test proves nothing")
	}
	c := newDenyCache(1, false)
	q := bucketgate.Request{Identity: "a", Rules: []bucketgate.Rule{{Name: "burst", Capacity: 10, RefillPerSecond: 10}}, Cost: 1}
	c.put(q, bucketgate.Decision{Reason: bucketgate.ReasonLimited, Rule: "burst", Limit: 10, RetryAfter: 100 * time.Millisecond, ResetAfter: time.Second}, now)
	opened := &breaker{threshold: 1, interval: time.Second}
	opened.record(now, now, errors.New("connection refused"))
	probed := &breaker{threshold: 1, interval: time.Second}
	probed.record(now, now, errors.New("connection refused"))
	if ok, _, _ := probed.allow(now.Add(time.Second)); !ok {
		t.Fatal("no probe a probe interval after the circuit opened")
	}
	for name, at := range map[string]time.Time{
		"the cached denial's send":            c.heads["a"].sent,
		"the next probe after the opening":    opened.nextProbe,
		"the next probe after a probe's turn": probed.nextProbe,
	} {
		if strings.Contains(at.String(), " m=") {
			t.Errorf("%s %v keeps a monotonic reading: a freeze would not count", name, at)
		}
	}
}
