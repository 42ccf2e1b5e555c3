package check

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/lambda/messages"

	"github.com/bucketgate/bucketgate/internal/guard"
	"github.com/bucketgate/bucketgate/internal/registry"
	"github.com/bucketgate/bucketgate/internal/testkit/registrytest"
)

// The check function takes its plans from the table's document, and a tenant's plan
// resolved with it: a new version names plans the old one lacked, within the period.
func TestCheckFollowsTheTablesDocument(t *testing.T) {
	_, client := startMiniredis(t)
	f := newFixture(t, client, nil, guard.Options{})
	src := registrytest.New(registry.Record{ID: "tenant:acme", Plan: "pro"})
	put := func(v int64, doc string) {
		for _, id := range []string{registry.ConfigID, registry.VersionID(v)} {
			src.PutConfig(registry.StoredConfig{ID: id, Document: doc, Version: v})
		}
	}
	const plans = "defaultPlan: free\nplans: {free: [{name: burst, capacity: 10, refillPerSecond: 1}], pro: [{name: burst, capacity: 40, refillPerSecond: 1}]"
	put(1, plans+"}")
	now := testTime
	clock := func() time.Time { return now }
	live := registry.NewLive(src, registry.NewCache(src, registry.Options{TTL: time.Hour, Size: 10, Now: clock}), f.cfg,
		registry.LiveOptions{TTL: time.Minute, Now: clock})
	if err := live.Load(context.Background()); err != nil {
		t.Fatal(err)
	}
	f.h.Config = live
	if out := f.invokeOK(t, []byte(`{"key": "acme"}`)); !strings.Contains(string(out), `"limit":40`) {
		t.Fatalf("a tenant on pro, version 1: %s", out)
	}
	var ive messages.InvokeResponse_Error
	if _, err := f.invoke([]byte(`{"key": "k", "plan": "gold"}`)); !errors.As(err, &ive) || ive.Message != `plan: unknown plan "gold" (configured: free, pro)` {
		t.Fatalf("gold before version 2: %v", err)
	}
	put(2, plans+", gold: [{name: burst, capacity: 70, refillPerSecond: 1}]}")
	now = now.Add(time.Minute)
	if out := f.invokeOK(t, []byte(`{"key": "k", "plan": "gold"}`)); !strings.Contains(string(out), `"limit":70`) {
		t.Fatalf("gold in version 2: %s", out)
	}
}

// With no configuration (the table unreadable since the instance started), a check
// that needs a plan is answered by the failure policy, a payload that is wrong still
// refused, and a check with its own rules decided.
func TestCheckWithoutConfiguration(t *testing.T) {
	_, client := startMiniredis(t)
	f := newFixture(t, client, nil, guard.Options{})
	src := registrytest.New()
	src.Fail(errors.New("dynamodb: no route"))
	live := registry.NewLive(src, registry.NewCache(src, registry.Options{TTL: time.Hour, Size: 10}), f.cfg, registry.LiveOptions{TTL: time.Minute})
	if err := live.Load(context.Background()); err != nil {
		t.Fatal(err)
	}
	f.h.Config = live
	out := f.invokeOK(t, []byte(`{"checks": [{"key": "a", "plan": "pro"}, {"key": "b"}, {"identity": "ip:192.0.2.1", "cost": 0}, {"key": "c", "rules": [{"name": "b", "capacity": 5, "refillPerSecond": 1}]}]}`))
	if strings.Count(string(out), `"reason":"unavailable"`) != 3 || !strings.Contains(string(out), `"allowed":true,"reason":"ok","limit":5,"remaining":4`) {
		t.Fatalf("answer %s: want three unavailable, and the check with its own rules decided", out)
	}
	var ive messages.InvokeResponse_Error
	if _, err := f.invoke([]byte(`{"key": "a", "plan": "pro", "cost": -1}`)); !errors.As(err, &ive) || !strings.HasPrefix(ive.Message, "cost: got -1") {
		t.Fatalf("a bad cost with no configuration: %v, want it refused", err)
	}
	if !strings.Contains(f.logs.String(), "no configuration") {
		t.Errorf("the decision lines do not say why:\n%s", f.logs)
	}
}
