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
