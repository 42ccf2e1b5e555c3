package authorizer

import (
	"context"
	"testing"

	"github.com/bucketgate/bucketgate"
	"github.com/bucketgate/bucketgate/internal/eventbus"
	"github.com/bucketgate/bucketgate/internal/registry"
	"github.com/bucketgate/bucketgate/internal/telemetry"
)

// recorder keeps what each invocation sent, one Send per call.
type recorder struct{ sends [][]eventbus.Event }

func (r *recorder) Send(_ context.Context, _ *telemetry.Invocation, events []eventbus.Event) {
	r.sends = append(r.sends, events)
}

// A key of an account: its first denial is one event, sent by the invocation that was
// denied and by none other, naming the account's identity, the account, its owner and
// its plan; the next denial sends nothing.
func TestEventsOfAKeyOfAnAccount(t *testing.T) {
	cfg := mustParse(t, accountPlans)
	reg := cacheOver(cfg, nil,
		registry.Record{ID: "account:acme", Plan: "team", Owner: "Acme"},
		registry.Record{ID: "key:" + bucketgate.KeyDigest("key a"), Account: "acme"},
	)
	f := newFixture(t, options{config: cfg, cache: reg})
	rec := &recorder{}
	f.h.Events = rec
	for i := range 6 {
		a := f.mustInvoke(t, keyed(t, "key a"))
		if denied := !a.allowed(t); denied != (i >= 4) {
			t.Fatalf("request %d: %s", i+1, a.raw)
		}
		want := 0 // sends so far: the fifth request's
		if i >= 4 {
			want = 1
		}
		if len(rec.sends) != want {
			t.Fatalf("after request %d: %d sends, want %d", i+1, len(rec.sends), want)
		}
	}
	e := rec.sends[0]
	if len(e) != 1 || e[0].Type != eventbus.TypeRateLimited {
		t.Fatalf("events %+v, want one %s", e, eventbus.TypeRateLimited)
	}
	if d := e[0].Detail; d.Identity != "acct:acme" || d.Account != "acme" || d.Owner != "Acme" || d.Plan != "team" || d.Rule != "burst" || d.Usage != 4 || d.Limit != 4 {
		t.Fatalf("detail %+v", d)
	}
}

// A settle is a decision too (the middleware's Limiter.Settle): the settle that takes a
// quota to 80% of its limit sends the crossing's event, which the script reports to
// that settle alone, once in the window; the reserve that crossed nothing sends none.
func TestEventsOfASettle(t *testing.T) {
	cfg := mustParse(t, "defaultPlan: metered\nplans: {metered: [{name: monthly, limit: 1000, period: month}]}\n"+
		"routes: [{method: POST, path: /v1/chat, reserve: 100}]")
	f := newFixture(t, options{config: cfg})
	rec := &recorder{}
	f.h.Events = rec
	o, err := f.h.Authorize(t.Context(), Call{SourceIP: "192.0.2.7", Method: "POST", Path: "/v1/chat"})
	if err != nil || !o.Result.Allowed || o.Result.Reservation == "" {
		t.Fatalf("reserve: %+v, %v", o.Result, err)
	}
	if len(rec.sends) != 0 {
		t.Fatalf("the reserve sent %+v: it crossed nothing", rec.sends)
	}
	if _, err := f.h.Settle(t.Context(), o.Result.Reservation, bucketgate.OpSettle, 850); err != nil {
		t.Fatal(err)
	}
	if len(rec.sends) != 1 || len(rec.sends[0]) != 1 {
		t.Fatalf("the settle to 850 of 1000 sent %+v, want one event", rec.sends)
	}
	e := rec.sends[0][0]
	if d := e.Detail; e.Type != eventbus.TypeQuotaThreshold || d.Identity != "ip:192.0.2.7" || d.Plan != "metered" || d.Rule != "monthly" ||
		d.Threshold != 80 || d.Usage != 850 || d.Limit != 1000 {
		t.Fatalf("event %+v, want monthly's 80%% at 850 of 1000 on plan metered", e)
	}
}
