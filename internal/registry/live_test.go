package registry_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"maps"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"
	"weak"

	"github.com/bucketgate/bucketgate/internal/config"
	"github.com/bucketgate/bucketgate/internal/registry"
	"github.com/bucketgate/bucketgate/internal/telemetry"
	"github.com/bucketgate/bucketgate/internal/testkit/registrytest"
)

// envDoc is the environment's document of the tests' Lives: pro's burst is 7.
const envDoc = "defaultPlan: free\nplans: {free: [{name: burst, capacity: 10, refillPerSecond: 1}], pro: [{name: burst, capacity: 7, refillPerSecond: 1}]}\n"

// badDoc does not load: an unknown field.
const badDoc = docV1 + "routs: []\n"

// stored returns version v of a document, as the item config (current) or its copy.
func stored(v int64, doc string, current bool) registry.StoredConfig {
	s := registry.StoredConfig{ID: registry.VersionID(v), Document: doc, Version: v, UpdatedAt: time.Unix(1_800_000_000, 0)}
	if current {
		s.ID = registry.ConfigID
	}
	return s
}

// put stores version v of doc as the table's document in force, with its copy.
func put(src *registrytest.Source, v int64, doc string) {
	src.PutConfig(stored(v, doc, true))
	src.PutConfig(stored(v, doc, false))
}

// live is a Live over src on a settable clock, its logs captured.
type live struct {
	*registry.Live
	src  *registrytest.Source
	clk  *clock
	logs *bytes.Buffer
}

// loaded is newLive, loaded.
func loaded(t *testing.T, src *registrytest.Source, cache *registry.Cache) *live {
	t.Helper()
	l := newLive(t, src, cache)
	if err := l.Load(context.Background()); err != nil {
		t.Fatal(err)
	}
	return l
}

func newLive(t *testing.T, src *registrytest.Source, cache *registry.Cache) *live {
	t.Helper()
	env, err := config.Parse([]byte(envDoc))
	if err != nil {
		t.Fatal(err)
	}
	l := &live{src: src, clk: &clock{t: time.Unix(1_800_000_000, 0)}, logs: &bytes.Buffer{}}
	l.Live = registry.NewLive(src, cache, env, registry.LiveOptions{TTL: ttl, Now: l.clk.now, Log: telemetry.NewLogger(l.logs, nil)})
	return l
}

// current returns the view in force after a Current, its pro burst, and what it read.
func (l *live) current(t *testing.T) (registry.View, int64, registry.Refresh) {
	t.Helper()
	v, r := l.Current(context.Background())
	if v.Config == nil {
		t.Fatalf("no configuration: %v", v.Err)
	}
	p, ok := v.Config.Plan("pro")
	if !ok {
		return v, 0, r
	}
	return v, p.Rules[0].Capacity, r
}

var (
	read    = registry.Refresh{Result: registry.ResultMiss}
	invalid = registry.Refresh{Result: registry.ResultMiss, Invalid: 1}
	failed  = registry.Refresh{Result: registry.ResultError}
	none    = registry.Refresh{}
)

// The table's document is read at init, then again at most once per period, by the
// call that finds it older than that; every other call reads nothing. A new version
// applies at the first read after it; the environment's document applies while the
// table holds none, and again if the item is removed.
func TestLiveFollowsTheTable(t *testing.T) {
	src := registrytest.New()
	put(src, 1, docV1)
	l := loaded(t, src, nil)
	steps := []struct {
		name    string
		advance time.Duration
		put     string // the next version's document, before the step
		remove  bool   // the item config removed, before the step
		version int64
		burst   int64
		refresh registry.Refresh
		reads   int
	}{
		{"init's read, reported once", 0, "", false, 1, 100, read, 1},
		{"within the period", time.Second, "", false, 1, 100, none, 1},
		{"a new version within the period", ttl - time.Second - 1, docV2, false, 1, 100, none, 1},
		{"read at the period's end", 1, "", false, 2, 200, read, 2},
		{"then kept", time.Second, "", false, 2, 200, none, 2},
		{"the same version read again", ttl, "", false, 2, 200, read, 3},
		{"the item removed: the environment's", ttl, "", true, 0, 7, read, 4},
		{"a first version again", ttl, docV1, false, 3, 100, read, 5},
	}
	next := int64(2)
	for _, st := range steps {
		if st.put != "" {
			put(src, next, st.put)
			next++
		}
		if st.remove {
			src.DeleteConfig(registry.ConfigID)
		}
		l.clk.advance(st.advance)
		v, burst, r := l.current(t)
		if v.Version != st.version || burst != st.burst || r != st.refresh || src.Reads() != st.reads {
			t.Fatalf("%s: version %d, pro burst %d, %+v after %d reads; want %d, %d, %+v after %d",
				st.name, v.Version, burst, r, src.Reads(), st.version, st.burst, st.refresh, st.reads)
		}
	}
	for _, want := range []string{`"version":1,"source":"the registry table's item config"`, `"version":0,"source":"the environment's: the registry table holds no item config"`} {
		if !strings.Contains(l.logs.String(), want) {
			t.Errorf("logs do not say %s:\n%s", want, l.logs)
		}
	}
}

