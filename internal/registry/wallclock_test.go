package registry_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/bucketgate/bucketgate/internal/config"
	"github.com/bucketgate/bucketgate/internal/registry"
	"github.com/bucketgate/bucketgate/internal/testkit/registrytest"
)

// TestRegistryWallClockAcrossFreezes: the registry tells ages by the wall clock. The
// clock's times come with a monotonic reading (time.Now's), which may stand still
// while a Lambda environment is frozen between invocations: kept, it would answer the
// configuration read before a freeze, or hold an identity whose read failed, after a
// freeze that outlasted REGISTRY_CACHE_MS (or RetryAfterFailure). None of the times
// they keep carries it (a Time's String shows " m=" when it does).
func TestRegistryWallClockAcrossFreezes(t *testing.T) {
	if !strings.Contains(time.Now().String(), " m=") {
		t.Fatal("time.Now has no monotonic reading here: this test proves nothing")
	}
	env, err := config.Parse([]byte(envDoc))
	if err != nil {
		t.Fatal(err)
	}
	src := registrytest.New()
	put(src, 1, docV1)
	loadedLive := registry.NewLive(src, nil, env, registry.LiveOptions{TTL: ttl})
	if err := loadedLive.Load(context.Background()); err != nil {
		t.Fatal(err)
	}
	down := registrytest.New()
	down.Fail(errors.New("throttled"))
	failed := registry.NewLive(down, nil, env, registry.LiveOptions{TTL: ttl})
	if err := failed.Load(context.Background()); err != nil {
		t.Fatal(err)
	}
	held := registry.NewCache(down, registry.Options{TTL: ttl, Size: 10})
	if _, err := held.Lookup(context.Background(), plans, digestID); err == nil {
		t.Fatal("a lookup with the table down: no error")
	}
	readAt, _ := registry.ReadTimesOf(loadedLive)
	_, retryAt := registry.ReadTimesOf(failed)
	for name, at := range map[string]time.Time{
		"the configuration's read":             readAt,
		"the configuration's retry":            retryAt,
		"the hold of a failed read's identity": registry.HoldOf(held, digestID),
	} {
		if at.IsZero() {
			t.Fatalf("%s: none", name)
		}
		if strings.Contains(at.String(), " m=") {
			t.Errorf("%s %v keeps a monotonic reading: a freeze would not count", name, at)
		}
	}
}

// TestRegistryClockWentBack: a clock that went back (NTP) since a read, or a failed
// read, of the registry is met by reading again: a revoked key, a plan changed and the
// table back after a failure take effect at once, not once the clock is back where it
// was (an hour of a revoked key admitted).
func TestRegistryClockWentBack(t *testing.T) {
	const back = time.Hour
	tests := []struct {
		name string
		run  func(t *testing.T)
	}{
		{"a key revoked after its read", func(t *testing.T) {
			src := registrytest.New(registry.Record{ID: digestID, Plan: "pro"})
			c, clk := newCache(t, src, registry.Options{})
			lookup(t, c, digestID)
			src.Put(registry.Record{ID: digestID, Plan: "pro", Status: registry.StatusRevoked})
			clk.advance(-back)
			if plan, result := lookup(t, c, digestID); plan != "" || result != registry.ResultMiss {
				t.Fatalf("plan %q %s, want none, read again", plan, result)
			}
		}},
		{"an identity held after a failed read", func(t *testing.T) {
			src := registrytest.New(registry.Record{ID: digestID, Plan: "pro"})
			c, clk := newCache(t, src, registry.Options{})
			src.Fail(errors.New("throttled"))
			if _, err := c.Lookup(context.Background(), plans, digestID); err == nil {
				t.Fatal("the table down: no error")
			}
			src.Fail(nil)
			clk.advance(-back)
			if plan, result := lookup(t, c, digestID); plan != "pro" || result != registry.ResultMiss {
				t.Fatalf("plan %q %s, want pro, read again", plan, result)
			}
		}},
		{"an entry stale after a failed read", func(t *testing.T) {
			src := registrytest.New(registry.Record{ID: digestID, Plan: "pro"})
			c, clk := newCache(t, src, registry.Options{})
			lookup(t, c, digestID)
			clk.advance(ttl)
			src.Fail(errors.New("throttled"))
			if _, result := lookup(t, c, digestID); result != registry.ResultStale {
				t.Fatalf("the table down: %s, want stale", result)
			}
			src.Fail(nil)
			src.Put(registry.Record{ID: digestID, Plan: "enterprise"})
			clk.advance(-back)
			if plan, result := lookup(t, c, digestID); plan != "enterprise" || result != registry.ResultMiss {
				t.Fatalf("plan %q %s, want enterprise, read again", plan, result)
			}
		}},
		{"a configuration changed after its read", func(t *testing.T) {
			src := registrytest.New()
			put(src, 1, docV1)
			l := loaded(t, src, nil)
			l.current(t)
			put(src, 2, docV2)
			l.clk.advance(-back)
			if v, _, r := l.current(t); v.Version != 2 || r != read {
				t.Fatalf("version %d, %+v; want version 2, read again", v.Version, r)
			}
		}},
		{"a configuration whose read failed", func(t *testing.T) {
			src := registrytest.New()
			put(src, 1, docV1)
			l := loaded(t, src, nil)
			l.current(t)
			src.Fail(errors.New("throttled"))
			l.clk.advance(ttl)
			l.current(t)
			src.Fail(nil)
			put(src, 2, docV2)
			l.clk.advance(-back)
			if v, _, r := l.current(t); v.Version != 2 || r != read {
				t.Fatalf("version %d, %+v; want version 2, read again", v.Version, r)
			}
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, tc.run)
	}
}
