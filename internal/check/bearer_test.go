package check

import (
	"context"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/lambda"
	"github.com/redis/rueidis"

	"github.com/bucketgate/bucketgate"
	"github.com/bucketgate/bucketgate/checkapi"
	"github.com/bucketgate/bucketgate/checkclient"
	"github.com/bucketgate/bucketgate/internal/authorizer"
	"github.com/bucketgate/bucketgate/internal/bucket"
	"github.com/bucketgate/bucketgate/internal/claims"
	"github.com/bucketgate/bucketgate/internal/config"
	"github.com/bucketgate/bucketgate/internal/guard"
	"github.com/bucketgate/bucketgate/internal/identity"
	"github.com/bucketgate/bucketgate/internal/registry"
	"github.com/bucketgate/bucketgate/internal/settings"
	"github.com/bucketgate/bucketgate/internal/telemetry"
	"github.com/bucketgate/bucketgate/internal/testkit/lambdatest"
	"github.com/bucketgate/bucketgate/internal/testkit/redistest"
	"github.com/bucketgate/bucketgate/internal/testkit/registrytest"
	"github.com/bucketgate/bucketgate/ratelimitheaders"
)

// llmConfig is an LLM API's: POST /v1/chat reserves 400 tokens (max_tokens) for a
// minute, GET /v1/models takes 1, GET /v1/stream takes 1 and holds one stream at most. The buckets refill so slowly that a test's own
// duration changes no floor of them.
const llmConfig = `defaultPlan: free
plans:
  free: [{name: tokens, capacity: 500, refillPerSecond: 0.001}]
  llm: [{name: tokens, capacity: 1000, refillPerSecond: 0.001}]
routes:
  - {method: POST, path: /v1/chat, reserve: 400, ttlMs: 60000}
  - {method: GET, path: /v1/models}
  - {method: GET, path: /v1/stream, rules: [{name: streams, concurrency: 1}]}
`

// llmKeys are the registry of the tests: keys "alice" and "carol" on llm; the account
// acme on llm, with key "bob" of it, which has a rule of its own.
var llmKeys = []registry.Record{
	{ID: "key:" + bucketgate.KeyDigest("alice"), Plan: "llm"},
	{ID: "key:" + bucketgate.KeyDigest("carol"), Plan: "llm"},
	{ID: "account:acme", Plan: "llm", Owner: "Acme"},
	{ID: "key:" + bucketgate.KeyDigest("bob"), Account: "acme", Rules: []bucketgate.Rule{{Name: "tokens", Capacity: 600, RefillPerSecond: 0.001}}},
}

// bearerFixture is the authorizer and the stack's (service-facing) check function on
// one real server, each with its own registry cache over one source.
type bearerFixture struct {
	auth   *authorizer.Handler
	check  *fixture
	src    *registrytest.Source
	srv    *redistest.Server
	client rueidis.Client
}

