package guard_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/bucketgate/bucketgate"
	"github.com/bucketgate/bucketgate/internal/bucket"
	"github.com/bucketgate/bucketgate/internal/guard"
	"github.com/bucketgate/bucketgate/internal/testkit/redistest"
)

// TestSignedWhileCircuitOpen: while Redis is failing (paused, the circuit open after
// DefaultFailuresToOpen timeouts), Signed, a settle's or a release's check of its id
// alone, asks Redis nothing: an instance that holds the secrets verifies under them
// (its own id; a forged one refused, as a conflict or, since it may be signed under a
// secret not read yet, with ErrCircuitOpen), and one that has not read them yet fails at once
// with ErrCircuitOpen, as its decisions do, instead of waiting REDIS_TIMEOUT_MS for
// the secrets at each settle.
func TestSignedWhileCircuitOpen(t *testing.T) {
	srv := redistest.Start(t)
	p := redistest.StartProxy(t, srv.Addr) // tells what the instances sent
	warm, cold := chain(t, p.Addr, nil), chain(t, p.Addr, nil)
	reserve := request("a")
	reserve.Op = bucketgate.OpReserve
	r := decide(t, warm, reserve)
	if !r.Allowed || r.Reservation == "" {
		t.Fatalf("reserve: %+v", r)
	}
	id := r.Reservation
	forged := id[:len(id)-1] + "A"
	if forged == id {
		forged = id[:len(id)-1] + "B"
	}
	decide(t, cold, request("b")) // connected, the secrets never read
	srv.Pause()
	defer srv.Resume()
	for _, g := range []*guard.Guard{warm, cold} {
		countFailures(t, g, request("b"), guard.DefaultFailuresToOpen, guard.FailureTimeout)
	}
	sent := len(p.Sent())
	for _, tc := range []struct {
		name string
		g    *guard.Guard
		id   string
		open bool // else nil
		// refused: a conflict, or ErrCircuitOpen when the secrets held were read more
		// than bucket.RefusedRecheck ago (the id may be signed under a newer one)
		refused bool
	}{
		{"an instance that holds the secrets, of its id", warm, id, false, false},
		{"an instance that holds the secrets, of a forged id", warm, forged, false, true},
		{"an instance that has not read them", cold, id, true, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.g.Signed(context.Background(), "a", tc.id, false)
			open, conflict := errors.Is(err, guard.ErrCircuitOpen), errors.Is(err, bucketgate.ErrConflict)
			if tc.refused && !open && !conflict || !tc.refused && (open != tc.open || conflict || err != nil && !open) {
				t.Errorf("Signed = %v, want circuit open: %v, refused: %v", err, tc.open, tc.refused)
			}
		})
	}
	if after := p.Sent()[sent:]; strings.Contains(after, bucket.SecretKey) {
		t.Errorf("Signed asked a failing Redis for the secrets while the circuit was open:\n%q", after)
	}
}

// TestSignedFailuresOpenTheCircuit: Signed's failures to read the secrets count in the
// circuit breaker as a decision's do, so that an instance that has not read them, whose
// settles and releases by id each waited REDIS_TIMEOUT_MS for them (a batch of them in
// the check function, one after another), stops asking a Redis that is failing after
// DefaultFailuresToOpen of them.
func TestSignedFailuresOpenTheCircuit(t *testing.T) {
	srv := redistest.Start(t)
	g := chain(t, srv.Addr, nil)
	decide(t, g, request("b")) // connected, the secrets never read
	srv.Pause()
	defer srv.Resume()
	for i := range guard.DefaultFailuresToOpen {
		if err := g.Signed(context.Background(), "a", "r3.AAAA.AAAAAAAAAAAAAAAAAAAAAA", false); err == nil || errors.Is(err, bucketgate.ErrConflict) {
			t.Fatalf("Signed %d with Redis paused: %v, want Redis's failure", i+1, err)
		}
	}
	if r := decide(t, g, request("b")); !r.CircuitOpen || r.Reason != bucketgate.ReasonUnavailable {
		t.Errorf("a check after %d failed Signed: %+v, want the circuit open", guard.DefaultFailuresToOpen, r)
	}
}
