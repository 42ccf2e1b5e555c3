package check

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bucketgate/bucketgate"
	"github.com/bucketgate/bucketgate/checkapi"
	"github.com/bucketgate/bucketgate/internal/config"
	"github.com/bucketgate/bucketgate/internal/guard"
	"github.com/bucketgate/bucketgate/internal/registry"
	"github.com/bucketgate/bucketgate/internal/telemetry"
	"github.com/bucketgate/bucketgate/internal/testkit/registrytest"
)

// withRegistry puts f's handler on a registry cache over src.
func (f *fixture) withRegistry(src *registrytest.Source) {
	f.h.Config = registry.NewStatic(f.cfg, registry.NewCache(src, registry.Options{TTL: time.Minute, Size: 100}))
}

// A check with neither plan nor rules is decided under its tenant's registry plan with
// its own rules; one that names a plan never asks the registry; a tenant the registry
// does not know, or has revoked, is on the default plan.
func TestTenantPlanFromTheRegistry(t *testing.T) {
	_, client := startMiniredis(t)
	f := newFixture(t, client, nil, guard.Options{})
	src := registrytest.New(
		registry.Record{ID: "tenant:acme", Plan: "pro", Rules: []bucketgate.Rule{{Name: "burst", Capacity: 3, RefillPerSecond: 1}}},
		registry.Record{ID: "tenant:gone", Plan: "enterprise", Status: registry.StatusRevoked},
	)
	f.withRegistry(src)
	tests := []struct {
		payload, want string
		reads         int
	}{
		{`{"key": "acme"}`, `"limit":3,"remaining":2,"retryAfterMs":0,"resetAfterMs":1000,"rule":"burst","plan":"pro"`, 1},
		{`{"key": "acme", "cost": 2}`, `"limit":3,"remaining":0`, 1},
		// The same rule name is the same bucket, whatever the plan: the 3 tokens are spent.
		{`{"key": "acme", "plan": "enterprise"}`, `"reason":"limited","limit":500,"remaining":0`, 1},
		{`{"key": "gone"}`, `"limit":10,"remaining":9,"retryAfterMs":0,"resetAfterMs":1000,"rule":"burst","plan":"free"`, 2},
		{`{"key": "stranger"}`, `"plan":"free"`, 3},
	}
	for _, tc := range tests {
		out := f.invokeOK(t, []byte(tc.payload))
		if !strings.Contains(string(out), tc.want) || src.Reads() != tc.reads {
			t.Errorf("%s: %s after %d reads, want %s after %d", tc.payload, out, src.Reads(), tc.want, tc.reads)
		}
	}
	lines := emfLines(t, f.metrics)
	var results []string
	for _, l := range lines {
		if r, ok := l[telemetry.DimResult].(string); ok {
			results = append(results, r)
		}
	}
	if got := strings.Join(results, " "); got != "miss hit miss miss" {
		t.Errorf("lookup results %q, want miss hit miss miss", got)
	}
}

// A cost the tenant's plan can never hold is an invalid request naming the check's
// cost, and nothing in the batch is decided.
func TestTenantCostAboveItsPlan(t *testing.T) {
	mr, client := startMiniredis(t)
	f := newFixture(t, client, nil, guard.Options{})
	f.withRegistry(registrytest.New(registry.Record{ID: "tenant:small", Plan: "pro", Rules: []bucketgate.Rule{{Name: "burst", Capacity: 3, RefillPerSecond: 1}}}))
	_, err := f.invoke([]byte(`{"checks": [{"key": "other"}, {"key": "small", "cost": 5}]}`))
	ive := functionError(t, err)
	if ive.Type != checkapi.ErrorTypeInvalidRequest || ive.Message != "checks[1].cost: 5 exceeds capacity 3 of rule burst: it could never be allowed" {
		t.Fatalf("error %+v", ive)
	}
	if keys := mr.Keys(); len(keys) != 0 {
		t.Fatalf("Redis written for an invalid batch: %v", keys)
	}
}

