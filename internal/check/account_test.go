package check

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/bucketgate/bucketgate"
	"github.com/bucketgate/bucketgate/checkapi"
	"github.com/bucketgate/bucketgate/internal/bucket"
	"github.com/bucketgate/bucketgate/internal/eventbus"
	"github.com/bucketgate/bucketgate/internal/guard"
	"github.com/bucketgate/bucketgate/internal/registry"
	"github.com/bucketgate/bucketgate/internal/telemetry"
	"github.com/bucketgate/bucketgate/internal/testkit/registrytest"
)

// The operator's path reaches an account's buckets: by acct:<name> under the account's
// plan, and by the key:<digest> of any key of it (with the key's own rules), with or
// without a plan given; an account made from a lone key by its buckets, the key's.
func TestOperatorAccounts(t *testing.T) {
	mr, client := startMiniredis(t)
	f := newFixture(t, client, nil, guard.Options{})
	member := bucketgate.KeyDigest("member")
	lone := bucketgate.KeyDigest("lone")
	f.withRegistry(registrytest.New(
		registry.Record{ID: "account:acme", Plan: "pro"},
		registry.Record{ID: "key:" + member, Account: "acme", Rules: []bucketgate.Rule{{Name: "burst", Capacity: 3, RefillPerSecond: 1}}},
		registry.Record{ID: "account:made", Plan: "enterprise", Buckets: "key:" + lone},
		registry.Record{ID: "key:" + lone, Account: "made"},
	))
	tests := []struct {
		payload, want, redisKey string
	}{
		{`{"identity":"acct:acme","cost":5}`, `"limit":100,"remaining":95,"retryAfterMs":0,"resetAfterMs":100,"rule":"burst","plan":"pro"`, "acct:acme"},
		{`{"identity":"key:` + member + `","cost":2}`, `"limit":3,"remaining":1,"retryAfterMs":0,"resetAfterMs":2000,"rule":"` + member + `/burst","plan":"pro"`, "acct:acme"},
		{`{"identity":"acct:acme","cost":0}`, `"limit":100,"remaining":93`, "acct:acme"},
		{`{"identity":"key:` + member + `","plan":"free","cost":0}`, `"limit":10,"remaining":10`, "acct:acme"},
		{`{"identity":"acct:made"}`, `"limit":500,"remaining":499,"retryAfterMs":0,"resetAfterMs":5,"rule":"burst","plan":"enterprise"`, "key:" + lone},
		{`{"identity":"acct:acme","op":"reset"}`, `"limit":100,"remaining":100`, ""},
	}
	for _, tc := range tests {
		out := f.invokeOK(t, []byte(tc.payload))
		if !strings.Contains(string(out), tc.want) {
			t.Errorf("%s: %s, want %s", tc.payload, out, tc.want)
		}
		if tc.redisKey != "" && !mr.Exists(bucket.Key(tc.redisKey)) {
			t.Errorf("%s: no hash %s (keys %v)", tc.payload, bucket.Key(tc.redisKey), mr.Keys())
		}
	}
	if mr.Exists(bucket.Key("key:"+member)) || mr.Exists(bucket.Key("acct:made")) {
		t.Errorf("Redis keys %v: a key of an account has no buckets of its own", mr.Keys())
	}
	if logs := f.logs.String(); !strings.Contains(logs, `"identity":"acct:acme"`) {
		t.Errorf("the operator's lines do not name the account:\n%s", logs)
	}
}

// An account's name outside its set is an invalid request naming the field.
func TestOperatorAccountBadName(t *testing.T) {
	_, client := startMiniredis(t)
	f := newFixture(t, client, nil, guard.Options{})
	for _, id := range []string{"acct:", "acct:a b", "acct:" + strings.Repeat("a", bucketgate.MaxAccountName+1)} {
		_, err := f.invoke([]byte(`{"identity":"` + id + `"}`))
		ive := functionError(t, err)
		if ive.Type != checkapi.ErrorTypeInvalidRequest || !strings.HasPrefix(ive.Message, "identity: ") || !strings.Contains(ive.Message, "an account's name is 1 to 128") {
			t.Errorf("%s: %+v", id, ive)
		}
	}
}