func newBearerFixture(t *testing.T, doc string) *bearerFixture {
	t.Helper()
	srv := redistest.Start(t)
	client := redistest.Client(t, srv.Addr)
	cfg, err := config.Parse([]byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	src := registrytest.New(llmKeys...)
	cache := func() *registry.Cache { return registry.NewCache(src, registry.Options{Size: 100}) }
	ids, err := identity.NewResolver(settings.DefaultAPIKeyHeader, settings.DefaultIPv6Prefix)
	if err != nil {
		t.Fatal(err)
	}
	b := &bearerFixture{src: src, srv: srv, client: client, auth: &authorizer.Handler{
		Guard:      guard.New(bucket.New(client), guard.Options{Timeout: testTimeout}),
		Config:     registry.NewStatic(cfg, cache()),
		Identities: ids,
		Metrics:    telemetry.NewEmitter(&strings.Builder{}, settings.DefaultNamespace, settings.DefaultStackName, "authorizer"),
		Log:        slog.New(slog.DiscardHandler),
		Now:        time.Now,
	}}
	b.check = newFixture(t, client, cfg, guard.Options{})
	b.check.h.Config = registry.NewStatic(cfg, cache())
	b.check.h.OperatorFunction = "bucketgate-operator" // the stack's: service-facing
	return b
}

// authorize decides a request to method and path with API key key ("" for none) from
// source, and returns its authorizer context.
func (b *bearerFixture) authorize(t *testing.T, key, method, path string) map[string]any {
	t.Helper()
	c := authorizer.Call{SourceIP: "198.51.100.7", Method: method, Path: path}
	if key != "" {
		c.Keys.Add(key)
	}
	o, err := b.auth.Authorize(context.Background(), c)
	if err != nil {
		t.Fatalf("authorize %s %s: %v", method, path, err)
	}
	return b.auth.Context(o)
}

// reserve is authorize for a request to the reserving route, which must be allowed with
// a reservation; it returns the reservation's id.
func (b *bearerFixture) reserve(t *testing.T, key string) string {
	t.Helper()
	ctx := b.authorize(t, key, "POST", "/v1/chat")
	id, _ := ctx[ratelimitheaders.KeyReservation].(string)
	if ctx[ratelimitheaders.KeyReason] != "ok" || !strings.HasPrefix(id, "r3.") || len(id) > 512 {
		t.Fatalf("reserve with key %q: context %v: want allowed with a reservation of 512 bytes at most", key, ctx)
	}
	return id
}

// claimsOf returns the claims of id, a reservation the authorizer made, which name its
// route.
func claimsOf(t *testing.T, id string) claims.Claims {
	t.Helper()
	raw, _ := bucket.Claims(id)
	c, err := claims.Parse(raw)
	if err != nil || c.Route == "" {
		t.Fatalf("the reservation's claims %q: %+v, %v: want its route", raw, c, err)
	}
	return c
}

// tokens returns the whole tokens left in identity's rule of rules called name: a peek.
func (b *bearerFixture) tokens(t *testing.T, id string, rules []bucketgate.Rule, name string) int64 {
	t.Helper()
	d, err := bucket.New(b.client).Decide(context.Background(), bucketgate.Request{Identity: id, Rules: rules})
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range rules {
		if r.Name == name {
			return d.Rules[i].Remaining
		}
	}
	t.Fatalf("no rule %s", name)
	return 0
}

var llmRule = []bucketgate.Rule{{Name: "tokens", Capacity: 1000, RefillPerSecond: 0.001}}

// settlePayload is a settle by the reservation alone, of cost.
func settlePayload(id string, cost int64) []byte {
	return fmt.Appendf(nil, `{"op":"settle","reservation":%q,"cost":%d}`, id, cost)
}

// TestSettleByReservationAlone: the authorizer reserves the route's estimate and puts
// the id in its context; the stack's check function settles it with the id alone (for
// an API key, an account's key with a rule of its own, and a source address), giving
// back what the estimate took beyond the actual cost or taking the rest into debt;
// settling again answers the first outcome; a cancel gives the estimate back.
func TestSettleByReservationAlone(t *testing.T) {
	b := newBearerFixture(t, llmConfig)
	alice := "key:" + bucketgate.KeyDigest("alice")

	id := b.reserve(t, "alice")
	if got := b.tokens(t, alice, llmRule, "tokens"); got != 600 {
		t.Fatalf("after the reserve: %d tokens, want 600", got)
	}
	s := decodeResponse(t, b.check.invokeOK(t, settlePayload(id, 100)))
	if !s.Allowed || s.Settled != 100 || s.Replayed || s.Plan != "llm" || s.Remaining != 900 {
		t.Fatalf("settle at 100 = %+v: want 300 back, 900 left", s)
	}
	again := decodeResponse(t, b.check.invokeOK(t, settlePayload(id, 999)))
	if !again.Replayed || again.Settled != 100 || b.tokens(t, alice, llmRule, "tokens") != 900 {
		t.Fatalf("settle again = %+v: want the first outcome, nothing changed", again)
	}

	// Over the estimate: the rest is taken, into debt.
	id = b.reserve(t, "alice")
	s = decodeResponse(t, b.check.invokeOK(t, settlePayload(id, 1500)))
	if s.Settled != 1500 || s.Remaining != 0 || s.ResetAfterMS < 1_599_000_000 { // 1600 tokens short of full, at 0.001 per second
		t.Fatalf("settle at 1500 = %+v: want 900-1500 = -600 tokens, 1.6e6 s from full", s)
	}
	if ctx := b.authorize(t, "alice", "POST", "/v1/chat"); ctx[ratelimitheaders.KeyReason] != "limited" || ctx[ratelimitheaders.KeyReservation] != "" {
		t.Fatalf("a reserve in debt: context %v: want limited, no reservation", ctx)
	}

	// An account's key with a rule of its own: the account's buckets, the key's rule.
	bob := bucketgate.KeyRuleName(bucketgate.KeyDigest("bob"), "tokens")
	acme := []bucketgate.Rule{llmRule[0], {Name: bob, Capacity: 600, RefillPerSecond: 0.001}}
	id = b.reserve(t, "bob")
	if c := decodeResponse(t, b.check.invokeOK(t, fmt.Appendf(nil, `{"op":"cancel","reservation":%q}`, id))); !c.Allowed {
		t.Fatalf("cancel = %+v", c)
	}
	if a, k := b.tokens(t, "acct:acme", acme, "tokens"), b.tokens(t, "acct:acme", acme, bob); a != 1000 || k != 600 {
		t.Fatalf("after the cancel: account %d, key's own %d: want every token back (1000, 600)", a, k)
	}

	// A source address, on the default plan.
	id = b.reserve(t, "")
	free := []bucketgate.Rule{{Name: "tokens", Capacity: 500, RefillPerSecond: 0.001}}
	if s := decodeResponse(t, b.check.invokeOK(t, settlePayload(id, 50))); s.Settled != 50 || s.Plan != "free" || b.tokens(t, "ip:198.51.100.7", free, "tokens") != 450 {
		t.Fatalf("settle of the address's = %+v: want 450 left on free", s)
	}

	// A batch of settles by the reservation alone: one round trip, each its own.
	one, two := b.reserve(t, "carol"), b.reserve(t, "carol")
	var batch checkapi.BatchResult
	if err := json.Unmarshal(b.check.invokeOK(t, fmt.Appendf(nil, `{"checks":[{"op":"settle","reservation":%q,"cost":10},{"op":"cancel","reservation":%q}]}`, one, two)), &batch); err != nil {
		t.Fatal(err)
	}
	if r := batch.Results; len(r) != 2 || r[0].Settled != 10 || r[1].Remaining != 990 {
		t.Fatalf("a batch of a settle at 10 and a cancel: %+v, want 990 left", r)
	}

	// A route without reserve is a check, as before: no reservation.
	if ctx := b.authorize(t, "", "GET", "/v1/models"); ctx[ratelimitheaders.KeyReservation] != "" || ctx[ratelimitheaders.KeyRemaining] != int64(449) {
		t.Fatalf("a route without reserve: context %v: want a check of 1, no reservation", ctx)
	}

	// A route inserted before the reserving one (another removed, another moved) since
	// the reserve: settled, the id names its route by its method and path.
	id = b.reserve(t, "carol")
	moved := newFixture(t, b.client, nil, guard.Options{})
	moved.h.Config = registry.NewStatic(mustConfig(t, movedRoutes), registry.NewCache(b.src, registry.Options{Size: 100}))
	carol := "key:" + bucketgate.KeyDigest("carol")
	if s := decodeResponse(t, moved.invokeOK(t, settlePayload(id, 100))); s.Settled != 100 || b.tokens(t, carol, llmRule, "tokens") != 890 {
		t.Fatalf("settle after a route inserted before the reserving one = %+v: want 300 back, 890 left", s)
	}
}

// A settle by the reservation alone carries the registry's account and owner of whose
// buckets it settles, as the reserve did, for its events' detail (a settle above its
// estimate may cross a quota's threshold): for a key of an account, the account's name
// and owner; for a source address, none.
func TestSettleByReservationNamesTheAccount(t *testing.T) {
	b := newBearerFixture(t, llmConfig)
	v, _ := b.check.h.Config.Current(t.Context())
	for _, tc := range []struct {
		name, key, account, owner string
	}{
		{"a key of an account", "bob", "acme", "Acme"},
		{"a source address", "", "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			checks, batch, err := parse(settlePayload(b.reserve(t, tc.key), 500), v.Config, b.check.h.Identities)
			if err == nil {
				err = resolveBearers(t.Context(), b.check.h.Guard, v, checks, batch, &telemetry.Invocation{})
			}
			if err != nil {
				t.Fatal(err)
			}
			if c := checks[0]; c.account != tc.account || c.owner != tc.owner {
				t.Fatalf("account %q, owner %q: want %q, %q", c.account, c.owner, tc.account, tc.owner)
			}
		})
	}
}

// A settle by the reservation alone counts the registry lookups it makes in
// RegistryLookups, as a check naming its key does: the key's and its account's (of a
// key revoked since too, settled under its account's plan); a source address's, none.
func TestSettleByReservationCountsItsLookups(t *testing.T) {
	b := newBearerFixture(t, llmConfig)
	revoked := registry.Record{ID: "key:" + bucketgate.KeyDigest("ruth"), Account: "acme"}
	b.src.Put(revoked)
	for _, tc := range []struct {
		name, key string
		want      int
	}{
		{"a key of an account", "bob", 2},
		{"a key of an account revoked since", "ruth", 2},
		{"a source address", "", 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			id := b.reserve(t, tc.key)
			if tc.key == "ruth" {
				revoked.Status = registry.StatusRevoked
				b.src.Put(revoked)
				b.check.h.Config = registry.NewStatic(b.check.cfg, registry.NewCache(b.src, registry.Options{Size: 100})) // not the key as cached
			}
			b.check.metrics.Reset()
			b.check.invokeOK(t, settlePayload(id, 500))
			counted := 0
			for _, doc := range emfLines(t, b.check.metrics) {
				n, _ := doc[telemetry.MetricRegistryLookups].(float64)
				counted += int(n)
			}
			if counted != tc.want {
				t.Fatalf("the settle counted %d lookups, want %d:\n%s", counted, tc.want, b.check.metrics)
			}
		})
	}
}

// movedRoutes is llmConfig with a route of other rules inserted before the reserving
// one, in its place (first), GET /v1/models removed and GET /v1/stream moved before it.
const movedRoutes = `defaultPlan: free
plans:
  free: [{name: tokens, capacity: 500, refillPerSecond: 0.001}]
  llm: [{name: tokens, capacity: 1000, refillPerSecond: 0.001}]
routes:
  - {method: POST, path: /v1/embeddings, cost: 2, rules: [{name: embeddings, capacity: 100, refillPerSecond: 1}]}
  - {method: GET, path: /v1/stream, rules: [{name: streams, concurrency: 1}]}
  - {method: POST, path: /v1/chat, reserve: 400, ttlMs: 60000}
`

