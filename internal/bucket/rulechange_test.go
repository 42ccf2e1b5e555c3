package bucket_test

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/redis/rueidis"

	"github.com/bucketgate/bucketgate"
	"github.com/bucketgate/bucketgate/internal/bucket"
	"github.com/bucketgate/bucketgate/internal/lua"
)

// TestSettleAfterTheRulesChanged: a settle (or a cancel) made after the plan's rules
// changed (a shadow rule added to try a limit, a rule removed, one's capacity edited)
// gives back to (or takes from) exactly the rules its reserve took from that the
// request still has, by name and kind: a rule added since gets nothing back and gives
// nothing more, one removed since keeps what the reserve took, one of another kind now
// is another rule; a settle that shares no rule with its reserve is refused, nothing
// written.
func TestSettleAfterTheRulesChanged(t *testing.T) {
	l, c := real(t)
	ctx := context.Background()
	slow := func(name string, capacity int64) bucketgate.Rule {
		return bucketgate.Rule{Name: name, Capacity: capacity, RefillPerSecond: 0.001}
	}
	a, b := slow("a", 100), slow("b", 100)
	trial := slow("trial", 100)
	trial.Shadow = true
	tight := slow("tight", 5) // shadow, and 5 tokens: a reserve of 40 is a shadow denial of it
	tight.Shadow = true
	enforced := func(r bucketgate.Rule) bucketgate.Rule { r.Shadow = false; return r }
	monthly := bucketgate.Rule{Name: "monthly", Limit: 100, Period: bucketgate.PeriodMonth}
	streams := bucketgate.Rule{Name: "streams", Concurrency: 3}
	tests := []struct {
		name           string
		reserved, now  []bucketgate.Rule
		op             bucketgate.Op
		actual         int64
		want           map[string]int64 // each rule's tokens (or a quota's left) after the settle, by a peek of both sets
		wantConflicted bool
	}{
		{"a shadow rule added, settled below", []bucketgate.Rule{a}, []bucketgate.Rule{a, trial}, bucketgate.OpSettle, 10, map[string]int64{"a": 90, "trial": 100}, false},
		{"a shadow rule added, settled above", []bucketgate.Rule{a}, []bucketgate.Rule{trial, a}, bucketgate.OpSettle, 50, map[string]int64{"a": 50, "trial": 100}, false},
		{"a shadow rule added, cancelled", []bucketgate.Rule{a}, []bucketgate.Rule{a, trial}, bucketgate.OpCancel, 0, map[string]int64{"a": 100, "trial": 100}, false},
		{"a quota added", []bucketgate.Rule{a}, []bucketgate.Rule{a, monthly}, bucketgate.OpSettle, 50, map[string]int64{"a": 50, "monthly": 100}, false},
		{"a rule removed", []bucketgate.Rule{a, b}, []bucketgate.Rule{a}, bucketgate.OpSettle, 10, map[string]int64{"a": 90, "b": 60}, false},
		{"a rule's capacity edited", []bucketgate.Rule{a, b}, []bucketgate.Rule{slow("a", 200), b}, bucketgate.OpSettle, 10, map[string]int64{"a": 90, "b": 90}, false},
		{"a rule made a quota", []bucketgate.Rule{a, b}, []bucketgate.Rule{{Name: "a", Limit: 100, Period: bucketgate.PeriodMonth}, b}, bucketgate.OpCancel, 0, map[string]int64{"a": 60, "b": 100}, false},
		{"a shadow denial kept, a rule added", []bucketgate.Rule{tight, a}, []bucketgate.Rule{a, tight, trial}, bucketgate.OpSettle, 10, map[string]int64{"a": 90, "tight": 5, "trial": 100}, false},
		{"a shadow denial since enforced, settled above", []bucketgate.Rule{tight, a}, []bucketgate.Rule{enforced(tight), a}, bucketgate.OpSettle, 50, map[string]int64{"a": 50, "tight": 5}, false},
		{"a concurrency rule added", []bucketgate.Rule{a}, []bucketgate.Rule{streams, a}, bucketgate.OpSettle, 10, map[string]int64{"a": 90, "streams": 3}, false},
		{"no rule shared", []bucketgate.Rule{a, b}, []bucketgate.Rule{trial, monthly}, bucketgate.OpCancel, 0, map[string]int64{"a": 60, "b": 60, "trial": 100, "monthly": 100}, true},
		{"a rule's name shared, not its kind", []bucketgate.Rule{a}, []bucketgate.Rule{{Name: "a", Limit: 100, Period: bucketgate.PeriodMonth}}, bucketgate.OpCancel, 0, map[string]int64{"a": 60}, true},
	}
	for i, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			id := fmt.Sprintf("changed-%d", i)
			r, err := l.Decide(ctx, bucketgate.Request{Identity: id, Rules: tc.reserved, Op: bucketgate.OpReserve, Cost: 40})
			if err != nil || !r.Allowed || r.Reservation == "" {
				t.Fatalf("reserve 40 = %+v, %v", r, err)
			}
			before := written(t, c, id)
			_, err = l.Decide(ctx, bucketgate.Request{Identity: id, Rules: tc.now, Op: tc.op, Cost: tc.actual, ID: r.Reservation})
			switch {
			case tc.wantConflicted && (!errors.Is(err, bucketgate.ErrConflict) || !strings.Contains(err.Error(), "not an id this limiter made")):
				t.Fatalf("the %v: %v, want ErrConflict", tc.op, err)
			case tc.wantConflicted && !reflect.DeepEqual(written(t, c, id), before):
				t.Fatalf("a refused %v wrote: %v, then %v", tc.op, before, written(t, c, id))
			case !tc.wantConflicted && err != nil:
				t.Fatalf("the %v: %v", tc.op, err)
			}
			got := map[string]int64{}
			for _, rules := range [][]bucketgate.Rule{tc.reserved, tc.now} {
				d, err := l.Decide(ctx, bucketgate.Request{Identity: id, Rules: rules})
				if err != nil {
					t.Fatal(err)
				}
				for j, rule := range rules {
					if _, seen := got[rule.Name]; !seen {
						got[rule.Name] = d.Rules[j].Remaining
					}
				}
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("after the %v: %v, want %v", tc.op, got, tc.want)
			}
		})
	}
}

