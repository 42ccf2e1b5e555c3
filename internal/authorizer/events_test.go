package authorizer

import (
	"context"
	"testing"
	"time"

	"github.com/bucketgate/bucketgate"
	"github.com/bucketgate/bucketgate/internal/eventbus"
	"github.com/bucketgate/bucketgate/internal/guard"
	"github.com/bucketgate/bucketgate/internal/registry"
	"github.com/bucketgate/bucketgate/internal/telemetry"
)

// recorder keeps what each invocation sent, one Send per call, and the error of its
// context then.
type recorder struct {
	sends [][]eventbus.Event
	errs  []error
}

func (r *recorder) Send(ctx context.Context, _ *telemetry.Invocation, events []eventbus.Event) {
	r.sends = append(r.sends, events)
	r.errs = append(r.errs, ctx.Err())
}

// hangUp is a Guard whose caller hangs up as Redis answers (a client of the middleware
// whose request's context is canceled then): it decides with Guard, then cancels.
type hangUp struct {
	Guard
	cancel context.CancelFunc
}

func (h hangUp) Decide(ctx context.Context, q bucketgate.Request) (guard.Result, error) {
	r, err := h.Guard.Decide(ctx, q)
	h.cancel()
	return r, err
}

// A caller that hangs up once Redis has decided loses no event: Redis reports a
// crossing once per window, so the invocation that crossed sends it with a context the
// caller's cancellation does not end (its deadline still bounds it).
func TestEventsOutliveTheCaller(t *testing.T) {
	f := newFixture(t, options{config: mustParse(t, "defaultPlan: free\nplans: {free: [{name: burst, capacity: 1, refill: 1, per: day}]}")})
	rec := &recorder{}
	f.h.Events = rec
	call := Call{SourceIP: "203.0.113.9", Method: "GET", Path: "/"}
	if o, err := f.h.Authorize(context.Background(), call); err != nil || !o.Result.Allowed {
		t.Fatalf("first request: %+v, %v", o.Result, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	f.h.Guard = hangUp{Guard: f.h.Guard, cancel: cancel}
	if o, err := f.h.Authorize(ctx, call); err != nil || o.Result.Allowed {
		t.Fatalf("second request: %+v, %v: want the first denial", o.Result, err)
	}
	if len(rec.sends) != 1 || len(rec.sends[0]) != 1 || rec.errs[0] != nil {
		t.Fatalf("sends %+v with context errors %v: want the first denial's event sent with a live context", rec.sends, rec.errs)
	}
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
