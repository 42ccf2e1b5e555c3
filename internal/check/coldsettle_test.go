package check

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/rueidis"

	"github.com/bucketgate/bucketgate"
	"github.com/bucketgate/bucketgate/checkapi"
	"github.com/bucketgate/bucketgate/internal/authorizer"
	"github.com/bucketgate/bucketgate/internal/bucket"
	"github.com/bucketgate/bucketgate/internal/guard"
	"github.com/bucketgate/bucketgate/internal/registry"
	"github.com/bucketgate/bucketgate/internal/settings"
	"github.com/bucketgate/bucketgate/internal/telemetry"
	"github.com/bucketgate/bucketgate/internal/testkit/redistest"
)

// TestSettleByIDOnAColdInstanceWaitsOnce: on an instance that has never read the
// secrets (a check function or an authorizer started during an outage), a settle by
// the id alone, or a batch of them, reads them once while Redis does not answer: it
// waits one REDIS_TIMEOUT_MS, and the circuit breaker counts one failure. Its check of
// the id (Signed) met the failure; the decision that follows fails with it, asking
// Redis nothing. Signed and the decision each read them, and each of a batch's ids
// (Signed), each waiting the whole timeout and counting once: two settles opened the
// circuit of every identity (DefaultFailuresToOpen 3), and each waited twice the timeout.
func TestSettleByIDOnAColdInstanceWaitsOnce(t *testing.T) {
	for _, tc := range []struct {
		name   string
		settle func(t *testing.T, check *fixture, auth *authorizer.Handler, ids []string)
	}{
		{"the check function's settle", func(t *testing.T, check *fixture, _ *authorizer.Handler, ids []string) {
			if r := decodeResponse(t, check.invokeOK(t, settlePayload(ids[0], 100))); r.Reason != checkapi.ReasonUnavailable {
				t.Fatalf("settle with Redis paused: %+v, want unavailable", r)
			}
		}},
		{"the check function's batch of a settle and a cancel", func(t *testing.T, check *fixture, _ *authorizer.Handler, ids []string) {
			var batch checkapi.BatchResult
			out := check.invokeOK(t, fmt.Appendf(nil, `{"checks":[{"op":"settle","reservation":%q,"cost":10},{"op":"cancel","reservation":%q}]}`, ids[0], ids[1]))
			if err := json.Unmarshal(out, &batch); err != nil {
				t.Fatal(err)
			}
			if r := batch.Results; len(r) != 2 || r[0].Reason != checkapi.ReasonUnavailable || r[1].Reason != checkapi.ReasonUnavailable {
				t.Fatalf("a batch with Redis paused: %s, want both unavailable", out)
			}
		}},
		{"the authorizer's settle", func(t *testing.T, _ *fixture, auth *authorizer.Handler, ids []string) {
			if _, err := auth.Settle(context.Background(), ids[0], bucketgate.OpSettle, 100); !errors.Is(err, authorizer.ErrUnavailable) {
				t.Fatalf("settle with Redis paused: %v, want ErrUnavailable", err)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := newBearerFixture(t, llmConfig)
			ids := []string{b.reserve(t, "alice"), b.reserve(t, "carol")}
			client := &secretReads{Client: redistest.Client(t, b.srv.Addr)}
			g := guard.New(bucket.New(client), guard.Options{Timeout: 100 * time.Millisecond, FailuresToOpen: guard.DefaultFailuresToOpen, ProbeInterval: time.Hour})
			check, auth := b.instance(t, client, g)
			check.invokeOK(t, []byte(`{"key":"cold","rules":[`+slowRule+`]}`)) // connected, the secrets never read
			pause(t, b.srv)
			for i := range guard.DefaultFailuresToOpen - 1 {
				before := client.reads.Load()
				tc.settle(t, check, auth, ids)
				if n := client.reads.Load() - before; n != 1 {
					t.Fatalf("settle %d read the secrets %d times, want once", i+1, n)
				}
			}
			// DefaultFailuresToOpen-1 failures counted: the next decision counts the last.
			q := bucketgate.Request{Identity: "cold", Rules: llmRule, Cost: 1}
			if r, err := g.Decide(context.Background(), q); err != nil || r.CircuitOpen {
				t.Fatalf("a check after %d settles: %+v, %v: want it sent to Redis (%d failures counted at most)", guard.DefaultFailuresToOpen-1, r, err, guard.DefaultFailuresToOpen-1)
			}
			if r, err := g.Decide(context.Background(), q); err != nil || !r.CircuitOpen {
				t.Fatalf("a check after %d settles and a check: %+v, %v: want the circuit open (each settle counted once)", guard.DefaultFailuresToOpen-1, r, err)
			}
		})
	}
}

// TestARequestWaitsForRedisOnce: a settle by the id alone that Redis does not give the
// secrets for, or a batch with such settles and checks of keys, through the check
// function or the authorizer, on an instance that never read the secrets (a cold
// start) or whose secrets refuse the id (signed under a secret written since by
// another instance, read again at the refusal), an idle second after its last call (a
// Lambda instance thawed: its first calls check their connections, bucket.IdleCheck),
// sends Redis one round trip, that read, and counts one failure in the circuit breaker:
// the request waits for Redis once. The decision after the read asked Redis again: a
// single settle checked its connection first (half the deadline more), and a batch
// sent its checks of keys to the Redis that had just failed to answer, waiting a whole
// timeout more and counting a second failure.
func TestARequestWaitsForRedisOnce(t *testing.T) {
	batch := func(t *testing.T, check *fixture, ids []string) {
		t.Helper()
		var res checkapi.BatchResult
		out := check.invokeOK(t, fmt.Appendf(nil, `{"checks":[{"key":"k1","rules":[%s]},{"op":"settle","reservation":%q,"cost":10},{"op":"cancel","reservation":%q}]}`, slowRule, ids[0], ids[1]))
		if err := json.Unmarshal(out, &res); err != nil {
			t.Fatal(err)
		}
		if len(res.Results) != 3 || slices.ContainsFunc(res.Results, func(r checkapi.Response) bool { return r.Reason != checkapi.ReasonUnavailable }) {
			t.Fatalf("a batch with Redis paused: %s, want each unavailable", out)
		}
	}
	single := func(t *testing.T, check *fixture, ids []string) {
		t.Helper()
		if r := decodeResponse(t, check.invokeOK(t, settlePayload(ids[0], 10))); r.Reason != checkapi.ReasonUnavailable {
			t.Fatalf("settle with Redis paused: %+v, want unavailable", r)
		}
	}
	for _, tc := range []struct {
		name    string
		rotated bool // the instance read the secrets; the ids are signed under a secret written since
		request func(t *testing.T, check *fixture, auth *authorizer.Handler, ids []string)
	}{
		{"cold, the check function's settle", false, func(t *testing.T, check *fixture, _ *authorizer.Handler, ids []string) { single(t, check, ids) }},
		{"cold, the check function's batch of a check, a settle and a cancel", false, func(t *testing.T, check *fixture, _ *authorizer.Handler, ids []string) { batch(t, check, ids) }},
		{"cold, the authorizer's settle", false, authorizerSettle},
		{"a secret not read yet, the check function's settle", true, func(t *testing.T, check *fixture, _ *authorizer.Handler, ids []string) { single(t, check, ids) }},
		{"a secret not read yet, the check function's batch", true, func(t *testing.T, check *fixture, _ *authorizer.Handler, ids []string) { batch(t, check, ids) }},
		{"a secret not read yet, the authorizer's settle", true, authorizerSettle},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := newBearerFixture(t, llmConfig)
			client := &secretReads{Client: redistest.Client(t, b.srv.Addr)}
			g := guard.New(bucket.New(client), guard.Options{Timeout: 100 * time.Millisecond, FailuresToOpen: guard.DefaultFailuresToOpen, ProbeInterval: time.Hour})
			check, auth := b.instance(t, client, g)
			check.invokeOK(t, []byte(`{"key":"cold","rules":[`+slowRule+`]}`)) // connected, the secrets not read
			if tc.rotated {
				if r := decodeResponse(t, check.invokeOK(t, settlePayload(b.reserve(t, "carol"), 1))); r.Reason != checkapi.ReasonOK {
					t.Fatalf("a settle that reads the secrets: %+v", r)
				}
				if _, err := b.srv.Command(context.Background(), "DEL", bucket.SecretKey); err != nil {
					t.Fatal(err)
				}
				b.auth.Guard = guard.New(bucket.New(b.client), guard.Options{Timeout: testTimeout}) // another instance, which writes another one
			}
			ids := []string{b.reserve(t, "alice"), b.reserve(t, "carol")}
			time.Sleep(max(bucket.IdleCheck, bucket.RefusedRecheck)) // idle, the secrets' last read as old
			pause(t, b.srv)
			trips := client.trips.Load()
			tc.request(t, check, auth, ids)
			if n := client.trips.Load() - trips; n != 1 {
				t.Errorf("the request sent Redis %d round trips, want 1 (its read of the secrets)", n)
			}
			if n := failuresCounted(t, g); n != 1 {
				t.Errorf("the request counted %d failures in the circuit breaker, want 1", n)
			}
		})
	}
}