// TestReleaseAfterTheRulesChanged: a lease acquired before a rule was added to its
// request's plan (a shadow rule, a concurrency rule) or removed from it is released
// under the rules of now; one of rules it shares none of is refused, the lease kept.
func TestReleaseAfterTheRulesChanged(t *testing.T) {
	l, c := real(t)
	ctx := context.Background()
	streams := bucketgate.Rule{Name: "streams", Concurrency: 1}
	tokens := bucketgate.Rule{Name: "tokens", Capacity: 10, RefillPerSecond: 0.001}
	trial := bucketgate.Rule{Name: "trial", Capacity: 10, RefillPerSecond: 0.001, Shadow: true}
	for i, tc := range []struct {
		name           string
		acquired, now  []bucketgate.Rule
		wantConflicted bool
	}{
		{"a shadow rule added", []bucketgate.Rule{streams, tokens}, []bucketgate.Rule{streams, tokens, trial}, false},
		{"a concurrency rule added", []bucketgate.Rule{streams}, []bucketgate.Rule{streams, {Name: "more", Concurrency: 5}}, false},
		{"a bucket removed", []bucketgate.Rule{tokens, streams}, []bucketgate.Rule{streams}, false},
		{"no rule shared", []bucketgate.Rule{streams, tokens}, []bucketgate.Rule{{Name: "other", Concurrency: 1}}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			id := fmt.Sprintf("released-%d", i)
			d, err := l.Decide(ctx, bucketgate.Request{Identity: id, Rules: tc.acquired, Cost: 1})
			if err != nil || !d.Allowed || d.Lease == "" {
				t.Fatalf("acquire = %+v, %v", d, err)
			}
			before := written(t, c, id)
			rel, err := l.Decide(ctx, bucketgate.Request{Identity: id, Rules: tc.now, Op: bucketgate.OpRelease, ID: d.Lease})
			switch {
			case tc.wantConflicted && !errors.Is(err, bucketgate.ErrConflict):
				t.Fatalf("release = %+v, %v; want ErrConflict", rel, err)
			case tc.wantConflicted && !reflect.DeepEqual(written(t, c, id), before):
				t.Fatalf("a refused release wrote: %v, then %v", before, written(t, c, id))
			case !tc.wantConflicted && (err != nil || !rel.Released):
				t.Fatalf("release = %+v, %v; want the lease released", rel, err)
			}
			again, err := l.Decide(ctx, bucketgate.Request{Identity: id, Rules: tc.acquired, Cost: 1})
			if err != nil || again.Allowed == tc.wantConflicted {
				t.Fatalf("acquire again = %+v, %v; want allowed %v", again, err, !tc.wantConflicted)
			}
		})
	}
}

