package registry_test

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bucketgate/bucketgate"
	"github.com/bucketgate/bucketgate/internal/config"
	"github.com/bucketgate/bucketgate/internal/registry"
	"github.com/bucketgate/bucketgate/internal/telemetry"
	"github.com/bucketgate/bucketgate/internal/testkit/registrytest"
)

// clock is a settable time for Options.Now.
type clock struct{ t time.Time }

func (c *clock) now() time.Time          { return c.t }
func (c *clock) advance(d time.Duration) { c.t = c.t.Add(d) }

const ttl = 30 * time.Second

// plans is the configuration the tests' lookups resolve plans with.
var plans = config.Default()

func newCache(t *testing.T, src *registrytest.Source, opts registry.Options) (*registry.Cache, *clock) {
	t.Helper()
	clk := &clock{t: time.Unix(1_800_000_000, 0)}
	opts.TTL, opts.Now, opts.Size = ttl, clk.now, cmp.Or(opts.Size, 1000)
	return registry.NewCache(src, opts), clk
}

// lookup looks id up and returns its plan's name ("" for none) and the Result.
func lookup(t *testing.T, c *registry.Cache, id string) (string, registry.Result) {
	t.Helper()
	e, err := c.Lookup(context.Background(), plans, id)
	if err != nil {
		t.Fatalf("Lookup(%s): %v", id, err)
	}
	if e.Plan == nil {
		return "", e.Result
	}
	return e.Plan.Name, e.Result
}

func TestCacheHitsAndMisses(t *testing.T) {
	src := registrytest.New(registry.Record{ID: digestID, Plan: "pro"})
	c, clk := newCache(t, src, registry.Options{})
	steps := []struct {
		name    string
		advance time.Duration
		id      string
		plan    string
		result  registry.Result
		reads   int
	}{
		{"first lookup reads", 0, digestID, "pro", registry.ResultMiss, 1},
		{"then a hit", time.Second, digestID, "pro", registry.ResultHit, 1},
		{"a hit until the period ends", ttl - time.Second - 1, digestID, "pro", registry.ResultHit, 1},
		{"read again after it", 1, digestID, "pro", registry.ResultMiss, 2},
		{"unknown reads once", 0, "key:unknown", "", registry.ResultMiss, 3},
		{"unknown is cached too", time.Second, "key:unknown", "", registry.ResultHit, 3},
	}
	for _, st := range steps {
		clk.advance(st.advance)
		plan, result := lookup(t, c, st.id)
		if plan != st.plan || result != st.result || src.Reads() != st.reads {
			t.Fatalf("%s: plan %q result %s reads %d, want %q %s %d", st.name, plan, result, src.Reads(), st.plan, st.result, st.reads)
		}
	}
}

// A revocation, a plan change and an override take effect within the period; an expiry
// at its second, even inside a period.
func TestCacheFollowsTheTable(t *testing.T) {
	src := registrytest.New(registry.Record{ID: digestID, Plan: "pro"})
	c, clk := newCache(t, src, registry.Options{})
	lookup(t, c, digestID)

	src.Put(registry.Record{ID: digestID, Plan: "enterprise", Rules: []bucketgate.Rule{{Name: "burst", Capacity: 42, RefillPerSecond: 1}}})
	if plan, _ := lookup(t, c, digestID); plan != "pro" {
		t.Fatalf("plan %q inside the period, want the cached pro", plan)
	}
	clk.advance(ttl)
	e, err := c.Lookup(context.Background(), plans, digestID)
	if err != nil || e.Plan.Name != "enterprise" || e.Plan.Rules[0].Capacity != 42 {
		t.Fatalf("after the period: %+v, %v; want enterprise with burst 42", e.Plan, err)
	}

	src.Put(registry.Record{ID: digestID, Plan: "pro", Status: registry.StatusRevoked})
	clk.advance(ttl)
	if plan, result := lookup(t, c, digestID); plan != "" || result != registry.ResultMiss {
		t.Fatalf("revoked: plan %q %s, want none", plan, result)
	}

	src.Put(registry.Record{ID: digestID, Plan: "pro", ExpiresAt: clk.now().Add(ttl + 10*time.Second)})
	clk.advance(ttl)
	if plan, _ := lookup(t, c, digestID); plan != "pro" {
		t.Fatalf("before expiry: plan %q, want pro", plan)
	}
	clk.advance(10 * time.Second)
	if plan, result := lookup(t, c, digestID); plan != "" || result != registry.ResultHit {
		t.Fatalf("at expiry, inside the period: plan %q %s, want none from the cache", plan, result)
	}
}