// mustConfig parses the configuration document doc, which must be valid.
func mustConfig(t *testing.T, doc string) *config.Config {
	t.Helper()
	c, err := config.Parse([]byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// forged returns id with the last character of its MAC changed (never to itself: the
// MAC is compared as written).
func forged(id string) string {
	last := byte('A')
	if id[len(id)-1] == last {
		last = 'B'
	}
	return id[:len(id)-1] + string(last)
}

// withClaims returns id with its claims replaced by claims, its MAC kept: an id altered
// by a caller.
func withClaims(t *testing.T, id, claims string) string {
	t.Helper()
	parts := strings.Split(id, ".")
	p, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil || len(parts) != 3 {
		t.Fatalf("id %q: %v", id, err)
	}
	head := 32 // the nonce, estimate and expiry; then, in an r3 id, its rules' number and prints
	if parts[0] == "r3" {
		head += 1 + 4*int(p[32])
	}
	return parts[0] + "." + base64.RawURLEncoding.EncodeToString(append(p[:head:head], claims...)) + "." + parts[2]
}

// TestSettleByReservationRefused: a forged id, one whose identity was altered, one
// settled in another identity's name, one the check function made, one whose route
// has none of its rules left, and one whose key changed since: each a conflict that
// writes nothing, the reservation charged at its estimate; the id alone settles, and
// nothing else; one whose route has a rule more since settles.
func TestSettleByReservationRefused(t *testing.T) {
	b := newBearerFixture(t, llmConfig)
	alice := "key:" + bucketgate.KeyDigest("alice")
	id := b.reserve(t, "alice")
	c := claimsOf(t, id)
	own := decodeResponse(t, b.check.invokeOK(t, fmt.Appendf(nil, `{"key":"svc","rules":[%s],"op":"reserve","cost":2}`, slowRule)))

	changed := newFixture(t, b.client, nil, guard.Options{})
	renamed, err := config.Parse([]byte(strings.Replace(llmConfig, "llm: [{name: tokens,", "llm: [{name: credits,", 1)))
	if err != nil {
		t.Fatal(err)
	}
	changed.h.Config = registry.NewStatic(renamed, registry.NewCache(b.src, registry.Options{Size: 100}))
	noRoutes, err := config.Parse([]byte(llmConfig[:strings.Index(llmConfig, "routes:")]))
	if err != nil {
		t.Fatal(err)
	}
	gone := newFixture(t, b.client, nil, guard.Options{})
	gone.h.Config = registry.NewStatic(noRoutes, registry.NewCache(b.src, registry.Options{Size: 100}))
	operator := newFixture(t, b.client, nil, guard.Options{})
	operator.h.Config = registry.NewStatic(b.check.cfg, registry.NewCache(b.src, registry.Options{Size: 100}))

	tests := []struct {
		name, payload, errType, want string
		f                            *fixture
	}{
		{"forged", string(settlePayload(forged(id), 1)), checkapi.ErrorTypeConflict, "not an id this limiter made", b.check},
		{"identity altered", string(settlePayload(withClaims(t, id, strings.Replace(c.String(), bucketgate.KeyDigest("alice"), bucketgate.KeyDigest("carol"), 1)), 1)), checkapi.ErrorTypeConflict, "not an id this limiter made", b.check},
		{"identity altered to an account's", string(settlePayload(withClaims(t, id, claims.Claims{Identity: "acct:acme", Key: "key:" + bucketgate.KeyDigest("bob"), Route: c.Route}.String()), 1)), checkapi.ErrorTypeConflict, "not an id this limiter made", b.check},
		{"claims cut", string(settlePayload(withClaims(t, id, ""), 1)), checkapi.ErrorTypeConflict, "not an id the limiter made to be settled by itself", b.check},
		{"claims garbled", string(settlePayload(withClaims(t, id, "a2 tenant:x -"), 1)), checkapi.ErrorTypeConflict, "not an id the limiter made to be settled by itself", b.check},
		{"settled as another identity", fmt.Sprintf(`{"identity":"key:%s","plan":"llm","op":"settle","reservation":%q,"cost":1}`, bucketgate.KeyDigest("bob"), id), checkapi.ErrorTypeConflict, "not an id this limiter made", operator},
		{"the check function's own id alone", string(settlePayload(own.Reservation, 1)), checkapi.ErrorTypeConflict, "names its key (or identity)", b.check},
		{"none of the route's rules left", string(settlePayload(id, 1)), checkapi.ErrorTypeConflict, "not an id this limiter made for the identity and any rule", changed},
		{"the route gone", string(settlePayload(id, 1)), checkapi.ErrorTypeConflict, "route (" + c.Route + ") is no longer in the configuration", gone},
		{"released as a lease", fmt.Sprintf(`{"op":"release","lease":%q}`, id), checkapi.ErrorTypeConflict, "lease: conflict: lease \"r3.", b.check},
		{"released as a lease, said so", fmt.Sprintf(`{"op":"release","lease":%q}`, id), checkapi.ErrorTypeConflict, "a reservation's id, not a lease's: a settle or a cancel ends it", b.check},
		{"a check by the id alone", fmt.Sprintf(`{"reservation":%q,"cost":5}`, id), checkapi.ErrorTypeInvalidRequest, "only with op settle, cancel or release", b.check},
		{"a reserve by the id alone", fmt.Sprintf(`{"op":"reserve","reservation":%q,"cost":5}`, id), checkapi.ErrorTypeInvalidRequest, "only with op settle, cancel or release", b.check},
		{"a settle without its cost", fmt.Sprintf(`{"op":"settle","reservation":%q}`, id), checkapi.ErrorTypeInvalidRequest, "cost: missing", b.check},
		{"a settle with a requestId", fmt.Sprintf(`{"op":"settle","reservation":%q,"cost":1,"requestId":"r"}`, id), checkapi.ErrorTypeInvalidRequest, "requestId: not with a settle", b.check},
	}
	for _, tt := range tests {
		_, err := tt.f.invoke([]byte(tt.payload))
		if fe := functionError(t, err); fe.Type != tt.errType || !strings.Contains(fe.Message, tt.want) {
			t.Errorf("%s: %+v, want %s mentioning %q", tt.name, fe, tt.errType, tt.want)
		}
	}
	if got := b.tokens(t, alice, llmRule, "tokens"); got != 600 {
		t.Fatalf("after the refusals: %d tokens, want 600: the estimate still charged, nothing else written", got)
	}

	// A rule added to the route since: the id settles, its tokens given back.
	added := newFixture(t, b.client, nil, guard.Options{})
	routeRules, err := config.Parse([]byte(strings.Replace(llmConfig, "ttlMs: 60000}", "ttlMs: 60000, rules: [{name: chats, capacity: 500, refillPerSecond: 1}]}", 1)))
	if err != nil {
		t.Fatal(err)
	}
	added.h.Config = registry.NewStatic(routeRules, registry.NewCache(b.src, registry.Options{Size: 100}))
	carol := "key:" + bucketgate.KeyDigest("carol")
	if _, err := added.invoke(settlePayload(b.reserve(t, "carol"), 1)); err != nil {
		t.Fatalf("a settle after a rule was added to the route: %v", err)
	}
	if got := b.tokens(t, carol, llmRule, "tokens"); got != 999 {
		t.Fatalf("after the settle under the route's rules of now: %d tokens, want 999", got)
	}

	// A key revoked since its reserve: refused, the estimate stays charged.
	b.src.Put(registry.Record{ID: alice, Plan: "llm", Status: registry.StatusRevoked})
	revoked := newFixture(t, b.client, nil, guard.Options{})
	revoked.h.Config = registry.NewStatic(b.check.cfg, registry.NewCache(b.src, registry.Options{Size: 100}))
	_, err = revoked.invoke(settlePayload(id, 1))
	if fe := functionError(t, err); fe.Type != checkapi.ErrorTypeConflict || !strings.Contains(fe.Message, "is no longer registered") {
		t.Errorf("a revoked key's reservation: %+v, want a conflict", fe)
	}
	if got := b.tokens(t, alice, llmRule, "tokens"); got != 600 {
		t.Fatalf("after the revoked key's settle: %d tokens, want 600", got)
	}
}

// TestSettleRequestEndToEnd: a backend's request carries the authorizer's reservation
// in HeaderReservation (as the templates map it); checkclient's SettleRequest settles
// it, through the AWS SDK and the Lambda Invoke API, with this function on a real
// server; a request that carries none is ErrNoReservation, with nothing sent.
func TestSettleRequestEndToEnd(t *testing.T) {
	const function = "bucketgate-check"
	b := newBearerFixture(t, llmConfig)
	srv := lambdatest.Start(t, map[string]lambda.Handler{function: lambda.NewHandler(b.check.h)})
	checks := checkclient.New(srv.Client(), function)

	r := httptest.NewRequest("POST", "/v1/chat", nil)
	r.Header.Set(ratelimitheaders.HeaderReservation, b.reserve(t, "alice"))
	res, err := checks.SettleRequest(r.Context(), r, 250)
	if err != nil || res.Settled != 250 || res.Remaining != 750 {
		t.Fatalf("SettleRequest = %+v, %v: want 150 back, 750 left", res, err)
	}
	if again, err := checks.SettleRequest(r.Context(), r, 1); err != nil || !again.Replayed || again.Settled != 250 {
		t.Fatalf("SettleRequest again = %+v, %v: want the first outcome", again, err)
	}
	r.Header.Set(ratelimitheaders.HeaderReservation, b.reserve(t, "alice"))
	if c, err := checks.CancelReservation(r.Context(), ratelimitheaders.Reservation(r)); err != nil || c.Remaining != 750 {
		t.Fatalf("CancelReservation = %+v, %v: want the estimate back, 750 left", c, err)
	}
	if _, err := checks.SettleRequest(r.Context(), httptest.NewRequest("GET", "/v1/models", nil), 1); !errors.Is(err, ratelimitheaders.ErrNoReservation) {
		t.Fatalf("SettleRequest of a request without a reservation: %v, want ErrNoReservation", err)
	}
	forged := httptest.NewRequest("POST", "/v1/chat", nil)
	forged.Header.Set(ratelimitheaders.HeaderReservation, "r2.AAAA.BBBB")
	var fe *checkclient.FunctionError
	if _, err := checks.SettleRequest(r.Context(), forged, 1); !errors.As(err, &fe) || fe.Type != checkapi.ErrorTypeConflict {
		t.Fatalf("SettleRequest of a forged id: %v, want a conflict", err)
	}
}

// TestSettleRequestReadsTheLimitersCopy: API Gateway overwrites the reservation header
// of the exact name alone, so a client may send the header spelled with '_' beside it
// (X_RateLimit_Reservation). The backend's SettleRequest still settles the limiter's id:
// a request read as holding none goes unsettled, charged at its estimate whatever it
// used, so a client who sent the copy paid 400 for 900 tokens of work.
func TestSettleRequestReadsTheLimitersCopy(t *testing.T) {
	const function = "bucketgate-check"
	alice := "key:" + bucketgate.KeyDigest("alice")
	for _, spelling := range []string{"X_RateLimit_Reservation", "x_ratelimit-reservation"} {
		t.Run(spelling, func(t *testing.T) {
			b := newBearerFixture(t, llmConfig)
			srv := lambdatest.Start(t, map[string]lambda.Handler{function: lambda.NewHandler(b.check.h)})
			checks := checkclient.New(srv.Client(), function)
			r := httptest.NewRequest("POST", "/v1/chat", nil)
			r.Header.Set(ratelimitheaders.HeaderReservation, b.reserve(t, "alice")) // the gateway's
			r.Header[spelling] = []string{"r2.the-clients-own"}
			res, err := checks.SettleRequest(r.Context(), r, 900)
			if err != nil || res.Settled != 900 {
				t.Fatalf("SettleRequest at 900 with a client's %s = %+v, %v: want the limiter's reservation settled at 900", spelling, res, err)
			}
			if got := b.tokens(t, alice, llmRule, "tokens"); got != 100 {
				t.Fatalf("after the settle: %d tokens, want 100 (900 taken, not the estimate of 400)", got)
			}
		})
	}
}

// TestReleaseByLeaseAlone: on a route with a concurrency rule, the authorizer's context
// carries the lease it acquired (and no reservation); the stack's check function
// releases it with the lease alone, which frees the stream; releasing again changes
// nothing; a forged lease is a conflict, and a lease with op release only.
func TestReleaseByLeaseAlone(t *testing.T) {
	b := newBearerFixture(t, llmConfig)
	ctx := b.authorize(t, "carol", "GET", "/v1/stream")
	lease, _ := ctx[ratelimitheaders.KeyLease].(string)
	if ctx[ratelimitheaders.KeyReason] != "ok" || !strings.HasPrefix(lease, "r3.") || ctx[ratelimitheaders.KeyReservation] != "" {
		t.Fatalf("GET /v1/stream: context %v: want allowed with a lease, no reservation", ctx)
	}
	if busy := b.authorize(t, "carol", "GET", "/v1/stream"); busy[ratelimitheaders.KeyReason] != "limited" || busy[ratelimitheaders.KeyLease] != "" {
		t.Fatalf("a second stream: context %v: want limited (one stream at most), no lease", busy)
	}
	release := fmt.Appendf(nil, `{"op":"release","lease":%q}`, lease)
	if r := decodeResponse(t, b.check.invokeOK(t, release)); r.Released == nil || !*r.Released {
		t.Fatalf("release by the lease alone = %+v, want released", r)
	}
	if r := decodeResponse(t, b.check.invokeOK(t, release)); r.Released == nil || *r.Released {
		t.Fatalf("release again = %+v, want nothing released", r)
	}
	if again := b.authorize(t, "carol", "GET", "/v1/stream"); again[ratelimitheaders.KeyReason] != "ok" {
		t.Fatalf("a stream after the release: context %v: want allowed", again)
	}
	for name, tt := range map[string]struct{ payload, errType, want string }{
		"forged":                     {fmt.Sprintf(`{"op":"release","lease":%q}`, forged(lease)), checkapi.ErrorTypeConflict, "not an id this limiter made"},
		"settled":                    {fmt.Sprintf(`{"op":"settle","lease":%q,"cost":1}`, lease), checkapi.ErrorTypeInvalidRequest, "reservation: missing: a settle needs the reservation"},
		"a reservation":              {fmt.Sprintf(`{"op":"release","reservation":%q}`, lease), checkapi.ErrorTypeInvalidRequest, "reservation: only with op settle or cancel"},
		"settled as a reservation":   {fmt.Sprintf(`{"op":"settle","reservation":%q,"cost":1}`, lease), checkapi.ErrorTypeConflict, "reservation: conflict: reservation \"r3."},
		"cancelled as a reservation": {fmt.Sprintf(`{"op":"cancel","reservation":%q}`, lease), checkapi.ErrorTypeConflict, "a lease's id, not a reservation's: a release returns it"},
	} {
		_, err := b.check.invoke([]byte(tt.payload))
		if fe := functionError(t, err); fe.Type != tt.errType || !strings.Contains(fe.Message, tt.want) {
			t.Errorf("%s: %+v, want %s mentioning %q", name, fe, tt.errType, tt.want)
		}
	}

	// The route's concurrency rule gone since the acquire (a bucket of the same name in
	// its place): a conflict, as any change of the route's rules, through the check
	// function and the authorizer's Settle (the middleware's Release) alike.
	held, _ := b.authorize(t, "alice", "GET", "/v1/stream")[ratelimitheaders.KeyLease].(string)
	changed := mustConfig(t, strings.Replace(llmConfig, "{name: streams, concurrency: 1}", "{name: streams, capacity: 5, refillPerSecond: 1}", 1))
	noLease := newFixture(t, b.client, nil, guard.Options{})
	noLease.h.Config = registry.NewStatic(changed, registry.NewCache(b.src, registry.Options{Size: 100}))
	_, err := noLease.invoke(fmt.Appendf(nil, `{"op":"release","lease":%q}`, held))
	if fe := functionError(t, err); fe.Type != checkapi.ErrorTypeConflict || !strings.Contains(fe.Message, "no concurrency rule") {
		t.Errorf("a release after the route's concurrency rule went: %+v, want a conflict naming it", fe)
	}
	auth := &authorizer.Handler{Guard: b.auth.Guard, Config: registry.NewStatic(changed, registry.NewCache(b.src, registry.Options{Size: 100})),
		Identities: b.auth.Identities, Metrics: b.auth.Metrics, Log: b.auth.Log, Now: b.auth.Now}
	if _, err := auth.Settle(context.Background(), held, bucketgate.OpRelease, 0); !errors.Is(err, bucketgate.ErrConflict) || !strings.Contains(err.Error(), "no concurrency rule") {
		t.Errorf("the authorizer's release after the route's concurrency rule went: %v, want a conflict naming it", err)
	}
}

// TestReleaseOfARevokedKeysLease: a lease that a key of an account acquired, released
// once the key is revoked (or has expired: the old key of a roll with --overlap 0), is
// returned under its account's plan, through the check function and the authorizer's
// Settle (the middleware's Release) alike: its slot is the account's, which its other
// keys share. It was a conflict, the slot held until the lease's ttl, so that every
// stream in flight when a key was revoked kept the account's other keys out.
func TestReleaseOfARevokedKeysLease(t *testing.T) {
	b := newBearerFixture(t, llmConfig)
	b.src.Put(registry.Record{ID: "account:crew", Plan: "llm"})
	b.src.Put(registry.Record{ID: "key:" + bucketgate.KeyDigest("frank"), Account: "crew"})
	own := []bucketgate.Rule{{Name: "tokens", Capacity: 600, RefillPerSecond: 0.001}}
	for _, tc := range []struct {
		via, key string
		own      []bucketgate.Rule // the key's own rules
	}{
		{"the check function", "erin", nil},
		{"the authorizer", "gina", nil},
		{"the check function, a key with rules of its own", "hank", own},
	} {
		via, key := tc.via, tc.key
		t.Run(via, func(t *testing.T) {
			b.src.Put(registry.Record{ID: "key:" + bucketgate.KeyDigest(key), Account: "crew", Rules: tc.own})
			lease, _ := b.authorize(t, key, "GET", "/v1/stream")[ratelimitheaders.KeyLease].(string)
			if lease == "" {
				t.Fatalf("%s's stream: no lease", key)
			}
			b.src.Put(registry.Record{ID: "key:" + bucketgate.KeyDigest(key), Account: "crew", Rules: tc.own, Status: registry.StatusRevoked})
			cfg := b.check.cfg
			var err error
			if strings.HasPrefix(via, "the check function") {
				check := newFixture(t, b.client, nil, guard.Options{})
				check.h.Config = registry.NewStatic(cfg, registry.NewCache(b.src, registry.Options{Size: 100}))
				var out []byte
				if out, err = check.invoke(fmt.Appendf(nil, `{"op":"release","lease":%q}`, lease)); err == nil && !*decodeResponse(t, out).Released {
					t.Errorf("the revoked key's lease: %s, want released", out)
				}
			} else {
				auth := &authorizer.Handler{Guard: b.auth.Guard, Config: registry.NewStatic(cfg, registry.NewCache(b.src, registry.Options{Size: 100})),
					Identities: b.auth.Identities, Metrics: b.auth.Metrics, Log: b.auth.Log, Now: b.auth.Now}
				_, err = auth.Settle(context.Background(), lease, bucketgate.OpRelease, 0)
			}
			if err != nil {
				t.Fatalf("the release of the revoked key's lease through %s: %v, want it released", via, err)
			}
			if ctx := b.authorize(t, "frank", "GET", "/v1/stream"); ctx[ratelimitheaders.KeyReason] != "ok" {
				t.Fatalf("another key of the account after the release: context %v, want its stream allowed", ctx)
			} else if held, _ := ctx[ratelimitheaders.KeyLease].(string); held != "" {
				b.check.invokeOK(t, fmt.Appendf(nil, `{"op":"release","lease":%q}`, held))
			}
		})
	}
}

// TestSettleOfARevokedKeysReservation: a reservation that a key of an account made,
// settled or cancelled once the key is revoked (or has expired: the old key of a roll
// with --overlap 0), gives back to its account's buckets under the account's plan,
// through the check function and the authorizer's Settle alike, as a release of its
// lease does: the tokens are the account's, which its other keys spend. It was a
// conflict, the account charged the whole estimate until it refilled. (A key's own
// rule, gone with the key, keeps what the reserve took of it.)
func TestSettleOfARevokedKeysReservation(t *testing.T) {
	b := newBearerFixture(t, llmConfig)
	own := []bucketgate.Rule{{Name: "tokens", Capacity: 600, RefillPerSecond: 0.001}}
	for _, tc := range []struct {
		name, key string
		own       []bucketgate.Rule // the key's own rules
		op        bucketgate.Op
		check     bool  // through the check function, else the authorizer's Settle
		back      int64 // tokens the account gets back of the estimate of 400
	}{
		{"a settle through the check function", "ivan", nil, bucketgate.OpSettle, true, 300},
		{"a cancel through the check function", "judy", nil, bucketgate.OpCancel, true, 400},
		{"a settle through the authorizer", "kurt", nil, bucketgate.OpSettle, false, 300},
		{"a cancel through the authorizer", "lena", nil, bucketgate.OpCancel, false, 400},
		{"a settle of a key with rules of its own", "mona", own, bucketgate.OpSettle, true, 300},
	} {
		t.Run(tc.name, func(t *testing.T) {
			id, account := "key:"+bucketgate.KeyDigest(tc.key), "guild-"+tc.key // an account each: a refused one stays charged
			b.src.Put(registry.Record{ID: "account:" + account, Plan: "llm"})
			b.src.Put(registry.Record{ID: id, Account: account, Rules: tc.own})
			reservation := b.reserve(t, tc.key)
			b.src.Put(registry.Record{ID: id, Account: account, Rules: tc.own, Status: registry.StatusRevoked})
			cfg := registry.NewStatic(b.check.cfg, registry.NewCache(b.src, registry.Options{Size: 100}))
			var err error
			if tc.check {
				check := newFixture(t, b.client, nil, guard.Options{})
				check.h.Config = cfg
				payload := settlePayload(reservation, 100)
				if tc.op == bucketgate.OpCancel {
					payload = fmt.Appendf(nil, `{"op":"cancel","reservation":%q}`, reservation)
				}
				_, err = check.invoke(payload)
			} else {
				auth := &authorizer.Handler{Guard: b.auth.Guard, Config: cfg, Identities: b.auth.Identities, Metrics: b.auth.Metrics, Log: b.auth.Log, Now: b.auth.Now}
				actual := int64(100)
				if tc.op == bucketgate.OpCancel {
					actual = 0
				}
				_, err = auth.Settle(context.Background(), reservation, tc.op, actual)
			}
			if err != nil {
				t.Fatalf("the %v of the revoked key's reservation: %v, want it done under the account's plan", tc.op, err)
			}
			if got := b.tokens(t, "acct:"+account, llmRule, "tokens"); got != 600+tc.back {
				t.Fatalf("the account after the %v: %d tokens, want %d (%d of the estimate back)", tc.op, got, 600+tc.back, tc.back)
			}
		})
	}
}

// TestSettleOfAMovedKeysReservation: a key moved to another account since its reserve
// or acquire (its item's account written by hand) leaves its reservation and its lease
// on the account it was made on: a settle, a cancel or a release by the id gives back to
// that account, under its plan, while it is active, through the check function and the
// authorizer's Settle alike. They were a conflict: the old account, whose other keys
// spend those buckets, charged the estimate until it refilled, or its slot held until
// the lease's ttl.
func TestSettleOfAMovedKeysReservation(t *testing.T) {
	b := newBearerFixture(t, llmConfig)
	for _, tc := range []struct {
		name, key string
		op        bucketgate.Op
		check     bool // through the check function, else the authorizer's Settle
	}{
		{"a settle through the check function", "nina", bucketgate.OpSettle, true},
		{"a cancel through the authorizer", "otto", bucketgate.OpCancel, false},
		{"a release through the check function", "pia", bucketgate.OpRelease, true},
		{"a release through the authorizer", "quin", bucketgate.OpRelease, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			id, from, to := "key:"+bucketgate.KeyDigest(tc.key), "from-"+tc.key, "to-"+tc.key
			other := tc.key + "-2" // another key of the account it leaves
			b.src.Put(registry.Record{ID: "account:" + from, Plan: "llm"})
			b.src.Put(registry.Record{ID: "account:" + to, Plan: "llm"})
			b.src.Put(registry.Record{ID: id, Account: from})
			b.src.Put(registry.Record{ID: "key:" + bucketgate.KeyDigest(other), Account: from})
			var held string
			if tc.op == bucketgate.OpRelease {
				held, _ = b.authorize(t, tc.key, "GET", "/v1/stream")[ratelimitheaders.KeyLease].(string)
			} else {
				held = b.reserve(t, tc.key)
			}
			if held == "" {
				t.Fatalf("%s's stream: no lease", tc.key)
			}
			b.src.Put(registry.Record{ID: id, Account: to}) // moved by hand
			cfg := registry.NewStatic(b.check.cfg, registry.NewCache(b.src, registry.Options{Size: 100}))
			var err error
			if tc.check {
				check := newFixture(t, b.client, nil, guard.Options{})
				check.h.Config = cfg
				payload := settlePayload(held, 100)
				if tc.op == bucketgate.OpRelease {
					payload = fmt.Appendf(nil, `{"op":"release","lease":%q}`, held)
				}
				_, err = check.invoke(payload)
			} else {
				auth := &authorizer.Handler{Guard: b.auth.Guard, Config: cfg, Identities: b.auth.Identities, Metrics: b.auth.Metrics, Log: b.auth.Log, Now: b.auth.Now}
				_, err = auth.Settle(context.Background(), held, tc.op, 0)
			}
			if err != nil {
				t.Fatalf("the %v of the moved key's id: %v, want it done on the account it was made on", tc.op, err)
			}
			if tc.op == bucketgate.OpRelease {
				if ctx := b.authorize(t, other, "GET", "/v1/stream"); ctx[ratelimitheaders.KeyReason] != "ok" {
					t.Fatalf("another key of %s after the release: context %v, want its stream allowed", from, ctx)
				}
				return
			}
			want := map[bucketgate.Op]int64{bucketgate.OpSettle: 900, bucketgate.OpCancel: 1000}[tc.op]
			if got := b.tokens(t, "acct:"+from, llmRule, "tokens"); got != want {
				t.Fatalf("%s after the %v: %d tokens, want %d", from, tc.op, got, want)
			}
		})
	}
}

// TestSettleByReservationAfterARoll: a lone key rolled (bucketgate keys roll) becomes an
// account that spends the old key's buckets; the new key's reservations and leases
// settle and release by the id alone, before and after the old key expires: the id
// names the key that made it, not the old key whose buckets it spends.
func TestSettleByReservationAfterARoll(t *testing.T) {
	b := newBearerFixture(t, llmConfig)
	old, rolled := "key:"+bucketgate.KeyDigest("dave"), "key-"+bucketgate.KeyDigest("dave")
	b.src.Put(registry.Record{ID: "account:" + rolled, Plan: "llm", Buckets: old})
	b.src.Put(registry.Record{ID: old, Account: rolled})
	b.src.Put(registry.Record{ID: "key:" + bucketgate.KeyDigest("dave2"), Account: rolled, Rules: []bucketgate.Rule{{Name: "own", Capacity: 5000, RefillPerSecond: 1}}})
	for _, oldKey := range []string{"active", "expired"} {
		if oldKey == "expired" {
			b.src.Put(registry.Record{ID: old, Account: rolled, ExpiresAt: time.Now().Add(-time.Minute)})
		}
		id := b.reserve(t, "dave2")
		lease, _ := b.authorize(t, "dave2", "GET", "/v1/stream")[ratelimitheaders.KeyLease].(string)
		check := newFixture(t, b.client, nil, guard.Options{})
		check.h.Config = registry.NewStatic(b.check.cfg, registry.NewCache(b.src, registry.Options{Size: 100}))
		if s, err := check.invoke(settlePayload(id, 100)); err != nil || !decodeResponse(t, s).Allowed {
			t.Errorf("old key %s: settle of the new key's reservation: %v", oldKey, err)
		}
		if r, err := check.invoke(fmt.Appendf(nil, `{"op":"release","lease":%q}`, lease)); err != nil || !*decodeResponse(t, r).Released {
			t.Errorf("old key %s: release of the new key's lease: %v", oldKey, err)
		}
	}
}

// TestBearerLookupsRunTogether: the registry lookups of a batch of settles by the
// reservation alone run concurrently, as a batch of tenants' do: a cold batch costs
// about one read's time, not one per key, and a slow table leaves none of them to the
// invocation's deadline. The table here answers only once both keys' reads wait
// together; read one after the other, the first waited for the second until the
// deadline, and both settles were answered unavailable.
func TestBearerLookupsRunTogether(t *testing.T) {
	b := newBearerFixture(t, llmConfig)
	payload := fmt.Appendf(nil, `{"checks":[%s,%s]}`, settlePayload(b.reserve(t, "alice"), 100), settlePayload(b.reserve(t, "carol"), 100))
	b.src.Gate = make(chan struct{})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second) // bounds a failure only
	defer cancel()
	go func() {
		for b.src.Held() < 2 && ctx.Err() == nil {
			time.Sleep(time.Millisecond)
		}
		close(b.src.Gate)
	}()
	out, err := lambda.NewHandler(b.check.h).Invoke(ctx, payload)
	if err != nil {
		t.Fatal(err)
	}
	var got checkapi.BatchResult
	if err := json.Unmarshal(out, &got); err != nil || len(got.Results) != 2 {
		t.Fatalf("%s (%v): want 2 results", out, err)
	}
	for i, r := range got.Results {
		if r.Reason != checkapi.ReasonOK || r.Settled != 100 {
			t.Errorf("results[%d] = %+v: want settled at 100", i, r)
		}
	}
}

