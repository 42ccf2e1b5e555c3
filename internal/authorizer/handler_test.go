package authorizer

import (
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/bucketgate/bucketgate"
	"github.com/bucketgate/bucketgate/internal/config"
	"github.com/bucketgate/bucketgate/internal/settings"
	"github.com/bucketgate/bucketgate/internal/telemetry"
	"github.com/bucketgate/bucketgate/internal/testkit/samples"
	"github.com/bucketgate/bucketgate/ratelimitheaders"
)

var proDigest = bucketgate.KeyDigest(sampleProKey)

func TestSampleEvents(t *testing.T) {
	tests := []struct {
		name          string
		event         string
		sample        bool   // the shipped sample configuration, else the built-in default
		wantPrincipal string // "" for the simple (HTTP API 2.0) answer
		wantArn       string
		wantPlan      string
		wantRemaining int64
		wantPolicy    string
	}{
		{"REST anonymous", restEvent, false, "ip:203.0.113.10",
			"arn:aws:execute-api:us-east-1:123456789012:a1b2c3d4e5/prod/GET/orders/42", "free", 9, `"burst";q=10;w=10`},
		{"REST pro key, POST /orders costs 2", restProEvent, true, "key:" + proDigest,
			"arn:aws:execute-api:us-east-1:123456789012:a1b2c3d4e5/prod/POST/orders", "pro", 98, `"burst";q=100;w=2`},
		{"REST pro key unknown to the default config: limited by its source", restProEvent, false, "ip:198.51.100.23",
			"arn:aws:execute-api:us-east-1:123456789012:a1b2c3d4e5/prod/POST/orders", "free", 9, `"burst";q=10;w=10`},
		{"HTTP API pro key in lower case header", httpEvent, true, "", "", "pro", 99, `"burst";q=100;w=2`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			o := options{}
			if tc.sample {
				o.config = sampleConfig(t)
			}
			f := newFixture(t, o)
			a := f.mustInvoke(t, samples.Read(t, tc.event))
			if !a.allowed(t) {
				t.Fatalf("denied: %s", a.raw)
			}
			if a.PrincipalID != tc.wantPrincipal {
				t.Errorf("principalId %q, want %q", a.PrincipalID, tc.wantPrincipal)
			}
			if tc.wantArn != "" {
				st := a.PolicyDocument.Statement[0]
				if a.PolicyDocument.Version != "2012-10-17" || !slices.Equal(st.Action, []string{"execute-api:Invoke"}) || !slices.Equal(st.Resource, []string{tc.wantArn}) {
					t.Errorf("policy %+v", a.PolicyDocument)
				}
			}
			if got := a.str(t, ratelimitheaders.KeyPlan); got != tc.wantPlan {
				t.Errorf("plan %q, want %q", got, tc.wantPlan)
			}
			if got := a.num(t, ratelimitheaders.KeyRemaining); got != tc.wantRemaining {
				t.Errorf("remaining %d, want %d", got, tc.wantRemaining)
			}
			if got := a.str(t, ratelimitheaders.KeyRateLimitPolicy); got != tc.wantPolicy {
				t.Errorf("rateLimitPolicy %q, want %q", got, tc.wantPolicy)
			}
			if a.str(t, ratelimitheaders.KeyReason) != string(bucketgate.ReasonOK) || a.num(t, ratelimitheaders.KeyRetryAfter) != 0 {
				t.Errorf("context %v", a.Context)
			}
		})
	}
}