// The usage of a key of an account is its account's, which every key of it counts in,
// also once the key is revoked or expired (the old key of a roll) or its account is; an
// account made from a lone key counts in that key's, revoked too. The answer names the identity read.
func TestOperatorAccountUsage(t *testing.T) {
	f, _ := usageFixture(t, 3)
	member := bucketgate.KeyDigest("member")
	lone := bucketgate.KeyDigest("lone")
	rolled, revoked, ofGone := bucketgate.KeyDigest("rolled"), bucketgate.KeyDigest("revoked"), bucketgate.KeyDigest("of gone")
	f.withRegistry(registrytest.New(
		registry.Record{ID: "account:acme", Plan: "pro"},
		registry.Record{ID: "key:" + member, Account: "acme"},
		registry.Record{ID: "key:" + rolled, Account: "acme", ExpiresAt: time.Now().Add(-time.Hour)},
		registry.Record{ID: "key:" + revoked, Account: "acme", Status: registry.StatusRevoked},
		registry.Record{ID: "account:gone", Plan: "pro", Status: registry.StatusRevoked},
		registry.Record{ID: "key:" + ofGone, Account: "gone"},
		registry.Record{ID: "account:made", Plan: "pro", Buckets: "key:" + lone},
		registry.Record{ID: "account:made-revoked", Plan: "pro", Buckets: "key:" + lone, Status: registry.StatusRevoked},
	))
	f.invokeOK(t, []byte(`{"identity":"key:`+member+`","cost":2}`))
	f.invokeOK(t, []byte(`{"identity":"acct:acme"}`))
	f.invokeOK(t, []byte(`{"identity":"key:`+lone+`","plan":"pro"}`))
	day := `"from":"2025-03-01","to":"2025-03-01"`
	for _, tc := range []struct{ payload, want string }{
		{`{"identity":"key:` + member + `","op":"usage"}`, `{"identity":"acct:acme",` + day + `,"days":[{"date":"2025-03-01","allowed":2,"limited":0,"cost":3}],"total":{"allowed":2,"limited":0,"cost":3}}`},
		{`{"identity":"acct:acme","op":"usage"}`, `{"identity":"acct:acme",` + day + `,"days":[{"date":"2025-03-01","allowed":2,"limited":0,"cost":3}],"total":{"allowed":2,"limited":0,"cost":3}}`},
		{`{"identity":"acct:made","op":"usage"}`, `{"identity":"key:` + lone + `",` + day + `,"days":[{"date":"2025-03-01","allowed":1,"limited":0,"cost":1}],"total":{"allowed":1,"limited":0,"cost":1}}`},
		{`{"identity":"acct:made-revoked","op":"usage"}`, `{"identity":"key:` + lone + `",` + day + `,"days":[{"date":"2025-03-01","allowed":1,"limited":0,"cost":1}],"total":{"allowed":1,"limited":0,"cost":1}}`},
		{`{"identity":"key:` + rolled + `","op":"usage"}`, `{"identity":"acct:acme",` + day + `,"days":[{"date":"2025-03-01","allowed":2,"limited":0,"cost":3}],"total":{"allowed":2,"limited":0,"cost":3}}`},
		{`{"identity":"key:` + revoked + `","op":"usage"}`, `{"identity":"acct:acme",` + day + `,"days":[{"date":"2025-03-01","allowed":2,"limited":0,"cost":3}],"total":{"allowed":2,"limited":0,"cost":3}}`},
		{`{"identity":"key:` + ofGone + `","op":"usage"}`, `{"identity":"acct:gone",` + day + `,"days":[{"date":"2025-03-01","allowed":0,"limited":0,"cost":0}],"total":{"allowed":0,"limited":0,"cost":0}}`},
	} {
		assertJSONEqual(t, f.invokeOK(t, []byte(tc.payload)), tc.want)
	}
}

// accountsDown is a registry whose accounts' items cannot be read: every other item
// reads as its Source has it.
type accountsDown struct{ *registrytest.Source }

func (s accountsDown) Get(ctx context.Context, id string) (registry.Record, bool, error) {
	if strings.HasPrefix(id, registry.AccountItemPrefix) {
		return registry.Record{}, false, errors.New("throttled")
	}
	return s.Source.Get(ctx, id)
}