// TestABatchAfterAnotherRequestsFailedRead: an instance whose read of the secrets at a
// refused id failed (Redis paused) does not read them again for a second
// (bucket.RefusedRecheck): a batch within that second, Redis back, whose settle of such
// an id fails at once with that earlier failure, still sends its checks of keys, which
// Redis decides. That failure is no failure of the batch's own request.
func TestABatchAfterAnotherRequestsFailedRead(t *testing.T) {
	b := newBearerFixture(t, llmConfig)
	client := redistest.Client(t, b.srv.Addr)
	g := guard.New(bucket.New(client), guard.Options{Timeout: 100 * time.Millisecond, FailuresToOpen: guard.DefaultFailuresToOpen, ProbeInterval: time.Hour})
	check, _ := b.instance(t, client, g)
	if r := decodeResponse(t, check.invokeOK(t, settlePayload(b.reserve(t, "carol"), 1))); r.Reason != checkapi.ReasonOK {
		t.Fatalf("a settle that reads the secrets: %+v", r)
	}
	if _, err := b.srv.Command(context.Background(), "DEL", bucket.SecretKey); err != nil {
		t.Fatal(err)
	}
	b.auth.Guard = guard.New(bucket.New(b.client), guard.Options{Timeout: testTimeout}) // another instance, which writes another one
	id := b.reserve(t, "alice")
	time.Sleep(bucket.RefusedRecheck) // the refused id reads the secrets again
	b.srv.Pause()
	if r := decodeResponse(t, check.invokeOK(t, settlePayload(id, 10))); r.Reason != checkapi.ReasonUnavailable {
		t.Fatalf("settle with Redis paused: %+v, want unavailable", r)
	}
	b.srv.Resume()
	var res checkapi.BatchResult
	out := check.invokeOK(t, fmt.Appendf(nil, `{"checks":[{"key":"k1","rules":[%s]},{"op":"settle","reservation":%q,"cost":10}]}`, slowRule, id))
	if err := json.Unmarshal(out, &res); err != nil {
		t.Fatal(err)
	}
	if len(res.Results) != 2 || res.Results[0].Reason != checkapi.ReasonOK {
		t.Fatalf("a batch of a check and the settle, Redis back: %s, want the check decided", out)
	}
}

