package check

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"

	"github.com/bucketgate/bucketgate"
	"github.com/bucketgate/bucketgate/checkapi"
	"github.com/bucketgate/bucketgate/internal/bucket"
	"github.com/bucketgate/bucketgate/internal/guard"
	"github.com/bucketgate/bucketgate/internal/lua"
	"github.com/bucketgate/bucketgate/internal/registry"
	"github.com/bucketgate/bucketgate/internal/settings"
	"github.com/bucketgate/bucketgate/internal/testkit/registrytest"
)

// usageFixture is a fixture whose engine counts usage, kept days days, and a function
// that moves Redis's clock to a time.
func usageFixture(t *testing.T, days int) (*fixture, func(time.Time)) {
	t.Helper()
	mr, client := startMiniredis(t)
	f := newFixture(t, client, nil, guard.Options{})
	f.h.Guard = guard.New(bucket.New(client, bucket.Usage(days)), guard.Options{Timeout: testTimeout})
	f.h.UsageDays = days
	now := testTime
	return f, func(at time.Time) {
		mr.FastForward(at.Sub(now))
		now = at
		mr.SetTime(at)
	}
}

// An inline monthly quota binds like a bucket: denied once its window's limit is spent,
// until the window ends, and a peek shows every rule with the window's end.
func TestInlineQuota(t *testing.T) {
	f, _ := usageFixture(t, settings.DefaultUsageDays)
	check := `{"key":"acme","rules":[{"name":"burst","capacity":100,"refillPerSecond":100},{"name":"monthly","limit":3,"period":"month","anchor":15}]}`
	for range 3 {
		f.invokeOK(t, []byte(check))
	}
	// testTime is 2025-03-01 12:00 UTC: the window began on February 15 and ends March 15.
	wait := strconv.FormatInt(time.Date(2025, 3, 15, 0, 0, 0, 0, time.UTC).Sub(testTime).Milliseconds(), 10)
	assertJSONEqual(t, f.invokeOK(t, []byte(check)), `{"allowed":false,"reason":"limited","limit":3,"remaining":0,"retryAfterMs":`+wait+
		`,"resetAfterMs":`+wait+`,"rule":"monthly","plan":""}`)
	peek := strings.Replace(check, `{"key"`, `{"cost":0,"key"`, 1)
	assertJSONEqual(t, f.invokeOK(t, []byte(peek)), `{"allowed":true,"reason":"ok","limit":3,"remaining":0,"retryAfterMs":0,`+
		`"resetAfterMs":`+wait+`,"rule":"monthly","plan":"","rules":[`+
		`{"name":"burst","limit":100,"remaining":97,"resetAfterMs":30},`+
		`{"name":"monthly","period":"month","limit":3,"remaining":0,"resetAfterMs":`+wait+`,"windowEnd":"2025-03-15T00:00:00Z"}]}`)
}

// The usage of a key per day: checks allowed with their cost, checks limited; peeks
// count nothing; days of no check are zeros; the total adds them up.
func TestUsageReport(t *testing.T) {
	f, at := usageFixture(t, 3)
	day1 := testTime
	check := func(cost int) {
		f.invoke([]byte(`{"key":"acme","rules":[{"name":"burst","capacity":5,"refillPerSecond":0.00001}],"cost":` + strconv.Itoa(cost) + `}`))
	}
	check(2)
	check(3)
	check(1) // limited: 0 left
	check(0) // a peek
	at(day1.Add(24 * time.Hour))
	check(1)
	at(day1.Add(2 * 24 * time.Hour))
	assertJSONEqual(t, f.invokeOK(t, []byte(`{"key":"acme","op":"usage","from":"2025-03-01"}`)), `{"identity":"tenant:acme","from":"2025-03-01","to":"2025-03-03","days":[
		{"date":"2025-03-01","allowed":2,"limited":1,"cost":5},
		{"date":"2025-03-02","allowed":0,"limited":1,"cost":0},
		{"date":"2025-03-03","allowed":0,"limited":0,"cost":0}],
		"total":{"allowed":2,"limited":2,"cost":5}}`)
	// To alone: that day; neither: today.
	assertJSONEqual(t, f.invokeOK(t, []byte(`{"key":"acme","op":"usage","to":"2025-03-02"}`)), `{"identity":"tenant:acme","from":"2025-03-02","to":"2025-03-02",
		"days":[{"date":"2025-03-02","allowed":0,"limited":1,"cost":0}],"total":{"allowed":0,"limited":1,"cost":0}}`)
	assertJSONEqual(t, f.invokeOK(t, []byte(`{"identity":"tenant:acme","op":"usage"}`)), `{"identity":"tenant:acme","from":"2025-03-03","to":"2025-03-03",
		"days":[{"date":"2025-03-03","allowed":0,"limited":0,"cost":0}],"total":{"allowed":0,"limited":0,"cost":0}}`)
	// Past the days kept: an error naming them.
	at(day1.Add(3 * 24 * time.Hour))
	ive := functionError(t, mustFail(f, `{"key":"acme","op":"usage","from":"2025-03-01"}`))
	if want := "from: 2025-03-01 is beyond the 3 days of usage kept (USAGE_RETENTION_DAYS, today included): want 2025-03-02 or later"; ive.Message != want {
		t.Errorf("error %q, want %q", ive.Message, want)
	}
}