// A table's document valid but likely not what is meant (config.Config.Caveats) is a
// warning when it applies, with its version, and not at every read; one without a
// caveat is none.
func TestLiveWarnsOfCaveats(t *testing.T) {
	src := registrytest.New()
	put(src, 1, docV1+"anonymous: refuse\n")
	l := loaded(t, src, nil)
	l.clk.advance(ttl)
	l.current(t)
	if n := strings.Count(l.logs.String(), `"msg":"`+registry.MsgConfigCaveat+`","version":1,"caveat":"anonymous: refuse with unknownKeys: ip`); n != 1 {
		t.Fatalf("%d caveat lines for version 1, want 1:\n%s", n, l.logs)
	}
	put(src, 2, docV1+"anonymous: refuse\nunknownKeys: refuse\n")
	l.clk.advance(ttl)
	if v, _, _ := l.current(t); v.Version != 2 || strings.Contains(l.logs.String(), `"version":2,"caveat"`) {
		t.Fatalf("version %d; want 2 applied without a caveat:\n%s", v.Version, l.logs)
	}
}

// A document that does not load is never applied: the instance keeps the last good one,
// logs an error naming the version and the field, and counts it at every read; an item
// of the wrong types likewise.
func TestLiveKeepsTheLastGoodDocument(t *testing.T) {
	src := registrytest.New()
	put(src, 1, docV1)
	l := loaded(t, src, nil)
	l.current(t)
	put(src, 2, badDoc)
	for range 2 {
		l.clk.advance(ttl)
		if v, burst, r := l.current(t); v.Version != 1 || burst != 100 || r != invalid {
			t.Fatalf("a bad version 2: version %d, burst %d, %+v; want version 1 kept, counted invalid", v.Version, burst, r)
		}
	}
	lines := strings.Split(strings.TrimSpace(l.logs.String()), "\n")
	if n := strings.Count(l.logs.String(), registry.MsgConfigInvalid); n != 2 {
		t.Fatalf("%d error lines for two reads of the bad version:\n%s", n, l.logs)
	}
	last := lines[len(lines)-1]
	for _, want := range []string{`"level":"ERROR"`, `"version":2`, `"item":"config"`, `routs (line 3, column 1): unknown field; did you mean routes?`} {
		if !strings.Contains(last, want) {
			t.Errorf("line %s: want %s", last, want)
		}
	}

	src.PutInvalid(registry.ConfigID, &registry.RecordError{ID: registry.ConfigID, Attribute: "version", Err: errors.New("got a string (S), want a number (N)")})
	l.clk.advance(ttl)
	if v, _, r := l.current(t); v.Version != 1 || r != invalid || !strings.Contains(l.logs.String(), "attribute version: got a string (S)") {
		t.Fatalf("a hand-written item of the wrong type: version %d, %+v; want version 1 kept, counted, logged:\n%s", v.Version, r, l.logs)
	}

	src = registrytest.New() // an instance on the environment's document keeps it too
	l = loaded(t, src, nil)
	put(src, 1, badDoc)
	l.clk.advance(ttl)
	if v, burst, r := l.current(t); v.Version != 0 || burst != 7 || r != (registry.Refresh{Result: registry.ResultMiss, Invalid: 2, Misses: 2}) {
		t.Fatalf("on the environment's document, a bad first version: version %d, burst %d, %+v; want the environment's kept, init's read and the copy's counted", v.Version, burst, r)
	}
}