// authorizerSettle settles ids[0] through auth, which must answer ErrUnavailable.
func authorizerSettle(t *testing.T, _ *fixture, auth *authorizer.Handler, ids []string) {
	t.Helper()
	if _, err := auth.Settle(context.Background(), ids[0], bucketgate.OpSettle, 10); !errors.Is(err, authorizer.ErrUnavailable) {
		t.Fatalf("settle with Redis paused: %v, want ErrUnavailable", err)
	}
}

// failuresCounted returns how many failures in a row g's circuit breaker has counted
// (a standalone server's one circuit, guard.DefaultFailuresToOpen of them to open),
// with Redis still failing: decisions go to Redis, each counting one more, until the
// open circuit answers one.
func failuresCounted(t *testing.T, g *guard.Guard) int {
	t.Helper()
	q := bucketgate.Request{Identity: "probe", Rules: llmRule, Cost: 1}
	for sent := 0; sent <= guard.DefaultFailuresToOpen; sent++ {
		r, err := g.Decide(context.Background(), q)
		if err != nil {
			t.Fatal(err)
		}
		if r.CircuitOpen {
			return guard.DefaultFailuresToOpen - sent
		}
	}
	t.Fatalf("the circuit is not open after %d failed decisions", guard.DefaultFailuresToOpen+1)
	return 0
}

// secretReads is a client that counts the round trips asked of it (trips), and the
// reads of the secrets among them (reads: a round trip with a GET of bucket.SecretKey),
// each of which waits for Redis: a proxy sees none that waits for a connection being
// made again (rueidis drops the one a deadline ended a call on).
type secretReads struct {
	rueidis.Client
	reads, trips atomic.Int64
}

// Do counts a round trip, and sends cmd.
func (c *secretReads) Do(ctx context.Context, cmd rueidis.Completed) rueidis.RedisResult {
	c.trips.Add(1)
	return c.Client.Do(ctx, cmd)
}

// DoMulti counts a round trip, and a read of the secrets among cmds, and sends them.
func (c *secretReads) DoMulti(ctx context.Context, cmds ...rueidis.Completed) []rueidis.RedisResult {
	c.trips.Add(1)
	for _, cmd := range cmds {
		if args := cmd.Commands(); len(args) == 2 && args[0] == "GET" && args[1] == bucket.SecretKey {
			c.reads.Add(1)
		}
	}
	return c.Client.DoMulti(ctx, cmds...)
}

// instance returns a check function and an authorizer deciding with g (on client), as
// an instance of each started apart from b's, with a registry cache of their own over
// b's source.
func (b *bearerFixture) instance(t *testing.T, client rueidis.Client, g *guard.Guard) (*fixture, *authorizer.Handler) {
	t.Helper()
	check := newFixture(t, client, b.check.cfg, guard.Options{})
	check.h.Guard, check.h.Config = g, registry.NewStatic(b.check.cfg, registry.NewCache(b.src, registry.Options{Size: 100}))
	check.h.OperatorFunction = "bucketgate-operator" // the stack's: service-facing
	auth := &authorizer.Handler{Guard: g, Config: check.h.Config, Identities: testSources(t), Log: slog.New(slog.DiscardHandler), Now: time.Now,
		Metrics: telemetry.NewEmitter(&strings.Builder{}, settings.DefaultNamespace, settings.DefaultStackName, "authorizer")}
	return check, auth
}