// A revoked or expired key of an account whose item the registry cannot read reports no
// usage of its own: the operator's path cannot say whose usage it is, and says so
// (UnavailableError), as it does for a key still in use. A reset of it, named with no
// plan, resets its own buckets on the default plan, as it does when the account can be
// read (the account's buckets are never a dead key's); a reset of a key still in use is
// answered by the failure policy, its plan unknown.
func TestOperatorAccountUnreadable(t *testing.T) {
	f, _ := usageFixture(t, 3)
	revoked, expired, member := bucketgate.KeyDigest("revoked"), bucketgate.KeyDigest("expired"), bucketgate.KeyDigest("member")
	f.h.Config = registry.NewStatic(f.cfg, registry.NewCache(accountsDown{registrytest.New(
		registry.Record{ID: "account:acme", Plan: "pro"},
		registry.Record{ID: "key:" + revoked, Account: "acme", Status: registry.StatusRevoked},
		registry.Record{ID: "key:" + expired, Account: "acme", ExpiresAt: time.Now().Add(-time.Hour)},
		registry.Record{ID: "key:" + member, Account: "acme"},
	)}, registry.Options{TTL: time.Minute, Size: 100}))
	unavailable := `{"allowed":false,"reason":"unavailable","limit":0,"remaining":0,"retryAfterMs":1000,"resetAfterMs":0,"rule":"","plan":""}`
	for _, tc := range []struct{ name, digest, reset string }{
		{"revoked", revoked, `{"allowed":true,"reason":"ok","limit":10,"remaining":10,"retryAfterMs":0,"resetAfterMs":0,"rule":"burst","plan":"free","identity":"key:` + revoked + `"}`},
		{"expired", expired, `{"allowed":true,"reason":"ok","limit":10,"remaining":10,"retryAfterMs":0,"resetAfterMs":0,"rule":"burst","plan":"free","identity":"key:` + expired + `"}`},
		{"in use", member, unavailable},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ue := functionError(t, mustFail(f, `{"identity":"key:`+tc.digest+`","op":"usage"}`))
			if want := "usage of key:" + tc.digest + ": the registry could not say whose usage it is: "; ue.Type != checkapi.ErrorTypeUnavailable || !strings.HasPrefix(ue.Message, want) {
				t.Errorf("error %q of type %q, want one starting %q", ue.Message, ue.Type, want)
			}
			assertJSONEqual(t, f.invokeOK(t, []byte(`{"identity":"key:`+tc.digest+`","op":"reset"}`)), tc.reset)
		})
	}
}

// A key the registry does not know as active, named with no plan (the operator's path:
// buckets show, refund, reset), is decided as itself on the default plan, as any unknown
// key is: a revoked or expired key of an active account (the old key of a roll) reached
// the account's buckets under the default plan, so that a show printed the account's
// under another plan's limits, and a reset or a refund through the dead key refilled the
// live account's rules of the default plan's names. Its usage is still the account's.
func TestOperatorGoneKeyOfAnAccount(t *testing.T) {
	mr, client := startMiniredis(t)
	f := newFixture(t, client, nil, guard.Options{})
	revoked, expired := bucketgate.KeyDigest("revoked"), bucketgate.KeyDigest("expired")
	f.withRegistry(registrytest.New(
		registry.Record{ID: "account:acme", Plan: "pro"},
		registry.Record{ID: "key:" + revoked, Account: "acme", Status: registry.StatusRevoked},
		registry.Record{ID: "key:" + expired, Account: "acme", ExpiresAt: time.Now().Add(-time.Hour)},
	))
	for _, tc := range []struct{ name, digest, op string }{
		{"a reset through a revoked key", revoked, `"op":"reset"`},
		{"a refund through an expired key", expired, `"op":"refund","cost":5`},
		{"a show through a revoked key", revoked, `"cost":0`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			mr.FlushAll()
			f.invokeOK(t, []byte(`{"identity":"acct:acme","cost":95}`))
			out := string(f.invokeOK(t, []byte(`{"identity":"key:`+tc.digest+`",`+tc.op+`}`)))
			if !strings.Contains(out, `"limit":10,`) || !strings.Contains(out, `"plan":"free"`) || !strings.Contains(out, `"identity":"key:`+tc.digest+`"`) {
				t.Errorf("%s: %s, want the key's own buckets on the default plan", tc.name, out)
			}
			if after := f.invokeOK(t, []byte(`{"identity":"acct:acme","cost":0}`)); !strings.Contains(string(after), `"remaining":5,`) {
				t.Errorf("the account after %s: %s, want its 5 tokens left, untouched", tc.name, after)
			}
		})
	}
}

