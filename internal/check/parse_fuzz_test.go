package check

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/bucketgate/bucketgate"
	"github.com/bucketgate/bucketgate/checkapi"
	"github.com/bucketgate/bucketgate/internal/config"
	"github.com/bucketgate/bucketgate/internal/testkit/samples"
)

// claimed is a reservation id spelled as the authorizer's are, with claims (for the
// source 192.0.2.1, the route POST /v1/chat); its MAC is no one's.
var claimed = "r2." + base64.RawURLEncoding.EncodeToString(append(make([]byte, 32), "a2 ip:192.0.2.1 cb3991b74af151d5"...)) + ".AAAAAAAAAAAAAAAAAAAAAA"

// FuzzParse holds parse to its contract on any payload: no panic; an error that names
// where the problem is; or checks the engine accepts, for a payload that is valid JSON.
// The seeds are addPayloadSeeds'.
func FuzzParse(f *testing.F) {
	addPayloadSeeds(f)
	plans, sources := config.Default(), testSources(f)
	f.Fuzz(func(t *testing.T, payload []byte) {
		checks, batch, err := parse(payload, plans, sources)
		if err != nil {
			msg := err.Error()
			if i := strings.Index(msg, ": "); i <= 0 {
				t.Fatalf("error %q does not start with the field at fault", msg)
			}
			return
		}
		if !json.Valid(payload) {
			t.Fatalf("accepted invalid JSON %q", payload)
		}
		if len(checks) == 0 || len(checks) > checkapi.MaxBatch || !batch && len(checks) != 1 {
			t.Fatalf("%d checks (batch %v) from %q", len(checks), batch, payload)
		}
		for i, c := range checks {
			if c.bearer { // the reservation alone: its claims lead to the rules later
				switch {
				case c.req.Op != bucketgate.OpSettle && c.req.Op != bucketgate.OpCancel && c.req.Op != bucketgate.OpRelease, c.req.Rules != nil, c.req.ID == "":
					t.Fatalf("checks[%d]: a request by the reservation alone, %+v, of %q", i, c.req, payload)
				case c.refused != nil && !errors.Is(c.refused, bucketgate.ErrConflict):
					t.Fatalf("checks[%d]: refused %v, not a conflict", i, c.refused)
				case c.refused == nil && c.req.Identity != c.claims.Identity:
					t.Fatalf("checks[%d]: identity %q, claims %+v", i, c.req.Identity, c.claims)
				}
				continue
			}
			if c.tenant { // the registry's plan comes later: here, the default plan's
				if c.req.Rules != nil {
					t.Fatalf("checks[%d]: a tenant check with rules %v before the registry", i, c.req.Rules)
				}
				if c.req.Rules = plans.DefaultPlan().Rules; fits("cost", c.req.Cost, c.req.Op, c.req.Rules) != nil || fitsHold("", c.req) != nil || outgrown("", c) != nil {
					continue // resolveTenants refuses it, naming the cost, the ttlMs or the lease, or answers a conflict
				}
			}
			if c.req.Op == bucketgate.OpUsage {
				for _, day := range []string{c.from, c.to} {
					if _, err := ParseDay(day); day != "" && err != nil {
						t.Fatalf("a usage request from %q to %q of %q: %v", c.from, c.to, payload, err)
					}
				}
				if batch || c.req.Rules != nil || c.req.Cost != 0 {
					t.Fatalf("a usage request with rules %v or cost %d, batch %v: %q", c.req.Rules, c.req.Cost, batch, payload)
				}
				continue
			}
			if c.from != "" || c.to != "" {
				t.Fatalf("checks[%d]: days %q to %q with op %v: %q", i, c.from, c.to, c.req.Op, payload)
			}
			if err := c.req.Validate(); err != nil {
				t.Fatalf("checks[%d] of %q is invalid: %v", i, payload, err)
			}
			// A key is always a tenant's; an explicit identity (the operator's path) may be
			// a tenant's too ("tenant:<key>").
			if !c.explicit && !strings.HasPrefix(c.req.Identity, identityPrefix) {
				t.Fatalf("checks[%d]: identity %q of a key is no tenant's", i, c.req.Identity)
			}
			if strings.ContainsRune(c.req.Identity, utf8.RuneError) && !bytes.Contains(bytes.ToLower(payload), []byte(`\ufffd`)) && // any case: \uFffd too
				!bytes.Contains(payload, []byte(string(utf8.RuneError))) {
				t.Fatalf("checks[%d]: identity %q holds U+FFFD that %q did not send", i, c.req.Identity, payload)
			}
		}
	})
}