// TestIDsOfTheVersionBefore: an id made before ids printed their rules ("r2.", in
// flight across the upgrade) settles, cancels and releases as it did, under its
// reserve's very rules alone; a settle of an id of the current version whose print of a
// rule, number of rules, identity or MAC was altered is refused, nothing written.
func TestIDsOfTheVersionBefore(t *testing.T) {
	_, c := real(t)
	secret := []byte("the upgrade secret, 32 bytes ...")
	l := bucket.New(c, bucket.Secret(secret))
	ctx := context.Background()
	tokens := bucketgate.Rule{Name: "tokens", Capacity: 100, RefillPerSecond: 0.001}
	tight := bucketgate.Rule{Name: "tight", Capacity: 5, RefillPerSecond: 0.001, Shadow: true}
	streams := bucketgate.Rule{Name: "streams", Concurrency: 1}
	rules := []bucketgate.Rule{streams, tight, tokens}
	reserve := func(id string) bucketgate.Decision {
		t.Helper()
		r, err := l.Decide(ctx, bucketgate.Request{Identity: id, Rules: rules, Op: bucketgate.OpReserve, Cost: 40})
		if err != nil || !r.Allowed || r.Reservation == "" || r.Lease == "" || !strings.HasPrefix(r.Reservation, "r3.") || r.ShadowLimited != 1<<1 {
			t.Fatalf("reserve 40 = %+v, %v; want an r3 id, a shadow denial of tight", r, err)
		}
		return r
	}
	left := func(id string) []int64 {
		t.Helper()
		d, err := l.Decide(ctx, bucketgate.Request{Identity: id, Rules: rules})
		if err != nil {
			t.Fatal(err)
		}
		return []int64{d.Rules[0].Remaining, d.Rules[1].Remaining, d.Rules[2].Remaining}
	}

	r := reserve("v2")
	old, oldLease := bucket.AsV2(secret, r.Reservation, false, "v2", rules), bucket.AsV2(secret, r.Lease, true, "v2", rules)
	if !strings.HasPrefix(old, "r2.") {
		t.Fatalf("AsV2 = %q", old)
	}
	if _, err := l.Decide(ctx, bucketgate.Request{Identity: "v2", Rules: rules[1:], Op: bucketgate.OpSettle, Cost: 10, ID: old}); !errors.Is(err, bucketgate.ErrConflict) {
		t.Fatalf("an r2 id settled under other rules: %v, want ErrConflict as before", err)
	}
	if s, err := l.Decide(ctx, bucketgate.Request{Identity: "v2", Rules: rules, Op: bucketgate.OpSettle, Cost: 10, ID: old}); err != nil || s.Settled != 10 {
		t.Fatalf("settle of an r2 id = %+v, %v", s, err)
	}
	if rel, err := l.Decide(ctx, bucketgate.Request{Identity: "v2", Rules: rules, Op: bucketgate.OpRelease, ID: oldLease}); err != nil || !rel.Released {
		t.Fatalf("release of an r2 lease = %+v, %v", rel, err)
	}
	if got := left("v2"); !reflect.DeepEqual(got, []int64{1, 5, 90}) {
		t.Fatalf("after the r2 settle and release: %v, want the lease back, tight untouched, 30 tokens back", got)
	}

	r = reserve("v3")
	payload := strings.Split(r.Reservation, ".")[1]
	p, err := base64.RawURLEncoding.DecodeString(payload)
	if err != nil || len(p) != 32+1+3*4 || p[32] != 3 {
		t.Fatalf("payload %x (%v): want 32 bytes, 3 and 3 prints", p, err)
	}
	edited := func(edit func(p []byte) []byte) string {
		q := edit(append([]byte(nil), p...))
		return strings.Replace(r.Reservation, payload, base64.RawURLEncoding.EncodeToString(q), 1)
	}
	before := written(t, c, "v3")
	for name, tc := range map[string]struct{ id, identity string }{
		"a byte of the MAC flipped":   {forge(r.Reservation), "v3"},
		"a byte of the nonce flipped": {edited(func(p []byte) []byte { p[0] ^= 1; return p }), "v3"},
		"a print edited":              {edited(func(p []byte) []byte { p[33] ^= 1; return p }), "v3"},
		"a print cut":                 {edited(func(p []byte) []byte { p[32] = 2; return append(p[:37], p[41:]...) }), "v3"},
		"the skip edited":             {edited(func(p []byte) []byte { p[16] = 0; return p }), "v3"},
		"of another identity":         {r.Reservation, "v2"},
		"a lease's":                   {r.Lease, "v3"},
	} {
		_, err := l.Decide(ctx, bucketgate.Request{Identity: tc.identity, Rules: rules, Op: bucketgate.OpCancel, ID: tc.id})
		if !errors.Is(err, bucketgate.ErrConflict) {
			t.Errorf("%s: %v, want ErrConflict", name, err)
		}
	}
	if after := written(t, c, "v3"); !reflect.DeepEqual(after, before) {
		t.Fatalf("the refused cancels wrote: %v, then %v", before, after)
	}
}

