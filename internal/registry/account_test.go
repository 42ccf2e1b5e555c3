package registry_test

import (
	"bytes"
	"context"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/bucketgate/bucketgate"
	"github.com/bucketgate/bucketgate/internal/registry"
	"github.com/bucketgate/bucketgate/internal/telemetry"
	"github.com/bucketgate/bucketgate/internal/testkit/registrytest"
)

// Two keys of the account acme and a key of no account, as the tests below use them.
var (
	memberA = "key:" + bucketgate.KeyDigest("member a")
	memberB = "key:" + bucketgate.KeyDigest("member b")
	acme    = registry.Record{ID: "account:acme", Plan: "pro", Owner: "Acme Corp"}
	acmeID  = bucketgate.AccountPrefix + "acme"
)

// accountSource holds acme, its two keys (memberB with a rule of its own) and records.
func accountSource(records ...registry.Record) *registrytest.Source {
	own := []bucketgate.Rule{{Name: "burst", Capacity: 5, RefillPerSecond: 1}}
	return registrytest.New(append([]registry.Record{acme,
		{ID: memberA, Account: "acme", Owner: "a's own owner"},
		{ID: memberB, Account: "acme", Rules: own}}, records...)...)
}

// rulesOf returns e's rules as name:capacity, space separated.
func rulesOf(e registry.Entry) string {
	if e.Plan == nil {
		return ""
	}
	var out []string
	for _, r := range e.Plan.Rules {
		out = append(out, r.Name+":"+strconv.FormatInt(r.Capacity, 10))
	}
	return strings.Join(out, " ")
}

// Every key of an account is decided as the account: its identity, its plan, its owner;
// a key's own rules are added under the key's names. The account is read once per
// period for all its keys, and a hit makes nothing again.
func TestCacheKeysOfAnAccount(t *testing.T) {
	src := accountSource()
	c, _ := newCache(t, src, registry.Options{})
	ctx := context.Background()
	a, err := c.Lookup(ctx, plans, memberA)
	if err != nil {
		t.Fatal(err)
	}
	wantID := bucketgate.Identity{Kind: bucketgate.KindAccount, Value: "acme"}
	if rulesOf(a) != "burst:100" || a.Plan.Name != "pro" || a.Identity != wantID || a.Account != "acme" || a.Owner != "Acme Corp" ||
		a.Result != registry.ResultMiss || a.AccountResult != registry.ResultMiss || a.Invalid || src.Reads() != 2 {
		t.Fatalf("the first key: %+v (%s) after %d reads; want acme's pro, two reads", a, rulesOf(a), src.Reads())
	}
	b, err := c.Lookup(ctx, plans, memberB)
	digest := strings.TrimPrefix(memberB, bucketgate.KeyPrefix)
	if err != nil || rulesOf(b) != "burst:100 "+digest+"/burst:5" || b.Identity != wantID || b.AccountResult != registry.ResultHit || src.Reads() != 3 {
		t.Fatalf("the second key: %+v (%s), %v after %d reads; want acme's plan and its own rule, one more read", b, rulesOf(b), err, src.Reads())
	}
	again, _ := c.Lookup(ctx, plans, memberB)
	if again.Plan != b.Plan || again.Result != registry.ResultHit || again.AccountResult != registry.ResultHit || src.Reads() != 3 {
		t.Fatalf("a hit: %+v, %d reads; want the same plan, no read", again, src.Reads())
	}
	acct, _ := c.Lookup(ctx, plans, acmeID)
	if rulesOf(acct) != "burst:100" || acct.Identity != wantID || acct.Account != "acme" || acct.Result != registry.ResultHit || acct.AccountResult != "" {
		t.Fatalf("the account itself: %+v; want its plan from the cache", acct)
	}
	lone, _ := c.Lookup(ctx, plans, "key:"+bucketgate.KeyDigest("none"))
	if lone.Identity != (bucketgate.Identity{}) || lone.Account != "" || lone.AccountResult != "" {
		t.Fatalf("a key nobody registered: %+v", lone)
	}
}