// addPayloadSeeds adds the fuzz targets' seeds of check payloads: the sample events and
// the edges of the syntax.
func addPayloadSeeds(f *testing.F) {
	events, err := filepath.Glob(samples.Path("check-*.json"))
	if err != nil || len(events) == 0 {
		f.Fatalf("no sample events in %s: %v", samples.Dir(), err)
	}
	for _, e := range events {
		f.Add(samples.Read(f, filepath.Base(e)))
	}
	for _, seed := range []string{
		``, `{}`, `[]`, `null`, `{"key":"a"}`, `{"key":"a","cost":0}`, `{"key":"a","cost":-0}`,
		`{"key":"a","cost":9007199254740992}`, `{"key":"\u0000{}%","plan":"free"}`,
		`{"key":"a","rules":[{"name":"r","capacity":1,"refillPerSecond":1e-300}]}`,
		`{"checks":[{"key":"a"},{"key":"a","cost":2}]}`, `{"checks":[[]]}`, `{"key":"a",}`,
		`{"key":"a","key":"a"}`, `{"key":"a"}garbage`, `{"checks":null}`, "\t{\"key\" : \"a\" }\n",
		`{"key":"a","op":"refund","cost":2}`, `{"key":"a","op":"reset"}`, `{"key":"a","op":"reset","cost":0}`,
		`{"identity":"key:0123456789abcdef0123456789abcdef","op":"reset"}`, `{"identity":"ip:2001:db8::/64","cost":0}`,
		`{"key":"\ud800"}`, `{"key":"\udc00x"}`, `{"key":"\ud83d\ude00"}`, `{"key":"\ufffd"}`, "{\"key\":\"\xff\"}",
		`{"key":"a","rules":[{"name":"r","capacity":1,"refillPerSecond":1,"shadow":true}]}`,
		`{"key":"a","rules":[{"name":"m","limit":1000,"period":"month","anchor":28},{"name":"d","limit":5,"period":"day","shadow":true}],"cost":5}`,
		`{"key":"a","rules":[{"name":"w","limit":1,"period":"week"}],"op":"refund","cost":1}`,
		`{"key":"a","rules":[{"name":"m","limit":1,"period":"month","anchor":0}]}`,
		`{"key":"a","rules":[{"name":"m","limit":1,"period":"year"}]}`,
		`{"key":"a","rules":[{"name":"m","capacity":1,"refillPerSecond":1,"limit":1,"period":"day"}]}`,
		`{"key":"a","op":"usage"}`, `{"key":"a","op":"usage","from":"2026-11-01","to":"2026-11-25"}`,
		`{"identity":"tenant:a","op":"usage","to":"2026-02-29"}`, `{"key":"a","op":"usage","from":"2026-11-25T00:00:00Z"}`,
		`{"checks":[{"key":"a","op":"usage"}]}`, `{"key":"a","from":"2026-11-01"}`,
		`{"op":"cancel","reservation":"r2.YmEbG7KPIb9rHudxkgGlbAAAAAAAAA-gAAABlVGYceA.JeiHLzs3l2vW53uJpOkaZA"}`,
		`{"op":"settle","reservation":"` + claimed + `","cost":5}`, `{"reservation":"` + claimed + `","cost":5}`,
		`{"checks":[{"op":"cancel","reservation":"` + claimed + `"},{"key":"a"}]}`,
		`{"key":"a","rules":[{"name":"c","concurrency":3},{"name":"r","capacity":5,"refillPerSecond":1}],"cost":5,"ttlMs":1000}`,
		`{"key":"a","rules":[{"name":"c","concurrency":3}],"op":"release","lease":"r2.x.y"}`,
		`{"key":"a","rules":[{"name":"c","concurrency":0}]}`, `{"key":"a","rules":[{"name":"c","concurrency":2,"limit":1}]}`,
	} {
		f.Add([]byte(seed))
	}
}
