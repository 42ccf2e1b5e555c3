package bucketgate_test

import (
	"testing"
	"time"

	"github.com/bucketgate/bucketgate"
)

// Repeat: a denial repeats itself, an admission short of its cost the denial naming the
// rule; a decision replayed for a requestId (an earlier one's) repeats nothing, so that
// no deny cache keeps its stale figures.
func TestRepeat(t *testing.T) {
	at := time.Unix(1_700_000_000, 0)
	denied := bucketgate.Decision{Reason: bucketgate.ReasonLimited, Rule: "burst", Limit: 10, RetryAfter: time.Second, At: at}
	short := bucketgate.Decision{Allowed: true, Reason: bucketgate.ReasonOK, Rule: "burst", Limit: 10, At: at,
		Shortfall: bucketgate.Shortfall{Rule: "burst", Limit: 10, Wait: time.Second}}
	tests := []struct {
		name string
		d    bucketgate.Decision
		want bool
	}{
		{"denial", denied, true},
		{"admission short of its cost", short, true},
		{"replayed denial", func() bucketgate.Decision { d := denied; d.Replayed = true; return d }(), false},
		{"replayed admission short of its cost", func() bucketgate.Decision { d := short; d.Replayed = true; return d }(), false},
	}
	for _, tt := range tests {
		if _, ok := tt.d.Repeat(); ok != tt.want {
			t.Errorf("%s: Repeat ok %v, want %v", tt.name, ok, tt.want)
		}
	}
}

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