// A revoked or expired account makes every key of it unknown within the period (an
// expiry at its second), without a log line: that is no invalid item. So is a revoked or
// expired key of an account (the old key of a roll). Each still names the account whose
// buckets it spent, for the operator's path (its usage); a revoked key of an account the
// table does not hold is unknown, no invalid item.
func TestCacheAccountRevokedOrExpired(t *testing.T) {
	rolled, revokedKey, orphan := "key:"+bucketgate.KeyDigest("rolled"), "key:"+bucketgate.KeyDigest("revoked"), "key:"+bucketgate.KeyDigest("orphan")
	src := accountSource(registry.Record{ID: rolled, Account: "acme", ExpiresAt: time.Unix(1, 0)},
		registry.Record{ID: revokedKey, Account: "acme", Status: registry.StatusRevoked},
		registry.Record{ID: orphan, Account: "gone", Status: registry.StatusRevoked})
	var logs bytes.Buffer
	c, clk := newCache(t, src, registry.Options{Log: telemetry.NewLogger(&logs, nil)})
	lookup(t, c, memberA)
	for _, id := range []string{rolled, revokedKey, orphan} {
		e, err := c.Lookup(context.Background(), plans, id)
		want := bucketgate.Identity{Kind: bucketgate.KindAccount, Value: "acme"}
		if id == orphan {
			want = bucketgate.Identity{}
		}
		if err != nil || e.Plan != nil || e.Invalid || e.AccountInvalid || e.Identity != want {
			t.Fatalf("%s, a key of acme revoked or expired: %+v, %v; want unknown, spending %q", id, e, err, want)
		}
	}
	revoked := acme
	revoked.Status = registry.StatusRevoked
	src.Put(revoked)
	clk.advance(ttl)
	for _, id := range []string{memberA, memberB} {
		e, err := c.Lookup(context.Background(), plans, id)
		if err != nil || e.Plan != nil || e.Invalid || e.AccountInvalid || e.Identity.String() != acmeID {
			t.Fatalf("%s of the revoked account: %+v, %v; want unknown, spending the account's buckets", id, e, err)
		}
	}
	if e, _ := c.Lookup(context.Background(), plans, acmeID); e.Plan != nil || e.Identity.String() != acmeID {
		t.Fatalf("the revoked account: %+v; want no plan, its identity still", e)
	}
	expiring := acme
	expiring.ExpiresAt = clk.now().Add(ttl + 10*time.Second)
	src.Put(expiring)
	clk.advance(ttl)
	if plan, _ := lookup(t, c, memberA); plan != "pro" {
		t.Fatalf("before the account's expiry: %q, want pro", plan)
	}
	clk.advance(10 * time.Second)
	if plan, result := lookup(t, c, memberA); plan != "" || result != registry.ResultHit {
		t.Fatalf("at the account's expiry, inside the period: %q %s, want none from the cache", plan, result)
	}
	if logs.Len() > 0 {
		t.Errorf("logged:\n%s", &logs)
	}
}

// A key naming an account the table does not hold, or with own rules the account's
// plan cannot take, is an invalid item: unknown, logged at error naming the key and the
// attribute, once per read. A key of an account whose item is invalid is unknown; the
// account's item is the one logged.
func TestCacheAccountInvalid(t *testing.T) {
	nine := make([]bucketgate.Rule, 8)
	for i := range nine {
		nine[i] = bucketgate.Rule{Name: "r" + strconv.Itoa(i), Capacity: 10, RefillPerSecond: 1}
	}
	orphan := "key:" + bucketgate.KeyDigest("orphan")
	crowded := "key:" + bucketgate.KeyDigest("crowded")
	src := accountSource(registry.Record{ID: orphan, Account: "gone"}, registry.Record{ID: crowded, Account: "acme", Rules: nine},
		registry.Record{ID: "key:" + bucketgate.KeyDigest("of broken"), Account: "broken"})
	src.PutInvalid("account:broken", &registry.RecordError{ID: "account:broken", Attribute: "plan", Err: errors.New("empty")})
	var logs bytes.Buffer
	c, clk := newCache(t, src, registry.Options{Log: telemetry.NewLogger(&logs, nil)})
	ctx := context.Background()
	for _, tc := range []struct {
		id, attribute, want string
	}{
		{orphan, "account", "account gone is not in the registry"},
		{crowded, "rules", "with plan pro of account acme: rules: plans.pro: 9 rules: want at most 8"},
	} {
		logs.Reset()
		e, err := c.Lookup(ctx, plans, tc.id)
		if err != nil || e.Plan != nil || !e.Invalid {
			t.Fatalf("%s: %+v, %v; want invalid", tc.id, e, err)
		}
		line := logs.String()
		if !strings.Contains(line, registry.MsgInvalidItem) || !strings.Contains(line, `"item":"`+tc.id) ||
			!strings.Contains(line, `"attribute":"`+tc.attribute+`"`) || !strings.Contains(line, tc.want) {
			t.Fatalf("%s: logged %s; want the item, attribute %s and %q", tc.id, line, tc.attribute, tc.want)
		}
		logs.Reset()
		if e, _ := c.Lookup(ctx, plans, tc.id); e.Plan != nil || e.Invalid || logs.Len() > 0 {
			t.Fatalf("%s again within the period: %+v, logged %q; want unknown, no line", tc.id, e, &logs)
		}
	}
	clk.advance(ttl)
	logs.Reset()
	if e, _ := c.Lookup(ctx, plans, orphan); !e.Invalid || !strings.Contains(logs.String(), "account gone is not in the registry") {
		t.Fatalf("the orphan read again: %+v, logged %q; want invalid, logged again", e, &logs)
	}
	logs.Reset()
	e, err := c.Lookup(ctx, plans, "key:"+bucketgate.KeyDigest("of broken"))
	if err != nil || e.Plan != nil || e.Invalid || !e.AccountInvalid || !strings.Contains(logs.String(), `"item":"account:broken"`) {
		t.Fatalf("a key of an invalid account: %+v, %v, logged %q; want unknown, the account invalid", e, err, &logs)
	}
}