// A stored document's error that quotes a huge value (a hand-written item: config put
// refuses it) is logged, at every read, cut to MaxErrorText bytes that still name the
// field at fault.
func TestLiveClipsAHugeError(t *testing.T) {
	src := registrytest.New()
	put(src, 1, docV1)
	l := loaded(t, src, nil)
	put(src, 2, "defaultPlan: "+strings.Repeat("p", 200_000)+"\nplans: {free: [{name: burst, capacity: 10, refillPerSecond: 1}]}\n")
	l.clk.advance(ttl)
	if v, _, r := l.current(t); v.Version != 1 || r != (registry.Refresh{Result: registry.ResultMiss, Invalid: 1, Misses: 1}) {
		t.Fatalf("version %d, %+v; want version 1 kept, counted invalid (and init's read)", v.Version, r)
	}
	lines := strings.Split(strings.TrimSpace(l.logs.String()), "\n")
	last := lines[len(lines)-1]
	if len(last) > registry.MaxErrorText+512 || !strings.Contains(last, `defaultPlan (line 1, column 14): unknown plan \"ppp`) || !strings.Contains(last, "bytes more)") {
		t.Errorf("a line of %d bytes: %.300s", len(last), last)
	}
}

// A fresh instance that finds a document that does not load falls back to the newest
// copy that does, newest first, a few reads at most; it refuses to start when none
// does, and never takes the environment's document while the table holds one.
func TestLiveFreshInstance(t *testing.T) {
	tests := []struct {
		name    string
		setup   func(src *registrytest.Source)
		version int64 // in force; 0: refuses to start
		reads   int
		want    string // in the refusal, or the logs
		invalid int    // the documents read that do not load, each an error line: ConfigInvalid
	}{
		{"falls back to the newest good copy", func(src *registrytest.Source) {
			put(src, 3, docV2)
			put(src, 5, badDoc) // config#4 missing: skipped
		}, 3, 4, `"source":"the copy config#3: the item config does not load"`, 2},
		{"a hand-written version 6 holds its copy's good document", func(src *registrytest.Source) {
			put(src, 6, docV2)
			src.PutConfig(stored(6, badDoc, true))
		}, 6, 2, `"source":"the copy config#6: the item config does not load"`, 1},
		{"a version of the wrong type still says where to look", func(src *registrytest.Source) {
			put(src, 4, docV2)
			src.PutInvalid(registry.ConfigID, &registry.RecordError{ID: registry.ConfigID, Attribute: "version", Err: errors.New("got a string (S)")})
		}, 4, 2, `"version":4`, 1},
		{"refuses when no copy loads", func(src *registrytest.Source) {
			put(src, 1, badDoc)
			put(src, 2, badDoc)
		}, 0, 3, "no configuration document of the registry table loads (config and up to 5 earlier versions read): configuration version 2 (config): rate-limit configuration: routs (line 3, column 1): unknown field", 3},
		{"reads a few copies at most", func(src *registrytest.Source) {
			put(src, 1, docV1)
			for v := int64(2); v <= 9; v++ {
				put(src, v, badDoc)
			}
		}, 0, 1 + registry.MaxFallbackReads, "no configuration document of the registry table loads", 6},
		{"refuses when the version cannot be read", func(src *registrytest.Source) {
			put(src, 1, docV1)
			src.DeleteConfig(registry.ConfigID)
			src.PutInvalid(registry.ConfigID, &registry.RecordError{ID: registry.ConfigID, Attribute: "version", Err: errors.New("missing")})
		}, 0, 1, "configuration version unknown: invalid registry item config: attribute version: missing", 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			src := registrytest.New()
			tc.setup(src)
			l := newLive(t, src, nil)
			err := l.Load(context.Background())
			if src.Reads() != tc.reads {
				t.Errorf("%d reads, want %d", src.Reads(), tc.reads)
			}
			if n := strings.Count(l.logs.String(), registry.MsgConfigInvalid); n != tc.invalid {
				t.Errorf("%d error lines %q, want %d:\n%s", n, registry.MsgConfigInvalid, tc.invalid, l.logs)
			}
			if tc.version == 0 {
				if err == nil || !strings.Contains(err.Error(), tc.want) {
					t.Fatalf("Load = %v, want a refusal: %s", err, tc.want)
				}
				if v, _ := l.Current(context.Background()); v.Config != nil {
					t.Fatalf("a refused instance has the configuration version %d", v.Version)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			v, _, r := l.current(t)
			if want := (registry.Refresh{Result: registry.ResultMiss, Invalid: tc.invalid, Misses: tc.reads - 1}); v.Version != tc.version || r != want || !strings.Contains(l.logs.String(), tc.want) {
				t.Fatalf("version %d, %+v; want version %d, the bad item and the copies read counted (%+v), logs with %s:\n%s", v.Version, r, tc.version, want, tc.want, l.logs)
			}
		})
	}
}

// A failed read keeps the document in force, counts a registry error, and holds the
// next read for a second, not a period. A fresh instance that cannot read the table
// starts with no configuration (every decision by the failure policy) and reads again
// a second later.
func TestLiveReadFailure(t *testing.T) {
	src := registrytest.New()
	put(src, 1, docV1)
	l := loaded(t, src, nil)
	l.current(t)
	src.Fail(errors.New("throttled"))
	l.clk.advance(ttl)
	if v, _, r := l.current(t); v.Version != 1 || r != failed {
		t.Fatalf("table down: version %d, %+v; want version 1 kept, a failed read", v.Version, r)
	}
	l.clk.advance(registry.RetryAfterFailure / 2)
	if _, _, r := l.current(t); r != none || src.Reads() != 2 {
		t.Fatalf("within a second of the failure: %+v after %d reads, want no read", r, src.Reads())
	}
	src.Fail(nil)
	put(src, 2, docV2)
	l.clk.advance(registry.RetryAfterFailure / 2)
	if v, _, r := l.current(t); v.Version != 2 || r != read {
		t.Fatalf("a second after the failure, the table back: version %d, %+v; want version 2", v.Version, r)
	}
	if !strings.Contains(l.logs.String(), registry.MsgConfigReadFailed) {
		t.Errorf("no warning for the failed read:\n%s", l.logs)
	}

	src = registrytest.New()
	put(src, 1, docV1)
	src.Fail(errors.New("no route to DynamoDB"))
	l = newLive(t, src, nil)
	if err := l.Load(context.Background()); err != nil {
		t.Fatalf("Load with the table down: %v, want no refusal: the failure policy decides", err)
	}
	v, r := l.Current(context.Background())
	if v.Config != nil || !strings.Contains(v.Err.Error(), "the registry table could not be read: no route to DynamoDB") || r != failed {
		t.Fatalf("no configuration yet: %+v, %+v", v, r)
	}
	if e, err := v.Lookup(context.Background(), digestID); err == nil || e.Result != registry.ResultError {
		t.Fatalf("a lookup with no configuration: %+v, %v; want the error", e, err)
	}
	src.Fail(nil)
	l.clk.advance(registry.RetryAfterFailure)
	if v, _, _ := l.current(t); v.Version != 1 {
		t.Fatalf("the table back: version %d", v.Version)
	}
}

// While one call reads the table, the others answer at once from the document in
// force; a caller that gives up during its read learns nothing and holds no read back.
func TestLiveReadsOnceAndNeverStalls(t *testing.T) {
	src := registrytest.New()
	put(src, 1, docV1)
	l := loaded(t, src, nil)
	l.current(t)
	put(src, 2, docV2)
	src.Gate = make(chan struct{})
	l.clk.advance(ttl)
	done := make(chan registry.View)
	go func() {
		v, _ := l.Current(context.Background())
		done <- v
	}()
	if err := src.AwaitHeld(1); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			if v, r := l.Current(context.Background()); v.Version != 1 || r != none {
				t.Errorf("during another call's read: version %d, %+v; want version 1 at once", v.Version, r)
			}
		})
	}
	wg.Wait()
	close(src.Gate)
	if v := <-done; v.Version != 2 {
		t.Fatalf("the reading call: version %d, want 2", v.Version)
	}
	if src.Reads() != 2 {
		t.Fatalf("%d reads, want 2", src.Reads())
	}

	src.Gate = make(chan struct{})
	l.clk.advance(ttl)
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		if err := src.AwaitHeld(1); err != nil {
			t.Error(err)
		}
		cancel()
	}()
	if v, r := l.Current(ctx); v.Version != 2 || r != none {
		t.Fatalf("a caller that gave up: version %d, %+v; want the document in force, nothing counted", v.Version, r)
	}
	close(src.Gate)
	if _, _, r := l.current(t); r != read {
		t.Fatalf("the next call: %+v, want a read at once: a caller giving up is no failure", r)
	}
}