// written is every key of identity's slot and its content (a hash's fields, a sorted
// set's members): what a refused settle or release must leave as it was.
func written(t *testing.T, c rueidis.Client, identity string) map[string]string {
	t.Helper()
	keys, err := c.Do(context.Background(), c.B().Keys().Pattern(bucket.Key(identity)+"*").Build()).AsStrSlice()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, k := range keys {
		typ, err := c.Do(context.Background(), c.B().Type().Key(k).Build()).ToString()
		if err != nil {
			t.Fatal(err)
		}
		var v any
		switch typ {
		case "hash":
			v, err = c.Do(context.Background(), c.B().Hgetall().Key(k).Build()).AsStrMap()
		case "zset":
			v, err = c.Do(context.Background(), c.B().Zrange().Key(k).Min("0").Max("-1").Withscores().Build()).AsZScores()
		default:
			v, err = c.Do(context.Background(), c.B().Get().Key(k).Build()).ToString()
		}
		if err != nil {
			t.Fatal(err)
		}
		out[k] = fmt.Sprint(v)
	}
	return out
}

// TestSettleAgainAfterTheRulesChanged: a settle retried after the plan's rules changed
// since its first settle (a shadow rule added ahead of the binding one, the binding rule
// removed, made shadow, made a quota, its capacity cut) answers the first outcome, before
// its reservation's expiry and past it: the binding rule of the first settle by its name,
// none when the request no longer has it (a rule is its name and kind), nothing written.
func TestSettleAgainAfterTheRulesChanged(t *testing.T) {
	l, c := real(t)
	ctx := context.Background()
	slow := func(name string, capacity int64) bucketgate.Rule {
		return bucketgate.Rule{Name: name, Capacity: capacity, RefillPerSecond: 0.001}
	}
	shadow := func(r bucketgate.Rule) bucketgate.Rule { r.Shadow = true; return r }
	a, b := slow("a", 100), slow("b", 50)
	// Reserved 40 and settled at 30 under [a b]: a holds 70, b 20, b binds.
	tests := []struct {
		name          string
		now           []bucketgate.Rule
		pastExpiry    bool
		rule          string // the binding rule answered again
		limit, remain int64
	}{
		{"unchanged", []bucketgate.Rule{a, b}, false, "b", 50, 20},
		{"a shadow rule added ahead", []bucketgate.Rule{shadow(slow("trial", 10)), a, b}, false, "b", 50, 20},
		{"a shadow rule added ahead, past the expiry", []bucketgate.Rule{shadow(slow("trial", 10)), a, b}, true, "b", 50, 20},
		{"a bucket added ahead", []bucketgate.Rule{slow("more", 100), a, b}, false, "b", 50, 20},
		{"the rules reordered", []bucketgate.Rule{b, a}, false, "b", 50, 20},
		{"the binding rule made shadow", []bucketgate.Rule{a, shadow(b)}, false, "b", 50, 20},
		{"the binding rule's capacity cut", []bucketgate.Rule{a, slow("b", 10)}, false, "b", 10, 10},
		{"the binding rule removed", []bucketgate.Rule{a}, false, "", 0, 0},
		{"the binding rule removed, past the expiry", []bucketgate.Rule{a}, true, "", 0, 0},
		{"the binding rule made a quota", []bucketgate.Rule{a, {Name: "b", Limit: 50, Period: bucketgate.PeriodDay}}, false, "", 0, 0},
	}
	for i, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			id := fmt.Sprintf("again-%d", i)
			ttl := time.Minute
			if tc.pastExpiry {
				ttl = 200 * time.Millisecond
			}
			r, err := l.Decide(ctx, bucketgate.Request{Identity: id, Rules: []bucketgate.Rule{a, b}, Op: bucketgate.OpReserve, Cost: 40, TTL: ttl})
			if err != nil || !r.Allowed {
				t.Fatalf("reserve 40 = %+v, %v", r, err)
			}
			first, err := l.Decide(ctx, bucketgate.Request{Identity: id, Rules: []bucketgate.Rule{a, b}, Op: bucketgate.OpSettle, Cost: 30, ID: r.Reservation})
			if err != nil || first.Rule != "b" || first.Remaining != 20 || first.Settled != 30 {
				t.Fatalf("settle at 30 = %+v, %v; want b binding, 20 left", first, err)
			}
			if tc.pastExpiry {
				time.Sleep(time.Until(r.Expires.Add(20 * time.Millisecond)))
			}
			before := written(t, c, id)
			again, err := l.Decide(ctx, bucketgate.Request{Identity: id, Rules: tc.now, Op: bucketgate.OpSettle, Cost: 30, ID: r.Reservation})
			if err != nil {
				t.Fatalf("settled again: %v, want the first outcome", err)
			}
			want := first
			want.Replayed, want.Rule, want.Limit, want.Remaining = true, tc.rule, tc.limit, tc.remain
			if !reflect.DeepEqual(again, want) {
				t.Errorf("settled again = %+v, want %+v", again, want)
			}
			if after := written(t, c, id); !reflect.DeepEqual(after, before) {
				t.Errorf("a settle answered again wrote: %v, then %v", before, after)
			}
		})
	}
}

