package ratelimitheaders_test

import (
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"

	"github.com/bucketgate/bucketgate/ratelimitheaders"
)

// Reservation reads the one id the header carries, in any case of the name, and nothing
// that cannot be one.
func TestReservation(t *testing.T) {
	const id = "r2.AAAA.BBBB"
	tests := []struct {
		name   string
		values map[string][]string
		want   string
	}{
		{"the header", map[string][]string{"X-Ratelimit-Reservation": {id}}, id},
		{"none", nil, ""},
		{"empty (a route that reserves nothing)", map[string][]string{"X-Ratelimit-Reservation": {""}}, ""},
		{"twice", map[string][]string{"X-Ratelimit-Reservation": {id, id}}, ""},
		{"twice, in two spellings", map[string][]string{"X-Ratelimit-Reservation": {id}, ratelimitheaders.HeaderReservation: {id}}, ""},
		{"as the constant spells it", map[string][]string{ratelimitheaders.HeaderReservation: {id}}, id},
		{"too long", map[string][]string{"X-Ratelimit-Reservation": {strings.Repeat("r", 513)}}, ""},
		{"with a space", map[string][]string{"X-Ratelimit-Reservation": {"r2.A B"}}, ""},
		{"not ASCII", map[string][]string{"X-Ratelimit-Reservation": {"r2.é"}}, ""},
		{"spelled with underscores: never the limiter's", map[string][]string{"X_RateLimit_Reservation": {id}}, ""},
		{"a client's copy spelled with underscores beside it: never read", map[string][]string{"X-Ratelimit-Reservation": {id}, "x_ratelimit-reservation": {"r2.forged"}}, id},
		{"a client's copy spelled with underscores first", map[string][]string{"X_RateLimit_Reservation": {"r2.forged"}, "X-Ratelimit-Reservation": {id}}, id},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := httptest.NewRequest("POST", "/v1/chat", nil)
			for k, v := range tt.values {
				r.Header[k] = v
			}
			if got := ratelimitheaders.Reservation(r); got != tt.want {
				t.Fatalf("Reservation = %q, want %q", got, tt.want)
			}
		})
	}
	r := httptest.NewRequest("POST", "/v1/chat", nil)
	r.Header.Set("x-ratelimit-reservation", id)
	if got := ratelimitheaders.Reservation(r); got != id {
		t.Fatalf("Reservation of a lower-case header = %q", got)
	}
}

// ContextReservation reads a REST API's context and an HTTP API's (under "lambda").
func TestContextReservation(t *testing.T) {
	const id = "r2.AAAA.BBBB"
	for name, ctx := range map[string]map[string]any{
		"REST":     {ratelimitheaders.KeyReservation: id, ratelimitheaders.KeyReason: "ok"},
		"HTTP API": {"lambda": map[string]any{ratelimitheaders.KeyReservation: id}},
	} {
		if got := ratelimitheaders.ContextReservation(ctx); got != id {
			t.Errorf("%s: ContextReservation = %q, want %q", name, got, id)
		}
	}
	for name, ctx := range map[string]map[string]any{"none": {}, "empty": {ratelimitheaders.KeyReservation: ""}, "a number": {ratelimitheaders.KeyReservation: 5}} {
		if got := ratelimitheaders.ContextReservation(ctx); got != "" {
			t.Errorf("%s: ContextReservation = %q, want none", name, got)
		}
	}
}

