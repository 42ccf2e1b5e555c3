package authorizer

import (
	"context"
	"io"
	"testing"
	"time"

	"github.com/bucketgate/bucketgate"
	"github.com/bucketgate/bucketgate/internal/guard"
	"github.com/bucketgate/bucketgate/internal/registry"
	"github.com/bucketgate/bucketgate/internal/settings"
	"github.com/bucketgate/bucketgate/internal/telemetry"
	"github.com/bucketgate/bucketgate/internal/testkit/registrytest"
	"github.com/bucketgate/bucketgate/internal/testkit/samples"
)

// fixedGuard answers every request with the same Result: Redis stubbed out.
type fixedGuard guard.Result

func (d fixedGuard) Decide(context.Context, bucketgate.Request) (guard.Result, error) {
	return guard.Result(d), nil
}

func (d fixedGuard) Fallback(bucketgate.Request, guard.Failure, error) guard.Result {
	panic("fixedGuard: the registry never fails in the benchmark")
}

func (d fixedGuard) FailOpen() bool { return false }

func (d fixedGuard) Signed(context.Context, string, string, bool) error { return nil }

// stubAllowed is what fixedGuard answers in BenchmarkHandlerOverhead: an admission
// as Redis would give it, with a latency for the metrics.
var stubAllowed = fixedGuard{
	Decision: bucketgate.Decision{Allowed: true, Reason: bucketgate.ReasonOK, Rule: "burst", Limit: 10,
		Remaining: 9, ResetAfter: 100 * time.Millisecond, At: t0},
	Latency: time.Millisecond,
}

// benchInvoke measures one invocation of event through f's Lambda handler, its logs
// at the production level and its metrics formatted as in production, then discarded.
func (f *fixture) benchInvoke(b *testing.B, event []byte) {
	f.h.Log = telemetry.NewLogger(io.Discard, settings.DefaultLogLevel)
	f.h.Metrics = telemetry.NewEmitter(io.Discard, settings.DefaultNamespace, settings.DefaultStackName, testFunction)
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := f.lh.Invoke(ctx, event); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkHandlerOverhead measures the handler's own cost per invocation with Redis
// stubbed out (issue 7, item 4): decode the event, resolve the identity and limits,
// write the EMF line, encode the answer. make bench reports it. The key cases take the
// sample pro key through the configuration document's registry (no table), through a
// registry table's warm cache (every lookup a hit; the EMF line then carries
// RegistryLookups too), and the same with the configuration document itself read from
// the table (issue 26: within its period, so that no invocation reads it): the
// differences are what the table costs a request once cached, and what a document
// that can change at run time costs it. The last takes the key as a key of an account,
// with a rule of its own (two hits, the plan made with the account's kept).
func BenchmarkHandlerOverhead(b *testing.B) {
	const tableDoc = "defaultPlan: free\nplans: {free: [{name: burst, capacity: 10, refillPerSecond: 1}], pro: [{name: burst, capacity: 100, refillPerSecond: 50}]}\nroutes: [{method: POST, path: /orders, cost: 2}]"
	for _, bc := range []struct {
		name, event string
		table       bool // the key in a registry table
		config      bool // the document in the table too
		account     bool // the key of an account in the table, with a rule of its own
	}{
		{"rest", restEvent, false, false, false}, {"http", httpEvent, false, false, false}, {"rest-key-document", restProEvent, false, false, false},
		{"rest-key-table-cached", restProEvent, true, false, false}, {"rest-key-table-config", restProEvent, true, true, false},
		{"rest-key-account-cached", restProEvent, true, false, true},
	} {
		b.Run(bc.name, func(b *testing.B) {
			cfg := sampleConfig(b)
			o := options{config: cfg}
			src := registrytest.New(registry.Record{ID: "key:" + proDigest, Plan: "pro"})
			if bc.account {
				src.Put(registry.Record{ID: "account:acme", Plan: "pro"})
				src.Put(registry.Record{ID: "key:" + proDigest, Account: "acme", Rules: []bucketgate.Rule{{Name: "burst", Capacity: 5, RefillPerSecond: 1}}})
			}
			cache := registry.NewCache(src, registry.Options{TTL: time.Hour, Size: 10})
			switch {
			case bc.config:
				src.PutConfig(registry.StoredConfig{ID: registry.ConfigID, Document: tableDoc, Version: 1})
				live := registry.NewLive(src, cache, cfg, registry.LiveOptions{TTL: time.Hour})
				if err := live.Load(context.Background()); err != nil {
					b.Fatal(err)
				}
				o.live = live
			case bc.table:
				o.config, o.cache = mustParse(b, tableDoc), cache
			}
			f := newFixture(b, o)
			f.h.Guard = stubAllowed
			f.benchInvoke(b, samples.Read(b, bc.event))
		})
	}
}

// The stub's answer reaches the caller: the benchmark measures an allowed invocation.
func TestStubbedDeciderAllows(t *testing.T) {
	for _, event := range []string{restEvent, httpEvent, restProEvent} {
		f := newFixture(t, options{})
		f.h.Guard = stubAllowed
		if a := f.mustInvoke(t, samples.Read(t, event)); !a.allowed(t) {
			t.Errorf("%s: denied with the stub allowing: %s", event, a.raw)
		}
	}
}
