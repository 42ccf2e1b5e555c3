package authorizer

import (
	"strings"
	"testing"

	"github.com/bucketgate/bucketgate/internal/bucket"
	"github.com/bucketgate/bucketgate/internal/claims"
	"github.com/bucketgate/bucketgate/internal/testkit/samples"
	"github.com/bucketgate/bucketgate/ratelimitheaders"
)

// On a route with reserve, the authorizer reserves the estimate instead of taking a
// cost, for REST and HTTP API events alike: the context's reservation is an id whose
// claims name the caller's identity and the route (its id); a request the estimate does not fit
// is denied as on any route (429's context, no reservation); a route without reserve is
// a check of its cost, with an empty reservation; the decision line says reserve.
func TestReserveRoute(t *testing.T) {
	cfg := mustParse(t, "defaultPlan: free\nplans: {free: [{name: tokens, capacity: 1000, refillPerSecond: 0.001}]}\nroutes: [{path: /other, cost: 2}, {path: /chat, reserve: 400, ttlMs: 60000}]")
	chatRoute := cfg.Limits(cfg.DefaultPlan(), "GET", "/chat").Route
	for _, event := range []string{restEvent, httpEvent} {
		f := newFixture(t, options{config: cfg})
		chat := withPath(t, samples.Read(t, event), "/chat")
		for i, want := range []int64{600, 200} {
			a := f.mustInvoke(t, chat)
			id := a.str(t, ratelimitheaders.KeyReservation)
			raw, _ := bucket.Claims(id)
			c, err := claims.Parse(raw)
			if !a.allowed(t) || a.num(t, ratelimitheaders.KeyRemaining) != want || !strings.HasPrefix(id, "r3.") || err != nil || c.Route != chatRoute || c.Route == "" || !strings.HasPrefix(c.Identity, "ip:") || c.Key != "" {
				t.Fatalf("%s: reserve %d: %s (claims %+v, %v): want allowed, %d left, a reservation of route /chat (%s) for the source", event, i+1, a.raw, c, err, want, chatRoute)
			}
			if a.PrincipalID != "" && a.PrincipalID != c.Identity {
				t.Fatalf("%s: claims name %s, the answer %s", event, c.Identity, a.PrincipalID)
			}
		}
		a := f.mustInvoke(t, chat)
		if a.allowed(t) || a.str(t, ratelimitheaders.KeyReservation) != "" || a.str(t, ratelimitheaders.KeyReason) != "limited" || a.num(t, ratelimitheaders.KeyRetryAfter) < 1 {
			t.Fatalf("%s: a reserve the estimate does not fit: %s, want limited with a retry-after and no reservation", event, a.raw)
		}
		a = f.mustInvoke(t, withPath(t, samples.Read(t, event), "/other"))
		if !a.allowed(t) || a.str(t, ratelimitheaders.KeyReservation) != "" || a.num(t, ratelimitheaders.KeyRemaining) != 198 {
			t.Fatalf("%s: a route without reserve: %s, want a check of 2 (198 left), no reservation", event, a.raw)
		}
		if logs := f.logs.String(); strings.Count(logs, `"op":"reserve"`) != 3 {
			t.Errorf("%s: the decision lines of the 3 reserves do not say op reserve:\n%s", event, logs)
		}
	}
}