// mustFail invokes payload and returns its error, nil when it succeeded.
func mustFail(f *fixture, payload string) error {
	_, err := f.invoke([]byte(payload))
	return err
}

// Usage requests the function cannot answer are invalid requests naming the field, and
// write nothing.
func TestUsageRequestErrors(t *testing.T) {
	f, _ := usageFixture(t, 35)
	tests := []struct{ name, payload, want string }{
		{"reversed", `{"key":"a","op":"usage","from":"2025-03-01","to":"2025-02-28"}`, "from: 2025-03-01 is after to, 2025-02-28: the days are reversed"},
		{"after today", `{"key":"a","op":"usage","to":"2025-03-02"}`, "to: 2025-03-02 is after today, 2025-03-01 (UTC, by Redis's clock)"},
		{"from after today, no to", `{"key":"a","op":"usage","from":"2025-03-02"}`, "from: 2025-03-02 is after today, 2025-03-01 (UTC, by Redis's clock; to left out is today)"},
		{"beyond retention", `{"key":"a","op":"usage","from":"2025-01-01"}`, "from: 2025-01-01 is beyond the 35 days of usage kept (USAGE_RETENTION_DAYS, today included): want 2025-01-26 or later"},
		{"to alone beyond retention", `{"key":"a","op":"usage","to":"2025-01-25"}`, "to: 2025-01-25 is beyond the 35 days of usage kept"},
		{"malformed", `{"key":"a","op":"usage","from":"2025-3-1"}`, `from: "2025-3-1": want a day as YYYY-MM-DD, such as 2026-11-25`},
		{"not a day", `{"key":"a","op":"usage","to":"2025-02-30"}`, `to: "2025-02-30": want a day as YYYY-MM-DD`},
		{"a time", `{"key":"a","op":"usage","to":"2025-03-01T00:00:00Z"}`, `to: "2025-03-01T00:00:00Z": want a day as YYYY-MM-DD`},
		{"a number", `{"key":"a","op":"usage","to":20250301}`, "to: got number, want a string"},
		{"with a plan", `{"key":"a","op":"usage","plan":"pro"}`, "plan: not with op usage"},
		{"with a cost", `{"key":"a","op":"usage","cost":0}`, "cost: not with op usage"},
		{"with rules", `{"key":"a","op":"usage","rules":[]}`, "rules: not with op usage"},
		{"days with a check", `{"key":"a","from":"2025-03-01"}`, "from: only with op usage"},
		{"days with a refund", `{"key":"a","op":"refund","to":"2025-03-01"}`, "to: only with op usage"},
		{"in a batch", `{"checks":[{"key":"a"},{"key":"a","op":"usage"}]}`, "checks[1].op: usage is a report, not a check: send it alone, not in a batch"},
		{"no key", `{"op":"usage"}`, "key: missing"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ive := functionError(t, mustFail(f, tc.payload))
			if ive.Type != checkapi.ErrorTypeInvalidRequest || !strings.HasPrefix(ive.Message, tc.want) {
				t.Fatalf("error %q of type %q, want one starting %q", ive.Message, ive.Type, tc.want)
			}
		})
	}
	f.h.NoAddressUsage = true
	if ive := functionError(t, mustFail(f, `{"identity":"ip:203.0.113.7","op":"usage"}`)); ive.Message != "op: usage of an address is off in this function: USAGE_OF_ADDRESSES is false" {
		t.Errorf("usage of addresses off: %q", ive.Message)
	}
	f.invokeOK(t, []byte(`{"identity":"tenant:a","op":"usage"}`)) // other identities' usage is still counted
	f.h.UsageDays = 0
	if ive := functionError(t, mustFail(f, `{"key":"a","op":"usage"}`)); ive.Message != "op: usage is off in this function: USAGE_RETENTION_DAYS is 0" {
		t.Errorf("usage off: %q", ive.Message)
	}
}

