package authorizer

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/bucketgate/bucketgate/internal/config"
	"github.com/bucketgate/bucketgate/internal/registry"
	"github.com/bucketgate/bucketgate/internal/telemetry"
	"github.com/bucketgate/bucketgate/internal/testkit/registrytest"
	"github.com/bucketgate/bucketgate/internal/testkit/samples"
	"github.com/bucketgate/bucketgate/ratelimitheaders"
)

// tableDoc returns a document of the table whose pro plan has a burst of proBurst.
func tableDoc(proBurst int) string {
	return "defaultPlan: free\nplans: {free: [{name: burst, capacity: 10, refillPerSecond: 1}], pro: [{name: burst, capacity: " +
		strconv.Itoa(proBurst) + ", refillPerSecond: 1}]}\nroutes: [{method: POST, path: /orders, cost: 2}]\n"
}

// putConfig stores version v of doc in src as the document in force, with its copy.
func putConfig(src *registrytest.Source, v int64, doc string) {
	for _, id := range []string{registry.ConfigID, registry.VersionID(v)} {
		src.PutConfig(registry.StoredConfig{ID: id, Document: doc, Version: v})
	}
}

// liveOver returns the configuration of a registry table held by src, loaded, on the
// clock *now: the document is read every half minute, identities every minute.
// Both log to logs.
func liveOver(t testing.TB, src *registrytest.Source, now *time.Time, logs *bytes.Buffer) *registry.Live {
	t.Helper()
	opts := cacheOptions()
	opts.Now, opts.Log = func() time.Time { return *now }, telemetry.NewLogger(logs, slog.LevelDebug)
	live := registry.NewLive(src, registry.NewCache(src, opts), config.Default(), registry.LiveOptions{TTL: opts.TTL / 2, Now: opts.Now, Log: opts.Log})
	if err := live.Load(context.Background()); err != nil {
		t.Fatal(err)
	}
	return live
}

// The authorizer decides by the table's document and its registry together: a key's
// plan follows a new version within the period, with no read of the key's item; a
// version that does not load is kept out (the last good one decides) and counted as
// ConfigInvalid; each read of the document is a registry lookup in the metrics.
func TestAuthorizerFollowsTheTablesDocument(t *testing.T) {
	src := registrytest.New(registry.Record{ID: "key:" + proDigest, Plan: "pro"})
	putConfig(src, 1, tableDoc(100))
	now := tLocal
	var logs bytes.Buffer
	f := newFixture(t, options{live: liveOver(t, src, &now, &logs)})
	limit := func() (int64, map[string]any) {
		t.Helper()
		f.metrics.Reset()
		a := f.mustInvoke(t, samples.Read(t, restProEvent))
		if a.str(t, ratelimitheaders.KeyPlan) != "pro" {
			t.Fatalf("answer %s: want pro", a.raw)
		}
		lines := strings.Split(strings.TrimSpace(f.metrics.String()), "\n")
		return a.num(t, ratelimitheaders.KeyLimit), oneEMF(t, []byte(lines[0]))
	}
	if l, doc := limit(); l != 100 || doc[telemetry.DimResult] != "miss" || doc[telemetry.MetricRegistryLookups] != 2.0 {
		t.Fatalf("version 1: limit %d, EMF %v; want 100, and two reads: init's of the document, the key's", l, doc)
	}
	putConfig(src, 2, tableDoc(300))
	now = now.Add(30 * time.Second)
	reads := src.Reads()
	if l, _ := limit(); l != 300 || src.Reads() != reads+1 {
		t.Fatalf("version 2: limit %d after %d reads; want 300 after one read of the document (the key's entry resolved again)", l, src.Reads()-reads)
	}
	putConfig(src, 3, tableDoc(300)+"routs: []\n")
	now = now.Add(30 * time.Second)
	l, doc := limit()
	if l != 300 || doc[telemetry.MetricConfigInvalid] != 1.0 {
		t.Fatalf("a bad version 3: limit %d, EMF %v; want version 2 deciding, ConfigInvalid counted", l, doc)
	}
	if !strings.Contains(logs.String(), `"version":3`) || !strings.Contains(logs.String(), "routs (line 4, column 1): unknown field") {
		t.Errorf("no error line naming version 3 and the field:\n%s", &logs)
	}
}

// An instance that could not read the table since it started has no configuration:
// every request follows the failure policy, as a failed registry lookup does, keyed or
// not; Redis is not asked.
func TestAuthorizerWithoutConfiguration(t *testing.T) {
	for _, failOpen := range []bool{false, true} {
		t.Run("failOpen="+strconv.FormatBool(failOpen), func(t *testing.T) {
			src := registrytest.New()
			src.Fail(errors.New("dynamodb: no route"))
			now := tLocal
			var logs bytes.Buffer
			f := newFixture(t, options{failOpen: failOpen, live: liveOver(t, src, &now, &logs)})
			for _, event := range []string{restProEvent, restEvent} {
				f.metrics.Reset()
				a, err := f.invoke(t, samples.Read(t, event))
				if failOpen {
					if err != nil || !a.allowed(t) || a.str(t, ratelimitheaders.KeyReason) != "degraded" {
						t.Fatalf("%s, fail open: %s, %v; want allowed, degraded", event, a.raw, err)
					}
					continue
				}
				if !errors.Is(err, ErrUnavailable) {
					t.Fatalf("%s, fail closed: %v, want ErrUnavailable", event, err)
				}
				if doc := oneEMF(t, f.metrics.Bytes()); doc[telemetry.DimReason] != "registry_error" {
					t.Errorf("%s: EMF %v, want FailClosed with reason registry_error", event, doc)
				}
			}
			if keys := f.mr.Keys(); len(keys) != 0 {
				t.Errorf("Redis was written (%v) with no configuration", keys)
			}
			if !strings.Contains(f.logs.String(), "no route") {
				t.Errorf("the table's error is not in the log: %s", &f.logs)
			}
		})
	}
}
