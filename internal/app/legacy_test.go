package app_test

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/bucketgate/bucketgate/internal/app"
	"github.com/bucketgate/bucketgate/internal/registry"
	"github.com/bucketgate/bucketgate/internal/settings"
	"github.com/bucketgate/bucketgate/internal/testkit/dynalite"
)

// A document an earlier bucketgate stored in the registry table (its config put took
// it) that config put now refuses still loads in the functions after an upgrade: a 0
// written beside a bucket's numbers, which that release dropped, is dropped as before,
// with a warning naming the field, as a rule a route lists twice is read as one rule;
// an API key bucketgate made in a comment or a route's path is never logged. The function decides by the document, version 1 and its copy
// alike (every copy read at a cold start holds it too): it was an init failure, every
// request of the upgraded stack turned away.
func TestStoredDocumentOfAnEarlierReleaseLoads(t *testing.T) {
	const made = "bg_s3cr3tAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"
	for _, tc := range []struct {
		name, rule string
		warning    string // what the warning names; "" for none
	}{
		{"concurrency 0 beside a bucket", "{name: b, capacity: 5, refillPerSecond: 1, concurrency: 0}", "plans.free[0].concurrency (line 2, column 72): 0 beside"},
		{"limit 0 beside a bucket", "{name: b, capacity: 5, refillPerSecond: 1, limit: 0}", "plans.free[0].limit (line 2, column 66): 0 beside"},
		{"refillPerSecond 0 beside a refill", "{name: b, capacity: 5, refill: 60, per: minute, refillPerSecond: 0}", "plans.free[0].refillPerSecond (line 2, column 81): 0 beside"},
		{"refillPerSecond that rounds to 0 beside a refill", "{name: b, capacity: 5, refill: 60, per: minute, refillPerSecond: 1e-400}", `plans.free[0].refillPerSecond (line 2, column 81): \"1e-400\", which rounds to 0, beside`},
		{"a rule twice in a route", "{name: b, capacity: 5, refillPerSecond: 1}]}\nroutes: [{path: /x, rules: [{name: u, capacity: 9, refillPerSecond: 1}, {name: u, capacity: 9, refillPerSecond: 1}]}]\n#", "routes[0].rules[1] (line 3, column 73): rule u appears twice in the route"},
		{"a made key in a comment and a route's path", "{name: b, capacity: 5, refillPerSecond: 1}]} # " + made + "\nroutes: [{path: /v1/" + made + ", rules: [{name: r, capacity: 9, refillPerSecond: 1}]}]\n#", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			const table = "keys"
			client := dynalite.Table(t, table)
			doc := "defaultPlan: free\nplans: {free: [" + tc.rule + "]}\n"
			for _, id := range []string{registry.ConfigID, registry.VersionID(1)} {
				item := registry.StoredConfig{ID: id, Document: doc, Version: 1, UpdatedAt: time.Unix(1_700_000_000, 0)}.Item()
				if _, err := client.PutItem(t.Context(), &dynamodb.PutItemInput{TableName: aws.String(table), Item: item}); err != nil {
					t.Fatal(err)
				}
			}
			var logs bytes.Buffer
			h, _, err := app.Build(app.Check, env(withMini(t, map[string]string{settings.EnvRegistryTable: table})), &bytes.Buffer{}, &logs)
			if err != nil {
				t.Fatalf("Build: %v; want the function started on the stored document", err)
			}
			out, err := h.Invoke(context.Background(), []byte(`{"key": "k", "plan": "free"}`))
			if err != nil || !strings.Contains(string(out), `"allowed":true`) || !strings.Contains(string(out), `"remaining":4`) {
				t.Fatalf("check: %s, %v; want allowed by the stored bucket of 5", out, err)
			}
			warned := strings.Contains(logs.String(), `"level":"WARN","msg":"`+registry.MsgConfigCaveat+`"`)
			if warned != (tc.warning != "") || !strings.Contains(logs.String(), tc.warning) || strings.Contains(logs.String(), "s3cr3t") {
				t.Fatalf("warned %v, want %q, never the key; log:\n%s", warned, tc.warning, &logs)
			}
		})
	}
}
