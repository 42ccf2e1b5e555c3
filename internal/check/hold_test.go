package check

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/bucketgate/bucketgate/checkapi"
	"github.com/bucketgate/bucketgate/internal/guard"
	"github.com/bucketgate/bucketgate/internal/testkit/redistest"
)

// TestReservationsRealRedis: through the handler on a real server, a reserve answers a
// reservation and its expiry; a settle gives back or takes the difference and, again,
// answers its first outcome; a cancel gives the estimate back; a requestId makes a check
// idempotent; a forged reservation or a reused requestId is a ConflictError, and bad
// input an InvalidRequestError naming the field, each changing nothing.
func TestReservationsRealRedis(t *testing.T) {
	srv := redistest.Start(t)
	f := newFixture(t, redistest.Client(t, srv.Addr), nil, guard.Options{})
	slow := `{"key":"llm","rules":[` + slowRule + `]`
	r := decodeResponse(t, f.invokeOK(t, []byte(slow+`,"op":"reserve","cost":8,"ttlMs":60000}`)))
	exp, err := time.Parse(time.RFC3339, r.ExpiresAt)
	if !r.Allowed || r.Remaining != 2 || !strings.HasPrefix(r.Reservation, "r3.") || err != nil || time.Until(exp) > time.Minute+time.Second {
		t.Fatalf("reserve = %+v (%v)", r, err)
	}
	settle := fmt.Sprintf(`%s,"op":"settle","reservation":%q,"cost":%%d}`, slow, r.Reservation)
	s := decodeResponse(t, f.invokeOK(t, []byte(fmt.Sprintf(settle, 3))))
	if !s.Allowed || s.Remaining != 7 || s.Settled != 3 || s.Replayed {
		t.Fatalf("settle 3 = %+v", s)
	}
	s = decodeResponse(t, f.invokeOK(t, []byte(fmt.Sprintf(settle, 9))))
	if !s.Replayed || s.Settled != 3 || s.Remaining != 7 {
		t.Fatalf("settle again = %+v: want the first outcome", s)
	}
	r = decodeResponse(t, f.invokeOK(t, []byte(slow+`,"op":"reserve","cost":5}`)))
	c := decodeResponse(t, f.invokeOK(t, []byte(fmt.Sprintf(`%s,"op":"cancel","reservation":%q}`, slow, r.Reservation))))
	if !c.Allowed || c.Remaining != 7 {
		t.Fatalf("cancel = %+v", c)
	}
	idem := slow + `,"cost":2,"requestId":"call-1"}`
	first := decodeResponse(t, f.invokeOK(t, []byte(idem)))
	again := decodeResponse(t, f.invokeOK(t, []byte(idem)))
	if first.Remaining != 5 || first.Replayed || !again.Replayed || again.Remaining != 5 {
		t.Fatalf("idempotent check: %+v then %+v", first, again)
	}
	for _, tt := range []struct{ name, payload, errType, want string }{
		{"forged reservation", fmt.Sprintf(`%s,"op":"settle","reservation":%q,"cost":1}`, slow, r.Reservation+"x"), checkapi.ErrorTypeConflict, "not an id this limiter made"},
		{"another key's reservation", fmt.Sprintf(`{"key":"other","rules":[%s],"op":"cancel","reservation":%q}`, slowRule, r.Reservation), checkapi.ErrorTypeConflict, "not an id this limiter made"},
		{"requestId reused", slow + `,"cost":3,"requestId":"call-1"}`, checkapi.ErrorTypeConflict, "another request"},
		{"settle without a reservation", slow + `,"op":"settle","cost":1}`, checkapi.ErrorTypeInvalidRequest, "reservation: missing"},
		{"settle without a cost", fmt.Sprintf(`%s,"op":"settle","reservation":%q}`, slow, r.Reservation), checkapi.ErrorTypeInvalidRequest, "cost: missing"},
		{"settle of a negative cost", fmt.Sprintf(`%s,"op":"settle","reservation":%q,"cost":-1}`, slow, r.Reservation), checkapi.ErrorTypeInvalidRequest, "want the actual cost"},
		{"settle of an absurd cost", fmt.Sprintf(`%s,"op":"settle","reservation":%q,"cost":1e12}`, slow, r.Reservation), checkapi.ErrorTypeInvalidRequest, "want the actual cost"},
		{"ttl too long", slow + `,"op":"reserve","ttlMs":3600001}`, checkapi.ErrorTypeInvalidRequest, "ttlMs: got 3600001"},
		{"ttl of 0", slow + `,"op":"reserve","ttlMs":0}`, checkapi.ErrorTypeInvalidRequest, "ttlMs: got 0"},
		{"ttl with a check", slow + `,"ttlMs":1000}`, checkapi.ErrorTypeInvalidRequest, "ttlMs: only with op reserve"},
		{"requestId too long", slow + `,"requestId":"` + strings.Repeat("r", 129) + `"}`, checkapi.ErrorTypeInvalidRequest, "requestId: 129 bytes"},
		{"requestId with a peek", slow + `,"cost":0,"requestId":"p"}`, checkapi.ErrorTypeInvalidRequest, "requestId: not with a peek"},
		{"reservation with a check", slow + `,"reservation":"r1.x"}`, checkapi.ErrorTypeInvalidRequest, "reservation: only with op settle or cancel"},
	} {
		_, err := f.invoke([]byte(tt.payload))
		if fe := functionError(t, err); fe.Type != tt.errType || !strings.Contains(fe.Message, tt.want) {
			t.Errorf("%s: %+v, want %s mentioning %q", tt.name, fe, tt.errType, tt.want)
		}
	}
	if p := decodeResponse(t, f.invokeOK(t, []byte(slow+`,"cost":0}`))); p.Remaining != 5 {
		t.Fatalf("after the refused requests: %+v, want 5 left", p)
	}
}