// A request its tenant's plan can never do is an invalid request naming it, refused
// before the engine sees it (no error line: the engine agrees with what was checked), as
// the same request with inline rules is: a reserve or a refund on a plan of concurrency
// rules alone.
func TestTenantOperationItsPlanCannotDo(t *testing.T) {
	mr, client := startMiniredis(t)
	cfg, err := config.Parse([]byte("defaultPlan: free\nplans:\n  free: [{name: burst, capacity: 10, refillPerSecond: 1}]\n  streams: [{name: streams, concurrency: 2}]\n"))
	if err != nil {
		t.Fatal(err)
	}
	f := newFixture(t, client, cfg, guard.Options{})
	f.withRegistry(registrytest.New(registry.Record{ID: "tenant:st", Plan: "streams"}))
	for _, tt := range []struct{ name, payload, want string }{
		{"reserve", `{"key": "st", "op": "reserve", "cost": 2}`, `plan: plan "streams" has concurrency rules alone: a reserve needs a bucket or a quota`},
		{"refund in a batch", `{"checks": [{"key": "other"}, {"key": "st", "op": "refund"}]}`, `checks[1].plan: plan "streams" has concurrency rules alone: a refund needs a bucket or a quota`},
		{"reserve by the plan", `{"key": "other", "plan": "streams", "op": "reserve", "cost": 2}`, `plan: plan "streams" has concurrency rules alone: a reserve needs a bucket or a quota`},
	} {
		f.logs.Reset()
		_, err := f.invoke([]byte(tt.payload))
		if fe := functionError(t, err); fe.Type != checkapi.ErrorTypeInvalidRequest || !strings.HasPrefix(fe.Message, tt.want) {
			t.Errorf("%s: %+v, want an invalid request starting %q", tt.name, fe, tt.want)
		}
		if strings.Contains(f.logs.String(), `"level":"ERROR"`) {
			t.Errorf("%s: an error line for a request refused as invalid: %s", tt.name, f.logs)
		}
	}
	if keys := mr.Keys(); len(keys) != 0 {
		t.Fatalf("Redis written for invalid requests: %v", keys)
	}
}

// A tenant the registry cannot say anything about follows the failure policy, counted
// as FailClosed with reason registry_error; the other checks of the batch are decided.
// Its answer names no plan and no rule: the registry could not say which are its. Its
// decision line names it once, by its digest (its error, the registry's, repeated it).
func TestTenantRegistryFailure(t *testing.T) {
	for _, failOpen := range []bool{false, true} {
		mr, client := startMiniredis(t)
		f := newFixture(t, client, nil, guard.Options{FailOpen: failOpen})
		src := registrytest.New()
		src.Fail(errors.New("dynamodb: throttled"))
		f.withRegistry(src)
		out := f.invokeOK(t, []byte(`{"checks": [{"key": "tenant-t1"}, {"key": "tenant-t1", "plan": "pro"}]}`))
		want := `{"results":[{"allowed":false,"reason":"unavailable","limit":0,"remaining":0,"retryAfterMs":1000,"resetAfterMs":0,"rule":"","plan":""},`
		if failOpen {
			want = `{"results":[{"allowed":true,"reason":"degraded","limit":0,"remaining":0,"retryAfterMs":0,"resetAfterMs":0,"rule":"","plan":""},`
		}
		if !strings.HasPrefix(string(out), want) || !strings.Contains(string(out), `"reason":"ok","limit":100,"remaining":99`) {
			t.Fatalf("failOpen %v: %s\nwant it to start %s and decide the pro check", failOpen, out, want)
		}
		if keys := mr.Keys(); len(keys) != 1 {
			t.Errorf("Redis keys %v: want the pro check's only", keys)
		}
		var line map[string]any // the tenant check's decision line: its first
		if err := json.Unmarshal([]byte(f.logs.String()[:strings.Index(f.logs.String(), "\n")]), &line); err != nil {
			t.Fatal(err)
		}
		raw, _ := json.Marshal(line)
		digest := bucketgate.KeyDigest("tenant-t1")
		if logs := f.logs.String(); strings.Contains(logs, "tenant-t1") || line[telemetry.AttrIdentity] != "tenant:"+digest ||
			strings.Count(string(raw), digest) != 1 || !strings.Contains(fmt.Sprint(line[telemetry.AttrError]), "dynamodb: throttled") {
			t.Errorf("failOpen %v: the decision line %s must name the tenant by its digest, once, never its key, and the table's error:\n%s", failOpen, raw, logs)
		}
		if !failOpen && !strings.Contains(f.metrics.String(), `"Reason":"registry_error"`) {
			t.Errorf("no FailClosed by registry_error in %s", f.metrics)
		}
	}
}

