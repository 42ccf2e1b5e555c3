package authorizer

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/bucketgate/bucketgate"
	"github.com/bucketgate/bucketgate/internal/bucket"
	"github.com/bucketgate/bucketgate/internal/config"
	"github.com/bucketgate/bucketgate/internal/guard"
	"github.com/bucketgate/bucketgate/internal/registry"
	"github.com/bucketgate/bucketgate/internal/telemetry"
	"github.com/bucketgate/bucketgate/internal/testkit/registrytest"
	"github.com/bucketgate/bucketgate/internal/testkit/samples"
	"github.com/bucketgate/bucketgate/ratelimitheaders"
)

// cacheOptions are the options of the tests' registry caches: a minute's period, on
// the local clock tLocal (records expire by it).
func cacheOptions() registry.Options {
	return registry.Options{TTL: time.Minute, Size: 100, Now: func() time.Time { return tLocal }}
}

// cacheOver returns a registry cache over records (or failing with err), with the
// configuration's plans.
func cacheOver(cfg *config.Config, err error, records ...registry.Record) *registry.Cache {
	src := registrytest.New(records...)
	src.Fail(err)
	return registry.NewCache(src, cacheOptions())
}

// httpV1Event is the REST sample as an HTTP API payload 1.0 event, which carries
// multi-value headers too.
func httpV1Event(t *testing.T) []byte {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(samples.Read(t, restEvent), &m); err != nil {
		t.Fatal(err)
	}
	m["version"] = "1.0"
	out, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// From one IP, a new made-up key with every request is limited as that IP: the 11th is
// denied under the free plan, exactly as without a key, and Redis holds one bucket.
func TestMadeUpKeysShareTheSourceBucket(t *testing.T) {
	for _, name := range []string{restEvent, httpEvent} {
		t.Run(name, func(t *testing.T) {
			f := newFixture(t, options{})
			var codes []string
			for i := range 12 {
				ev := withHeaders(t, samples.Read(t, name), map[string]string{"X-API-Key": "made-up-" + strconv.Itoa(i)})
				a := f.mustInvoke(t, ev)
				codes = append(codes, strconv.FormatBool(a.allowed(t)))
				if a.PrincipalID != "" && !strings.HasPrefix(a.PrincipalID, "ip:") {
					t.Fatalf("principal %q: a made-up key got an identity of its own", a.PrincipalID)
				}
			}
			if got, want := strings.Join(codes, " "), strings.TrimSpace(strings.Repeat("true ", 10))+" false false"; got != want {
				t.Fatalf("allowed: %s, want %s", got, want)
			}
			if keys := f.mr.Keys(); len(keys) != 1 || !strings.HasPrefix(keys[0], "bg:{ip:") {
				t.Fatalf("Redis keys %v, want the source's one bucket", keys)
			}
			if !strings.Contains(f.logs.String(), `"unknownKey":"key:`+bucketgate.KeyDigest("made-up-3")+`"`) {
				t.Errorf("the decision line does not name the unknown key's digest: %s", &f.logs)
			}
		})
	}
}

// A key header given more than once with different values is no key at all, in any
// letter case and in the multi-value headers; the same value twice is the key.
func TestConflictingKeyHeaders(t *testing.T) {
	refuse := mustParse(t, "defaultPlan: free\nunknownKeys: refuse\nplans: {free: [{name: burst, capacity: 10, refillPerSecond: 1}], pro: [{name: burst, capacity: 100, refillPerSecond: 50}]}\nkeys: {"+proDigest+": pro}")
	tests := []struct {
		name    string
		headers map[string]string
		multi   map[string][]string
		want    string // the plan, or "401"
	}{
		{"one key", map[string]string{"X-API-Key": sampleProKey}, nil, "pro"},
		{"same key in two cases", map[string]string{"X-API-Key": sampleProKey, "x-api-key": sampleProKey}, nil, "pro"},
		{"two keys in two cases", map[string]string{"X-API-Key": sampleProKey, "x-api-key": "other"}, nil, "free"},
		{"two values in multi", map[string]string{"X-API-Key": sampleProKey}, map[string][]string{"X-API-Key": {sampleProKey, "other"}}, "free"},
		{"same value in multi", map[string]string{"X-API-Key": sampleProKey}, map[string][]string{"x-api-key": {sampleProKey}}, "pro"},
	}
	events := map[string]func(t *testing.T) []byte{
		"rest":    func(t *testing.T) []byte { return samples.Read(t, restEvent) },
		"http1.0": httpV1Event,
	}
	for _, tc := range tests {
		for kind, event := range events {
			for _, policy := range []string{"ip", "refuse"} {
				t.Run(tc.name+"/"+kind+"/"+policy, func(t *testing.T) {
					o := options{config: sampleConfig(t)}
					want := tc.want
					if policy == "refuse" {
						o.config = refuse
						if want == "free" {
							want = "401"
						}
					}
					f := newFixture(t, o)
					ev := withAllHeaders(t, event(t), tc.headers, tc.multi)
					for range 20 { // Go walks maps in a new order each time: the answer stays
						a, err := f.invoke(t, ev)
						got := "401"
						if err == nil {
							got = a.str(t, ratelimitheaders.KeyPlan)
						} else if err.Error() != "Unauthorized" {
							t.Fatal(err)
						}
						if got != want {
							t.Fatalf("answer %q (%s), want %q", got, a.raw, want)
						}
					}
				})
			}
		}
	}
}

// A key the registry has is decided under its plan with its own rules; one it has
// revoked is its source's, and the lookups are counted by result.
func TestRegistryPlansAndOverrides(t *testing.T) {
	cfg := sampleConfig(t)
	reg := cacheOver(cfg, nil,
		registry.Record{ID: "key:" + bucketgate.KeyDigest("k-override"), Plan: "pro", Rules: []bucketgate.Rule{{Name: "burst", Capacity: 3, RefillPerSecond: 1}}},
		registry.Record{ID: "key:" + bucketgate.KeyDigest("k-revoked"), Plan: "pro", Status: registry.StatusRevoked},
	)
	f := newFixture(t, options{config: cfg, cache: reg})
	ev := withHeaders(t, samples.Read(t, restEvent), map[string]string{"X-API-Key": "k-override"})
	var allowed []bool
	for range 4 {
		a := f.mustInvoke(t, ev)
		allowed = append(allowed, a.allowed(t))
		if a.str(t, ratelimitheaders.KeyPlan) != "pro" || a.num(t, ratelimitheaders.KeyLimit) != 3 || a.PrincipalID != "key:"+bucketgate.KeyDigest("k-override") {
			t.Fatalf("answer %s: want pro with its burst of 3", a.raw)
		}
	}
	if want := []bool{true, true, true, false}; !slices.Equal(allowed, want) {
		t.Errorf("allowed %v, want %v", allowed, want)
	}
	a := f.mustInvoke(t, withHeaders(t, samples.Read(t, restEvent), map[string]string{"X-API-Key": "k-revoked"}))
	if a.PrincipalID != "ip:203.0.113.10" || a.str(t, ratelimitheaders.KeyPlan) != "free" {
		t.Errorf("revoked key: %s, want its source on free", a.raw)
	}
	var lookups []string
	for _, line := range strings.Split(strings.TrimSpace(f.metrics.String()), "\n") {
		var doc map[string]any
		if err := json.Unmarshal([]byte(line), &doc); err != nil {
			t.Fatal(err)
		}
		if doc[telemetry.MetricRegistryLookups] != 1.0 {
			t.Fatalf("EMF line %s: want one registry lookup", line)
		}
		lookups = append(lookups, doc[telemetry.DimResult].(string))
	}
	if got := strings.Join(lookups, " "); got != "miss hit hit hit miss" {
		t.Errorf("lookup results %q, want miss hit hit hit miss", got)
	}
}

// When the registry cannot say who a key is and nothing is cached, a limiter that fails
// closed answers 503, counted as FailClosed with reason registry_error, Redis not asked;
// one that fails open limits the request as its source address on the default plan.
func TestRegistryFailure(t *testing.T) {
	down := errors.New("dynamodb: throttled")
	for _, failOpen := range []bool{false, true} {
		t.Run("failOpen="+strconv.FormatBool(failOpen), func(t *testing.T) {
			cfg := sampleConfig(t)
			f := newFixture(t, options{config: cfg, failOpen: failOpen, cache: cacheOver(cfg, down)})
			a, err := f.invoke(t, samples.Read(t, restProEvent))
			doc := oneEMF(t, f.metrics.Bytes())
			if doc[telemetry.DimResult] != "error" || doc[telemetry.MetricRegistryLookups] != 1.0 {
				t.Errorf("EMF %v: want one registry lookup with result error", doc)
			}
			if failOpen {
				if err != nil || !a.allowed(t) || a.str(t, ratelimitheaders.KeyReason) != "ok" || a.PrincipalID != "ip:198.51.100.23" || a.str(t, ratelimitheaders.KeyPlan) != "free" {
					t.Fatalf("fail open: %s, %v; want allowed as its source on the default plan", a.raw, err)
				}
				if keys := f.mr.Keys(); !slices.Equal(keys, []string{bucket.Key(a.PrincipalID)}) {
					t.Errorf("Redis keys %v, want the source's bucket", keys)
				}
			} else {
				if !errors.Is(err, ErrUnavailable) {
					t.Fatalf("fail closed: %v, want ErrUnavailable", err)
				}
				if doc[telemetry.DimReason] != "registry_error" || doc[telemetry.MetricFailClosed] != 1.0 {
					t.Errorf("EMF %v: want FailClosed with reason registry_error", doc)
				}
			}
			if keys := f.mr.Keys(); !failOpen && len(keys) != 0 {
				t.Errorf("Redis was written (%v) although the registry failed", keys)
			}
			if !strings.Contains(f.logs.String(), "throttled") {
				t.Errorf("the registry's error is not in the log: %s", &f.logs)
			}
		})
	}
}

// When the table fails after a key's entry has aged past the cache period, the entry
// answers (stale-if-error): the key stays on its plan, and the lookup counts as stale.
func TestRegistryStaleIfError(t *testing.T) {
	cfg := sampleConfig(t)
	src := registrytest.New(registry.Record{ID: "key:" + proDigest, Plan: "pro"})
	now := tLocal
	opts := cacheOptions()
	opts.Now = func() time.Time { return now }
	f := newFixture(t, options{config: cfg, cache: registry.NewCache(src, opts)})
	var results []string
	for _, down := range []bool{false, true} {
		if down {
			src.Fail(errors.New("dynamodb: throttled"))
			now = now.Add(2 * opts.TTL)
		}
		f.metrics.Reset()
		a := f.mustInvoke(t, samples.Read(t, restProEvent))
		if !a.allowed(t) || a.PrincipalID != "key:"+proDigest || a.str(t, ratelimitheaders.KeyPlan) != "pro" {
			t.Fatalf("table down %v: %s, want the key on pro", down, a.raw)
		}
		result, _ := oneEMF(t, f.metrics.Bytes())[telemetry.DimResult].(string)
		results = append(results, result)
	}
	if got := strings.Join(results, " "); got != "miss stale" {
		t.Fatalf("lookup results %q, want miss stale", got)
	}
}

// sourceIdentity is the identity of the REST sample's source address.
const sourceIdentity = "ip:203.0.113.10"

// unknownKeysConfig returns the sample configuration with unknownKeys set to policy.
func unknownKeysConfig(t *testing.T, policy string) *config.Config {
	t.Helper()
	const line = "\nunknownKeys: ip\n"
	doc := samples.Read(t, sampleConfigFile)
	if !bytes.Contains(doc, []byte(line)) {
		t.Fatalf("%s has no line %q to replace", sampleConfigFile, strings.TrimSpace(line))
	}
	return mustParse(t, string(bytes.Replace(doc, []byte(line), []byte("\nunknownKeys: "+policy+"\n"), 1)))
}

// checkUnknownKey invokes ev, a request with a key the registry does not know, and
// checks the answer by policy (unknownKeys): under ip, the source's on the default plan,
// its bucket the only one in Redis; under refuse, 401 with nothing written.
func checkUnknownKey(t *testing.T, f *fixture, policy string, ev []byte) {
	t.Helper()
	a, err := f.invoke(t, ev)
	var want []string
	switch policy {
	case "refuse":
		if !errors.Is(err, ErrUnauthorized) || err.Error() != "Unauthorized" {
			t.Fatalf("answer %s, %v; want Unauthorized (401)", a.raw, err)
		}
	case "ip":
		if err != nil {
			t.Fatal(err)
		}
		if a.PrincipalID != sourceIdentity || a.str(t, ratelimitheaders.KeyPlan) != "free" || !a.allowed(t) {
			t.Fatalf("answer %s: want %s allowed on free", a.raw, sourceIdentity)
		}
		want = []string{bucket.Key(sourceIdentity)}
	default:
		t.Fatalf("unknownKeys %q: want ip or refuse", policy)
	}
	if keys := f.mr.Keys(); !slices.Equal(keys, want) {
		t.Fatalf("Redis keys %v, want %v", keys, want)
	}
}

// A revoked key, and one whose expiresAt has come on the cache's clock, is unknown: under
// ip it spends its source's bucket on the default plan, as a request without a key does;
// under refuse it is refused with 401 and Redis is not written. A key expiring a second
// later is still its own, on its plan.
func TestRevokedAndExpiredKeys(t *testing.T) {
	id := "key:" + bucketgate.KeyDigest("k-registered")
	tests := []struct {
		name   string
		record registry.Record
		known  bool
	}{
		{"expires later", registry.Record{ID: id, Plan: "pro", ExpiresAt: tLocal.Add(time.Second)}, true},
		{"expires now", registry.Record{ID: id, Plan: "pro", ExpiresAt: tLocal}, false},
		{"expired", registry.Record{ID: id, Plan: "pro", ExpiresAt: tLocal.Add(-time.Hour)}, false},
		{"revoked", registry.Record{ID: id, Plan: "pro", Status: registry.StatusRevoked}, false},
		{"revoked, expires later", registry.Record{ID: id, Plan: "pro", Status: registry.StatusRevoked, ExpiresAt: tLocal.Add(time.Hour)}, false},
	}
	for _, tc := range tests {
		for _, policy := range []string{"ip", "refuse"} {
			t.Run(tc.name+"/"+policy, func(t *testing.T) {
				cfg := unknownKeysConfig(t, policy)
				f := newFixture(t, options{config: cfg, cache: cacheOver(cfg, nil, tc.record)})
				keyed := withHeaders(t, samples.Read(t, restEvent), map[string]string{"X-API-Key": "k-registered"})
				if tc.known {
					a := f.mustInvoke(t, keyed)
					if a.PrincipalID != id || a.str(t, ratelimitheaders.KeyPlan) != "pro" {
						t.Fatalf("answer %s: want %s on pro", a.raw, id)
					}
					if keys := f.mr.Keys(); !slices.Equal(keys, []string{bucket.Key(id)}) {
						t.Fatalf("Redis keys %v, want the key's own bucket", keys)
					}
					return
				}
				checkUnknownKey(t, f, policy, keyed)
				if policy != "ip" {
					return
				}
				// The key's requests and the keyless ones share the source's 10 tokens.
				keyless := withHeaders(t, samples.Read(t, restEvent), map[string]string{})
				var allowed []bool
				for i := range 10 {
					ev := keyless
					if i%2 == 1 {
						ev = keyed
					}
					a := f.mustInvoke(t, ev)
					if a.PrincipalID != sourceIdentity {
						t.Fatalf("answer %s: want %s", a.raw, sourceIdentity)
					}
					allowed = append(allowed, a.allowed(t))
				}
				if want := append(slices.Repeat([]bool{true}, 9), false); !slices.Equal(allowed, want) {
					t.Errorf("allowed %v, want %v: one bucket of 10 for the source and its unknown key", allowed, want)
				}
				if keys := f.mr.Keys(); !slices.Equal(keys, []string{bucket.Key(sourceIdentity)}) {
					t.Errorf("Redis keys %v, want the source's one bucket", keys)
				}
			})
		}
	}
}

// TestRegistryOutageFailOpenLimitsBySource: failing open with the table down while Redis
// is healthy, a request whose key cannot be looked up is limited as its source address
// on the default plan, as a request without a key is (10 then 429 on free), whatever the
// key (a new made-up one each time, the same junk one, a registered one) and under
// unknownKeys ip and refuse alike: a key header never buys a way past every limit. The
// decision line names the key's digest and the registry's error.
func TestRegistryOutageFailOpenLimitsBySource(t *testing.T) {
	registered := registry.Record{ID: "key:" + bucketgate.KeyDigest("k-registered"), Plan: "pro"}
	keys := map[string]func(i int) string{
		"a new made-up key each time": func(i int) string { return "made-up-" + strconv.Itoa(i) },
		"the same junk key":           func(int) string { return "junk" },
		"a registered key":            func(int) string { return "k-registered" },
	}
	for name, key := range keys {
		for _, policy := range []string{"ip", "refuse"} {
			t.Run(name+"/"+policy, func(t *testing.T) {
				cfg := unknownKeysConfig(t, policy)
				f := newFixture(t, options{config: cfg, failOpen: true, cache: cacheOver(cfg, errors.New("dynamodb: unreachable"), registered)})
				var got []string
				for i := range 15 {
					a, err := f.invoke(t, withHeaders(t, samples.Read(t, restEvent), map[string]string{"X-API-Key": key(i)}))
					if err != nil {
						t.Fatalf("request %d: %v", i, err)
					}
					if a.PrincipalID != sourceIdentity || a.str(t, ratelimitheaders.KeyPlan) != "free" {
						t.Fatalf("request %d: %s: want the source's identity on the default plan", i, a.raw)
					}
					got = append(got, a.str(t, ratelimitheaders.KeyReason))
				}
				if want := strings.TrimSpace(strings.Repeat("ok ", 10) + strings.Repeat("limited ", 5)); strings.Join(got, " ") != want {
					t.Fatalf("reasons %v, want %s: limited as the source", got, want)
				}
				logs := f.logs.String()
				if !strings.Contains(logs, `"unknownKey":"key:`+bucketgate.KeyDigest(key(14))+`"`) || !strings.Contains(logs, `"registryError":"registry lookup: `) {
					t.Errorf("the decision lines do not name the key's digest and the registry's error:\n%s", logs)
				}
			})
		}
	}
}

// A settle the registry cannot resolve (its table failing, nothing cached) is answered
// by the failure policy as the check function's settle by the id is: counted in
// Decisions (unavailable, or degraded failing open) and, failing closed, in FailClosed
// with reason registry_error, with a decision line naming the failure; the caller gets
// ErrUnavailable. The line names the key once, as its identity.
func TestSettleRegistryFailureIsCounted(t *testing.T) {
	cfg := mustParse(t, "defaultPlan: metered\nplans: {metered: [{name: monthly, limit: 1000, period: month}]}\n"+
		"routes: [{method: POST, path: /v1/chat, reserve: 100}]")
	for _, tc := range []struct {
		name       string
		failOpen   bool
		outcome    string
		failClosed any // FailClosed's count; nil: not written
	}{
		{"fail closed", false, telemetry.OutcomeUnavailable, 1.0},
		{"fail open", true, telemetry.OutcomeDegraded, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			src := registrytest.New(registry.Record{ID: "key:" + bucketgate.KeyDigest("key a"), Plan: "metered"})
			f := newFixture(t, options{config: cfg, failOpen: tc.failOpen, cache: registry.NewCache(src, cacheOptions())})
			c := Call{SourceIP: "192.0.2.7", Method: "POST", Path: "/v1/chat"}
			c.Keys.Add("key a")
			o, err := f.h.Authorize(t.Context(), c)
			if err != nil || o.Result.Reservation == "" {
				t.Fatalf("reserve: %+v, %v", o.Result, err)
			}
			src.Fail(errors.New("dynamodb: throttled"))
			f.h.Config = registry.NewStatic(cfg, registry.NewCache(src, cacheOptions())) // nothing cached
			f.metrics.Reset()
			f.logs.Reset()
			if _, err := f.h.Settle(t.Context(), o.Result.Reservation, bucketgate.OpSettle, 50); !errors.Is(err, ErrUnavailable) {
				t.Fatalf("settle: %v, want ErrUnavailable", err)
			}
			doc := oneEMF(t, f.metrics.Bytes())
			if doc[telemetry.DimOutcome] != tc.outcome || doc[telemetry.MetricDecisions] != 1.0 {
				t.Errorf("EMF %v: want one decision %s", doc, tc.outcome)
			}
			if doc[telemetry.MetricFailClosed] != tc.failClosed || tc.failClosed != nil && doc[telemetry.DimReason] != string(guard.FailureRegistryError) {
				t.Errorf("EMF %v: want FailClosed %v with reason %s", doc, tc.failClosed, guard.FailureRegistryError)
			}
			if logs := f.logs.String(); !strings.Contains(logs, `"msg":"decision"`) || !strings.Contains(logs, `"failure":"registry_error"`) || !strings.Contains(logs, "throttled") {
				t.Errorf("logs %s: want a decision line with failure registry_error and the registry's error", logs)
			}
			for line := range strings.Lines(f.logs.String()) {
				if strings.Contains(line, `"msg":"decision"`) && strings.Count(line, bucketgate.KeyDigest("key a")) != 1 {
					t.Errorf("decision line %s: want the key's digest once, its identity", line)
				}
			}
		})
	}
}