// TestLeasesRealRedis: through the handler on a real server, a check with a concurrency
// rule answers a lease and its expiry, and is denied by that rule (its retry-after the
// earliest lease's expiry, no token taken) while every lease is in flight; a release
// returns the lease once ("released": true, then false) and clears the cached denial; a
// peek shows the rule's leases left; a forged lease is a ConflictError, and bad input an
// InvalidRequestError naming the field, each changing nothing.
func TestLeasesRealRedis(t *testing.T) {
	srv := redistest.Start(t)
	f := newFixture(t, redistest.Client(t, srv.Addr), nil, guard.Options{DenyCacheSize: 100})
	rules := `{"key":"stream","rules":[{"name":"streams","concurrency":1},` + slowRule + `]`
	a := decodeResponse(t, f.invokeOK(t, []byte(rules+`,"ttlMs":60000}`)))
	exp, err := time.Parse(time.RFC3339, a.ExpiresAt)
	if !a.Allowed || !strings.HasPrefix(a.Lease, "r3.") || a.Rule != "streams" || a.Remaining != 0 || err != nil || time.Until(exp) > time.Minute+time.Second {
		t.Fatalf("acquire = %+v (%v)", a, err)
	}
	for range 2 { // the second from the deny cache
		d := decodeResponse(t, f.invokeOK(t, []byte(rules+`}`)))
		if d.Allowed || d.Reason != checkapi.ReasonLimited || d.Rule != "streams" || d.Limit != 1 || d.Lease != "" || d.RetryAfterMS < 59000 {
			t.Fatalf("while the lease is held = %+v", d)
		}
	}
	p := decodeResponse(t, f.invokeOK(t, []byte(rules+`,"cost":0}`)))
	if len(p.Rules) != 2 || !p.Rules[0].Concurrency || p.Rules[0].Limit != 1 || p.Rules[0].Remaining != 0 || p.Rules[1].Remaining != 9 {
		t.Fatalf("peek = %+v; want no lease left, 9 tokens", p.Rules)
	}
	release := fmt.Sprintf(`%s,"op":"release","lease":%q}`, rules, a.Lease)
	for i, want := range []string{`"released":true`, `"released":false`} {
		if out := f.invokeOK(t, []byte(release)); !strings.Contains(string(out), want) {
			t.Fatalf("release %d = %s, want %s", i+1, out, want)
		}
	}
	if d := decodeResponse(t, f.invokeOK(t, []byte(rules+`}`))); !d.Allowed || d.Lease == "" {
		t.Fatalf("after the release = %+v; want a new lease, no cached denial", d)
	}
	for _, tt := range []struct{ name, payload, errType, want string }{
		{"forged lease", fmt.Sprintf(`%s,"op":"release","lease":%q}`, rules, a.Lease+"x"), checkapi.ErrorTypeConflict, "not an id this limiter made"},
		{"another key's lease", fmt.Sprintf(`{"key":"other","rules":[{"name":"streams","concurrency":1},%s],"op":"release","lease":%q}`, slowRule, a.Lease), checkapi.ErrorTypeConflict, "not an id this limiter made"},
		{"release without a lease", rules + `,"op":"release"}`, checkapi.ErrorTypeInvalidRequest, "lease: missing"},
		{"release with a cost", fmt.Sprintf(`%s,"op":"release","lease":%q,"cost":1}`, rules, a.Lease), checkapi.ErrorTypeInvalidRequest, "cost: not with op release"},
		{"release with a requestId", fmt.Sprintf(`%s,"op":"release","lease":%q,"requestId":"x"}`, rules, a.Lease), checkapi.ErrorTypeInvalidRequest, "requestId: not with a release"},
		{"release of no concurrency rule", fmt.Sprintf(`{"key":"stream","rules":[%s],"op":"release","lease":%q}`, slowRule, a.Lease), checkapi.ErrorTypeInvalidRequest, "rules: no concurrency rule: a release returns its lease"},
		{"lease with a check", fmt.Sprintf(`%s,"lease":%q}`, rules, a.Lease), checkapi.ErrorTypeInvalidRequest, "lease: only with op release"},
		{"concurrency 0", `{"key":"stream","rules":[{"name":"c","concurrency":0}]}`, checkapi.ErrorTypeInvalidRequest, "rules[0].concurrency: got 0, want a whole number of requests in flight from 1 to 10000"},
		{"concurrency of a fraction", `{"key":"stream","rules":[{"name":"c","concurrency":1.5}]}`, checkapi.ErrorTypeInvalidRequest, "rules[0].concurrency"},
		{"concurrency with a capacity", `{"key":"stream","rules":[{"name":"c","concurrency":2,"capacity":3}]}`, checkapi.ErrorTypeInvalidRequest, "rules[0].capacity: a concurrency rule's"},
		{"shadow concurrency", `{"key":"stream","rules":[{"name":"c","concurrency":2,"shadow":true}]}`, checkapi.ErrorTypeInvalidRequest, "rules[0].shadow: a concurrency rule's"},
		{"a concurrency rule and a bucket of one name", `{"key":"stream","rules":[{"name":"slow","concurrency":2},` + slowRule + `]}`, checkapi.ErrorTypeInvalidRequest, `rules[1]: name "slow": already the name of rules[0]`},
		{"ttl with a peek", rules + `,"cost":0,"ttlMs":1000}`, checkapi.ErrorTypeInvalidRequest, "ttlMs: only with op reserve"},
	} {
		_, err := f.invoke([]byte(tt.payload))
		if fe := functionError(t, err); fe.Type != tt.errType || !strings.Contains(fe.Message, tt.want) {
			t.Errorf("%s: %+v, want %s mentioning %q", tt.name, fe, tt.errType, tt.want)
		}
	}
	if p := decodeResponse(t, f.invokeOK(t, []byte(rules+`,"cost":0}`))); p.Rules[0].Remaining != 0 || p.Rules[1].Remaining != 8 {
		t.Fatalf("after the refused requests: %+v, want the lease still held, 8 tokens", p.Rules)
	}
}

