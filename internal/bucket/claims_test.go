package bucket_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/bucketgate/bucketgate"
	"github.com/bucketgate/bucketgate/internal/bucket"
)

// TestReservationClaims: a reserve's claims ride in its id under the MAC, Claims reads
// them back from the id alone, an id with the most claims fits bucketgate.MaxID (an HTTP
// header), of the most rules too, and an id whose claims were altered is refused with
// nothing written.
func TestReservationClaims(t *testing.T) {
	_, c := real(t)
	l := bucket.New(c, bucket.Secret([]byte("the claims secret, 32 bytes long")))
	ctx := context.Background()
	rules := []bucketgate.Rule{{Name: "tokens", Capacity: 100, RefillPerSecond: 0.001}}
	claims := strings.Repeat("c", bucketgate.MaxClaims)
	r, err := l.Decide(ctx, bucketgate.Request{Identity: "a", Rules: rules, Op: bucketgate.OpReserve, Cost: 40, Claims: claims})
	if err != nil || !r.Allowed {
		t.Fatal(r, err)
	}
	if len(r.Reservation) > bucketgate.MaxID || bucketgate.MaxID > 512 {
		t.Fatalf("an id with %d bytes of claims is %d bytes: want at most MaxID %d, at most 512", len(claims), len(r.Reservation), bucketgate.MaxID)
	}
	most := make([]bucketgate.Rule, bucketgate.MaxRules) // an id prints each
	for i := range most {
		most[i] = bucketgate.Rule{Name: fmt.Sprintf("rule-%d", i), Capacity: 100, RefillPerSecond: 1}
	}
	if m, err := l.Decide(ctx, bucketgate.Request{Identity: "a", Rules: most, Op: bucketgate.OpReserve, Cost: 1, Claims: claims}); err != nil || len(m.Reservation) > bucketgate.MaxID {
		t.Fatalf("an id of %d rules with %d bytes of claims: %d bytes (%v); want at most MaxID %d", len(most), len(claims), len(m.Reservation), err, bucketgate.MaxID)
	}
	if got, ok := bucket.Claims(r.Reservation); !ok || got != claims {
		t.Fatalf("Claims = %q, %v; want the reserve's", got, ok)
	}
	plain, _ := l.Decide(ctx, bucketgate.Request{Identity: "a", Rules: rules, Op: bucketgate.OpReserve, Cost: 1})
	if got, ok := bucket.Claims(plain.Reservation); ok || got != "" || len(plain.Reservation) != 76 {
		t.Fatalf("an id without claims: Claims = %q, %v, %d bytes; want none and an id of one rule's print alone (76 bytes)", got, ok, len(plain.Reservation))
	}
	for _, id := range []string{"", "r2.", "r3.", "r2.!!.x", "r3.!!.x", "r1.AAAA.x", strings.Repeat("r", bucketgate.MaxID+1)} {
		if got, ok := bucket.Claims(id); ok {
			t.Errorf("Claims(%q) = %q, true: not an id", id, got)
		}
	}

	// The same reservation with other claims (another identity's, say): refused.
	other, _ := l.Decide(ctx, bucketgate.Request{Identity: "b", Rules: rules, Op: bucketgate.OpReserve, Cost: 1, Claims: "id=b"})
	dot := strings.LastIndexByte(r.Reservation, '.')
	swapped := other.Reservation[:strings.LastIndexByte(other.Reservation, '.')] + r.Reservation[dot:]
	for name, id := range map[string]string{"claims of another id": swapped, "claims cut": r.Reservation[:dot-4] + r.Reservation[dot:]} {
		_, err := l.Decide(ctx, bucketgate.Request{Identity: "a", Rules: rules, Op: bucketgate.OpSettle, Cost: 0, ID: id})
		if !errors.Is(err, bucketgate.ErrConflict) {
			t.Errorf("%s: %v, want ErrConflict", name, err)
		}
	}
	if d, err := l.Decide(ctx, bucketgate.Request{Identity: "a", Rules: rules}); err != nil || d.Rules[0].Remaining != 59 {
		t.Fatalf("after the refusals: %+v, %v; want both estimates still charged (59 left)", d, err)
	}
	s, err := l.Decide(ctx, bucketgate.Request{Identity: "a", Rules: rules, Op: bucketgate.OpSettle, Cost: 10, ID: r.Reservation})
	if err != nil || s.Settled != 10 || s.Remaining != 89 {
		t.Fatalf("settle of the id with claims = %+v, %v; want 30 back", s, err)
	}
}