// aws-lambda-go's own sample authorizer events, read from the module cache: odd values
// (a source IP of "...", placeholder headers) must still get a sensible answer.
func TestLibrarySampleEvents(t *testing.T) {
	tests := []struct {
		file      string
		wantErr   string // "" when it must be answered
		wantArn   string
		principal string
	}{
		{"apigw-custom-auth-request-type-request.json", "", "arn:aws:execute-api:us-east-1:123456789012:s4x3opwd6i/test/GET/request", "ip:unknown"},
		{"apigw-v2-custom-authorizer-v1-request.json", "", "arn:aws:execute-api:us-east-1:123456789012:abcdef123/test/GET/request", "ip:unknown"},
		{"apigw-v2-custom-authorizer-v2-request.json", "", "", ""},
		{"apigw-custom-auth-request.json", "REQUEST authorizer", "", ""},
	}
	for _, tc := range tests {
		t.Run(tc.file, func(t *testing.T) {
			f := newFixture(t, options{})
			a, err := f.invoke(t, samples.ReadLambdaEvent(t, tc.file))
			if tc.wantErr != "" {
				if !errors.Is(err, ErrBadEvent) || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error %v, want ErrBadEvent mentioning %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !a.allowed(t) || a.PrincipalID != tc.principal || a.str(t, ratelimitheaders.KeyPlan) != "free" {
				t.Fatalf("answer %s", a.raw)
			}
			if tc.wantArn != "" && a.PolicyDocument.Statement[0].Resource[0] != tc.wantArn {
				t.Errorf("resource %v, want %s", a.PolicyDocument.Statement[0].Resource, tc.wantArn)
			}
			if strings.Contains(tc.file, "-request-type-") && !strings.Contains(f.logs.String(), `"sourceIp":"..."`) {
				t.Errorf("no warning about the source IP %q in the log: %s", "...", f.logs.String())
			}
		})
	}
}

// The free plan's example through the handler, with the Redis clock held still and then
// moved: 10 requests pass, the 11th is limited for 1 s, 5 s later 5 more pass and the
// next is limited again.
func TestFreePlanScenario(t *testing.T) {
	for _, name := range []string{restEvent, httpEvent} {
		t.Run(name, func(t *testing.T) {
			f := newFixture(t, options{})
			ev := samples.Read(t, name)
			for i := range 10 {
				a := f.mustInvoke(t, ev)
				if !a.allowed(t) || a.num(t, ratelimitheaders.KeyRemaining) != int64(9-i) {
					t.Fatalf("request %d: %s", i+1, a.raw)
				}
			}
			a := f.mustInvoke(t, ev)
			if a.allowed(t) {
				t.Fatalf("11th allowed: %s", a.raw)
			}
			want := map[string]any{
				ratelimitheaders.KeyLimit: 10.0, ratelimitheaders.KeyRemaining: 0.0, ratelimitheaders.KeyRetryAfter: 1.0,
				ratelimitheaders.KeyRetryAfterText: "1 second",                               // not "1 seconds"
				ratelimitheaders.KeyReset:          float64(t0.Add(10 * time.Second).Unix()), // from the Redis clock, not Now
				ratelimitheaders.KeyResetAt:        "2025-12-11T16:15:10Z",
				ratelimitheaders.KeyRule:           "burst", ratelimitheaders.KeyPlan: "free", ratelimitheaders.KeyReason: "limited",
				ratelimitheaders.KeyRateLimit: `"burst";r=0;t=1`, ratelimitheaders.KeyRateLimitPolicy: `"burst";q=10;w=10`,
			}
			for k, v := range want {
				if a.Context[k] != v {
					t.Errorf("11th: context %s = %#v, want %#v", k, a.Context[k], v)
				}
			}
			f.mr.SetTime(t0.Add(5 * time.Second))
			for i := range 5 {
				if a := f.mustInvoke(t, ev); !a.allowed(t) {
					t.Fatalf("after 5 s, request %d denied: %s", i+1, a.raw)
				}
			}
			if a := f.mustInvoke(t, ev); a.allowed(t) || a.num(t, ratelimitheaders.KeyRetryAfter) != 1 {
				t.Fatalf("after 5 s, 6th: %s", a.raw)
			}
			if n := strings.Count(f.metrics.String(), "\n"); n != 17 {
				t.Errorf("%d EMF lines for 17 invocations", n)
			}
		})
	}
}

// The retry-after in words says "second" for 1 and "seconds" for any other number, so
// that the 429's message reads "a retry after 1 second" and "after 2 seconds".
func TestRetryAfterText(t *testing.T) {
	cfg, err := config.Parse([]byte(`{defaultPlan: slow, plans: {slow: [{name: burst, capacity: 1, refillPerSecond: 0.5}]}}`))
	if err != nil {
		t.Fatal(err)
	}
	f := newFixture(t, options{config: cfg})
	ev := samples.Read(t, restEvent)
	for i, want := range []string{"0 seconds", "2 seconds"} {
		if a := f.mustInvoke(t, ev); a.str(t, ratelimitheaders.KeyRetryAfterText) != want {
			t.Errorf("request %d: %s, want %s %q", i+1, a.raw, ratelimitheaders.KeyRetryAfterText, want)
		}
	}
	f.mr.SetTime(t0.Add(time.Second))
	if a := f.mustInvoke(t, ev); a.str(t, ratelimitheaders.KeyRetryAfterText) != "1 second" || a.num(t, ratelimitheaders.KeyRetryAfter) != 1 {
		t.Errorf("a second later: %s, want %s 1, %s %q", a.raw, ratelimitheaders.KeyRetryAfter, ratelimitheaders.KeyRetryAfterText, "1 second")
	}
}

// Every context value is a string, a number or a boolean (API Gateway drops anything
// else), and every documented key is there, whatever the outcome.
func TestContextValueTypes(t *testing.T) {
	keys := []string{ratelimitheaders.KeyLimit, ratelimitheaders.KeyRemaining, ratelimitheaders.KeyRetryAfter, ratelimitheaders.KeyReset, ratelimitheaders.KeyResetAt, ratelimitheaders.KeyRule, ratelimitheaders.KeyPlan, ratelimitheaders.KeyReason, ratelimitheaders.KeyRateLimit, ratelimitheaders.KeyRateLimitPolicy, ratelimitheaders.KeyRetryAfterText, ratelimitheaders.KeyDegraded, ratelimitheaders.KeyReservation, ratelimitheaders.KeyLease}
	slices.Sort(keys)
	tests := []struct {
		name     string
		failOpen bool
		prepare  func(f *fixture, ev []byte)
		reason   string
	}{
		{"allowed", false, func(*fixture, []byte) {}, "ok"},
		{"limited", false, func(f *fixture, ev []byte) {
			for range 10 {
				f.mustInvoke(t, ev)
			}
		}, "limited"},
		{"degraded", true, func(f *fixture, _ []byte) { f.mr.Close() }, "degraded"},
	}
	for _, tc := range tests {
		for _, name := range []string{restEvent, httpEvent} {
			t.Run(tc.name+"/"+name, func(t *testing.T) {
				f := newFixture(t, options{failOpen: tc.failOpen})
				ev := samples.Read(t, name)
				tc.prepare(f, ev)
				a := f.mustInvoke(t, ev)
				got := make([]string, 0, len(a.Context))
				for k, v := range a.Context {
					got = append(got, k)
					switch v.(type) {
					case string, float64, bool:
					default:
						t.Errorf("context %s = %#v (%T): not a string, number or boolean", k, v, v)
					}
				}
				slices.Sort(got)
				if !slices.Equal(got, keys) {
					t.Errorf("context keys %v, want %v", got, keys)
				}
				if a.str(t, ratelimitheaders.KeyReason) != tc.reason {
					t.Errorf("reason %q, want %q", a.str(t, ratelimitheaders.KeyReason), tc.reason)
				}
				if degraded, _ := a.Context[ratelimitheaders.KeyDegraded].(bool); degraded != (tc.reason == "degraded") {
					t.Errorf("degraded %v with reason %q", a.Context[ratelimitheaders.KeyDegraded], tc.reason)
				}
			})
		}
	}
}

func TestFailClosed(t *testing.T) {
	for _, name := range []string{restEvent, httpEvent} {
		t.Run(name, func(t *testing.T) {
			f := newFixture(t, options{})
			f.mr.Close()
			_, err := f.invoke(t, samples.Read(t, name))
			if !errors.Is(err, ErrUnavailable) || err.Error() == "Unauthorized" {
				t.Fatalf("error %v, want ErrUnavailable", err)
			}
			doc := oneEMF(t, f.metrics.Bytes())
			if doc[telemetry.DimOutcome] != telemetry.OutcomeUnavailable || doc[telemetry.MetricFailClosed] != 1.0 {
				t.Errorf("EMF %v", doc)
			}
			if r := doc[telemetry.DimReason]; r != "redis_error" && r != "timeout" {
				t.Errorf("FailClosed reason %v", r)
			}
			if !strings.Contains(f.logs.String(), `"level":"WARN","msg":"decision"`) {
				t.Errorf("no warning in the log: %s", f.logs.String())
			}
		})
	}
}

func TestFailOpen(t *testing.T) {
	for _, name := range []string{restEvent, httpEvent} {
		t.Run(name, func(t *testing.T) {
			f := newFixture(t, options{failOpen: true})
			f.mr.Close()
			a := f.mustInvoke(t, samples.Read(t, name))
			if !a.allowed(t) || a.str(t, ratelimitheaders.KeyReason) != "degraded" || a.str(t, ratelimitheaders.KeyRateLimit) != "" {
				t.Fatalf("answer %s", a.raw)
			}
			if a.num(t, ratelimitheaders.KeyReset) != f.now.Unix() || a.str(t, ratelimitheaders.KeyResetAt) != f.now.UTC().Format(time.RFC3339) {
				t.Errorf("reset %d (%s), want the local clock %d when Redis did not decide", a.num(t, ratelimitheaders.KeyReset), a.str(t, ratelimitheaders.KeyResetAt), f.now.Unix())
			}
			doc := oneEMF(t, f.metrics.Bytes())
			if doc[telemetry.DimOutcome] != telemetry.OutcomeDegraded || doc[telemetry.MetricFailClosed] != nil ||
				doc[telemetry.MetricFailOpen] != 1.0 || doc[telemetry.DimReason] != "redis_error" {
				t.Errorf("EMF %v: want Decisions degraded, and FailOpen 1 with reason redis_error", doc)
			}
		})
	}
}

// A refused identity (unknownKeys or anonymous: refuse) is the error Unauthorized, which
// API Gateway answers with 401; it never reaches Redis, and counts as refused.
func TestUnauthorized(t *testing.T) {
	refuse := mustParse(t, `
defaultPlan: free
unknownKeys: refuse
anonymous: refuse
plans:
  free: [{name: burst, capacity: 10, refillPerSecond: 1}]
  pro: [{name: burst, capacity: 100, refillPerSecond: 50}]
keys:
  `+proDigest+`: pro
`)
	tests := []struct {
		name    string
		headers map[string]string
		wantErr bool
	}{
		{"unknown key", map[string]string{"X-API-Key": "bg-sample-unknown-key"}, true},
		{"no key", map[string]string{"Accept": "*/*"}, true},
		{"blank key", map[string]string{"x-api-key": " "}, true},
		{"known key", map[string]string{"x-api-key": sampleProKey}, false},
	}
	for _, tc := range tests {
		for _, name := range []string{restEvent, httpEvent} {
			t.Run(tc.name+"/"+name, func(t *testing.T) {
				f := newFixture(t, options{config: refuse})
				a, err := f.invoke(t, withHeaders(t, samples.Read(t, name), tc.headers))
				if !tc.wantErr {
					if err != nil || !a.allowed(t) || a.str(t, ratelimitheaders.KeyPlan) != "pro" {
						t.Fatalf("answer %s, %v", a.raw, err)
					}
					return
				}
				if err == nil || err.Error() != "Unauthorized" {
					t.Fatalf("error %v, want exactly Unauthorized", err)
				}
				if keys := f.mr.Keys(); len(keys) != 0 {
					t.Errorf("a refused identity reached Redis: %v", keys)
				}
				// Counted as refused, apart from the decisions and the failures, so that
				// an alarm on the function's errors leaves the 401s out.
				if doc := oneEMF(t, f.metrics.Bytes()); doc[telemetry.DimOutcome] != telemetry.OutcomeRefused || doc[telemetry.MetricDecisions] != 1.0 ||
					doc[telemetry.MetricFailClosed] != nil || doc[telemetry.MetricRedisLatency] != nil {
					t.Errorf("EMF %v: want Decisions 1 with Outcome %s alone", doc, telemetry.OutcomeRefused)
				}
			})
		}
	}
}

// unknownKeys and anonymous each decide their own callers alone: a request with a key
// the registry does not know (or two different keys) is refused only under unknownKeys:
// refuse, one without a key only under anonymous: refuse; otherwise both are limited as
// their source on the default plan, and a registered key is its own under every policy.
func TestUnknownKeysAndAnonymousApart(t *testing.T) {
	callers := []struct {
		name    string
		headers map[string]string
		multi   map[string][]string
		refused func(unknownKeys, anonymous string) bool
	}{
		{"no key", map[string]string{"Accept": "*/*"}, nil, func(_, anonymous string) bool { return anonymous == "refuse" }},
		{"unknown key", map[string]string{"X-API-Key": "bg-sample-unknown-key"}, nil, func(unknownKeys, _ string) bool { return unknownKeys == "refuse" }},
		{"two keys", map[string]string{"X-API-Key": sampleProKey}, map[string][]string{"X-API-Key": {sampleProKey, "other"}}, func(unknownKeys, _ string) bool { return unknownKeys == "refuse" }},
		{"registered key", map[string]string{"X-API-Key": sampleProKey}, nil, func(string, string) bool { return false }},
	}
	for _, unknownKeys := range []string{"ip", "refuse"} {
		for _, anonymous := range []string{"default", "refuse"} {
			cfg := mustParse(t, "defaultPlan: free\nunknownKeys: "+unknownKeys+"\nanonymous: "+anonymous+
				"\nplans: {free: [{name: burst, capacity: 10, refillPerSecond: 1}], pro: [{name: burst, capacity: 100, refillPerSecond: 50}]}\nkeys: {"+proDigest+": pro}")
			for _, c := range callers {
				t.Run("unknownKeys "+unknownKeys+"/anonymous "+anonymous+"/"+c.name, func(t *testing.T) {
					f := newFixture(t, options{config: cfg})
					a, err := f.invoke(t, withAllHeaders(t, samples.Read(t, restEvent), c.headers, c.multi))
					if c.refused(unknownKeys, anonymous) {
						if !errors.Is(err, ErrUnauthorized) {
							t.Fatalf("answer %s, %v; want Unauthorized (401)", a.raw, err)
						}
						return
					}
					wantPrincipal, wantPlan := "ip:203.0.113.10", "free"
					if c.name == "registered key" {
						wantPrincipal, wantPlan = "key:"+proDigest, "pro"
					}
					if err != nil || !a.allowed(t) || a.PrincipalID != wantPrincipal || a.str(t, ratelimitheaders.KeyPlan) != wantPlan {
						t.Fatalf("answer %s, %v; want %s allowed on %s", a.raw, err, wantPrincipal, wantPlan)
					}
				})
			}
		}
	}
}

// The raw API key is nowhere: not in the answer, the error, the logs, the metrics, nor
// Redis, whether the key is known, unknown, limited or Redis is down.
func TestRawKeyNeverAppears(t *testing.T) {
	const unknownKey = "bg-raw-UNKNOWN-key-7f3a"
	tests := []struct {
		name     string
		key      string
		failOpen bool
		redisUp  bool
	}{
		{"known key", sampleProKey, false, true},
		{"unknown key", unknownKey, false, true},
		{"fail closed", sampleProKey, false, false},
		{"fail open", unknownKey, true, false},
	}
	for _, tc := range tests {
		for _, name := range []string{restEvent, httpEvent} {
			t.Run(tc.name+"/"+name, func(t *testing.T) {
				f := newFixture(t, options{config: sampleConfig(t), failOpen: tc.failOpen})
				ev := withHeaders(t, samples.Read(t, name), map[string]string{"X-Api-Key": tc.key})
				var seen strings.Builder
				for range 12 { // past the free burst: allowed and limited answers
					if !tc.redisUp {
						f.mr.Close()
					}
					a, err := f.invoke(t, ev)
					seen.Write(a.raw)
					if err != nil {
						seen.WriteString(err.Error())
					}
				}
				if tc.redisUp {
					for _, k := range f.mr.Keys() {
						seen.WriteString(k)
						fields, err := f.mr.HKeys(k)
						if err != nil {
							t.Fatal(err)
						}
						for _, field := range fields {
							seen.WriteString(field + "=" + f.mr.HGet(k, field))
						}
					}
				}
				seen.Write(f.logs.Bytes())
				seen.Write(f.metrics.Bytes())
				all := seen.String()
				if strings.Contains(all, tc.key) {
					t.Fatalf("raw key %q found in the output:\n%s", tc.key, all)
				}
				if !strings.Contains(all, bucketgate.KeyDigest(tc.key)) {
					t.Fatalf("the key's digest is not in the output either: did anything run?\n%s", all)
				}
			})
		}
	}
}

// oneEMF parses the only EMF line in b.
func oneEMF(t *testing.T, b []byte) map[string]any {
	t.Helper()
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	if len(lines) != 1 {
		t.Fatalf("%d EMF lines, want 1: %s", len(lines), b)
	}
	var doc map[string]any
	if err := json.Unmarshal([]byte(lines[0]), &doc); err != nil {
		t.Fatalf("EMF line %q: %v", lines[0], err)
	}
	return doc
}

// The EMF line of one allowed decision, parsed: the _aws directive names the namespace,
// the dimension sets and the metrics that the line carries as top-level members.
func TestEMFShape(t *testing.T) {
	f := newFixture(t, options{})
	f.mustInvoke(t, samples.Read(t, restEvent))
	var doc struct {
		AWS struct {
			Timestamp         int64
			CloudWatchMetrics []struct {
				Namespace  string
				Dimensions [][]string
				Metrics    []struct{ Name, Unit string }
			}
		} `json:"_aws"`
		Function      string
		Stack         string
		Outcome       string
		Decisions     *float64
		DenyCacheHits *float64
		RedisLatency  []float64
	}
	line := f.metrics.Bytes()
	if err := json.Unmarshal(line, &doc); err != nil || strings.Count(string(line), "\n") != 1 {
		t.Fatalf("EMF %q: %v", line, err)
	}
	if doc.AWS.Timestamp != f.now.UnixMilli() {
		t.Errorf("Timestamp %d, want %d", doc.AWS.Timestamp, f.now.UnixMilli())
	}
	if len(doc.AWS.CloudWatchMetrics) != 1 {
		t.Fatalf("%d directives, want 1 for an allowed decision", len(doc.AWS.CloudWatchMetrics))
	}
	d := doc.AWS.CloudWatchMetrics[0]
	if d.Namespace != settings.DefaultNamespace {
		t.Errorf("namespace %q", d.Namespace)
	}
	wantDims := [][]string{{telemetry.DimStack, telemetry.DimOutcome}, {telemetry.DimStack, telemetry.DimFunction, telemetry.DimOutcome}}
	if !slices.EqualFunc(d.Dimensions, wantDims, slices.Equal[[]string]) {
		t.Errorf("dimensions %v, want %v", d.Dimensions, wantDims)
	}
	var names []string
	for _, m := range d.Metrics {
		names = append(names, m.Name+"/"+m.Unit)
	}
	want := []string{"Decisions/Count", "RedisLatency/Milliseconds"} // no deny-cache hit: no DenyCacheHits
	if !slices.Equal(names, want) {
		t.Errorf("metrics %v, want %v", names, want)
	}
	if doc.Function != testFunction || doc.Stack != settings.DefaultStackName || doc.Outcome != telemetry.OutcomeAllowed || doc.Decisions == nil || *doc.Decisions != 1 ||
		doc.DenyCacheHits != nil || len(doc.RedisLatency) != 1 {
		t.Errorf("members Function=%q Stack=%q Outcome=%q Decisions=%v DenyCacheHits=%v RedisLatency=%v",
			doc.Function, doc.Stack, doc.Outcome, doc.Decisions, doc.DenyCacheHits, doc.RedisLatency)
	}
	if strings.Contains(string(line), "203.0.113.10") {
		t.Errorf("the identity is in the metrics: %s", line)
	}
}

// RegistryLookups is written when a registry table is set only: a key of the
// configuration document, found or not, counts no lookup and adds no Result dimension.
func TestNoRegistryLookupsWithoutATable(t *testing.T) {
	for name, key := range map[string]string{"a key of the document": sampleProKey, "an unknown key": "bg-sample-unknown-key"} {
		t.Run(name, func(t *testing.T) {
			f := newFixture(t, options{config: sampleConfig(t)})
			f.mustInvoke(t, withHeaders(t, samples.Read(t, restEvent), map[string]string{"X-API-Key": key}))
			doc := oneEMF(t, f.metrics.Bytes())
			if doc[telemetry.MetricDecisions] != 1.0 || doc[telemetry.MetricRegistryLookups] != nil || doc[telemetry.DimResult] != nil {
				t.Fatalf("EMF %v: want a decision and no registry lookup", doc)
			}
		})
	}
}

// BenchmarkHandleREST measures one REST invocation through the Lambda handler on
// miniredis: decode, identity, limits, decision, EMF line, answer.
func BenchmarkHandleREST(b *testing.B) {
	f := newFixture(b, options{config: mustParse(b, `
defaultPlan: big
plans: {big: [{name: burst, capacity: 1000000000, refillPerSecond: 100000}]}
`)})
	f.benchInvoke(b, samples.Read(b, restEvent))
}

// Route limits see the same path on every stage: an HTTP API named stage prefixes the
// path with "/<stage>", a REST API does not, and the route "POST /orders" costs 2 in
// the sample configuration either way.
func TestRouteCostOnEveryStage(t *testing.T) {
	tests := []struct {
		name  string
		event string
		edit  func(m map[string]any)
	}{
		{"REST", restProEvent, func(map[string]any) {}},
		{"HTTP API $default stage", httpEvent, func(m map[string]any) {
			rc := m["requestContext"].(map[string]any)
			rc["http"].(map[string]any)["method"] = "POST"
			rc["http"].(map[string]any)["path"] = "/orders"
			m["rawPath"], m["routeArn"] = "/orders", "arn:aws:execute-api:us-east-1:123456789012:f6g7h8i9j0/$default/POST/orders"
		}},
		{"HTTP API named stage", httpEvent, func(m map[string]any) {
			rc := m["requestContext"].(map[string]any)
			rc["stage"] = "prod"
			rc["http"].(map[string]any)["method"] = "POST"
			rc["http"].(map[string]any)["path"] = "/prod/orders"
			m["rawPath"], m["routeArn"] = "/prod/orders", "arn:aws:execute-api:us-east-1:123456789012:f6g7h8i9j0/prod/POST/orders"
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var m map[string]any
			if err := json.Unmarshal(samples.Read(t, tc.event), &m); err != nil {
				t.Fatal(err)
			}
			tc.edit(m)
			ev, err := json.Marshal(m)
			if err != nil {
				t.Fatal(err)
			}
			f := newFixture(t, options{config: sampleConfig(t)})
			if a := f.mustInvoke(t, ev); a.num(t, ratelimitheaders.KeyRemaining) != 98 || a.str(t, ratelimitheaders.KeyPlan) != "pro" {
				t.Fatalf("remaining %v plan %v, want 98 on pro (cost 2)", a.Context[ratelimitheaders.KeyRemaining], a.Context[ratelimitheaders.KeyPlan])
			}
		})
	}
}