// A service-facing check function answers a key's own usage, and refuses an
// identity's, the operator's path.
func TestUsageOnTheServicePath(t *testing.T) {
	f, _ := usageFixture(t, 35)
	f.h.OperatorFunction = "stack-operator"
	f.invokeOK(t, []byte(`{"key":"a","op":"usage"}`))
	if ive := functionError(t, mustFail(f, `{"identity":"tenant:a","op":"usage"}`)); !strings.Contains(ive.Message, "invoke stack-operator") {
		t.Errorf("an identity's usage on the service path: %q", ive.Message)
	}
}

// A usage report Redis cannot answer is an UnavailableError that says why: a day's count
// in Redis that is not bucketgate's (stored data is input too), which is no failure to
// answer, or Redis gone.
func TestUsageUnavailable(t *testing.T) {
	f, _ := usageFixture(t, 35)
	mr, client := startMiniredis(t) // a Redis of the test's own, to corrupt and to stop
	f.h.Guard = guard.New(bucket.New(client, bucket.Usage(35)), guard.Options{Timeout: testTimeout})
	mr.HSet(bucket.Key("tenant:bad"), lua.UsageField(testTime.Unix()/86400, lua.UsageAllowed), "many")
	ue := functionError(t, mustFail(f, `{"key":"bad","op":"usage"}`))
	if want := "usage of tenant:" + bucketgate.KeyDigest("bad") + ": Redis holds what is not bucketgate's usage: "; ue.Type != checkapi.ErrorTypeUnavailable || !strings.HasPrefix(ue.Message, want) {
		t.Errorf("bad state: error %q of type %q, want one starting %q", ue.Message, ue.Type, want)
	}
	mr.Close()
	ue = functionError(t, mustFail(f, `{"key":"a","op":"usage"}`))
	if want := "usage of tenant:" + bucketgate.KeyDigest("a") + ": Redis did not answer: "; ue.Type != checkapi.ErrorTypeUnavailable || !strings.HasPrefix(ue.Message, want) {
		t.Errorf("Redis gone: error %q of type %q, want one starting %q", ue.Message, ue.Type, want)
	}
}

// A usage report of an identity the registry must resolve (a key of an account counts in
// its account's usage), when the instance has no configuration, says why: a table that
// could not be read (another call may find it read) is the registry not saying whose
// usage it is; a table whose documents do not load (after an init that could not read
// it) is checkapi.NoConfiguration, which every call meets until the document is fixed,
// so that a client does not send it again.
func TestUsageWithoutConfiguration(t *testing.T) {
	for _, tc := range []struct {
		name      string
		invalid   bool // the table holds a document that does not load, else it cannot be read
		permanent bool
	}{
		{"the table unreadable", false, false},
		{"no document loads", true, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f, _ := usageFixture(t, 3)
			src := registrytest.New()
			src.Fail(errors.New("dynamodb: no route"))
			now := testTime
			clock := func() time.Time { return now }
			live := registry.NewLive(src, registry.NewCache(src, registry.Options{TTL: time.Hour, Size: 10, Now: clock}), f.cfg,
				registry.LiveOptions{TTL: time.Minute, Now: clock})
			if err := live.Load(context.Background()); err != nil { // init: the table unreadable
				t.Fatal(err)
			}
			f.h.Config = live
			if tc.invalid {
				src.Fail(nil)
				src.PutConfig(registry.StoredConfig{ID: registry.ConfigID, Document: "routs: []", Version: 1})
				now = now.Add(time.Minute)
			}
			ue := functionError(t, mustFail(f, `{"identity":"key:`+bucketgate.KeyDigest("k")+`","op":"usage"}`))
			if ue.Type != checkapi.ErrorTypeUnavailable || strings.Contains(ue.Message, checkapi.NoConfiguration) != tc.permanent ||
				!tc.permanent && !strings.Contains(ue.Message, "the registry could not say whose usage it is") {
				t.Fatalf("error %q of type %q: want %s, naming checkapi.NoConfiguration %v", ue.Message, ue.Type, checkapi.ErrorTypeUnavailable, tc.permanent)
			}
		})
	}
}

// readDeadlines is the engine with the deadline of each usage read (Redis's clock, the
// days, Redis's clock again) it was given.
type readDeadlines struct {
	*bucket.Limiter
	mu    sync.Mutex
	calls []time.Time
}

func (d *readDeadlines) record(ctx context.Context) {
	deadline, _ := ctx.Deadline()
	d.mu.Lock()
	defer d.mu.Unlock()
	d.calls = append(d.calls, deadline)
}

func (d *readDeadlines) Time(ctx context.Context, identity string) (time.Time, error) {
	d.record(ctx)
	return d.Limiter.Time(ctx, identity)
}

