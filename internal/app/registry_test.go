package app_test

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/bucketgate/bucketgate/internal/app"
	"github.com/bucketgate/bucketgate/internal/guard"
	"github.com/bucketgate/bucketgate/internal/settings"
	"github.com/bucketgate/bucketgate/internal/testkit/redistest"
)

// One registry: a table, or the document's keys and tenants, never both.
func TestRegistryTableAndDocumentKeys(t *testing.T) {
	doc := "defaultPlan: free\nplans: {free: [{name: b, capacity: 1, refillPerSecond: 1}]}\ntenants: {t1: free}"
	_, _, err := app.Build(app.Check, env(withMini(t, map[string]string{settings.EnvConfigInline: doc, settings.EnvRegistryTable: "keys"})), &bytes.Buffer{}, &bytes.Buffer{})
	if err == nil || !strings.Contains(err.Error(), "REGISTRY_TABLE is set and the configuration document lists keys or tenants") {
		t.Fatalf("Build = %v, want an error naming REGISTRY_TABLE and the document's keys", err)
	}
}

// A table that cannot be reached does not fail init: the client makes no request
// until a key needs a lookup.
func TestRegistryInitSendsNothing(t *testing.T) {
	t.Setenv("AWS_ENDPOINT_URL_DYNAMODB", "http://127.0.0.1:1")
	t.Setenv("AWS_REGION", "us-east-1")
	h, _, err := app.Build(app.Check, env(withMini(t, map[string]string{settings.EnvRegistryTable: "keys"})), &bytes.Buffer{}, &bytes.Buffer{})
	if err != nil {
		t.Fatal(err)
	}
	if out, err := h.Invoke(context.Background(), []byte(`{"key": "k", "plan": "free"}`)); err != nil || !strings.Contains(string(out), `"allowed":true`) {
		t.Fatalf("a check with a plan: %s, %v; want it decided without the registry", out, err)
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