// reshaped returns id with its payload's figures (after the nonce) replaced by est, the
// estimate word (estimate, ttl and skip), and expiry, its claims and MAC kept: an id
// no limiter writes.
func reshaped(t *testing.T, id string, est, expiry uint64) string {
	t.Helper()
	parts := strings.Split(id, ".")
	p, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil || len(parts) != 3 {
		t.Fatalf("id %q: %v", id, err)
	}
	binary.BigEndian.PutUint64(p[16:], est)
	binary.BigEndian.PutUint64(p[24:], expiry)
	return parts[0] + "." + base64.RawURLEncoding.EncodeToString(p) + "." + parts[2]
}

// TestMalformedIDReadsNoRegistry: only an id the limiter signed sends the function to
// the registry; one that is not spelled as the limiter writes one (a MAC of another
// length or alphabet, an estimate, ttl or expiry no limiter writes), or whose MAC is
// not the limiter's, is a conflict before any read, however well formed its claims.
// So a service that may settle cannot learn from a forged id's refusal whether a key
// is registered, of which account, or whether a route is there: every such refusal is
// the same, and names none of them.
func TestMalformedIDReadsNoRegistry(t *testing.T) {
	b := newBearerFixture(t, llmConfig)
	id := b.reserve(t, "alice")
	c := claimsOf(t, id)
	lease, _ := b.authorize(t, "carol", "GET", "/v1/stream")[ratelimitheaders.KeyLease].(string)
	bob := "key:" + bucketgate.KeyDigest("bob")
	for _, tc := range []struct {
		name, payload string
		reads         int
	}{
		{"claims of another account's key", string(settlePayload(withClaims(t, id, claims.Claims{Identity: "acct:guess", Key: bob, Route: c.Route}.String()), 1)), 0},
		{"claims of a key not registered", string(settlePayload(withClaims(t, id, claims.Claims{Identity: "key:" + bucketgate.KeyDigest("nobody"), Route: c.Route}.String()), 1)), 0},
		{"claims of a route not there", string(settlePayload(withClaims(t, id, claims.Claims{Identity: "key:" + bucketgate.KeyDigest("carol"), Route: "0123456789abcdef"}.String()), 1)), 0},
		{"a lease's claims altered", fmt.Sprintf(`{"op":"release","lease":%q}`, withClaims(t, lease, claims.Claims{Identity: "acct:guess", Key: bob, Route: c.Route}.String())), 0},
		{"a MAC cut short", string(settlePayload(id[:len(id)-1], 1)), 0},
		{"a MAC too long", string(settlePayload(id+"AAAA", 1)), 0},
		{"a MAC not base64url", string(settlePayload(id[:len(id)-1]+"!", 1)), 0},
		{"an estimate above any capacity", string(settlePayload(reshaped(t, id, 2_000_000_000, 1<<40), 1)), 0},
		{"a ttl above the most", string(settlePayload(reshaped(t, id, uint64(4_000_000)<<32|400, 1<<40), 1)), 0},
		{"an expiry before 1970", string(settlePayload(reshaped(t, id, 400, 1<<63), 1)), 0},
		{"a lease with an estimate", fmt.Sprintf(`{"op":"release","lease":%q}`, reshaped(t, lease, 1, 1<<40)), 0},
		{"a lease with a ttl", fmt.Sprintf(`{"op":"release","lease":%q}`, reshaped(t, lease, 1<<32, 1<<40)), 0},
		{"a forged MAC of the right shape", string(settlePayload(forged(id), 1)), 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, b.client, nil, guard.Options{}) // a cold cache: every lookup reads
			f.h.Config = registry.NewStatic(b.check.cfg, registry.NewCache(b.src, registry.Options{Size: 100}))
			f.h.OperatorFunction = "bucketgate-operator"
			before := b.src.Reads()
			_, err := f.invoke([]byte(tc.payload))
			fe := functionError(t, err)
			if fe.Type != checkapi.ErrorTypeConflict {
				t.Fatalf("%+v: want a conflict", fe)
			}
			if strings.Contains(fe.Message, "acme") || strings.Contains(fe.Message, "registered") || strings.Contains(fe.Message, "configuration") {
				t.Fatalf("%q: it says where the forged claims lead", fe.Message)
			}
			if got := b.src.Reads() - before; got != tc.reads {
				t.Fatalf("%d registry reads, want %d", got, tc.reads)
			}
		})
	}
	if got := b.tokens(t, "key:"+bucketgate.KeyDigest("alice"), llmRule, "tokens"); got != 600 {
		t.Fatalf("after the refusals: %d tokens, want 600: the estimate still charged, nothing else written", got)
	}
}