// A lookup that the invocation's time cut short (the table had not answered by its
// deadline: RegistryLookups abandoned, no failure of the table) leaves the decision to
// the failure policy, counted in FailClosed with reason timeout, not registry_error,
// which says the table failed.
func TestAbandonedLookupFailsClosedAsTimeout(t *testing.T) {
	cfg := sampleConfig(t)
	src := registrytest.New()
	src.Gate = make(chan struct{}) // never opens: the table does not answer
	f := newFixture(t, options{config: cfg, cache: registry.NewCache(src, cacheOptions())})
	ctx, cancel := context.WithTimeout(t.Context(), 50*time.Millisecond)
	defer cancel()
	c := Call{SourceIP: "192.0.2.7", Method: "GET", Path: "/scores"}
	c.Keys.Add("key a")
	if _, err := f.h.Authorize(ctx, c); !errors.Is(err, ErrUnavailable) {
		t.Fatalf("authorize: %v, want ErrUnavailable", err)
	}
	doc := oneEMF(t, f.metrics.Bytes())
	if doc[telemetry.DimResult] != string(registry.ResultAbandoned) || doc[telemetry.MetricFailClosed] != 1.0 || doc[telemetry.DimReason] != string(guard.FailureTimeout) {
		t.Errorf("EMF %v: want a lookup abandoned and FailClosed with reason %s", doc, guard.FailureTimeout)
	}
}

