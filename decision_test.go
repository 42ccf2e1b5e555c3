package bucketgate_test

import (
	"testing"
	"time"

	"github.com/bucketgate/bucketgate"
)

// The repeat of a denial that crossed is the same denial crossing nothing: a deny cache
// answering it must send no second event.
func TestRepeatCrossesNothing(t *testing.T) {
	d := bucketgate.Decision{Reason: bucketgate.ReasonLimited, Rule: "burst", Limit: 10, RetryAfter: time.Second,
		Crossings: []bucketgate.Crossing{{Kind: bucketgate.CrossingLimited, Rule: "burst", Limit: 10, Usage: 10}}}
	rep, ok := d.Repeat()
	if !ok || rep.Crossings != nil || rep.Rule != "burst" || rep.RetryAfter != time.Second {
		t.Fatalf("repeat %+v (%v), want the denial without its crossings", rep, ok)
	}
	if len(d.Crossings) != 1 {
		t.Fatalf("Repeat changed the decision's crossings: %+v", d.Crossings)
	}
}
