package app_test

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/bucketgate/bucketgate/internal/app"
	"github.com/bucketgate/bucketgate/internal/guard"
	"github.com/bucketgate/bucketgate/internal/registry"
	"github.com/bucketgate/bucketgate/internal/settings"
	"github.com/bucketgate/bucketgate/internal/testkit/redistest"
)

// One registry: a table, or the document's keys and tenants, never both. The
// configuration's error comes first, though Redis connects meanwhile and fails too.
func TestRegistryTableAndDocumentKeys(t *testing.T) {
	doc := "defaultPlan: free\nplans: {free: [{name: b, capacity: 1, refillPerSecond: 1}]}\ntenants: {t1: free}"
	for _, tc := range []struct {
		name  string
		redis string
	}{
		{"Redis up", withMini(t, nil)[settings.EnvRedisAddr]},
		{"Redis unreachable", "127.0.0.1:1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			vars := map[string]string{settings.EnvRedisAddr: tc.redis, settings.EnvConfigInline: doc, settings.EnvRegistryTable: "keys"}
			_, _, err := app.Build(app.Check, env(vars), &bytes.Buffer{}, &bytes.Buffer{})
			if err == nil || !strings.Contains(err.Error(), "REGISTRY_TABLE is set and the configuration document lists keys or tenants") {
				t.Fatalf("Build = %v, want an error naming REGISTRY_TABLE and the document's keys", err)
			}
		})
	}
}

// A table that cannot be reached does not fail init: the function starts, and until
// the table answers, every check that needs a plan follows the failure policy (closed:
// unavailable, counted as a registry error); a check with its own rules needs no
// configuration and is decided.
func TestRegistryUnreachableAtInit(t *testing.T) {
	t.Setenv("AWS_ENDPOINT_URL_DYNAMODB", "http://127.0.0.1:1")
	t.Setenv("AWS_REGION", "us-east-1")
	t.Setenv("AWS_ACCESS_KEY_ID", "test")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "test")
	var metrics, logs bytes.Buffer
	h, _, err := app.Build(app.Check, env(withMini(t, map[string]string{settings.EnvRegistryTable: "keys"})), &metrics, &logs)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(logs.String(), registry.MsgConfigReadFailed) {
		t.Errorf("init logs no failed read of the configuration:\n%s", &logs)
	}
	for _, payload := range []string{`{"key": "k", "plan": "free"}`, `{"key": "k"}`} {
		out, err := h.Invoke(context.Background(), []byte(payload))
		if err != nil || !strings.Contains(string(out), `"reason":"unavailable"`) {
			t.Fatalf("%s: %s, %v; want unavailable, by the failure policy", payload, out, err)
		}
	}
	if !strings.Contains(metrics.String(), `"Reason":"registry_error"`) {
		t.Errorf("metrics %s: want FailClosed with reason registry_error", &metrics)
	}
	out, err := h.Invoke(context.Background(), []byte(`{"key": "k", "rules": [{"name": "b", "capacity": 5, "refillPerSecond": 1}]}`))
	if err != nil || !strings.Contains(string(out), `"allowed":true`) || !strings.Contains(string(out), `"remaining":4`) {
		t.Fatalf("a check with its own rules: %s, %v; want it decided by Redis", out, err)
	}
}

// The registry's reads end the guard's margin before the invocation's deadline, and
// REGISTRY_TIMEOUT_MS, REGISTRY_CACHE_MS and REGISTRY_CACHE_SIZE size the cache.
func TestRegistryOptions(t *testing.T) {
	s := redistest.Settings(t, map[string]string{settings.EnvRegistryTimeoutMS: "150", settings.EnvRegistryCacheMS: "5000", settings.EnvRegistryCacheSize: "7"})
	o := app.RegistryOptions(s, nil)
	if o.Margin != guard.DefaultMargin || o.Timeout != 150*time.Millisecond || o.TTL != 5*time.Second || o.Size != 7 {
		t.Fatalf("RegistryOptions: %+v", o)
	}
}