// The registry's cached entries are resolved with the document of each view: a key
// cached under one version gets the next version's plan from its first lookup after
// the change, with no read of its own item, and an item the new version cannot use is
// unknown from then on, logged once.
func TestLiveEntriesFollowTheDocument(t *testing.T) {
	src := registrytest.New(registry.Record{ID: digestID, Plan: "pro"}, registry.Record{ID: "key:gold", Plan: "gold"})
	put(src, 1, docV1)
	var logs bytes.Buffer
	cache := registry.NewCache(src, registry.Options{TTL: time.Hour, Size: 10, Log: telemetry.NewLogger(&logs, nil)})
	l := loaded(t, src, cache)
	burst := func(id string) (int64, registry.Entry) {
		t.Helper()
		v, _, _ := l.current(t)
		e, err := v.Lookup(context.Background(), id)
		if err != nil {
			t.Fatal(err)
		}
		if e.Plan == nil {
			return 0, e
		}
		return e.Plan.Rules[0].Capacity, e
	}
	if b, e := burst(digestID); b != 100 || e.Result != registry.ResultMiss {
		t.Fatalf("version 1: burst %d, %+v", b, e)
	}
	if b, e := burst("key:gold"); b != 0 || !e.Invalid {
		t.Fatalf("a key on gold, which version 1 lacks: burst %d, %+v; want unknown, invalid", b, e)
	}
	put(src, 2, "defaultPlan: free\nplans: {free: [{name: burst, capacity: 10, refillPerSecond: 1}], pro: [{name: burst, capacity: 200, refillPerSecond: 50}], gold: [{name: burst, capacity: 30, refillPerSecond: 1}]}\n")
	l.clk.advance(ttl)
	reads := src.Reads()
	if b, e := burst(digestID); b != 200 || e.Result != registry.ResultHit {
		t.Fatalf("version 2: burst %d, %+v; want the new burst from the cached entry", b, e)
	}
	if b, e := burst("key:gold"); b != 30 || e.Result != registry.ResultHit || e.Invalid {
		t.Fatalf("version 2 has gold: burst %d, %+v", b, e)
	}
	if src.Reads() != reads+1 {
		t.Fatalf("%d reads for the document and two cached keys, want 1", src.Reads()-reads)
	}
	put(src, 3, envDoc)
	l.clk.advance(ttl)
	if b, e := burst("key:gold"); b != 0 || !e.Invalid {
		t.Fatalf("version 3 drops gold: burst %d, %+v; want unknown, invalid", b, e)
	}
	if b, e := burst("key:gold"); b != 0 || e.Invalid {
		t.Fatalf("again: burst %d, %+v; want unknown, not counted again", b, e)
	}
	if n := strings.Count(logs.String(), `"attribute":"plan"`); n != 2 {
		t.Fatalf("%d error lines for gold, want one per version that lacks it:\n%s", n, &logs)
	}
}