// TestReplayAfterTheRulesChanged: a check or a reserve sent again under its requestId
// after the plan's rules changed answers its first decision, nothing written, when the
// request keeps its rules' names, kinds and order (a shadow rule promoted, an enforced
// one made shadow, a capacity cut): its binding rule, its shadow denials and its wait
// are the first decision's; a rule added, removed or moved makes it another request,
// refused as one.
func TestReplayAfterTheRulesChanged(t *testing.T) {
	l, c := real(t)
	ctx := context.Background()
	slow := func(name string, capacity int64) bucketgate.Rule {
		return bucketgate.Rule{Name: name, Capacity: capacity, RefillPerSecond: 0.001}
	}
	shadow := func(r bucketgate.Rule) bucketgate.Rule { r.Shadow = true; return r }
	a, b, tight := slow("a", 100), slow("b", 50), slow("tight", 30) // tight holds 10: drained first
	tests := []struct {
		name          string
		first, now    []bucketgate.Rule
		wantConflict  bool
		limit, remain int64 // the replay's figures of the first binding rule
	}{
		{"a shadow rule promoted", []bucketgate.Rule{a, shadow(tight)}, []bucketgate.Rule{a, tight}, false, 100, 80},
		{"the binding rule made shadow", []bucketgate.Rule{a, b}, []bucketgate.Rule{a, shadow(b)}, false, 50, 30},
		{"every rule made shadow", []bucketgate.Rule{a, b}, []bucketgate.Rule{shadow(a), shadow(b)}, false, 50, 30},
		{"a denial, its rule made shadow", []bucketgate.Rule{a, tight}, []bucketgate.Rule{a, shadow(tight)}, false, 30, 10},
		{"the binding rule's capacity cut", []bucketgate.Rule{a, b}, []bucketgate.Rule{a, slow("b", 25)}, false, 25, 25},
		{"a rule added", []bucketgate.Rule{a}, []bucketgate.Rule{a, shadow(tight)}, true, 0, 0},
		{"a rule removed", []bucketgate.Rule{a, b}, []bucketgate.Rule{a}, true, 0, 0},
		{"the rules reordered", []bucketgate.Rule{a, b}, []bucketgate.Rule{b, a}, true, 0, 0},
	}
	for i, tc := range tests {
		for _, op := range []bucketgate.Op{bucketgate.OpCheck, bucketgate.OpReserve} {
			t.Run(tc.name+", "+op.String(), func(t *testing.T) {
				id := fmt.Sprintf("replayed-%d-%v", i, op)
				if _, err := l.Decide(ctx, bucketgate.Request{Identity: id, Rules: []bucketgate.Rule{tight}, Cost: 20}); err != nil {
					t.Fatal(err)
				}
				q := bucketgate.Request{Identity: id, Rules: tc.first, Op: op, Cost: 20, RequestID: "req"}
				first, err := l.Decide(ctx, q)
				if err != nil {
					t.Fatalf("first = %v", err)
				}
				before := written(t, c, id)
				q.Rules = tc.now
				again, err := l.Decide(ctx, q)
				switch {
				case tc.wantConflict && (!errors.Is(err, bucketgate.ErrConflict) || !strings.Contains(err.Error(), "requestId was used first for another request (operation, cost, ttl or rules)")):
					t.Fatalf("sent again under other rules: %+v, %v; want ErrConflict naming another request", again, err)
				case tc.wantConflict:
				case err != nil:
					t.Fatalf("sent again: %v, want the first decision %+v", err, first)
				default:
					want := first
					want.Replayed, want.Limit, want.Remaining, want.Crossings = true, tc.limit, tc.remain, nil // a replay crosses nothing
					if want.Shortfall.Rule != "" {
						t.Fatalf("the test's own assumption: no shortfall, no reservation compared: %+v", first)
					}
					if again.Reservation == "" != (first.Reservation == "") {
						t.Errorf("sent again: reservation %q, first %q", again.Reservation, first.Reservation)
					}
					again.Reservation, want.Reservation = "", ""
					if !reflect.DeepEqual(again, want) {
						t.Errorf("sent again = %+v\nwant %+v", again, want)
					}
				}
				if after := written(t, c, id); !reflect.DeepEqual(after, before) {
					t.Errorf("sent again, it wrote: %v, then %v", before, after)
				}
			})
		}
	}
}

