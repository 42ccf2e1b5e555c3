package check

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
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

// secretReads is a client that counts the reads of the secrets asked of it (a round
// trip with a GET of bucket.SecretKey), each of which waits for Redis: a proxy sees
// none that waits for a connection being made again (rueidis drops the one a deadline
// ended a call on).
type secretReads struct {
	rueidis.Client
	reads atomic.Int64
}

// DoMulti counts a read of the secrets among cmds, and sends them.
func (c *secretReads) DoMulti(ctx context.Context, cmds ...rueidis.Completed) []rueidis.RedisResult {
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