// A peek names its binding rule as a check does: a concurrency rule when it has fewer
// leases left than the other rules have whole tokens, with the leases it may still give,
// and when it is the only enforced rule.
func TestPeekBindsOnLeases(t *testing.T) {
	srv := redistest.Start(t)
	f := newFixture(t, redistest.Client(t, srv.Addr), nil, guard.Options{})
	rules := `{"key":"stream","rules":[{"name":"streams","concurrency":2},` + slowRule + `]`
	f.invokeOK(t, []byte(rules+`}`))
	if p := decodeResponse(t, f.invokeOK(t, []byte(rules+`,"cost":0}`))); p.Rule != "streams" || p.Limit != 2 || p.Remaining != 1 {
		t.Errorf("peek with one lease of two held, 9 tokens = %+v; want rule streams, limit 2, 1 left", p)
	}
	alone := `{"key":"alone","rules":[{"name":"streams","concurrency":3}],"cost":0}`
	if p := decodeResponse(t, f.invokeOK(t, []byte(alone))); p.Rule != "streams" || p.Limit != 3 || p.Remaining != 3 {
		t.Errorf("peek of a concurrency rule alone = %+v; want rule streams, limit 3, 3 left", p)
	}
}

// TestSettleGivesBackInItsWindow: a settle below its estimate gives the difference back
// to a quota only in the window its reserve counted it in. A reserve at 23:59 settled
// after midnight must not lower the new day's count: a caller who spent the new day's
// whole quota meanwhile would be admitted the estimate again. A bucket beside it still
// gets its tokens back, and so does a quota in the reserve's own window.
func TestSettleGivesBackInItsWindow(t *testing.T) {
	const burst = `{"name":"burst","capacity":100,"refillPerSecond":0.00001}`
	for _, tt := range []struct {
		name          string
		quota         string
		reserve, then time.Time
		want          int64 // the quota's remaining after the reserve, a spend of what it held, and a cancel
	}{
		{"daily, across midnight", `{"name":"q","limit":10,"period":"day"}`,
			time.Date(2025, 3, 1, 23, 59, 0, 0, time.UTC), time.Date(2025, 3, 2, 0, 1, 0, 0, time.UTC), 0},
		{"daily, the same day", `{"name":"q","limit":10,"period":"day"}`,
			time.Date(2025, 3, 1, 22, 59, 0, 0, time.UTC), time.Date(2025, 3, 1, 23, 30, 0, 0, time.UTC), 8},
		{"weekly, across Monday", `{"name":"q","limit":10,"period":"week"}`,
			time.Date(2025, 3, 2, 23, 30, 0, 0, time.UTC), time.Date(2025, 3, 3, 0, 10, 0, 0, time.UTC), 0},
		{"monthly from the 15th, across it", `{"name":"q","limit":10,"period":"month","anchor":15}`,
			time.Date(2025, 3, 14, 23, 30, 0, 0, time.UTC), time.Date(2025, 3, 15, 0, 10, 0, 0, time.UTC), 0},
		{"monthly, across a day in it", `{"name":"q","limit":10,"period":"month"}`,
			time.Date(2025, 3, 14, 23, 30, 0, 0, time.UTC), time.Date(2025, 3, 15, 0, 10, 0, 0, time.UTC), 8},
	} {
		t.Run(tt.name, func(t *testing.T) {
			mr, client := startMiniredis(t)
			f := newFixture(t, client, nil, guard.Options{})
			rules := `{"key":"llm","rules":[` + burst + `,` + tt.quota + `]`
			mr.SetTime(tt.reserve)
			r := decodeResponse(t, f.invokeOK(t, []byte(rules+`,"op":"reserve","cost":8,"ttlMs":3600000}`)))
			mr.SetTime(tt.then)
			peek := decodeResponse(t, f.invokeOK(t, []byte(rules+`,"cost":0}`)))
			held := peek.Rules[1].Remaining
			if held > 0 {
				decodeResponse(t, f.invokeOK(t, []byte(fmt.Sprintf(`%s,"cost":%d}`, rules, held))))
			}
			c := decodeResponse(t, f.invokeOK(t, []byte(fmt.Sprintf(`%s,"op":"cancel","reservation":%q}`, rules, r.Reservation))))
			after := decodeResponse(t, f.invokeOK(t, []byte(rules+`,"cost":0}`)))
			if !c.Allowed || after.Rules[1].Remaining != tt.want || after.Rules[0].Remaining != 100-held {
				t.Fatalf("reserve %+v, cancel %+v: then %+v, want the quota at %d and the burst at %d", r, c, after.Rules, tt.want, 100-held)
			}
		})
	}
}