// The cache holds no document that is no longer in force: an entry resolved with one,
// and not looked up since, lets it go when another applies, so that a long-running
// process (the middleware) holds one or two documents, not one per version it saw. The
// entry is resolved again at its next lookup, without a read.
func TestLiveCacheReleasesOldDocuments(t *testing.T) {
	src := registrytest.New(registry.Record{ID: digestID, Plan: "pro"}, registry.Record{ID: memberA, Account: "acme"}, acme)
	put(src, 1, docV1)
	cache := registry.NewCache(src, registry.Options{TTL: time.Hour, Size: 10})
	l := loaded(t, src, cache)
	old := func() weak.Pointer[config.Config] { // in a function: no reference of the test's stays
		v, _, _ := l.current(t)
		for _, id := range []string{digestID, memberA} {
			if e, err := v.Lookup(context.Background(), id); err != nil || e.Plan == nil {
				t.Fatalf("%s: %+v, %v", id, e, err)
			}
		}
		return weak.Make(v.Config)
	}()
	put(src, 2, strings.Replace(docV1, "100", "300", 1))
	l.clk.advance(ttl)
	if _, burst, _ := l.current(t); burst != 300 {
		t.Fatalf("version 2 in force: burst %d", burst)
	}
	runtime.GC()
	if old.Value() != nil {
		t.Fatal("version 1 is still in memory after version 2 applied: the cache's entries hold it")
	}
	reads := src.Reads()
	v, _, _ := l.current(t)
	for _, id := range []string{digestID, memberA} {
		if e, err := v.Lookup(context.Background(), id); err != nil || e.Plan == nil || e.Plan.Rules[0].Capacity != 300 || e.Result != registry.ResultHit {
			t.Fatalf("%s under version 2: %+v, %v; want pro's burst of 300, from the cache", id, e, err)
		}
	}
	if src.Reads() != reads {
		t.Fatalf("%d reads, want none", src.Reads()-reads)
	}
}