// A key the registry does not know as active, named with a plan or rules (buckets show,
// refund or reset with --plan or --rule), is decided as itself under them too, as named
// with neither: a revoked key of an active account, or a key of a revoked account, never
// reaches its account's buckets, which the account's other keys spend (or nothing does).
func TestOperatorGoneKeyWithAPlan(t *testing.T) {
	mr, client := startMiniredis(t)
	f := newFixture(t, client, nil, guard.Options{})
	revoked, ofGone := bucketgate.KeyDigest("revoked"), bucketgate.KeyDigest("of gone")
	f.withRegistry(registrytest.New(
		registry.Record{ID: "account:acme", Plan: "pro"},
		registry.Record{ID: "account:gone", Plan: "pro", Status: registry.StatusRevoked},
		registry.Record{ID: "key:" + revoked, Account: "acme", Status: registry.StatusRevoked},
		registry.Record{ID: "key:" + ofGone, Account: "gone"},
	))
	for _, tc := range []struct{ name, account, digest, op string }{
		{"a reset with a plan through a revoked key", "acme", revoked, `"plan":"pro","op":"reset"`},
		{"a refund with a plan through a revoked key", "acme", revoked, `"plan":"pro","op":"refund","cost":5`},
		{"a show with rules through a revoked key", "acme", revoked, `"rules":[{"name":"burst","capacity":100,"refillPerSecond":50}],"cost":0`},
		{"a reset with a plan through a key of a revoked account", "gone", ofGone, `"plan":"pro","op":"reset"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			mr.FlushAll()
			f.invokeOK(t, []byte(`{"identity":"acct:`+tc.account+`","plan":"pro","cost":95}`))
			out := string(f.invokeOK(t, []byte(`{"identity":"key:`+tc.digest+`",`+tc.op+`}`)))
			if !strings.Contains(out, `"identity":"key:`+tc.digest+`"`) {
				t.Errorf("%s: %s, want the key's own buckets", tc.name, out)
			}
			if after := f.invokeOK(t, []byte(`{"identity":"acct:`+tc.account+`","plan":"pro","cost":0}`)); !strings.Contains(string(after), `"remaining":5,`) {
				t.Errorf("the account after %s: %s, want its 5 tokens left, untouched", tc.name, after)
			}
		})
	}
}

// A dead key whose own buckets its account spends (bucketgate keys roll made the account
// out of the lone key, which it then expired) named with no plan is decided as its
// account, under the account's plan: its key:<digest> is the account's buckets, which
// the account's new keys spend. It was decided as itself on the default plan, so that a
// show printed the live account's buckets under the default plan's limits (5 of free's
// 10, not of pro's 100), and a reset through the old key said so too.
func TestOperatorGoneKeyOfItsOwnAccount(t *testing.T) {
	mr, client := startMiniredis(t)
	f := newFixture(t, client, nil, guard.Options{})
	lone, next := bucketgate.KeyDigest("lone"), bucketgate.KeyDigest("next")
	f.withRegistry(registrytest.New(
		registry.Record{ID: "account:key-" + lone, Plan: "pro", Buckets: "key:" + lone},
		registry.Record{ID: "key:" + lone, Account: "key-" + lone, ExpiresAt: time.Now().Add(-time.Hour)},
		registry.Record{ID: "key:" + next, Account: "key-" + lone},
	))
	for _, tc := range []struct{ name, op, want, after string }{
		{"a show through the old key", `"cost":0`, `"limit":100,"remaining":5,`, `"remaining":5,`},
		{"a reset through the old key", `"op":"reset"`, `"limit":100,"remaining":100,`, `"remaining":100,`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			mr.FlushAll()
			f.invokeOK(t, []byte(`{"identity":"key:`+next+`","cost":95}`))
			out := string(f.invokeOK(t, []byte(`{"identity":"key:`+lone+`",`+tc.op+`}`)))
			if !strings.Contains(out, tc.want) || !strings.Contains(out, `"plan":"pro"`) || !strings.Contains(out, `"identity":"key:`+lone+`"`) {
				t.Errorf("%s: %s, want the account's buckets on its plan: %s", tc.name, out, tc.want)
			}
			if after := f.invokeOK(t, []byte(`{"identity":"key:`+next+`","cost":0}`)); !strings.Contains(string(after), tc.after) {
				t.Errorf("the account after %s: %s, want %s", tc.name, after, tc.after)
			}
		})
	}
}

// eventsRecorder keeps every event the handler sent.
type eventsRecorder struct{ events []eventbus.Event }

func (r *eventsRecorder) Send(_ context.Context, _ *telemetry.Invocation, events []eventbus.Event) {
	r.events = append(r.events, events...)
}

// The event of a check of a key of an account names the identity whose buckets crossed
// and the account only when they are the account's: a revoked or expired key of an
// account, or a key whose account is revoked, expired or not in the table, is decided
// as itself on the default plan, and its event names no account, whose buckets nothing
// touched.
func TestEventsNameTheAccountCharged(t *testing.T) {
	mr, client := startMiniredis(t)
	f := newFixture(t, client, nil, guard.Options{})
	rec := &eventsRecorder{}
	f.h.Events = rec
	member, revoked, expired := bucketgate.KeyDigest("member"), bucketgate.KeyDigest("revoked"), bucketgate.KeyDigest("expired")
	ofGone, orphan := bucketgate.KeyDigest("of gone"), bucketgate.KeyDigest("orphan")
	f.withRegistry(registrytest.New(
		registry.Record{ID: "account:acme", Plan: "free", Owner: "Acme"},
		registry.Record{ID: "account:gone", Plan: "free", Status: registry.StatusRevoked},
		registry.Record{ID: "key:" + member, Account: "acme"},
		registry.Record{ID: "key:" + revoked, Account: "acme", Status: registry.StatusRevoked},
		registry.Record{ID: "key:" + expired, Account: "acme", ExpiresAt: time.Now().Add(-time.Hour)},
		registry.Record{ID: "key:" + ofGone, Account: "gone"},
		registry.Record{ID: "key:" + orphan, Account: "nowhere"},
	))
	for _, tc := range []struct {
		name, digest, identity, account string
	}{
		{"a key of an active account", member, "acct:acme", "acme"},
		{"a revoked key", revoked, "key:" + revoked, ""},
		{"an expired key", expired, "key:" + expired, ""},
		{"a key of a revoked account", ofGone, "key:" + ofGone, ""},
		{"a key of an account not in the table", orphan, "key:" + orphan, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			mr.FlushAll()
			rec.events = nil
			f.invokeOK(t, []byte(`{"identity":"key:`+tc.digest+`","cost":10}`))
			if out := string(f.invokeOK(t, []byte(`{"identity":"key:`+tc.digest+`","cost":1}`))); !strings.Contains(out, `"allowed":false`) {
				t.Fatalf("second check: %s, want it denied", out)
			}
			if len(rec.events) != 1 {
				t.Fatalf("events %+v, want the first denial's", rec.events)
			}
			if d := rec.events[0].Detail; d.Identity != tc.identity || d.Account != tc.account {
				t.Errorf("event of identity %q, account %q; want %q, %q", d.Identity, d.Account, tc.identity, tc.account)
			}
		})
	}
}

// A requestId is remembered per identity whose buckets a check spends: two keys of one
// account spend the account's, so the same requestId from both within
// IDEMPOTENCY_TTL_MS is one request, the second answered the first's decision (replayed,
// nothing taken), or a ConflictError when the requests differ (a key's own rules); a
// lone key's requestId is its own. docs/keys.md and docs/check.md say so.
func TestRequestIDPerAccount(t *testing.T) {
	mr, client := startMiniredis(t)
	f := newFixture(t, client, nil, guard.Options{})
	first, second, own, lone := bucketgate.KeyDigest("first"), bucketgate.KeyDigest("second"), bucketgate.KeyDigest("own"), bucketgate.KeyDigest("lone")
	f.withRegistry(registrytest.New(
		registry.Record{ID: "account:acme", Plan: "pro"},
		registry.Record{ID: "key:" + first, Account: "acme"},
		registry.Record{ID: "key:" + second, Account: "acme"},
		registry.Record{ID: "key:" + own, Account: "acme", Rules: []bucketgate.Rule{{Name: "burst", Capacity: 5, RefillPerSecond: 1}}},
		registry.Record{ID: "key:" + lone, Plan: "pro"},
	))
	mr.FlushAll()
	f.invokeOK(t, []byte(`{"identity":"key:`+first+`","cost":5,"requestId":"job-1"}`))
	for _, tc := range []struct {
		name, digest string
		want         string // in the answer; "" for a ConflictError
	}{
		{"another key of the account: the first answer", second, `"remaining":95,`},
		{"a key of the account with own rules: another request", own, ""},
		{"a lone key: its own", lone, `"remaining":95,`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			payload := `{"identity":"key:` + tc.digest + `","cost":5,"requestId":"job-1"}`
			if tc.want == "" {
				if ce := functionError(t, mustFail(f, payload)); ce.Type != checkapi.ErrorTypeConflict {
					t.Errorf("%s: error %+v, want a ConflictError", payload, ce)
				}
				return
			}
			out := string(f.invokeOK(t, []byte(payload)))
			if !strings.Contains(out, tc.want) || strings.Contains(out, `"replayed":true`) != (tc.digest != lone) {
				t.Errorf("%s: %s, want %s, replayed only for a key of the account", payload, out, tc.want)
			}
		})
	}
	if after := f.invokeOK(t, []byte(`{"identity":"acct:acme","cost":0}`)); !strings.Contains(string(after), `"remaining":95,`) {
		t.Errorf("the account: %s, want 5 taken once", after)
	}
}
