package authorizer

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/bucketgate/bucketgate"
	"github.com/bucketgate/bucketgate/internal/eventbus"
	"github.com/bucketgate/bucketgate/internal/guard"
	"github.com/bucketgate/bucketgate/internal/madekey"
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

// A settle is a decision too (the middleware's Limiter.Settle): the settle that takes a
// quota to 80% of its limit sends the crossing's event, which the script reports to
// that settle alone, once in the window, with the detail of the request's own events
// (for a key of an account: the account's identity, its name and owner, its plan);
// the reserve that crossed nothing sends none.
func TestEventsOfASettle(t *testing.T) {
	cfg := mustParse(t, "defaultPlan: metered\nplans: {metered: [{name: monthly, limit: 1000, period: month}], team: [{name: monthly, limit: 1000, period: month}]}\n"+
		"routes: [{method: POST, path: /v1/chat, reserve: 100}]")
	reg := cacheOver(cfg, nil,
		registry.Record{ID: "account:acme", Plan: "team", Owner: "Acme"},
		registry.Record{ID: "key:" + bucketgate.KeyDigest("key a"), Account: "acme", Owner: "Acme's CI"},
	)
	for _, tc := range []struct {
		name string
		key  string
		want eventbus.Detail
	}{
		{"a source address", "", eventbus.Detail{Identity: "ip:192.0.2.7", Plan: "metered"}},
		{"a key of an account", "key a", eventbus.Detail{Identity: "acct:acme", Account: "acme", Owner: "Acme", Plan: "team"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, options{config: cfg, cache: reg})
			rec := &recorder{}
			f.h.Events = rec
			c := Call{SourceIP: "192.0.2.7", Method: "POST", Path: "/v1/chat"}
			if tc.key != "" {
				c.Keys.Add(tc.key)
			}
			o, err := f.h.Authorize(t.Context(), c)
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
			want := tc.want
			want.Rule, want.Kind, want.Threshold, want.Usage, want.Limit = "monthly", eventbus.KindQuota, 80, 850, 1000
			if e := rec.sends[0][0]; e.Type != eventbus.TypeQuotaThreshold || e.Detail.Window.End.IsZero() {
				t.Fatalf("event %+v, want %s with its window", e, eventbus.TypeQuotaThreshold)
			} else if e.Detail.Window = (eventbus.Window{}); e.Detail != want {
				t.Fatalf("detail %+v, want %+v", e.Detail, want)
			}
		})
	}
}

// A settle's registry lookups count in RegistryLookups as a decision's do (a miss is a
// DynamoDB read): the key's and its account's, once the settle has read them; a source
// address's settle reads none.
func TestSettleCountsItsLookups(t *testing.T) {
	cfg := mustParse(t, "defaultPlan: metered\nplans: {metered: [{name: monthly, limit: 1000, period: month}]}\n"+
		"routes: [{method: POST, path: /v1/chat, reserve: 100}]")
	for _, tc := range []struct {
		name string
		key  string
		want int // lookups counted
	}{
		{"a key of an account", "key a", 2},
		{"a source address", "", 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			reg := cacheOver(cfg, nil,
				registry.Record{ID: "account:acme", Plan: "metered"},
				registry.Record{ID: "key:" + bucketgate.KeyDigest("key a"), Account: "acme"},
			)
			f := newFixture(t, options{config: cfg, cache: reg})
			c := Call{SourceIP: "192.0.2.7", Method: "POST", Path: "/v1/chat"}
			if tc.key != "" {
				c.Keys.Add(tc.key)
			}
			o, err := f.h.Authorize(t.Context(), c)
			if err != nil || o.Result.Reservation == "" {
				t.Fatalf("reserve: %+v, %v", o.Result, err)
			}
			f.metrics.Reset()
			if _, err := f.h.Settle(t.Context(), o.Result.Reservation, bucketgate.OpSettle, 50); err != nil {
				t.Fatal(err)
			}
			counted, _ := oneEMF(t, f.metrics.Bytes())[telemetry.MetricRegistryLookups].(float64)
			if int(counted) != tc.want {
				t.Fatalf("the settle counted %v lookups, want %d:\n%s", counted, tc.want, &f.metrics)
			}
		})
	}
}

// An event names no API key bucketgate made, whatever the registry holds: an item's
// owner is text for people, which the CLI refuses to hold a key but an item written by
// hand (the console, the AWS CLI) may, and the event's detail carried it as it was to
// every target of the bus. It is masked, as the registry's log lines mask what they
// quote.
func TestEventsMaskAMadeKeyInTheOwner(t *testing.T) {
	made := madekey.Prefix + strings.Repeat("A", 43)
	cfg := mustParse(t, accountPlans)
	reg := cacheOver(cfg, nil,
		registry.Record{ID: "account:acme", Plan: "team", Owner: "Acme, key " + made},
		registry.Record{ID: "key:" + bucketgate.KeyDigest("key a"), Account: "acme"},
	)
	f := newFixture(t, options{config: cfg, cache: reg})
	rec := &recorder{}
	f.h.Events = rec
	for range 5 {
		f.mustInvoke(t, keyed(t, "key a"))
	}
	if len(rec.sends) != 1 || len(rec.sends[0]) != 1 {
		t.Fatalf("sends %+v, want the first denial's event", rec.sends)
	}
	detail, err := json.Marshal(rec.sends[0][0].Detail)
	if err != nil {
		t.Fatal(err)
	}
	if d := rec.sends[0][0].Detail; madekey.Holds(string(detail)) || !strings.HasPrefix(d.Owner, "Acme, key ") {
		t.Fatalf("detail %s: want the owner without the key", detail)
	}
}