// A flood of made-up keys costs one read per distinct key per period and never more
// entries than the bound.
func TestCacheFloodIsBounded(t *testing.T) {
	const size, keys = 100, 1000
	src := registrytest.New()
	c, clk := newCache(t, src, registry.Options{Size: size})
	for round := range 3 {
		for i := range keys {
			lookup(t, c, "key:"+strconv.Itoa(i%size)) // distinct keys within the bound
		}
		if got := src.Reads(); got != (round+1)*size {
			t.Fatalf("round %d: %d reads, want %d: one per distinct key per period", round, got, (round+1)*size)
		}
		clk.advance(ttl)
	}
	for i := range keys * 10 {
		lookup(t, c, "key:flood-"+strconv.Itoa(i))
		if c.Len() > size {
			t.Fatalf("%d entries after %d made-up keys, want at most %d", c.Len(), i+1, size)
		}
	}
}

// Made-up keys do not push out the keys the table knows: a full cache evicts an entry
// that knows no one before one with a plan, and while the table fails, a made-up key
// (which has nothing to keep) never evicts an entry that can still answer stale.
func TestCacheFloodKeepsKnownKeys(t *testing.T) {
	const size = 100
	setup := func(t *testing.T, madeUp int) (*registry.Cache, *registrytest.Source, *clock, []registry.Record) {
		var known []registry.Record
		for i := range size - madeUp {
			known = append(known, registry.Record{ID: "key:known-" + strconv.Itoa(i), Plan: "pro"})
		}
		src := registrytest.New(known...)
		c, clk := newCache(t, src, registry.Options{Size: size})
		for _, r := range known {
			lookup(t, c, r.ID)
		}
		for i := range madeUp {
			lookup(t, c, "key:made-up-"+strconv.Itoa(i))
		}
		clk.advance(time.Second)
		return c, src, clk, known
	}
	t.Run("table up", func(t *testing.T) {
		c, src, _, known := setup(t, size/2)
		for i := range size * 10 {
			lookup(t, c, "key:flood-"+strconv.Itoa(i))
		}
		reads := src.Reads()
		for _, r := range known {
			if plan, result := lookup(t, c, r.ID); plan != "pro" || result != registry.ResultHit {
				t.Fatalf("%s after a flood of made-up keys: %q %s, want a hit on pro", r.ID, plan, result)
			}
		}
		if src.Reads() != reads {
			t.Fatalf("%d reads for keys the cache should hold", src.Reads()-reads)
		}
	})
	t.Run("table down", func(t *testing.T) {
		c, src, clk, known := setup(t, 0)
		src.Fail(errors.New("throttled"))
		clk.advance(ttl)
		for i := range size * 10 {
			if _, err := c.Lookup(context.Background(), plans, "key:outage-"+strconv.Itoa(i)); err == nil {
				t.Fatal("a made-up key's lookup while the table fails: no error")
			}
		}
		for _, r := range known {
			if plan, result := lookup(t, c, r.ID); plan != "pro" || result != registry.ResultStale {
				t.Fatalf("%s after a flood of made-up keys while the table fails: %q %s, want pro, stale", r.ID, plan, result)
			}
		}
	})
}

