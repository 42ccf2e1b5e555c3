package check

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/bucketgate/bucketgate"
	"github.com/bucketgate/bucketgate/internal/config"
	"github.com/bucketgate/bucketgate/internal/eventbus"
	"github.com/bucketgate/bucketgate/internal/guard"
	"github.com/bucketgate/bucketgate/internal/testkit/redistest"
)

// The check function's events, on a real server, as round 3 states them: a quota's 80%
// and 100% once each in its window, whatever crossed them (a settle taking the extra, a
// check), and a rule's first denial in its window once; a settle or a check answered
// again crosses nothing; the detail names the tenant by its digest, never its key, with
// the rule, usage, limit and the quota's calendar window.
func TestEventsOfTheCheckFunction(t *testing.T) {
	srv := redistest.Start(t)
	f := newFixture(t, redistest.Client(t, srv.Addr), nil, guard.Options{})
	rec := &eventsRecorder{}
	f.h.Events = rec
	quota := `{"key":"acme-secret","rules":[{"name":"monthly","limit":10,"period":"month"}]`
	r := decodeResponse(t, f.invokeOK(t, []byte(quota+`,"op":"reserve","cost":5}`)))
	if len(rec.events) != 0 {
		t.Fatalf("a reserve to 50%% sent %+v, want no event", rec.events)
	}
	settle := []byte(fmt.Sprintf(`%s,"op":"settle","reservation":%q,"cost":9}`, quota, r.Reservation))
	for _, tc := range []struct {
		name    string
		payload []byte
		want    string // the event's type and threshold, "" for none
		usage   int64
	}{
		{"its settle to 90%", settle, eventbus.TypeQuotaThreshold + " 80", 9},
		{"the settle again", settle, "", 0},
		{"a check to 100%", []byte(quota + `,"cost":1,"requestId":"last"}`), eventbus.TypeQuotaThreshold + " 100", 10},
		{"that check again", []byte(quota + `,"cost":1,"requestId":"last"}`), "", 0},
		{"the first denial", []byte(quota + `,"cost":1}`), eventbus.TypeRateLimited + " 0", 10},
		{"another denial", []byte(quota + `,"cost":1}`), "", 0},
	} {
		rec.events = nil
		f.invokeOK(t, tc.payload)
		if tc.want == "" {
			if len(rec.events) != 0 {
				t.Fatalf("%s sent %+v, want no event", tc.name, rec.events)
			}
			continue
		}
		if len(rec.events) != 1 {
			t.Fatalf("%s sent %+v, want one event: %s", tc.name, rec.events, tc.want)
		}
		e := rec.events[0]
		month := time.Date(e.Time.Year(), e.Time.Month(), 1, 0, 0, 0, 0, time.UTC)
		d := e.Detail
		if got := fmt.Sprintf("%s %d", e.Type, d.Threshold); got != tc.want || d.Identity != "tenant:"+bucketgate.KeyDigest("acme-secret") ||
			d.Rule != "monthly" || d.Usage != tc.usage || d.Limit != 10 || !d.Window.Start.Equal(month) || !d.Window.End.Equal(month.AddDate(0, 1, 0)) {
			t.Fatalf("%s sent %s %+v; want %s of tenant:<digest>, monthly, %d of 10 in the month", tc.name, e.Type, d, tc.want, tc.usage)
		}
	}
}