// A Live with no table reads nothing and answers its document, with its keys as the
// registry.
func TestStatic(t *testing.T) {
	cfg, err := config.Parse([]byte(envDoc + "keys: {0123456789abcdef0123456789abcdef: pro}\n"))
	if err != nil {
		t.Fatal(err)
	}
	l := registry.NewStatic(cfg, nil)
	if err := l.Load(context.Background()); err != nil {
		t.Fatal(err)
	}
	v, r := l.Current(context.Background())
	e, err := v.Lookup(context.Background(), digestID)
	if v.Config != cfg || v.Version != 0 || r != none || err != nil || e.Plan == nil || e.Plan.Name != "pro" {
		t.Fatalf("static: %+v %+v, lookup %+v %v", v, r, e, err)
	}
}

// A read of the configuration ends Margin before the caller's deadline: one that the
// caller's time cuts short is no failure of the table (no hold, nothing counted), and
// the next call reads at once.
func TestLiveReadEndsBeforeTheDeadline(t *testing.T) {
	src := registrytest.New()
	put(src, 1, docV1)
	env, err := config.Parse([]byte(envDoc))
	if err != nil {
		t.Fatal(err)
	}
	clk := &clock{t: time.Unix(1_800_000_000, 0)}
	l := registry.NewLive(src, nil, env, registry.LiveOptions{TTL: ttl, Timeout: time.Hour, Margin: 1500 * time.Millisecond, Now: clk.now})
	if err := l.Load(context.Background()); err != nil {
		t.Fatal(err)
	}
	l.Current(context.Background()) // reports init's read
	put(src, 2, docV2)
	src.Gate = make(chan struct{})
	clk.advance(ttl)
	ctx, cancel := context.WithTimeout(context.Background(), 1600*time.Millisecond)
	defer cancel()
	if v, r := l.Current(ctx); v.Version != 1 || r != none {
		t.Fatalf("a read cut by the caller's deadline: version %d, %+v; want version 1, nothing counted", v.Version, r)
	}
	if ctx.Err() != nil {
		t.Fatal("the read ended with the caller's deadline: want it ended the margin before it")
	}
	close(src.Gate)
	if v, r := l.Current(context.Background()); v.Version != 2 || r != read {
		t.Fatalf("the next call: version %d, %+v; want a read at once, version 2", v.Version, r)
	}
}

// lookupsCounted returns the RegistryLookups that r counts, by Result, as the functions
// write them.
func lookupsCounted(t *testing.T, r registry.Refresh) map[string]float64 {
	t.Helper()
	var inv telemetry.Invocation
	r.Observe(&inv)
	var out bytes.Buffer
	if err := telemetry.NewEmitter(&out, "ns", "orders-prod", "check").Emit(time.Unix(1_800_000_000, 0), &inv); err != nil {
		t.Fatal(err)
	}
	got := map[string]float64{}
	for _, line := range strings.Split(strings.TrimSpace(out.String()), "\n") {
		var doc map[string]any
		if err := json.Unmarshal([]byte(line), &doc); err != nil {
			t.Fatalf("EMF line %q: %v", line, err)
		}
		if n, ok := doc[telemetry.MetricRegistryLookups].(float64); ok {
			got[doc[telemetry.DimResult].(string)] += n
		}
	}
	return got
}