// When the table fails, an entry past its period still answers (stale) for
// StaleIfError; an identity with nothing cached is an error; either way, no read of it
// for a second after a failure.
func TestCacheStaleIfError(t *testing.T) {
	src := registrytest.New(registry.Record{ID: digestID, Plan: "pro"})
	var logs bytes.Buffer
	c, clk := newCache(t, src, registry.Options{StaleIfError: time.Minute, Log: telemetry.NewLogger(&logs, nil)})
	lookup(t, c, digestID)
	down := errors.New("throttled")
	src.Fail(down)
	clk.advance(ttl)

	if plan, result := lookup(t, c, digestID); plan != "pro" || result != registry.ResultStale || src.Reads() != 2 {
		t.Fatalf("table down: plan %q %s after %d reads, want pro stale after 2", plan, result, src.Reads())
	}
	if plan, result := lookup(t, c, digestID); plan != "pro" || result != registry.ResultStale || src.Reads() != 2 {
		t.Fatalf("within a second of the failure: %q %s, %d reads; want stale without a read", plan, result, src.Reads())
	}
	if !strings.Contains(logs.String(), registry.MsgReadFailed) || !strings.Contains(logs.String(), "throttled") {
		t.Errorf("no warning about the failed read: %s", &logs)
	}
	e, err := c.Lookup(context.Background(), plans, "key:never-seen")
	if !errors.Is(err, down) || e.Result != registry.ResultError || e.Plan != nil {
		t.Fatalf("nothing cached: %+v, %v; want an error", e, err)
	}
	if _, err := c.Lookup(context.Background(), plans, "key:never-seen"); err == nil || src.Reads() != 3 {
		t.Fatalf("again within a second: %v after %d reads, want an error without a read", err, src.Reads())
	}
	clk.advance(time.Minute - time.Second)
	if _, result := lookup(t, c, digestID); result != registry.ResultStale {
		t.Fatalf("just inside StaleIfError: %s, want stale", result)
	}
	clk.advance(time.Second)
	if e, err := c.Lookup(context.Background(), plans, digestID); err == nil || e.Result != registry.ResultError {
		t.Fatalf("past StaleIfError: %+v, %v; want an error", e, err)
	}
	src.Fail(nil)
	clk.advance(time.Second)
	if plan, result := lookup(t, c, digestID); plan != "pro" || result != registry.ResultMiss {
		t.Fatalf("table back: %q %s, want a fresh read", plan, result)
	}
}

// An item the registry cannot use is logged at error naming the item and the attribute,
// once per read, and its identity is unknown.
func TestCacheInvalidItem(t *testing.T) {
	src := registrytest.New(registry.Record{ID: "key:gold", Plan: "gold"})
	src.PutInvalid(digestID, &registry.RecordError{ID: digestID, Attribute: "rules[0].capacity", Err: errors.New(`"1.5": want a whole number of tokens`)})
	var logs bytes.Buffer
	c, _ := newCache(t, src, registry.Options{Log: telemetry.NewLogger(&logs, nil)})
	for _, id := range []string{digestID, "key:gold"} {
		e, err := c.Lookup(context.Background(), plans, id)
		if err != nil || e.Plan != nil || !e.Invalid {
			t.Fatalf("%s: %+v, %v; want no plan, invalid", id, e, err)
		}
		if e, _ := c.Lookup(context.Background(), plans, id); e.Invalid || e.Result != registry.ResultHit {
			t.Fatalf("%s again: %+v; want a hit, not counted invalid again", id, e)
		}
	}
	lines := strings.Split(strings.TrimSpace(logs.String()), "\n")
	if len(lines) != 2 {
		t.Fatalf("%d log lines, want one per invalid read:\n%s", len(lines), &logs)
	}
	for i, want := range []string{`"attribute":"rules[0].capacity"`, `"attribute":"plan"`} {
		if !strings.Contains(lines[i], `"level":"ERROR"`) || !strings.Contains(lines[i], want) || !strings.Contains(lines[i], `"item":"key:`) {
			t.Errorf("line %q: want an error naming the item and %s", lines[i], want)
		}
	}
}

// Concurrent lookups of one identity share one read.
func TestCacheSharesAReadInFlight(t *testing.T) {
	src := registrytest.New(registry.Record{ID: digestID, Plan: "pro"})
	src.Gate = make(chan struct{})
	c, _ := newCache(t, src, registry.Options{})
	const n = 8
	var wg sync.WaitGroup
	results := make(chan registry.Entry, n)
	for range n {
		wg.Go(func() {
			e, err := c.Lookup(context.Background(), plans, digestID)
			if err != nil {
				t.Error(err)
			}
			results <- e
		})
	}
	time.Sleep(50 * time.Millisecond) // let them all ask; any that come later are hits anyway
	close(src.Gate)
	wg.Wait()
	close(results)
	misses := 0
	for e := range results {
		if e.Plan == nil || e.Plan.Name != "pro" {
			t.Fatalf("entry %+v, want pro", e)
		}
		if e.Result == registry.ResultMiss {
			misses++
		}
	}
	if src.Reads() != 1 || misses != 1 {
		t.Fatalf("%d reads, %d misses for %d concurrent lookups; want 1 and 1", src.Reads(), misses, n)
	}
}

