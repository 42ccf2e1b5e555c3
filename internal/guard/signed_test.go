package guard_test

import (
	"cmp"
	"context"
	"errors"
	"strings"
	"testing"
	"time"

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

// TestRefusedIDAfterAFailedReadAsksNothingOfTheBreaker: in the second after a read of
// the secrets that Redis did not answer (bucket.RefusedRecheck), an id the secrets held
// refuse is answered with that read's failure (retryable) without asking Redis: those
// answers are not Redis's failures, and the breaker does not count them. It counted
// each, so that a client sending its settle again after Redis came back opened the
// circuit of the secrets: the checks of its identities were answered unavailable
// without asking Redis, and the settles by id (Signed) until a decision probed.
func TestRefusedIDAfterAFailedReadAsksNothingOfTheBreaker(t *testing.T) {
	for _, tc := range []struct {
		name  string
		check func(g *guard.Guard, id string) error
	}{
		{"Signed", func(g *guard.Guard, id string) error { return g.Signed(context.Background(), "a", id, false) }},
		{"a settle", func(g *guard.Guard, id string) error {
			settle := request("a")
			settle.Op, settle.ID = bucketgate.OpSettle, id
			r, err := g.Decide(context.Background(), settle)
			return cmp.Or(err, r.Err)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := redistest.Start(t)
			g := chain(t, srv.Addr, nil)
			reserve := request("a")
			reserve.Op = bucketgate.OpReserve
			if r := decide(t, g, reserve); !r.Allowed { // the secrets read
				t.Fatalf("reserve: %+v", r)
			}
			direct := redistest.Client(t, srv.Addr)
			if err := direct.Do(context.Background(), direct.B().Del().Key(bucket.SecretKey).Build()).Error(); err != nil {
				t.Fatal(err)
			}
			d, err := bucket.New(direct).Decide(context.Background(), reserve) // another instance writes a new secret
			if err != nil || d.Reservation == "" {
				t.Fatalf("reserve on another instance: %+v, %v", d, err)
			}
			time.Sleep(bucket.RefusedRecheck) // since the reserve's read: no timing asserted
			srv.Pause()
			err = tc.check(g, d.Reservation) // its read fails: one failure
			srv.Resume()
			if !errors.Is(err, bucket.ErrNoSecret) {
				t.Fatalf("the id of a new secret, Redis paused: %v, want ErrNoSecret", err)
			}
			for i := range guard.DefaultFailuresToOpen { // within the second after, unless the machine stalls
				if err := tc.check(g, d.Reservation); err == nil {
					break // read again: the second passed
				} else if !errors.Is(err, bucket.ErrNoSecret) {
					t.Fatalf("the id of a new secret %d after the failed read: %v, want the failed read's error", i+1, err)
				}
			}
			if r := decide(t, g, request(inCircuit(t, bucket.SecretSlot))); r.CircuitOpen || r.Err != nil {
				t.Errorf("a check in the circuit of the secrets, Redis back: %+v, want it decided", r)
			}
			time.Sleep(bucket.RefusedRecheck)
			if err := tc.check(g, d.Reservation); err != nil {
				t.Errorf("the id of a new secret once the second has passed, Redis back: %v, want it verified", err)
			}
		})
	}
}