// TestSettleAfterResetGivesNothing: a reset refills every rule it names, what a
// reservation took from it included, so a settle below the estimate (or a cancel) of a
// reservation made before the reset gives that rule nothing back: reserved 8 of 10,
// reset, 10 spent and the 8 given back again would admit 18 where 10 were. A rule the
// reset did not name, or a reset before the reserve, gives back as before.
func TestSettleAfterResetGivesNothing(t *testing.T) {
	const (
		bucket = `{"name":"b","capacity":10,"refillPerSecond":0.001}`
		quota  = `{"name":"q","limit":10,"period":"day"}`
		cancel = `"op":"cancel"`
	)
	srv := redistest.Start(t)
	f := newFixture(t, redistest.Client(t, srv.Addr), nil, guard.Options{})
	for _, tt := range []struct {
		name, rules, reset string  // the reservation's rules, the reset's
		resetFirst         bool    // the reset comes before the reserve
		op                 string  // the cancel or the settle
		want               []int64 // each rule's remaining after the reserve of 8, the reset, a spend of what is left and the settle
	}{
		{"a bucket, cancelled", bucket, bucket, false, cancel, []int64{0}},
		{"a quota, cancelled", quota, quota, false, cancel, []int64{0}},
		{"a bucket and a quota, settled at 3", bucket + "," + quota, bucket + "," + quota, false, `"op":"settle","cost":3`, []int64{0, 0}},
		{"a bucket and a quota, the quota reset", bucket + "," + quota, quota, false, cancel, []int64{8, 8}},
		{"a rule the reset did not name", bucket, `{"name":"other","capacity":10,"refillPerSecond":0.001}`, false, cancel, []int64{8}},
		{"a reset before the reserve", bucket + "," + quota, bucket + "," + quota, true, cancel, []int64{8, 8}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			key := `{"key":"` + strings.ReplaceAll(tt.name, " ", "-") + `","rules":[`
			rules, reset := key+tt.rules+`]`, key+tt.reset+`],"op":"reset"}`
			if tt.resetFirst {
				f.invokeOK(t, []byte(reset))
				time.Sleep(2 * time.Millisecond) // a reset in the reserve's millisecond counts as after it
			}
			r := decodeResponse(t, f.invokeOK(t, []byte(rules+`,"op":"reserve","cost":8}`)))
			if !tt.resetFirst {
				f.invokeOK(t, []byte(reset))
			}
			if left := decodeResponse(t, f.invokeOK(t, []byte(rules+`,"cost":0}`))).Remaining; left > 0 {
				decodeResponse(t, f.invokeOK(t, []byte(fmt.Sprintf(`%s,"cost":%d}`, rules, left))))
			}
			s := decodeResponse(t, f.invokeOK(t, []byte(fmt.Sprintf(`%s,%s,"reservation":%q}`, rules, tt.op, r.Reservation))))
			after := decodeResponse(t, f.invokeOK(t, []byte(rules+`,"cost":0}`)))
			var left []int64
			for _, rule := range after.Rules {
				left = append(left, rule.Remaining)
			}
			if !s.Allowed || !slices.Equal(left, tt.want) {
				t.Fatalf("reserve %+v, %s %+v: then %v left, want %v", r, tt.op, s, left, tt.want)
			}
		})
	}
}