// A lookup whose caller gives up during the read says nothing about the table: the
// lookups that shared the read read again and get their answer, no lookup of the
// identity fails for a second afterwards, and no table failure is logged.
func TestCacheCallerGivingUpIsNoFailure(t *testing.T) {
	src := registrytest.New(registry.Record{ID: digestID, Plan: "pro"})
	src.Gate = make(chan struct{})
	var logs bytes.Buffer
	c, _ := newCache(t, src, registry.Options{Log: telemetry.NewLogger(&logs, nil)})
	ctx, cancel := context.WithCancel(context.Background())
	first := make(chan error, 1)
	go func() {
		_, err := c.Lookup(ctx, plans, digestID)
		first <- err
	}()
	if err := src.AwaitHeld(1); err != nil { // the first lookup's read is held
		t.Fatal(err)
	}
	second := make(chan registry.Entry, 1)
	go func() {
		e, err := c.Lookup(context.Background(), plans, digestID)
		if err != nil {
			t.Errorf("a lookup sharing the read of one that gave up: %v, want its answer", err)
		}
		second <- e
	}()
	cancel()
	if err := <-first; !errors.Is(err, context.Canceled) {
		t.Fatalf("the lookup that gave up: %v, want its context's error", err)
	}
	close(src.Gate)
	if e := <-second; e.Plan == nil || e.Plan.Name != "pro" {
		t.Fatalf("the lookup sharing the read: %+v, want pro", e)
	}
	if plan, _ := lookup(t, c, digestID); plan != "pro" {
		t.Fatalf("after it: plan %q, want pro", plan)
	}
	if strings.Contains(logs.String(), registry.MsgReadFailed) {
		t.Errorf("a caller giving up was logged as a failed read: %s", &logs)
	}
}

// A read is bounded by Options.Timeout.
func TestCacheTimeout(t *testing.T) {
	c := registry.NewCache(slowSource{}, registry.Options{TTL: ttl, Size: 1, Timeout: 10 * time.Millisecond})
	e, err := c.Lookup(context.Background(), plans, digestID)
	if !errors.Is(err, context.DeadlineExceeded) || e.Result != registry.ResultError {
		t.Fatalf("Lookup = %+v, %v; want a deadline error", e, err)
	}
}

// slowSource answers when its context ends.
type slowSource struct{}

func (slowSource) Get(ctx context.Context, _ string) (registry.Record, bool, error) {
	<-ctx.Done()
	return registry.Record{}, false, ctx.Err()
}

func TestDocument(t *testing.T) {
	c, err := config.Parse([]byte("defaultPlan: free\nplans: {free: [{name: b, capacity: 1, refillPerSecond: 1}], pro: [{name: b, capacity: 9, refillPerSecond: 1}]}\n" +
		"keys: {0123456789abcdef0123456789abcdef: pro}\ntenants: {t1: pro}"))
	if err != nil {
		t.Fatal(err)
	}
	d := registry.NewDocument(c)
	for id, want := range map[string]string{digestID: "pro", "tenant:t1": "pro", "key:ffffffffffffffffffffffffffffffff": "", "tenant:t2": "", "ip:192.0.2.1": "", "t1": ""} {
		e, err := d.Lookup(context.Background(), id)
		got := ""
		if e.Plan != nil {
			got = e.Plan.Name
		}
		if err != nil || got != want || e.Result != "" {
			t.Errorf("Lookup(%s) = %q %q, %v; want %q", id, got, e.Result, err, want)
		}
	}
}

// BenchmarkCacheHit is the cost of a lookup the cache answers: the authorizer's
// per-request cost with a warm cache.
func BenchmarkCacheHit(b *testing.B) {
	src := registrytest.New(registry.Record{ID: digestID, Plan: "pro"})
	c := registry.NewCache(src, registry.Options{TTL: time.Hour, Size: 10})
	ctx := context.Background()
	if _, err := c.Lookup(ctx, plans, digestID); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if e, _ := c.Lookup(ctx, plans, digestID); e.Result != registry.ResultHit {
			b.Fatalf("result %s", e.Result)
		}
	}
}

