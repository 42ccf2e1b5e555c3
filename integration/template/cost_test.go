package template_test

// The bytes the cost of logs is computed from (docs/deploy.md, "Costs"): CloudWatch Logs
// bills every byte a function writes, its log lines (stderr) and its EMF lines (stdout)
// alike, and Lambda's own lines for each invocation.

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/bucketgate/bucketgate"
	"github.com/bucketgate/bucketgate/internal/app"
	"github.com/bucketgate/bucketgate/internal/registry"
	"github.com/bucketgate/bucketgate/internal/settings"
	"github.com/bucketgate/bucketgate/internal/testkit/dynalite"
	"github.com/bucketgate/bucketgate/internal/testkit/samples"
)

// platformLines are the lines Lambda writes for each invocation of a traced function in
// the JSON log format, as AWS documents them (platform.start and platform.report; a
// request id is a UUID, a trace id Root=1-<8 hex>-<24 hex>): not measured here, since
// Lambda writes them, but counted in each invocation's bytes.
var platformLines = []string{
	`{"time":"2026-11-25T19:22:22.123Z","type":"platform.start","record":{"requestId":"6d68ca91-49c9-448d-89b8-7ca3e6dc66aa","version":"$LATEST",` +
		`"tracing":{"spanId":"4ce1e3b5f2a81c7d","type":"X-Amzn-Trace-Id","value":"Root=1-6745a1b2-3c4d5e6f7a8b9c0d1e2f3a4b;Parent=4ce1e3b5f2a81c7d;Sampled=1"}}}`,
	`{"time":"2026-11-25T19:22:22.125Z","type":"platform.report","record":{"requestId":"6d68ca91-49c9-448d-89b8-7ca3e6dc66aa",` +
		`"metrics":{"durationMs":1.871,"billedDurationMs":2,"memorySizeMB":256,"maxMemoryUsedMB":31},` +
		`"tracing":{"spanId":"4ce1e3b5f2a81c7d","type":"X-Amzn-Trace-Id","value":"Root=1-6745a1b2-3c4d5e6f7a8b9c0d1e2f3a4b;Parent=4ce1e3b5f2a81c7d;Sampled=1"},"status":"success"}}`,
}

// The bytes one authorizer invocation writes, as Lambda runs it with the template's
// environment (a registry table, here on dynalite; the stack's name; LogLevel DEBUG or
// INFO), for a registered key's allowed and limited requests, its registry entry cached
// (the usual case), the limited one answered by the deny cache (as a request after the
// last token usually is). Each stays within the figure the cost in the docs is computed
// from, so that the cost there is an upper bound:
//
//	go test ./integration/template -run TestDecisionLogBytes -v
//
// prints the lines and their bytes.
func TestDecisionLogBytes(t *testing.T) {
	const table = "bucketgate-keys"
	client := dynalite.Table(t, table)
	rawKey := "bg-cost-key"
	item := registry.Record{ID: "key:" + bucketgate.KeyDigest(rawKey), Plan: "free"}.Item()
	if _, err := client.PutItem(t.Context(), &dynamodb.PutItemInput{TableName: aws.String(table), Item: item}); err != nil {
		t.Fatal(err)
	}
	platform := 0
	for _, l := range platformLines {
		platform += len(l)
	}
	tests := []struct {
		level       string
		allowed     int // the most bytes of an allowed request, Lambda's lines included
		limited     int // of a limited one
		decisionLog bool
	}{
		{"DEBUG", 1600, 1600, true},
		{"INFO", 1250, 1600, false},
	}
	for _, tc := range tests {
		t.Run(tc.level, func(t *testing.T) {
			m := miniredis.RunT(t)
			m.SetTime(time.Date(2026, 11, 25, 19, 22, 22, 0, time.UTC))
			env := map[string]string{settings.EnvRedisAddr: m.Addr(), settings.EnvTimeoutMS: decisionTimeout, settings.EnvLambdaLogLevel: tc.level,
				settings.EnvRegistryTable: table, settings.EnvNamespace: "bucketgate", settings.EnvStackName: "bucketgate"}
			var stdout, stderr bytes.Buffer
			h, _, err := app.Build(app.Authorizer, func(k string) string { return env[k] }, &stdout, &stderr)
			if err != nil {
				t.Fatal(err)
			}
			event := withAPIKey(t, samples.Read(t, "authorizer-rest.json"), rawKey)
			measured := map[int]int{} // request (1-based) -> bytes
			for i := 1; i <= 11; i++ {
				stdout.Reset()
				stderr.Reset()
				if _, err := h.Invoke(t.Context(), event); err != nil {
					t.Fatal(err)
				}
				if i != 2 && i != 11 { // the 1st reads the table; the 2nd to 10th are alike
					continue
				}
				emf, logs := stdout.Len()-lineCount(&stdout), stderr.Len()-lineCount(&stderr) // a log event holds no newline
				measured[i] = emf + logs + platform
				t.Logf("%s, request %d: %d bytes: EMF %d, logs %d, Lambda's %d\nstdout:\n%sstderr:\n%s", tc.level, i, measured[i], emf, logs, platform, &stdout, &stderr)
				if got := strings.Contains(stderr.String(), `"msg":"decision"`); got != (tc.decisionLog || i == 11) {
					t.Errorf("request %d: a decision line %v, want %v", i, got, tc.decisionLog || i == 11)
				}
			}
			if measured[2] > tc.allowed || measured[11] > tc.limited {
				t.Errorf("allowed %d bytes, limited %d: want at most %d and %d, the figures of docs/deploy.md (update them there and here)", measured[2], measured[11], tc.allowed, tc.limited)
			}
		})
	}
}

// lineCount returns the number of lines in b.
func lineCount(b *bytes.Buffer) int { return bytes.Count(b.Bytes(), []byte("\n")) }