// A bucket's first denial reports as its usage its capacity less the tokens it holds
// (docs/operations.md, eventbus.Detail): a bucket a settle left in debt has used more
// than its capacity, and says by how much, rather than looking merely empty.
func TestRateLimitedEventUsageOfABucket(t *testing.T) {
	srv := redistest.Start(t)
	emptied := func(f *fixture, tenant string) { f.invokeOK(t, []byte(tenant+`,"cost":10}`)) }
	inDebt := func(f *fixture, tenant string) { // 10 less 5 reserved less 35 more settled, a debt of its capacity at most: -10 held
		r := decodeResponse(t, f.invokeOK(t, []byte(tenant+`,"op":"reserve","cost":5}`)))
		f.invokeOK(t, []byte(fmt.Sprintf(`%s,"op":"settle","reservation":%q,"cost":40}`, tenant, r.Reservation)))
	}
	const burst = `{"name":"burst","capacity":10,"refillPerSecond":0.0001}`
	tests := []struct {
		name  string
		rules string
		spend func(f *fixture, tenant string) // what is done before the denied check
		usage int64
	}{
		{"emptied by a check", burst, emptied, 10},
		{"in debt after a settle", burst, inDebt, 20},
		{"in debt, with another rule", burst + `,{"name":"hourly","capacity":100,"refillPerSecond":0.01}`, inDebt, 20},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, redistest.Client(t, srv.Addr), nil, guard.Options{})
			rec := &eventsRecorder{}
			f.h.Events = rec
			tenant := fmt.Sprintf(`{"key":%q,"rules":[%s]`, tc.name, tc.rules)
			tc.spend(f, tenant)
			if len(rec.events) != 0 {
				t.Fatalf("spending sent %+v, want no event", rec.events)
			}
			if r := decodeResponse(t, f.invokeOK(t, []byte(tenant+`,"cost":1}`))); r.Allowed {
				t.Fatalf("the check after it was allowed: %+v", r)
			}
			if len(rec.events) != 1 || rec.events[0].Type != eventbus.TypeRateLimited {
				t.Fatalf("the denied check sent %+v, want one %s event", rec.events, eventbus.TypeRateLimited)
			}
			if d := rec.events[0].Detail; d.Rule != "burst" || d.Kind != eventbus.KindBucket || d.Usage != tc.usage || d.Limit != 10 {
				t.Fatalf("the event's detail is %+v: want burst, a bucket, usage %d of 10", d, tc.usage)
			}
		})
	}
}

// A quota whose count passed 80% while it did not count as enforced with its limit (a
// shadow rule promoted, a limit lowered under the count's 80%) reports its 80% with its
// 100%, as docs/operations.md's events say of a limit changed in the window: no admission
// moves the count across 80% of the limit in force, and the 100% admission reports both.
// One promoted full reports neither: its first denial is a Rate Limited.
func TestQuotaThresholdsOfALimitTheCountPassed(t *testing.T) {
	r80, r100 := eventbus.TypeQuotaThreshold+" 80", eventbus.TypeQuotaThreshold+" 100"
	quota := func(limit int, shadow bool, cost int) []byte {
		return []byte(fmt.Sprintf(`{"key":"acme-secret","rules":[{"name":"monthly","limit":%d,"period":"month","shadow":%v}],"cost":%d}`, limit, shadow, cost))
	}
	type step struct {
		payload []byte
		want    []string // the events' types and thresholds
		denied  bool
	}
	for _, tc := range []struct {
		name  string
		steps []step
	}{
		{"a shadow quota promoted past 80%", []step{
			{quota(20, true, 17), nil, false},
			{quota(20, false, 1), nil, false},
			{quota(20, false, 2), []string{r80, r100}, false},
		}},
		{"a shadow quota promoted full", []step{
			{quota(20, true, 20), nil, false},
			{quota(20, false, 1), []string{eventbus.TypeRateLimited + " 0"}, true},
		}},
		{"a limit lowered under the count's 80%", []step{
			{quota(40, false, 17), nil, false},
			{quota(20, false, 1), nil, false},
			{quota(20, false, 2), []string{r80, r100}, false},
		}},
		{"enforced throughout", []step{
			{quota(20, false, 17), []string{r80}, false},
			{quota(20, false, 1), nil, false},
			{quota(20, false, 2), []string{r100}, false},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := redistest.Start(t)
			f := newFixture(t, redistest.Client(t, srv.Addr), nil, guard.Options{})
			rec := &eventsRecorder{}
			f.h.Events = rec
			for i, s := range tc.steps {
				rec.events = nil
				if r := decodeResponse(t, f.invokeOK(t, s.payload)); r.Allowed == s.denied {
					t.Fatalf("step %d: %+v, want denied %v", i+1, r, s.denied)
				}
				var got []string
				for _, e := range rec.events {
					got = append(got, fmt.Sprintf("%s %d", e.Type, e.Detail.Threshold))
				}
				if !slices.Equal(got, s.want) {
					t.Fatalf("step %d sent %q, want %q", i+1, got, s.want)
				}
			}
		})
	}
}

