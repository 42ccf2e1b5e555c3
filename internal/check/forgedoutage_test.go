package check

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/bucketgate/bucketgate"
	"github.com/bucketgate/bucketgate/checkapi"
	"github.com/bucketgate/bucketgate/internal/authorizer"
	"github.com/bucketgate/bucketgate/internal/bucket"
	"github.com/bucketgate/bucketgate/internal/claims"
	"github.com/bucketgate/bucketgate/internal/guard"
	"github.com/bucketgate/bucketgate/internal/testkit/redistest"
	"github.com/bucketgate/bucketgate/ratelimitheaders"
)

// TestForgedIDDuringAnOutageTellsNothing: while Redis does not answer, so that an id's
// signature cannot be checked (on an instance that never read the secrets, or one
// whose secrets refuse the id and cannot be read again, or while the circuit of the
// secrets is open), a settle, a cancel or a
// release of a forged id naming a key not registered and one naming a registered key
// are answered alike, by the check function and by the authorizer: unavailable, with
// no plan, rule or limit. The first was a conflict saying the key "is no longer
// registered", the second unavailable with the key's plan, its first rule and limit.
func TestForgedIDDuringAnOutageTellsNothing(t *testing.T) {
	b := newBearerFixture(t, llmConfig)
	id := b.reserve(t, "alice")
	lease, _ := b.authorize(t, "alice", "GET", "/v1/stream")[ratelimitheaders.KeyLease].(string)
	forge := func(id string, key string) string {
		return withClaims(t, id, claims.Claims{Identity: "key:" + bucketgate.KeyDigest(key), Route: claimsOf(t, id).Route}.String())
	}
	ops := []struct {
		name    string
		op      bucketgate.Op
		payload string // %q: the id
		id      string
	}{
		{"settle", bucketgate.OpSettle, `{"op":"settle","reservation":%q,"cost":1}`, id},
		{"cancel", bucketgate.OpCancel, `{"op":"cancel","reservation":%q}`, id},
		{"release", bucketgate.OpRelease, `{"op":"release","lease":%q}`, lease},
	}
	for _, inst := range []struct {
		name       string
		warm, open bool
	}{
		{"a cold instance", false, false},
		{"a warm instance", true, false},
		{"a cold instance, the circuit of the secrets open", false, true},
	} {
		t.Run(inst.name, func(t *testing.T) {
			client := redistest.Client(t, b.srv.Addr)
			opts := guard.Options{Timeout: 100 * time.Millisecond}
			if inst.open {
				opts.FailuresToOpen, opts.ProbeInterval = 1, time.Hour
			}
			g := guard.New(bucket.New(client), opts)
			check, auth := b.instance(t, client, g)
			check.invokeOK(t, []byte(`{"key":"cold","rules":[`+slowRule+`]}`)) // connected, the secrets not read
			if inst.warm {
				if r := decodeResponse(t, check.invokeOK(t, settlePayload(b.reserve(t, "carol"), 1))); r.Reason != checkapi.ReasonOK {
					t.Fatalf("a settle before the outage: %+v", r)
				}
				time.Sleep(bucket.RefusedRecheck) // a refused id reads the secrets again
			}
			pause(t, b.srv)
			if inst.open { // Signed's failure opens it: the ids after it are verified under no secret, Redis not asked
				if err := g.Signed(context.Background(), "key:"+bucketgate.KeyDigest("alice"), id, false); errors.Is(err, guard.ErrCircuitOpen) || err == nil {
					t.Fatalf("Signed with Redis paused: %v, want Redis's failure", err)
				}
				if err := g.Signed(context.Background(), "key:"+bucketgate.KeyDigest("alice"), id, false); !errors.Is(err, guard.ErrCircuitOpen) {
					t.Fatalf("Signed after a failure: %v, want the circuit open", err)
				}
			}
			for _, op := range ops {
				t.Run(op.name, func(t *testing.T) {
					var answers [2]string
					for i, key := range []string{"nobody", "carol"} { // not registered; registered, on llm
						out, err := check.invoke(fmt.Appendf(nil, op.payload, forge(op.id, key)))
						if err != nil {
							t.Fatalf("the check function, a forged id of key %q: %v: want unavailable", key, err)
						}
						if r := decodeResponse(t, out); r.Reason != checkapi.ReasonUnavailable || r.Plan != "" || r.Rule != "" || r.Limit != 0 {
							t.Fatalf("the check function, a forged id of key %q: %s: want unavailable, no plan, rule or limit", key, out)
						}
						answers[i] = string(out)
					}
					if answers[0] != answers[1] {
						t.Fatalf("the check function: %s for a key not registered, %s for a registered one: want the same", answers[0], answers[1])
					}
					var results [2]guard.Result
					for i, key := range []string{"nobody", "carol"} {
						r, err := auth.Settle(context.Background(), forge(op.id, key), op.op, 0)
						if !errors.Is(err, authorizer.ErrUnavailable) || strings.Contains(err.Error(), "registered") || r.Rule != "" || r.Limit != 0 {
							t.Fatalf("the authorizer, a forged id of key %q: %+v, %v: want ErrUnavailable, no rule or limit", key, r.Decision, err)
						}
						answers[i], results[i] = err.Error(), r
					}
					if answers[0] != answers[1] || !reflect.DeepEqual(results[0].Decision, results[1].Decision) || results[0].Failure != results[1].Failure {
						t.Fatalf("the authorizer: %+v, %s for a key not registered, %+v, %s for a registered one: want the same", results[0].Decision, answers[0], results[1].Decision, answers[1])
					}
				})
			}
		})
	}
}