func (d *readDeadlines) Usage(ctx context.Context, identity string, first, last time.Time) ([]bucketgate.DayUsage, error) {
	d.record(ctx)
	return d.Limiter.Usage(ctx, identity, first, last)
}

// A usage report's reads of Redis (its clock, to know today, the days, and its clock
// again, to know the day did not change meanwhile) share the one deadline of a decision
// (REDIS_TIMEOUT_MS), not one each: a report never waits for Redis longer than a check
// may.
func TestUsageOneDeadline(t *testing.T) {
	f, _ := usageFixture(t, 35)
	_, client := startMiniredis(t)
	engine := &readDeadlines{Limiter: bucket.New(client, bucket.Usage(35))}
	f.h.Guard = guard.New(engine, guard.Options{Timeout: testTimeout})
	f.invokeOK(t, []byte(`{"key":"a","op":"usage"}`))
	if len(engine.calls) != 3 || engine.calls[0].IsZero() || !engine.calls[1].Equal(engine.calls[0]) || !engine.calls[2].Equal(engine.calls[0]) {
		t.Errorf("the deadlines of the clock's reads and the days' read: %v, want one deadline for the three", engine.calls)
	}
}

// midnightRead is an engine whose first clock read is the last instant of a day, after
// which Redis's clock reaches the next day and the identity's first check of it comes
// (its first write of the day, which removes the days past keeping), before the days
// are read: a usage report read across midnight.
type midnightRead struct {
	*bucket.Limiter
	mr    *miniredis.Miniredis
	check bucketgate.Request
	done  bool
}

// Time returns Redis's clock; the first time, then moves it past midnight and decides
// the check.
func (m *midnightRead) Time(ctx context.Context, identity string) (time.Time, error) {
	now, err := m.Limiter.Time(ctx, identity)
	if err != nil || m.done {
		return now, err
	}
	m.done = true
	m.mr.SetTime(bucketgate.UTCDay(now).AddDate(0, 0, 1).Add(500 * time.Microsecond))
	if _, err := m.Limiter.Decide(ctx, m.check); err != nil {
		return now, err
	}
	return now, nil
}

// A usage report whose days are read after midnight, the clock read before it: the
// first day kept, which the new day's first check removed meanwhile, is refused as it is
// a moment later (past the days kept), not answered as a day of no checks; a later
// first day is answered, its checks all there.
func TestUsageReadAcrossMidnight(t *testing.T) {
	tests := []struct {
		name, payload string
		want          string // the answer, or the error's message
	}{
		{"the first day kept, removed meanwhile", `{"key":"acme","op":"usage","from":"2025-03-01","to":"2025-03-02"}`,
			"from: 2025-03-01 is beyond the 3 days of usage kept (USAGE_RETENTION_DAYS, today included): want 2025-03-02 or later"},
		{"a later first day", `{"key":"acme","op":"usage","from":"2025-03-02","to":"2025-03-02"}`,
			`{"identity":"tenant:acme","from":"2025-03-02","to":"2025-03-02","days":[{"date":"2025-03-02","allowed":1,"limited":0,"cost":1}],"total":{"allowed":1,"limited":0,"cost":1}}`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			mr, client := startMiniredis(t)
			f := newFixture(t, client, nil, guard.Options{})
			rules := []bucketgate.Rule{{Name: "burst", Capacity: 5, RefillPerSecond: 1}}
			check := bucketgate.Request{Identity: "tenant:acme", Rules: rules, Cost: 1}
			engine := &midnightRead{Limiter: bucket.New(client, bucket.Usage(3)), mr: mr, check: check}
			f.h.Guard = guard.New(engine, guard.Options{Timeout: testTimeout})
			f.h.UsageDays = 3
			for _, day := range []int{1, 2} { // a check on March 1 and on March 2, at noon
				mr.SetTime(time.Date(2025, 3, day, 12, 0, 0, 0, time.UTC))
				if _, err := engine.Decide(t.Context(), check); err != nil {
					t.Fatal(err)
				}
			}
			mr.SetTime(time.Date(2025, 3, 3, 23, 59, 59, 999_000_000, time.UTC)) // March 1 is the first day kept
			out, err := f.invoke([]byte(tc.payload))
			if err == nil && !strings.HasPrefix(tc.want, "{") {
				t.Fatalf("answered %s, want the error %q", out, tc.want)
			}
			if err != nil {
				if ive := functionError(t, err); ive.Type != checkapi.ErrorTypeInvalidRequest || ive.Message != tc.want {
					t.Fatalf("error %q of type %q, want %q", ive.Message, ive.Type, tc.want)
				}
				return
			}
			assertJSONEqual(t, out, tc.want)
		})
	}
}