// TestForgedClaimsReadNoRegistryInTheAuthorizer: the authorizer's Settle (the
// middleware's Settle, Cancel and Release) checks an id's signature before it follows
// its claims, as the check function does: a forged id reads no registry, and its
// refusal says nothing of where its claims lead.
func TestForgedClaimsReadNoRegistryInTheAuthorizer(t *testing.T) {
	b := newBearerFixture(t, llmConfig)
	id := b.reserve(t, "alice")
	c := claimsOf(t, id)
	bob := "key:" + bucketgate.KeyDigest("bob")
	for _, tc := range []struct {
		name   string
		claims claims.Claims
	}{
		{"another account's key", claims.Claims{Identity: "acct:guess", Key: bob, Route: c.Route}},
		{"a key not registered", claims.Claims{Identity: "key:" + bucketgate.KeyDigest("nobody"), Route: c.Route}},
		{"a route not there", claims.Claims{Identity: "key:" + bucketgate.KeyDigest("carol"), Route: "0123456789abcdef"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			auth := *b.auth // a cold cache: every lookup reads
			auth.Config = registry.NewStatic(b.check.cfg, registry.NewCache(b.src, registry.Options{Size: 100}))
			before := b.src.Reads()
			_, err := auth.Settle(context.Background(), withClaims(t, id, tc.claims.String()), bucketgate.OpSettle, 1)
			if !errors.Is(err, bucketgate.ErrConflict) || strings.Contains(err.Error(), "acme") || strings.Contains(err.Error(), "registered") || strings.Contains(err.Error(), "configuration") {
				t.Fatalf("Settle: %v, want a conflict that says nothing of where the claims lead", err)
			}
			if got := b.src.Reads() - before; got != 0 {
				t.Fatalf("%d registry reads, want none", got)
			}
		})
	}
}