// Every event of a tenant names it by its key's digest, tenant:<digest>, whichever way
// the check named it and found its rules (its registry plan, a plan named, its own
// rules, the operator's identity, a batch), and no part of any event holds its key.
func TestEventsNameATenantByItsDigest(t *testing.T) {
	const key = "acme-secret-key"
	cfg, err := config.Parse([]byte(`
defaultPlan: free
plans:
  free: [{name: daily, limit: 100, period: day}]
  metered: [{name: daily, limit: 1, period: day}]
tenants:
  ` + key + `: metered
`))
	if err != nil {
		t.Fatal(err)
	}
	own := `"rules":[{"name":"daily","limit":1,"period":"day"}]`
	for _, tc := range []struct {
		name, payload string
	}{
		{"its registry plan", `{"key":"` + key + `"}`},
		{"a plan named", `{"key":"` + key + `","plan":"metered"}`},
		{"its own rules", `{"key":"` + key + `",` + own + `}`},
		{"the operator's identity", `{"identity":"tenant:` + key + `"}`},
		{"a batch", `{"checks":[{"key":"` + key + `"},{"key":"` + key + `"}]}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, client := startMiniredis(t)
			f := newFixture(t, client, cfg, guard.Options{})
			rec := &eventsRecorder{}
			f.h.Events = rec
			f.invokeOK(t, []byte(tc.payload))
			f.invokeOK(t, []byte(tc.payload)) // over the limit of 1: its first denial
			if len(rec.events) != 3 {
				t.Fatalf("events %+v, want 3: 80%% and 100%% of daily, and its first denial", rec.events)
			}
			for _, e := range rec.events {
				sent, err := json.Marshal(e)
				if err != nil {
					t.Fatal(err)
				}
				if e.Detail.Identity != bucketgate.TenantPrefix+bucketgate.KeyDigest(key) || strings.Contains(string(sent), key) {
					t.Fatalf("event %s: want identity tenant:%s, and the key nowhere", sent, bucketgate.KeyDigest(key))
				}
			}
		})
	}
}

// A quota denied short of its limit, its next request costing more than the room left,
// reaches no 100%: only an admission reports a threshold, and none moved the count there.
// Its first denial, a Rate Limited of kind quota, is the one sign of it (docs/operations.md:
// the example rule QuotaExhaustedRule, on 100% alone, does not see it; a rule on the kind
// does).
func TestQuotaDeniedShortOfItsLimit(t *testing.T) {
	srv := redistest.Start(t)
	f := newFixture(t, redistest.Client(t, srv.Addr), nil, guard.Options{})
	rec := &eventsRecorder{}
	f.h.Events = rec
	check := []byte(`{"key":"acme-secret","rules":[{"name":"monthly","limit":10,"period":"month"}],"cost":3}`)
	for range 5 { // 3, 6, 9 (80%), then denied at 9 twice
		f.invokeOK(t, check)
	}
	var got []string
	for _, e := range rec.events {
		got = append(got, fmt.Sprintf("%s %s %d %d", e.Type, e.Detail.Kind, e.Detail.Threshold, e.Detail.Usage))
	}
	if want := []string{eventbus.TypeQuotaThreshold + " quota 80 9", eventbus.TypeRateLimited + " quota 0 9"}; !slices.Equal(got, want) {
		t.Fatalf("events %q, want %q", got, want)
	}
}