// An account that keys roll made from a lone key spends that key's buckets, for every
// key of it.
func TestCacheAccountAdoptsBuckets(t *testing.T) {
	lone := "key:" + bucketgate.KeyDigest("the lone key")
	made := registry.Record{ID: "account:made", Plan: "pro", Buckets: lone}
	src := registrytest.New(made, registry.Record{ID: lone, Account: "made"}, registry.Record{ID: memberA, Account: "made"})
	c, _ := newCache(t, src, registry.Options{})
	for _, id := range []string{lone, memberA, "acct:made"} {
		if e, err := c.Lookup(context.Background(), plans, id); err != nil || e.Identity.String() != lone || e.Account != "made" {
			t.Fatalf("%s: %+v, %v; want the lone key's buckets", id, e, err)
		}
	}
}

// A key's account that cannot be read, with nothing cached, is the lookup's error; with
// the account cached, it answers stale.
func TestCacheAccountReadFails(t *testing.T) {
	src := accountSource()
	c, clk := newCache(t, src, registry.Options{})
	down := errors.New("throttled")
	src.Fail(down)
	e, err := c.Lookup(context.Background(), plans, memberA)
	if !errors.Is(err, down) || e.Plan != nil {
		t.Fatalf("nothing cached: %+v, %v; want the error", e, err)
	}
	src.Fail(nil)
	clk.advance(time.Second) // RetryAfterFailure
	if plan, _ := lookup(t, c, memberA); plan != "pro" {
		t.Fatalf("the table back: %q", plan)
	}
	src.Fail(down)
	clk.advance(ttl)
	e, err = c.Lookup(context.Background(), plans, memberA)
	if err != nil || e.Plan == nil || e.Result != registry.ResultStale || e.AccountResult != registry.ResultStale {
		t.Fatalf("stale: %+v, %v; want pro from both entries, stale", e, err)
	}
}

// A flood of made-up keys evicts made-up keys, never a key of an account, whose entry
// holds no plan of its own.
func TestCacheFloodKeepsKeysOfAccounts(t *testing.T) {
	src := accountSource()
	c, _ := newCache(t, src, registry.Options{Size: 10})
	lookup(t, c, memberA)
	for i := range 100 {
		lookup(t, c, "key:"+bucketgate.KeyDigest("made-up "+strconv.Itoa(i)))
	}
	reads := src.Reads()
	if plan, result := lookup(t, c, memberA); plan != "pro" || result != registry.ResultHit || src.Reads() != reads {
		t.Fatalf("after the flood: %q %s; want the key still cached", plan, result)
	}
}

// An account that keys roll made from a lone key still spends that key's buckets once
// revoked or expired: its keys are unknown, but the operator's path (usage, reset) reaches
// the buckets they spent, as for an account of its own buckets.
func TestCacheAccountAdoptsBucketsWhenGone(t *testing.T) {
	lone := "key:" + bucketgate.KeyDigest("the lone key")
	for _, tc := range []struct {
		name string
		made registry.Record
	}{
		{"revoked", registry.Record{ID: "account:made", Plan: "pro", Buckets: lone, Status: registry.StatusRevoked}},
		{"expired", registry.Record{ID: "account:made", Plan: "pro", Buckets: lone, ExpiresAt: time.Unix(1, 0)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			src := registrytest.New(tc.made, registry.Record{ID: lone, Account: "made", Status: registry.StatusRevoked},
				registry.Record{ID: memberA, Account: "made"})
			c, _ := newCache(t, src, registry.Options{})
			for _, id := range []string{lone, memberA, "acct:made"} {
				if e, err := c.Lookup(context.Background(), plans, id); err != nil || e.Plan != nil || e.Identity.String() != lone || e.Account != "made" {
					t.Fatalf("%s: %+v, %v; want unknown, spending the lone key's buckets", id, e, err)
				}
			}
		})
	}
}

// An account's name in the lines the functions log, a hand-written item's that is an
// API key bucketgate made (a name bucketgate.ValidAccountName takes, bucketgate
// accounts create does not), is masked.
func TestCacheAccountMadeKeyMasked(t *testing.T) {
	orphan := "key:" + bucketgate.KeyDigest("orphan")
	member := "key:" + bucketgate.KeyDigest("member")
	src := accountSource(registry.Record{ID: orphan, Account: madeKey}, registry.Record{ID: member, Account: madeKey + ".x"})
	src.PutInvalid("account:"+madeKey+".x", &registry.RecordError{ID: "account:" + madeKey + ".x", Attribute: "plan", Err: errors.New("empty")})
	for _, tc := range []struct{ name, id, want string }{
		{"not in the registry", orphan, "account bg_... is not in the registry"},
		{"an invalid account", member, `"item":"account:bg_`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var logs bytes.Buffer
			c, _ := newCache(t, src, registry.Options{Log: telemetry.NewLogger(&logs, nil)})
			if e, err := c.Lookup(context.Background(), plans, tc.id); err != nil || e.Plan != nil {
				t.Fatalf("%+v, %v; want unknown", e, err)
			}
			if line := logs.String(); strings.Contains(line, madeKey[:12]) || !strings.Contains(line, tc.want) {
				t.Fatalf("logged %s; want %q, never the key", line, tc.want)
			}
		})
	}
}