// TestHoldByPlanAfterThePlanChanged: a release by key and plan (or by the key's
// registry plan) after the plan dropped its concurrency rule, and a settle or a cancel
// after it dropped its buckets and quotas, is the conflict a release or a settle by
// the id alone answers (the lease frees itself at its ttl; the reservation stays
// charged at its estimate), not an invalid request: the caller did nothing wrong.
// Inline rules without one stay an invalid request (TestLeasesRealRedis).
func TestHoldByPlanAfterThePlanChanged(t *testing.T) {
	const doc = `defaultPlan: free
plans:
  free: [{name: tokens, capacity: 500, refillPerSecond: 0.001}]
  llm: [{name: streams, concurrency: 2}, {name: tokens, capacity: 1000, refillPerSecond: 0.001}]
`
	b := newBearerFixture(t, doc)
	b.src.Put(registry.Record{ID: bucketgate.TenantPrefix + "dave", Plan: "llm"})
	lease := decodeResponse(t, b.check.invokeOK(t, []byte(`{"key":"alice","plan":"llm","ttlMs":60000}`))).Lease
	held := decodeResponse(t, b.check.invokeOK(t, []byte(`{"key":"alice","plan":"llm","op":"reserve","cost":5,"ttlMs":60000}`))).Reservation
	tenantLease := decodeResponse(t, b.check.invokeOK(t, []byte(`{"key":"dave","ttlMs":60000}`))).Lease
	tenantHeld := decodeResponse(t, b.check.invokeOK(t, []byte(`{"key":"dave","op":"reserve","cost":5,"ttlMs":60000}`))).Reservation
	if lease == "" || held == "" || tenantLease == "" || tenantHeld == "" {
		t.Fatalf("leases %q, %q, reservations %q, %q: want all", lease, tenantLease, held, tenantHeld)
	}
	after := func(doc string) *fixture {
		f := newFixture(t, b.client, nil, guard.Options{})
		f.h.Config = registry.NewStatic(mustConfig(t, doc), registry.NewCache(b.src, registry.Options{Size: 100}))
		return f
	}
	noLeases := after(strings.Replace(doc, "{name: streams, concurrency: 2}, ", "", 1))
	leasesOnly := after(strings.Replace(doc, ", {name: tokens, capacity: 1000, refillPerSecond: 0.001}]", "]", 1))
	for _, tt := range []struct {
		name    string
		f       *fixture
		payload string
		want    string
	}{
		{"release by key and plan", noLeases, fmt.Sprintf(`{"key":"alice","plan":"llm","op":"release","lease":%q}`, lease), "frees itself at its ttl"},
		{"release by key, its registry plan", noLeases, fmt.Sprintf(`{"key":"dave","op":"release","lease":%q}`, tenantLease), "frees itself at its ttl"},
		{"release by key and plan in a batch", noLeases, fmt.Sprintf(`{"checks":[{"key":"carol","plan":"llm","cost":0},{"key":"alice","plan":"llm","op":"release","lease":%q}]}`, lease), "checks[1].lease: conflict"},
		{"settle by key and plan", leasesOnly, fmt.Sprintf(`{"key":"alice","plan":"llm","op":"settle","reservation":%q,"cost":1}`, held), "stays charged at its estimate"},
		{"cancel by key, its registry plan", leasesOnly, fmt.Sprintf(`{"key":"dave","op":"cancel","reservation":%q}`, tenantHeld), "stays charged at its estimate"},
	} {
		_, err := tt.f.invoke([]byte(tt.payload))
		if fe := functionError(t, err); fe.Type != checkapi.ErrorTypeConflict || !strings.Contains(fe.Message, tt.want) {
			t.Errorf("%s: %+v, want a %s mentioning %q", tt.name, fe, checkapi.ErrorTypeConflict, tt.want)
		}
	}
}