// TestReplayOfAReleasedLease: a requestId sent again after its lease was released
// answers the first admission, lease and expiresAt (still ahead) and all, while another
// request holds the one slot: the replay holds nothing, as docs/check.md says, and
// nothing tells it from a lease still held.
func TestReplayOfAReleasedLease(t *testing.T) {
	srv := redistest.Start(t)
	f := newFixture(t, redistest.Client(t, srv.Addr), nil, guard.Options{})
	rules := `{"key":"jobs","rules":[{"name":"workers","concurrency":1},` + slowRule + `]`
	first := decodeResponse(t, f.invokeOK(t, []byte(rules+`,"requestId":"job-1"}`)))
	f.invokeOK(t, fmt.Appendf(nil, `%s,"op":"release","lease":%q}`, rules, first.Lease))
	other := decodeResponse(t, f.invokeOK(t, []byte(rules+`,"requestId":"job-2"}`)))
	if !other.Allowed || other.Lease == "" {
		t.Fatalf("another job after the release = %+v, want the slot", other)
	}
	replay := decodeResponse(t, f.invokeOK(t, []byte(rules+`,"requestId":"job-1"}`)))
	expires, err := time.Parse(time.RFC3339, replay.ExpiresAt)
	if !replay.Allowed || !replay.Replayed || replay.Lease != first.Lease || err != nil || !expires.After(time.Now()) {
		t.Fatalf("the first job again = %+v (%v), want its admission replayed, its lease's expiry ahead", replay, err)
	}
	if p := decodeResponse(t, f.invokeOK(t, []byte(rules+`,"cost":0}`))); p.Rules[0].Remaining != 0 {
		t.Fatalf("peek = %+v: want the one slot held, by the other job alone", p.Rules)
	}
}
