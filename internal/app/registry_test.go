package app_test

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/bucketgate/bucketgate/internal/app"
	"github.com/bucketgate/bucketgate/internal/settings"
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
