package bucket

import (
	"errors"
	"strings"
	"testing"

	"github.com/bucketgate/bucketgate"
)

// An id refused, which a caller passed (a library's user, a client's header through the
// middleware), is quoted in part in the error, which a service logs: an API key
// bucketgate made passed as one (the key header, by mistake) is masked, never cut to
// its first characters.
func TestRefusedIDQuotesNoMadeKey(t *testing.T) {
	const key = "bg_" + "Zq3xW9vLp2Tn8Rk4Yc6Hd1Mf5Gj7Bs0Ae-Ku_Io2PwX"
	secret := []byte("0123456789abcdef0123456789abcdef")
	rules := []bucketgate.Rule{{Name: "tokens", Capacity: 1000, RefillPerSecond: 10}}
	for _, tc := range []struct{ name, kind, id string }{
		{"a reservation", kindReservation, key},
		{"a lease", kindLease, key},
		{"after a scheme", kindReservation, "Bearer " + key},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := parseID(tc.kind, secret, bucketgate.Request{Identity: "key:abc", Rules: rules, ID: tc.id})
			if !errors.Is(err, bucketgate.ErrConflict) || strings.Contains(err.Error(), key[:12]) || !strings.Contains(err.Error(), "bg_...") {
				t.Fatalf("parseID = %v, want ErrConflict with the key masked", err)
			}
		})
	}
}