// During a registry outage a tenant's check, or refund, is answered unavailable (or
// degraded) whatever its cost: the default plan is not its plan, so a cost above the
// default plan's capacity is no invalid request, and no answer names the default plan.
// The batch's other checks are decided.
func TestTenantRegistryOutageIsNoInvalidRequest(t *testing.T) {
	payloads := []string{
		`{"key": "pro-tenant", "cost": 50}`,
		`{"key": "pro-tenant", "cost": 50, "op": "refund"}`,
		`{"key": "pro-tenant"}`,
		`{"checks": [{"key": "pro-tenant", "cost": 50}, {"key": "other", "plan": "pro", "cost": 50}, {"key": "pro-tenant", "op": "refund", "cost": 40}]}`,
	}
	for _, failOpen := range []bool{false, true} {
		reason := checkapi.ReasonUnavailable
		if failOpen {
			reason = checkapi.ReasonDegraded
		}
		for _, payload := range payloads {
			mr, client := startMiniredis(t)
			f := newFixture(t, client, nil, guard.Options{FailOpen: failOpen})
			src := registrytest.New(registry.Record{ID: "tenant:pro-tenant", Plan: "pro"})
			src.Fail(errors.New("dynamodb: throttled"))
			f.withRegistry(src)
			out, err := f.invoke([]byte(payload))
			if err != nil {
				t.Fatalf("failOpen %v: %s: %v: want an answer by the failure policy", failOpen, payload, err)
			}
			var results []checkapi.Response
			if strings.HasPrefix(payload, `{"checks"`) {
				var b checkapi.BatchResult
				if err := json.Unmarshal(out, &b); err != nil {
					t.Fatal(err)
				}
				results = b.Results
			} else {
				var r checkapi.Response
				if err := json.Unmarshal(out, &r); err != nil {
					t.Fatal(err)
				}
				results = []checkapi.Response{r}
			}
			for i, r := range results {
				decided := strings.HasPrefix(payload, `{"checks"`) && i == 1
				switch {
				case decided && (r.Reason != checkapi.ReasonOK || r.Plan != "pro" || r.Remaining != 50):
					t.Errorf("failOpen %v: %s: results[%d] = %+v, want the unrelated check decided", failOpen, payload, i, r)
				case !decided && (r.Reason != reason || r.Allowed != failOpen || r.Plan != "" || r.Rule != "" || r.Limit != 0):
					t.Errorf("failOpen %v: %s: results[%d] = %+v, want %s with no plan or rule", failOpen, payload, i, r, reason)
				}
			}
			if keys := mr.Keys(); len(keys) > 1 {
				t.Errorf("Redis keys %v: nothing of the tenant's may be written", keys)
			}
		}
	}
}

// barrier is a registry source whose reads wait for one another: each waits until want
// reads are in flight (or a while passes), so that reads made one after another show as
// never more than one at a time.
type barrier struct {
	*registrytest.Source
	want int

	mu       sync.Mutex
	inflight int
	most     int
	all      chan struct{}
}

func (b *barrier) Get(ctx context.Context, id string) (registry.Record, bool, error) {
	b.mu.Lock()
	b.inflight++
	b.most = max(b.most, b.inflight)
	if b.inflight == b.want {
		close(b.all)
	}
	b.mu.Unlock()
	select {
	case <-b.all:
	case <-time.After(2 * time.Second):
	}
	b.mu.Lock()
	b.inflight--
	b.mu.Unlock()
	return b.Source.Get(ctx, id)
}

// A batch's tenants are looked up at once, not one read after another.
func TestTenantsLookedUpTogether(t *testing.T) {
	_, client := startMiniredis(t)
	f := newFixture(t, client, nil, guard.Options{})
	src := &barrier{Source: registrytest.New(), want: 3, all: make(chan struct{})}
	f.h.Config = registry.NewStatic(f.cfg, registry.NewCache(src, registry.Options{TTL: time.Minute, Size: 100}))
	out := f.invokeOK(t, []byte(`{"checks": [{"key": "a"}, {"key": "b"}, {"key": "c"}]}`))
	if src.most != 3 || strings.Count(string(out), `"plan":"free"`) != 3 {
		t.Fatalf("at most %d reads at once for 3 tenants, answer %s; want 3 at once", src.most, out)
	}
}