// Every read of the table is a RegistryLookups miss, the copies of earlier versions
// read when the item config does not load too: at init, and by Current on an instance
// with no document of the table in force; and init's read when the first Current (a
// provisioned instance's first invocation, a period after init) reads again.
func TestLiveCountsEveryRead(t *testing.T) {
	tests := []struct {
		name  string
		setup func(src *registrytest.Source)
		later string // a document put as the next version after Load, read by Current
		late  bool   // the first Current comes a period after Load
	}{
		{"a fresh instance falls back", func(src *registrytest.Source) {
			put(src, 3, docV2)
			put(src, 5, badDoc) // config#4 missing: read, found none
		}, "", false},
		{"a first Current a period after init", func(src *registrytest.Source) { put(src, 1, docV1) }, "", true},
		{"falling back a period after init", func(src *registrytest.Source) {
			put(src, 3, docV2)
			put(src, 4, badDoc)
		}, "", true},
		{"an instance on the environment's finds a document that does not load", func(*registrytest.Source) {}, badDoc, false},
		{"then a copy of an earlier version that does", func(src *registrytest.Source) {
			src.PutConfig(stored(1, docV2, false)) // a copy left by an earlier document
		}, badDoc, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			src := registrytest.New()
			tc.setup(src)
			l := loaded(t, src, nil)
			if tc.late {
				l.clk.advance(ttl)
			}
			v, r := l.Current(context.Background()) // reports Load's reads
			got := lookupsCounted(t, r)
			if tc.later != "" {
				src.PutConfig(stored(v.Version+1, tc.later, true))
				l.clk.advance(ttl)
				_, r := l.Current(context.Background())
				for k, n := range lookupsCounted(t, r) {
					got[k] += n
				}
			}
			if want := map[string]float64{"miss": float64(src.Reads())}; !maps.Equal(got, want) {
				t.Fatalf("counted %v, want %v: one miss per read", got, want)
			}
		})
	}
}

// cancelling is a source that, once cancel is set, ends its caller's time with it when
// it has read the item config: a read after it fails with the caller's error.
type cancelling struct {
	*registrytest.Source
	cancel context.CancelFunc
}

func (c *cancelling) GetConfig(ctx context.Context, id string) (registry.StoredConfig, bool, error) {
	if ctx.Err() != nil {
		return registry.StoredConfig{}, false, ctx.Err()
	}
	s, found, err := c.Source.GetConfig(ctx, id)
	if id == registry.ConfigID && c.cancel != nil {
		c.cancel()
	}
	return s, found, err
}

// A caller whose time runs out while its instance reads the copies of earlier versions
// ends the reads: no failure of the table is counted or logged for the copies it did
// not read.
func TestLiveFallbackEndsWithTheCallersTime(t *testing.T) {
	src := registrytest.New()
	env, err := config.Parse([]byte(envDoc))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	clk := &clock{t: time.Unix(1_800_000_000, 0)}
	var logs bytes.Buffer
	c := &cancelling{Source: src}
	l := registry.NewLive(c, nil, env, registry.LiveOptions{TTL: ttl, Now: clk.now, Log: telemetry.NewLogger(&logs, nil)})
	if err := l.Load(context.Background()); err != nil { // the environment's: the table holds none
		t.Fatal(err)
	}
	l.Current(context.Background()) // reports init's read
	put(src, 1, docV1)
	put(src, 2, docV2)
	src.PutConfig(stored(3, badDoc, true))
	clk.advance(ttl)
	c.cancel = cancel
	v, r := l.Current(ctx)
	if v.Version != 0 || r.Result != registry.ResultMiss || r.Errors != 0 || strings.Contains(logs.String(), registry.MsgConfigReadFailed) {
		t.Fatalf("version %d, %+v; want the environment's kept, no failed read counted or logged:\n%s", v.Version, r, &logs)
	}
}