// The decision line of a request whose key the registry could not look up names the
// key's digest once, as its identity (failing closed) or its unknownKey (failing open):
// the registry's error, the line's error or registryError, repeated it, some 37 bytes
// of each line of a flood of made-up keys that throttles the table. It still names the
// table's error, for a lone key and for a key of an account whose account's read failed.
func TestRegistryFailureLineNamesTheKeyOnce(t *testing.T) {
	const key = "k-member"
	digest := bucketgate.KeyDigest(key)
	down := errors.New("dynamodb: unreachable")
	tests := []struct {
		name     string
		failOpen bool
		failing  string // the prefix of the items whose reads fail ("": all)
		field    string // the line's field that names the key
		errField string // the line's field that names the table's error
	}{
		{"failing closed, a key the table cannot read", false, "", telemetry.AttrIdentity, telemetry.AttrError},
		{"failing open, a key the table cannot read", true, "", attrUnknownKey, attrRegistryError},
		{"failing closed, a key whose account the table cannot read", false, registry.AccountItemPrefix, telemetry.AttrIdentity, telemetry.AttrError},
		{"failing open, a key whose account the table cannot read", true, registry.AccountItemPrefix, attrUnknownKey, attrRegistryError},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			src := registrytest.New(registry.Record{ID: "key:" + digest, Account: "acme"}, registry.Record{ID: "account:acme", Plan: "pro"})
			src.FailPrefix(tc.failing, down)
			f := newFixture(t, options{failOpen: tc.failOpen, cache: registry.NewCache(src, cacheOptions())})
			_, _ = f.invoke(t, withHeaders(t, samples.Read(t, restEvent), map[string]string{"X-API-Key": key}))
			var line map[string]any
			for l := range strings.Lines(f.logs.String()) {
				if err := json.Unmarshal([]byte(l), &line); err != nil {
					t.Fatal(err)
				}
				if line["msg"] == telemetry.MsgDecision {
					break
				}
			}
			raw, _ := json.Marshal(line)
			if line["msg"] != telemetry.MsgDecision || line[tc.field] != "key:"+digest || !strings.Contains(fmt.Sprint(line[tc.errField]), down.Error()) ||
				strings.Count(string(raw), digest) != 1 {
				t.Errorf("decision line %s: want the key's digest once, as its %s, and the table's error in %s:\n%s", raw, tc.field, tc.errField, &f.logs)
			}
		})
	}
}