// TestSettledRecords: a settled reservation's record, which a settle answered again
// reads, keeps its binding rule's field; one written by an earlier build (no field)
// keeps its binding rule's index when the request has that many rules, else answers
// none; one that is not bucketgate's fails the settle as bad state, nothing written.
func TestSettledRecords(t *testing.T) {
	l, c := real(t)
	ctx := context.Background()
	a := bucketgate.Rule{Name: "a", Capacity: 100, RefillPerSecond: 0.001}
	b := bucketgate.Rule{Name: "b", Capacity: 50, RefillPerSecond: 0.001}
	r, err := l.Decide(ctx, bucketgate.Request{Identity: "records", Rules: []bucketgate.Rule{a, b}, Op: bucketgate.OpReserve, Cost: 40})
	if err != nil || !r.Allowed {
		t.Fatalf("reserve 40 = %+v, %v", r, err)
	}
	settle := func(rules []bucketgate.Rule) (bucketgate.Decision, error) {
		return l.Decide(ctx, bucketgate.Request{Identity: "records", Rules: rules, Op: bucketgate.OpSettle, Cost: 30, ID: r.Reservation})
	}
	first, err := settle([]bucketgate.Rule{a, b})
	if err != nil || first.Rule != "b" {
		t.Fatalf("settle = %+v, %v", first, err)
	}
	p, err := base64.RawURLEncoding.DecodeString(strings.Split(r.Reservation, ".")[1])
	if err != nil {
		t.Fatal(err)
	}
	record := bucket.Key("records") + lua.SettledInfix + base64.RawURLEncoding.EncodeToString(p[:16])
	stored, err := c.Do(ctx, c.B().Get().Key(record).Build()).ToString()
	if err != nil || !strings.HasSuffix(stored, " b:tokens") {
		t.Fatalf("the record %q (%v): want the binding rule's field last", stored, err)
	}
	earlier := strings.TrimSuffix(stored, " b:tokens")
	for _, tc := range []struct {
		name, record string
		rules        []bucketgate.Rule
		rule         string // "" for none; "bad" for an error
	}{
		{"its field", stored, []bucketgate.Rule{b, a}, "b"},
		{"a field of no rule of the request", earlier + " c:tokens", []bucketgate.Rule{a, b}, ""},
		{"an earlier build's, its index in range", earlier, []bucketgate.Rule{b, a}, "a"},
		{"an earlier build's, its index out of range", earlier, []bucketgate.Rule{a}, ""},
		{"not bucketgate's", "settled", []bucketgate.Rule{a, b}, "bad"},
		{"a field and more", stored + " more", []bucketgate.Rule{a, b}, "bad"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := c.Do(ctx, c.B().Set().Key(record).Value(tc.record).Build()).Error(); err != nil {
				t.Fatal(err)
			}
			before := written(t, c, "records")
			d, err := settle(tc.rules)
			switch {
			case tc.rule == "bad" && (!errors.Is(err, bucket.ErrBadState) || !strings.Contains(err.Error(), "settled record")):
				t.Fatalf("settled again = %+v, %v; want ErrBadState naming the record", d, err)
			case tc.rule != "bad" && (err != nil || !d.Replayed || d.Rule != tc.rule || tc.rule == "" && (d.Limit != 0 || d.Remaining != 0)):
				t.Fatalf("settled again = %+v, %v; want rule %q", d, err, tc.rule)
			}
			if after := written(t, c, "records"); !reflect.DeepEqual(after, before) {
				t.Fatalf("it wrote: %v, then %v", before, after)
			}
		})
	}
}