// Only keys and tenants are in the registry: a lookup of any other identity (an
// address) knows no one at once, with no read, whatever the table holds under its id.
func TestCacheReadsOnlyRegistryIdentities(t *testing.T) {
	src := registrytest.New(registry.Record{ID: "ip:192.0.2.1", Plan: "pro"}, registry.Record{ID: "tenant:t1", Plan: "pro"})
	c, _ := newCache(t, src, registry.Options{})
	for _, id := range []string{"ip:192.0.2.1", "ip:2001:db8::/64", "ip:unknown", "192.0.2.1", ""} {
		e, err := c.Lookup(context.Background(), plans, id)
		if err != nil || e.Plan != nil || e.Result != "" {
			t.Errorf("Lookup(%q) = %+v, %v; want no one, no result", id, e, err)
		}
	}
	if plan, _ := lookup(t, c, "tenant:t1"); plan != "pro" || src.Reads() != 1 {
		t.Fatalf("tenant: %q after %d reads, want pro after 1 (the addresses' none)", plan, src.Reads())
	}
}

// A tenant's key is in no log line of the registry: items are named by their logged
// form (bucketgate.LogForm), the key as its digest, at error (an invalid item) and at
// warn (a failed read).
func TestCacheLogsTenantsAsDigests(t *testing.T) {
	const key = "acme-corp-secret-name"
	src := registrytest.New()
	src.PutInvalid("tenant:"+key, &registry.RecordError{ID: "tenant:" + key, Attribute: "plan", Err: errors.New(`unknown plan "gold"`)})
	var logs bytes.Buffer
	c, clk := newCache(t, src, registry.Options{Log: telemetry.NewLogger(&logs, nil)})
	src.Fail(errors.New("throttled"))
	if _, err := c.Lookup(context.Background(), plans, "tenant:"+key); err == nil {
		t.Fatal("no error with the table down")
	}
	src.Fail(nil)
	clk.advance(registry.RetryAfterFailure)
	if e, err := c.Lookup(context.Background(), plans, "tenant:"+key); err != nil || !e.Invalid {
		t.Fatalf("%+v, %v: want an invalid item", e, err)
	}
	want := `"item":"tenant:` + bucketgate.KeyDigest(key) + `"`
	if strings.Contains(logs.String(), key) || strings.Count(logs.String(), want) != 2 {
		t.Fatalf("want two lines naming %s, and never the key:\n%s", want, &logs)
	}
}

// The hold after a failed read (no read of the identity for RetryAfterFailure) holds
// even when the cache is full of registered keys, which a made-up key never evicts
// while the table fails: a hundred lookups of one made-up key make one read.
func TestCacheHoldSurvivesAFullCache(t *testing.T) {
	const size = 4
	var known []registry.Record
	for i := range size {
		known = append(known, registry.Record{ID: "key:known-" + strconv.Itoa(i), Plan: "pro"})
	}
	src := registrytest.New(known...)
	c, clk := newCache(t, src, registry.Options{Size: size})
	for _, r := range known {
		lookup(t, c, r.ID)
	}
	src.Fail(errors.New("throttled"))
	clk.advance(ttl)
	reads := src.Reads()
	for i := range 100 {
		if _, err := c.Lookup(context.Background(), plans, "key:made-up"); err == nil {
			t.Fatalf("lookup %d of a made-up key with the table down: no error", i)
		}
	}
	if n := src.Reads() - reads; n != 1 {
		t.Fatalf("%d reads for 100 lookups of one made-up key within a second, want 1", n)
	}
	for _, r := range known {
		if plan, result := lookup(t, c, r.ID); plan != "pro" || result != registry.ResultStale {
			t.Fatalf("%s: %q %s, want pro, stale: a hold evicted it", r.ID, plan, result)
		}
	}
	clk.advance(registry.RetryAfterFailure)
	if _, err := c.Lookup(context.Background(), plans, "key:made-up"); err == nil || src.Reads()-reads != 1+size+1 {
		t.Fatalf("%v after %d reads: want a second read of it once the hold ends", err, src.Reads()-reads)
	}
	for i := range size * 100 { // a flood of made-up keys: the holds stay bounded
		c.Lookup(context.Background(), plans, "key:flood-"+strconv.Itoa(i))
	}
	if holds := registry.HoldsOf(c); holds > size {
		t.Fatalf("%d holds after a flood, want at most the cache's size %d", holds, size)
	}
}