// TestHoldByAPlanAReloadRemoved: a settle, a cancel or a release naming the key and a
// plan that a configuration reload has removed since the reserve (the acquire) is the
// conflict a settle or a release by the id alone answers when its route is gone, not an
// unknown plan (an invalid request): the caller did nothing wrong. Through checkclient
// it is a *FunctionError of type ConflictError, never an *InvalidRequestError; nothing
// is written, so that once the plan is back the reservation and the lease still end.
func TestHoldByAPlanAReloadRemoved(t *testing.T) {
	const doc = `defaultPlan: free
plans:
  free: [{name: tokens, capacity: 500, refillPerSecond: 0.001}]
  llm: [{name: streams, concurrency: 2}, {name: tokens, capacity: 1000, refillPerSecond: 0.001}]
`
	f := newFixture(t, redistest.Client(t, redistest.Start(t).Addr), nil, guard.Options{})
	reload := func(doc string) { f.h.Config = registry.NewStatic(mustConfig(t, doc), nil) }
	reload(doc)
	srv := lambdatest.Start(t, map[string]lambda.Handler{clientFunction: lambda.NewHandler(f.h)})
	checks := checkclient.New(srv.Client(), clientFunction)
	ctx := context.Background()
	req := checkapi.Request{Key: "alice", Plan: "llm", Cost: new(int64(5)), TTLMS: 60000}
	held, err := checks.Reserve(ctx, req)
	if err != nil || held.Reservation == "" || held.Lease == "" {
		t.Fatalf("Reserve = %+v, %v: want a reservation and a lease", held, err)
	}
	reload(strings.Replace(doc, "  llm: [{name: streams, concurrency: 2}, {name: tokens, capacity: 1000, refillPerSecond: 0.001}]\n", "", 1))
	for _, tt := range []struct {
		name string
		call func() error
		want string
	}{
		{"Settle", func() error { _, err := checks.Settle(ctx, req, held.Reservation, 1); return err }, "reservation: conflict"},
		{"Cancel", func() error { _, err := checks.Cancel(ctx, req, held.Reservation); return err }, "reservation: conflict"},
		{"Release", func() error { _, err := checks.Release(ctx, req, held.Lease); return err }, "lease: conflict"},
		{"a release in a batch", func() error {
			_, err := checks.CheckBatch(ctx, []checkapi.Request{{Key: "carol", Cost: new(int64(0))}, {Key: "alice", Plan: "llm", Op: checkapi.OpRelease, Lease: held.Lease}})
			return err
		}, "checks[1].lease: conflict"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var fe *checkclient.FunctionError
			if err := tt.call(); !errors.As(err, &fe) || fe.Type != checkapi.ErrorTypeConflict || !strings.Contains(fe.Message, tt.want) || !strings.Contains(fe.Message, `"llm"`) {
				t.Fatalf("%s by a plan the reload removed: %v (%T), want a *FunctionError of type %s mentioning %q and the plan", tt.name, err, err, checkapi.ErrorTypeConflict, tt.want)
			}
		})
	}
	for _, payload := range []string{ // no id to end: the caller's mistake (parseHold's), as before the reload
		`{"key":"alice","plan":"llm","op":"settle","cost":1}`,
		`{"key":"alice","plan":"llm","op":"release"}`,
	} {
		if _, err := f.invoke([]byte(payload)); functionError(t, err).Type != checkapi.ErrorTypeInvalidRequest {
			t.Errorf("%s by a plan the reload removed: %v, want an %s", payload, err, checkapi.ErrorTypeInvalidRequest)
		}
	}
	reload(doc)
	if res, err := checks.Settle(ctx, req, held.Reservation, 1); err != nil || !res.Allowed {
		t.Errorf("Settle once the plan is back: %+v, %v: want it settled, the conflicts having written nothing", res, err)
	}
	if res, err := checks.Release(ctx, req, held.Lease); err != nil || res.Released == nil || !*res.Released {
		t.Errorf("Release once the plan is back: %+v, %v: want it released, the conflicts having written nothing", res, err)
	}
}