// SetHeldHeaders sets the reservation and lease of the context, and removes a client's
// copies of those headers, in any case and with '_' for '-' (CGI, WSGI and Rack read
// X_RateLimit_Lease as X-RateLimit-Lease), whatever the context holds.
func TestSetHeldHeaders(t *testing.T) {
	h := http.Header{"X-Ratelimit-Reservation": {"forged"}, "x-ratelimit-lease": {"forged"}, "Accept": {"*/*"},
		"X_RateLimit_Reservation": {"forged"}, "X-RateLimit_Lease": {"forged"}, "X_Ratelimit_Lease": {"forged"}}
	ratelimitheaders.SetHeldHeaders(h, map[string]any{ratelimitheaders.KeyReservation: "r2.A.B", ratelimitheaders.KeyLease: ""})
	want := http.Header{ratelimitheaders.HeaderReservation: {"r2.A.B"}, "Accept": {"*/*"}}
	if !reflect.DeepEqual(h, want) {
		t.Fatalf("headers %v, want %v", h, want)
	}
	ratelimitheaders.SetHeldHeaders(h, nil)
	if !reflect.DeepEqual(h, http.Header{"Accept": {"*/*"}}) {
		t.Fatalf("headers %v after a context that holds nothing, want Accept alone", h)
	}
}

// Lease and ContextLease read the lease as Reservation and ContextReservation read the
// reservation.
func TestLease(t *testing.T) {
	const id = "r2.LLLL.MMMM"
	r := httptest.NewRequest("GET", "/stream", nil)
	r.Header.Set(ratelimitheaders.HeaderLease, id)
	r.Header.Set(ratelimitheaders.HeaderReservation, "r2.other.one")
	if got := ratelimitheaders.Lease(r); got != id {
		t.Fatalf("Lease = %q, want %q", got, id)
	}
	if got := ratelimitheaders.ContextLease(map[string]any{"lambda": map[string]any{ratelimitheaders.KeyLease: id}}); got != id {
		t.Fatalf("ContextLease = %q, want %q", got, id)
	}
	if got := ratelimitheaders.Lease(httptest.NewRequest("GET", "/", nil)); got != "" {
		t.Fatalf("Lease of a request without one = %q", got)
	}
}

// Every header the package sets on an http.Header is spelled one way, as its constant
// (and API Gateway's mapping) spells it: h[constant] finds each one, the reservation and
// the lease as well as the rate-limit headers, and h.Get, which canonicalizes the name,
// finds exactly those whose constant is already canonical (Retry-After).
func TestOneSpellingForEveryHeader(t *testing.T) {
	ctx := map[string]any{
		ratelimitheaders.KeyReason: "limited", ratelimitheaders.KeyRateLimit: `"burst";r=0;t=1`,
		ratelimitheaders.KeyRateLimitPolicy: `"burst";q=3;w=60`, ratelimitheaders.KeyLimit: 3.0,
		ratelimitheaders.KeyRemaining: 0.0, ratelimitheaders.KeyReset: 1700000000.0, ratelimitheaders.KeyRetryAfter: 1.0,
		ratelimitheaders.KeyReservation: "r2.A.B", ratelimitheaders.KeyLease: "r2.L.M",
	}
	h := http.Header{}
	ratelimitheaders.SetHeader(h, ctx)
	ratelimitheaders.SetHeldHeaders(h, ctx)
	tests := []struct{ name, header string }{
		{"RateLimit", ratelimitheaders.HeaderRateLimit},
		{"RateLimit-Policy", ratelimitheaders.HeaderRateLimitPolicy},
		{"X-RateLimit-Limit", ratelimitheaders.HeaderLimit},
		{"X-RateLimit-Remaining", ratelimitheaders.HeaderRemaining},
		{"X-RateLimit-Reset", ratelimitheaders.HeaderReset},
		{"Retry-After", ratelimitheaders.HeaderRetryAfter},
		{"X-RateLimit-Reservation", ratelimitheaders.HeaderReservation},
		{"X-RateLimit-Lease", ratelimitheaders.HeaderLease},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if len(h[tt.header]) != 1 {
				t.Fatalf("h[%q] = %q, want the one value (headers %v)", tt.header, h[tt.header], h)
			}
			canonical := http.CanonicalHeaderKey(tt.header) == tt.header
			if got := h.Get(tt.header); (got != "") != canonical {
				t.Fatalf("h.Get(%q) = %q: want it found only when the constant is canonical (%v)", tt.header, got, canonical)
			}
		})
	}
	if len(h) != len(tests) {
		t.Fatalf("headers %v: want the %d above, once each", h, len(tests))
	}
}