// A read ends Margin before the deadline of the lookup's context (the invocation's),
// even when Timeout is far: that is the caller's time running out, no failure of the
// table, so no hold keeps the next invocation's lookup from reading, and no failed read
// is logged.
func TestCacheReadEndsMarginBeforeTheDeadline(t *testing.T) {
	src := registrytest.New(registry.Record{ID: digestID, Plan: "pro"})
	src.Gate = make(chan struct{})
	var logs bytes.Buffer
	c, _ := newCache(t, src, registry.Options{Timeout: time.Hour, Margin: 1500 * time.Millisecond, Log: telemetry.NewLogger(&logs, nil)})
	ctx, cancel := context.WithTimeout(context.Background(), 1600*time.Millisecond)
	defer cancel()
	e, err := c.Lookup(ctx, plans, digestID)
	if !errors.Is(err, context.DeadlineExceeded) || e.Result != registry.ResultAbandoned || ctx.Err() != nil {
		t.Fatalf("Lookup = %+v, %v, the caller's context %v; want the read's deadline error, a margin before the caller's", e, err, ctx.Err())
	}
	close(src.Gate)
	if plan, result := lookup(t, c, digestID); plan != "pro" || result != registry.ResultMiss {
		t.Fatalf("the next lookup: %q %s, want a read (no hold)", plan, result)
	}
	if strings.Contains(logs.String(), registry.MsgReadFailed) {
		t.Errorf("the caller's time running out was logged as a failed read: %s", &logs)
	}
}

// A lookup whose caller's time ran out before the table answered is counted as
// abandoned, no registry error: the table did not fail (RegistryErrorsAlarm counts its
// errors), whether the lookup was reading, its deadline less Margin passed, or it was
// waiting for another lookup's read.
func TestCacheCallerGivingUpIsAbandoned(t *testing.T) {
	tests := []struct {
		name   string
		margin time.Duration
		// lookup looks digestID up in c, whose source holds every read, with its
		// caller's time running out.
		lookup func(c *registry.Cache, src *registrytest.Source) (registry.Entry, error)
	}{
		{"reading, its context cancelled", 0, func(c *registry.Cache, src *registrytest.Source) (registry.Entry, error) {
			ctx, cancel := context.WithCancel(context.Background())
			go func() {
				if err := src.AwaitHeld(1); err != nil {
					t.Error(err)
				}
				cancel()
			}()
			return c.Lookup(ctx, plans, digestID)
		}},
		{"reading, its deadline less Margin passed", 1500 * time.Millisecond, func(c *registry.Cache, _ *registrytest.Source) (registry.Entry, error) {
			ctx, cancel := context.WithTimeout(context.Background(), 1600*time.Millisecond)
			defer cancel()
			return c.Lookup(ctx, plans, digestID)
		}},
		{"waiting for another's read", 0, func(c *registry.Cache, src *registrytest.Source) (registry.Entry, error) {
			go func() { _, _ = c.Lookup(context.Background(), plans, digestID) }()
			if err := src.AwaitHeld(1); err != nil {
				return registry.Entry{}, err
			}
			ctx, cancel := context.WithCancel(context.Background())
			cancel()
			return c.Lookup(ctx, plans, digestID)
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			src := registrytest.New(registry.Record{ID: digestID, Plan: "pro"})
			src.Gate = make(chan struct{})
			defer close(src.Gate)
			c, _ := newCache(t, src, registry.Options{Margin: tc.margin})
			e, err := tc.lookup(c, src)
			if err == nil || e.Result != registry.ResultAbandoned {
				t.Fatalf("Lookup = %+v, %v; want the caller's error, %s", e, err, registry.ResultAbandoned)
			}
		})
	}
}
