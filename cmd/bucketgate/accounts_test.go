package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/bucketgate/bucketgate"
	"github.com/bucketgate/bucketgate/checkapi"
	"github.com/bucketgate/bucketgate/internal/registry"
	"github.com/bucketgate/bucketgate/internal/settings"
	"github.com/bucketgate/bucketgate/internal/testkit/redistest"
)

// A session of every accounts command, and of the keys commands with accounts, against
// dynalite: what is written and what is printed.
func TestAccountsSession(t *testing.T) {
	c := newCLI(t)
	c.ok("keys", "init")
	code, _, stderr := c.run("accounts", "create", "acme", "--plan", "pro", "--owner", "Acme Corp", "--note", "since 2026")
	if code != exitOK || stderr != "created account acme on plan pro: bucketgate keys create --account acme makes its keys\n" {
		t.Fatalf("accounts create: %d %q", code, stderr)
	}
	code, stdout, stderr := c.run("keys", "create", "--account", "acme", "--rule", "burst:5:1")
	if code != exitOK || !keyLine.MatchString(stdout) || !strings.Contains(stderr, "in account acme: the key above is shown this once") {
		t.Fatalf("keys create --account: %d %q %q", code, stdout, stderr)
	}
	first := strings.TrimSpace(stdout)
	second := strings.TrimSpace(c.ok("keys", "create", "--account", "acme", "--owner", "staging"))
	firstID, secondID := keyID(first), keyID(second)

	show := c.ok("keys", "show", first)
	for _, want := range []string{"id         " + firstID, "account    acme", "plan       pro (the account's)", "rules      burst:5:1"} {
		if !strings.Contains(show, want+"\n") {
			t.Errorf("keys show:\n%s\nwant a line %q", show, want)
		}
	}
	var rec recordJSON
	if err := json.Unmarshal([]byte(c.ok("keys", "show", "--json", second)), &rec); err != nil || rec.Account != "acme" || jsonPlan(rec.Plan) != "pro" || rec.Owner != "staging" {
		t.Fatalf("keys show --json: %+v, %v", rec, err)
	}
	c.ok("accounts", "set-plan", "acme", "enterprise")
	c.ok("accounts", "override", "acct:acme", "--rule", "burst:42:1")
	show = c.ok("accounts", "show", "acme")
	for _, want := range []string{"id         account:acme", "identity   acct:acme", "plan       enterprise", "status     active", "rules      burst:42:1",
		"owner      Acme Corp", "note       since 2026", "key        " + min(firstID, secondID), "key        " + max(firstID, secondID)} {
		if !strings.Contains(show, want+"\n") {
			t.Errorf("accounts show:\n%s\nwant a line %q", show, want)
		}
	}
	var acct accountJSON
	if err := json.Unmarshal([]byte(c.ok("accounts", "show", "--json", "account:acme")), &acct); err != nil || acct.Identity == nil || *acct.Identity != "acct:acme" || len(acct.Keys) != 2 || jsonPlan(acct.Plan) != "enterprise" {
		t.Fatalf("accounts show --json: %+v, %v", acct, err)
	}
	c.ok("accounts", "clear-overrides", "acme")
	list := c.ok("keys", "list")
	if !regexp.MustCompile(firstID+`\s+enterprise \(acct:acme\)\s+active`).MatchString(list) || strings.Contains(list, "account:acme") {
		t.Fatalf("keys list:\n%s\nwant the keys on their account's plan, and no account", list)
	}
	if list := c.ok("accounts", "list"); !regexp.MustCompile(`account:acme\s+enterprise\s+active`).MatchString(list) || strings.Contains(list, firstID) {
		t.Fatalf("accounts list:\n%s", list)
	}

	// A roll of a key of the account: a new key in it, the old one expiring.
	code, stdout, stderr = c.run("keys", "roll", first, "--overlap", "1h")
	if code != exitOK || !keyLine.MatchString(stdout) {
		t.Fatalf("keys roll: %d %q %q", code, stdout, stderr)
	}
	third := strings.TrimSpace(stdout)
	if !strings.Contains(stderr, "created "+keyID(third)+" in account acme: the key above is shown this once") || !strings.Contains(stderr, firstID+" expires ") {
		t.Fatalf("keys roll's notes: %q", stderr)
	}
	if show := c.ok("keys", "show", third); !strings.Contains(show, "account    acme\n") || !strings.Contains(show, "rules      burst:5:1\n") {
		t.Fatalf("the new key keeps the old one's own rules:\n%s", show)
	}
	if show := c.ok("accounts", "show", "acme"); !strings.Contains(show, "key        "+firstID+" (expires ") {
		t.Fatalf("accounts show after the roll:\n%s", show)
	}

	// A roll of a lone key: it becomes an account of its own, named in the output.
	lone := strings.TrimSpace(c.ok("keys", "create", "--plan", "pro", "--rule", "burst:7:1", "--owner", "solo", "--expires", "2031-01-01"))
	loneID := keyID(lone)
	made := "key-" + bucketgate.KeyDigest(lone)
	rolled := time.Now()
	code, stdout, stderr = c.run("keys", "roll", lone)
	if code != exitOK || !keyLine.MatchString(stdout) || !strings.Contains(stderr, loneID+" is a key of account "+made+" now, on plan pro, which spends its buckets ("+loneID+")") {
		t.Fatalf("keys roll of a lone key: %d %q %q", code, stdout, stderr)
	}
	show = c.ok("accounts", "show", made)
	for _, want := range []string{"identity   " + loneID, "plan       pro", "rules      burst:7:1", "owner      solo"} {
		if !strings.Contains(show, want+"\n") {
			t.Errorf("the account a lone key became:\n%s\nwant a line %q", show, want)
		}
	}
	// Its expiry, 24h after the roll, is read against the clock on both sides of it: an
	// hour (or day) that began meanwhile changes nothing.
	show = c.ok("keys", "show", lone)
	m := regexp.MustCompile(`(?m)^expiresAt  (\S+)$`).FindStringSubmatch(show)
	var expires time.Time
	if m != nil {
		expires, _ = time.Parse(time.RFC3339, m[1])
	}
	if !strings.Contains(show, "account    "+made+"\n") || !strings.Contains(show, "rules      -\n") ||
		expires.Before(rolled.Add(24*time.Hour).Truncate(time.Second)) || expires.After(time.Now().Add(24*time.Hour)) {
		t.Fatalf("the lone key after its roll:\n%s\nwant it in the account, its rules the account's, expiring 24h after the roll", show)
	}
	if show := c.ok("keys", "show", strings.TrimSpace(stdout)); !strings.Contains(show, "expiresAt  2031-01-01T00:00:00Z\n") || !strings.Contains(show, "owner      solo\n") {
		t.Fatalf("the new key keeps the old one's expiry and owner:\n%s", show)
	}
	code, _, stderr = c.run("keys", "roll", "--overlap", "0", lone)
	if code != exitOK || !strings.Contains(stderr, loneID+" expires ") {
		t.Fatalf("a second roll of the lone key, now of its account: %d %q", code, stderr)
	}
	if show := c.ok("keys", "show", lone); !strings.Contains(show, "status     expired\n") {
		t.Fatalf("--overlap 0 expires the old key at once:\n%s", show)
	}
	c.fails(exitError, "is expired: a roll replaces a working key", "keys", "roll", lone)

	// The lone key's roll with a name, and one stopped before its end, taken up again.
	named := strings.TrimSpace(c.ok("keys", "create", "--plan", "free"))
	if _, _, stderr := c.run("keys", "roll", "--account", "named-co", named); !strings.Contains(stderr, "is a key of account named-co now") {
		t.Fatalf("keys roll --account: %q", stderr)
	}

	code, _, stderr = c.run("accounts", "revoke", "acme")
	if code != exitOK || !strings.Contains(stderr, "revoked account:acme: every function treats it, and every key of it, as unknown") {
		t.Fatalf("accounts revoke: %d %q", code, stderr)
	}
	if show := c.ok("accounts", "show", "acme"); !strings.Contains(show, "status     revoked\n") {
		t.Fatalf("after revoke:\n%s", show)
	}
	if list := c.ok("keys", "list"); !regexp.MustCompile(secondID + `\s+enterprise \(acct:acme\)\s+active \(account revoked\)`).MatchString(list) {
		t.Fatalf("keys list after the account's revocation:\n%s", list)
	}
	c.fails(exitError, "account acme is revoked: its keys are unknown to the functions; nothing written", "keys", "create", "--account", "acme")
	c.fails(exitError, "account acme is revoked", "keys", "roll", second)
	if items := c.items(); strings.Contains(items, first) || strings.Contains(items, third) {
		t.Fatalf("the table holds a raw key:\n%s", items)
	}
}

// Bad input is an error naming the problem and the field, and nothing is written.
func TestAccountsBadInput(t *testing.T) {
	c := newCLI(t)
	c.ok("keys", "init")
	c.ok("accounts", "create", "acme", "--plan", "pro")
	member := strings.TrimSpace(c.ok("keys", "create", "--account", "acme"))
	lone := strings.TrimSpace(c.ok("keys", "create", "--plan", "free"))
	c.ok("keys", "create", "--tenant", "t1", "--plan", "free")
	crowded := []string{"keys", "create", "--account", "acme"}
	for i := range 7 { // with the plan's burst, 8: room for none of the account's own
		crowded = append(crowded, "--rule", "k"+strconv.Itoa(i)+":5:1")
	}
	crowdedID := keyID(strings.TrimSpace(c.ok(crowded...)))
	before := c.items()
	nine := []string{"keys", "create", "--account", "acme"}
	for i := range 8 { // with the plan's burst, 9
		nine = append(nine, "--rule", "r"+strconv.Itoa(i)+":5:1")
	}
	tests := []struct {
		name string
		code int
		want string
		args []string
	}{
		{"a name outside its set", exitUsage, `account "acme corp": want an account's name: 1 to 128 letters, digits, '.', '_' or '-'`, []string{"accounts", "create", "acme corp", "--plan", "pro"}},
		{"a name too long", exitUsage, "want an account's name", []string{"accounts", "show", strings.Repeat("a", 129)}},
		{"an empty name", exitUsage, "want an account's name", []string{"accounts", "show", "acct:"}},
		{"no plan", exitUsage, "accounts create: --plan is required", []string{"accounts", "create", "other"}},
		{"an empty plan", exitUsage, "usage: accounts create: --plan is empty: name a plan", []string{"accounts", "create", "other", "--plan", ""}},
		{"an override without rules", exitUsage, "usage: accounts override: give at least one --rule", []string{"accounts", "override", "acme"}},
		{"a set-plan with an empty PLAN", exitUsage, "usage: accounts set-plan: PLAN is empty: name a plan", []string{"accounts", "set-plan", "acme", " "}},
		{"an expire with an empty WHEN", exitUsage, `usage: accounts expire: "": want an RFC 3339 time`, []string{"accounts", "expire", "acme", ""}},
		{"an expire with a key for WHEN", exitUsage, "usage: accounts expire: WHEN is an API key: give NAME, then WHEN", []string{"accounts", "expire", "acme", "bg_" + strings.Repeat("A", 43)}},
		{"an expiry passed", exitUsage, "--expires 2026-01-01T00:00:00Z: 2026-01-01T00:00:00Z has passed: the account would never work", []string{"accounts", "create", "other", "--plan", "pro", "--expires", "2026-01-01T00:00:00Z"}},
		{"a key's expiry passed", exitUsage, "the key would never work", []string{"keys", "create", "--account", "acme", "--expires", "2001-01-01"}},
		{"an unknown plan", exitError, `account:other not written: attribute plan: unknown plan "gold"`, []string{"accounts", "create", "other", "--plan", "gold"}},
		{"an account twice", exitError, "account:acme is already in table", []string{"accounts", "create", "acme", "--plan", "pro"}},
		{"an account that does not exist", exitError, "no such item: account:nobody is not in table", []string{"accounts", "revoke", "nobody"}},
		{"a key of an account that does not exist", exitError, "account nobody is not in table bucketgate-keys (bucketgate accounts create nobody --plan NAME creates it)", []string{"keys", "create", "--account", "nobody"}},
		{"a key's account outside its set", exitUsage, `--account "a/b": want an account's name`, []string{"keys", "create", "--account", "a/b"}},
		{"a key with a plan and an account", exitUsage, "--plan or --account, not both", []string{"keys", "create", "--account", "acme", "--plan", "pro"}},
		{"a tenant in an account", exitUsage, "--account or --tenant, not both", []string{"keys", "create", "--account", "acme", "--tenant", "t2"}},
		{"a tenant that is an API key bucketgate made", exitUsage, "--tenant: a tenant key that is or holds an API key bucketgate made (bg_...): the check function refuses it", []string{"keys", "create", "--tenant", "bg_" + strings.Repeat("A", 43), "--plan", "free"}},
		{"a tenant holding an API key bucketgate made", exitUsage, "--tenant: a tenant key that is or holds an API key bucketgate made (bg_...): the check function refuses it", []string{"keys", "create", "--tenant", "acme/bg_" + strings.Repeat("A", 43), "--plan", "free"}},
		{"a key with more rules than its account's plan takes", exitError, " not written: attribute rules: with plan pro of account acme: rules: plans.pro: 9 rules: want at most 8", nine},
		{"the plan of a key of an account", exitError, "is a key of account acme: its plan is the account's (bucketgate accounts set-plan acme PLAN)", []string{"keys", "set-plan", member, "free"}},
		{"an override that leaves a key of the account no room for its own rules", exitError,
			"account:acme: the change would leave keys of the account without room for their own rules (the functions would treat them as unknown keys; bucketgate keys clear-overrides makes room); nothing written:\n  " + crowdedID + " (plan pro): rules: with plan pro of account acme: rules: plans.pro: 9 rules: want at most 8", []string{"accounts", "override", "acme", "--rule", "extra:5:1"}},
		{"an account by keys", exitUsage, "KEY names an account: bucketgate accounts takes it", []string{"keys", "show", "acct:acme"}},
		{"an overlap below zero", exitUsage, `--overlap "-1h": want a duration from 0 to 720h0m0s (30 days)`, []string{"keys", "roll", "--overlap", "-1h", member}},
		{"an overlap over 30 days", exitUsage, `--overlap "31d": want a duration from 0 to 720h0m0s`, []string{"keys", "roll", "--overlap", "31d", member}},
		{"an overlap of hours over 30 days", exitUsage, `--overlap "721h"`, []string{"keys", "roll", "--overlap", "721h", lone}},
		{"an overlap that is no duration", exitUsage, `--overlap "a day"`, []string{"keys", "roll", "--overlap", "a day", member}},
		{"a roll of a tenant", exitUsage, "tenant:t1 is a check function tenant: only an API key rolls", []string{"keys", "roll", "tenant:t1"}},
		{"a roll naming an account for a key of one", exitUsage, "is a key of account acme already: --account names the account a lone key becomes", []string{"keys", "roll", "--account", "x", member}},
		{"a roll into an account of another", exitError, "account:acme is already in table bucketgate-keys: name another with --account", []string{"keys", "roll", "--account", "acme", lone}},
		{"a roll of a key nobody registered", exitError, "no such item", []string{"keys", "roll", "nobody's key"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c.t = t
			c.fails(tc.code, tc.want, tc.args...)
		})
	}
	c.t = t
	if after := c.items(); after != before {
		t.Fatalf("bad input wrote to the table:\nbefore %s\nafter  %s", before, after)
	}
}

// config put refuses a document that drops a plan an active account uses, or leaves a
// key of an account without room for its own rules, naming them; a revoked account's
// plan may go.
func TestConfigPutKeepsAccountsPlans(t *testing.T) {
	c := newCLI(t)
	c.ok("keys", "init")
	c.ok("config", "put", file(t, "gold.yaml", goldDoc))
	c.ok("accounts", "create", "acme", "--plan", "gold")
	member := strings.TrimSpace(c.ok("keys", "create", "--account", "acme", "--rule", "hourly:5:5/hour"))
	c.ok("accounts", "create", "gone", "--plan", "gold")
	c.ok("accounts", "revoke", "gone")
	code, _, stderr := c.run("config", "put", file(t, "no-gold.yaml", noGoldDoc))
	if code != exitError || !strings.Contains(stderr, "account:acme (plan gold): plan: unknown plan \"gold\"") || strings.Contains(stderr, "account:gone") || strings.Contains(stderr, keyID(member)) {
		t.Fatalf("config put without gold: %d %s; want account:acme named, alone", code, stderr)
	}
	crowded := goldDoc + "routes:\n  - {path: /x, rules: [{name: a, capacity: 5, refillPerSecond: 1}, {name: b, capacity: 5, refillPerSecond: 1}, {name: c, capacity: 5, refillPerSecond: 1}, {name: d, capacity: 5, refillPerSecond: 1}, {name: e, capacity: 5, refillPerSecond: 1}, {name: f, capacity: 5, refillPerSecond: 1}, {name: g, capacity: 5, refillPerSecond: 1}]}\n"
	c.fails(exitError, keyID(member)+" (plan gold): rules: with plan gold of account acme: rules: routes[0]", "config", "put", file(t, "crowded.yaml", crowded))
}

// The functions as Lambda builds them, on a real Redis and the registry on dynalite:
// two keys of an account spend one bucket; a roll of a lone key keeps its buckets, the
// old key working until the overlap ends and unknown after it; a revoked account turns
// both its keys away; the operator reaches the account's buckets by acct:NAME.
func TestAccountsDecideTheFunctions(t *testing.T) {
	d, srv := newDeployment(t)
	c := d.cli
	c.ok("accounts", "create", "acme", "--plan", "basic")
	a := strings.TrimSpace(c.ok("keys", "create", "--account", "acme"))
	b := strings.TrimSpace(c.ok("keys", "create", "--account", "acme"))
	var got []string
	for i := range 6 {
		key := []string{a, b}[i%2]
		principal, plan, limit, remaining := d.authz.decide(t, key)
		if principal != "acct:acme" || plan != "basic" || limit != 5 {
			t.Fatalf("request %d: %s on %s, limit %d: want acct:acme on basic", i, principal, plan, limit)
		}
		got = append(got, strconv.FormatInt(remaining, 10))
	}
	if strings.Join(got, " ") != "4 3 2 1 0 0" {
		t.Fatalf("remaining %v over both keys, want one bucket of 5 spent by both", got)
	}
	d.want(d.bucket("show", "acct:acme"), "acct:acme", "basic", "burst", 5, 0)
	for _, id := range []string{"acct:acme", a} {
		var u checkapi.Usage
		// The sixth request's denial came from the authorizer's deny cache: no usage.
		if err := json.Unmarshal([]byte(c.ok("usage", "--json", id)), &u); err != nil || u.Identity != "acct:acme" || u.Total.Allowed != 5 || u.Total.Cost != 5 {
			t.Fatalf("usage of %s: %+v, %v; want the account's, both keys': 5 allowed", id, u, err)
		}
	}
	// A refund of a key of an account is its account's, and names it.
	d.want(d.bucket("refund", "--cost", "2", a), "acct:acme", "basic", "burst", 5, 2)
	time.Sleep(time.Second) // the authorizer's deny cache holds a denial a second at most
	if _, _, _, remaining := d.authz.decide(t, b); remaining != 1 {
		t.Fatalf("after a refund to one key: %d left for the other, want 1", remaining)
	}
	if keys := redisDump(t, srv); strings.Count(keys, "bg:{") != 1 || !strings.Contains(keys, "bg:{acct:acme}") {
		t.Fatalf("Redis holds %s: want the account's one hash", keys)
	}

	c.ok("accounts", "revoke", "acme")
	time.Sleep(cachePeriod)
	for _, key := range []string{a, b} {
		if principal, plan, _, _ := d.authz.decide(t, key); principal != "ip:203.0.113.10" || plan != "basic" {
			t.Fatalf("a key of the revoked account: %s on %s, want its source's", principal, plan)
		}
	}
	var u checkapi.Usage // what a key of the revoked account spent is still the account's
	if err := json.Unmarshal([]byte(c.ok("usage", "--json", a)), &u); err != nil || u.Identity != "acct:acme" || u.Total.Allowed != 6 {
		t.Fatalf("usage of a key of the revoked account: %+v, %v; want the account's, 6 allowed", u, err)
	}

	lone := strings.TrimSpace(c.ok("keys", "create", "--plan", "gold"))
	loneID := keyID(lone)
	for range 10 {
		d.authz.decide(t, lone)
	}
	code, stdout, stderr := c.run("keys", "roll", "--overlap", "2s", lone)
	if code != exitOK {
		t.Fatalf("keys roll: %d %s", code, stderr)
	}
	next := strings.TrimSpace(stdout)
	time.Sleep(cachePeriod)
	for i, key := range []string{next, lone, next} {
		if principal, plan, limit, remaining := d.authz.decide(t, key); principal != loneID || plan != "gold" || limit != 50 || remaining != int64(39-i) {
			t.Fatalf("request %d after the roll: %s on %s, %d of %d left; want the lone key's buckets, %d left", i, principal, plan, remaining, limit, 39-i)
		}
	}
	d.want(d.bucket("show", "acct:key-"+bucketgate.KeyDigest(lone)), loneID, "gold", "burst", 50, 37) // the lone key's buckets, as the authorizer names them
	time.Sleep(2*time.Second + cachePeriod)                                                           // the overlap ends
	if principal, _, _, _ := d.authz.decide(t, lone); principal != "ip:203.0.113.10" {
		t.Fatalf("the old key after the overlap: %s, want unknown: its source's", principal)
	}
	if principal, _, _, remaining := d.authz.decide(t, next); principal != loneID || remaining != 36 {
		t.Fatalf("the new key after the overlap: %s with %d left, want the lone key's buckets, 36 left", principal, remaining)
	}
	everything := c.items() + d.authz.logs.String() + d.check.logs.String() + d.check.payloads.String() + redisDump(t, srv)
	for _, key := range []string{a, b, lone, next} {
		if strings.Contains(everything, key) {
			t.Fatalf("a raw key is in the table, a log, a payload or Redis:\n%s", everything)
		}
	}
}

// A key of an account with a rule of its own, rolled again and again: each new key
// spends the own rule's bucket of the key the line started with, as it does the
// account's, so that a roll gives none of its tokens back and leaves nothing behind in
// the account's hash. Each roll started the new key's own bucket full (a fresh burst
// for the customer during every overlap) and left the old key's two fields in the
// account's hash, which an account in use never lets expire: a key rolled every day
// added 730 fields a year, for good.
func TestRollKeepsItsOwnRulesBuckets(t *testing.T) {
	d, srv := newDeployment(t)
	c := d.cli
	c.ok("accounts", "create", "crew", "--plan", "gold")
	first := strings.TrimSpace(c.ok("keys", "create", "--account", "crew", "--rule", "own:6:0.001"))
	digest := bucketgate.KeyDigest(first)
	key, left := first, int64(6)
	for i, overlap := range []string{"", "1h", "0", "0"} { // "": no roll yet
		if overlap != "" {
			code, stdout, stderr := c.run("keys", "roll", "--overlap", overlap, key)
			if code != exitOK {
				t.Fatalf("keys roll: %d %s", code, stderr)
			}
			key = strings.TrimSpace(stdout)
			time.Sleep(cachePeriod)
		}
		left--
		principal, _, limit, remaining := d.authz.decide(t, key)
		if principal != "acct:crew" || limit != 6 || remaining != left {
			t.Fatalf("the key after %d rolls: %s, %d of %d left; want acct:crew, its own rule's bucket %d left", i, principal, remaining, limit, left)
		}
		if i == 1 { // the overlap: the old key spends the same own bucket
			left--
			if _, _, _, remaining := d.authz.decide(t, first); remaining != left {
				t.Fatalf("the old key during the overlap: %d left, want %d: the new key's own bucket", remaining, left)
			}
		}
	}
	fields, err := srv.Command(context.Background(), "HKEYS", "bg:{acct:crew}")
	if err != nil {
		t.Fatal(err)
	}
	var own []string
	for _, f := range strings.Fields(fields) {
		if strings.Contains(f, "/") {
			own = append(own, f)
		}
	}
	if want := []string{digest + "/own:tokens", digest + "/own:ts"}; !slices.Equal(slices.Sorted(slices.Values(own)), want) {
		t.Fatalf("the account's hash after 3 rolls holds the own fields %v, want %v: one key's", own, want)
	}
	if show := c.ok("keys", "show", key); !strings.Contains(show, "\nbuckets    key:"+digest+" (its own rules': the key it was rolled from)\n") {
		t.Fatalf("keys show of the newest key:\n%s\nwant a line buckets naming key:%s", show, digest)
	}
	var j recordJSON
	if err := json.Unmarshal([]byte(c.ok("keys", "show", "--json", key)), &j); err != nil || j.Buckets != "key:"+digest {
		t.Fatalf("keys show --json of the newest key: %+v, %v; want buckets key:%s", j, err, digest)
	}
}

// A reservation that a key of an account made (the authorizer's, on a route that
// reserves), settled or cancelled by its id alone once the key is revoked (keys revoke)
// or has expired (the old key of keys roll --overlap 0), gives back to the account:
// the check function settles it under the account's plan, with the registry table of
// dynalite and a real redis-server. It was a ConflictError, the account charged the
// whole estimate, which its other keys spend, until it refilled.
func TestSettleOfAGoneKeysReservation(t *testing.T) {
	c := deployedCLI(t, `defaultPlan: basic
plans:
  basic: [{name: burst, capacity: 1000, refillPerSecond: 0.001}]
routes:
  - {method: GET, path: "/orders/{id}", reserve: 400, ttlMs: 60000}
`)
	d := deploy(t, c, redistest.Start(t).Addr, checkFunction)
	for _, tc := range []struct {
		name, op string
		end      func(key string) // how the key goes
		left     int64            // the account's tokens after it
	}{
		{"a settle of a revoked key's", `"settle", "cost": 100`, func(key string) { c.ok("keys", "revoke", key) }, 900},
		{"a cancel of a rolled key's", `"cancel"`, func(key string) { c.ok("keys", "roll", "--overlap", "0", key) }, 1000},
	} {
		t.Run(tc.name, func(t *testing.T) {
			account := "crew-" + strings.Fields(tc.name)[1]
			c.ok("accounts", "create", account, "--plan", "basic")
			key := strings.TrimSpace(c.ok("keys", "create", "--account", account))
			principal, ctx := d.authz.context(t, key, "")
			reservation, _ := ctx["reservation"].(string)
			if principal != "acct:"+account || reservation == "" {
				t.Fatalf("the reserve: %s, context %v; want acct:%s with a reservation", principal, ctx, account)
			}
			tc.end(key)
			time.Sleep(cachePeriod)
			payload := fmt.Sprintf(`{"op": %s, "reservation": %q}`, tc.op, reservation)
			if out, err := d.check.Invoke(context.Background(), []byte(payload)); err != nil {
				t.Fatalf("%s reservation by its id: %s, %v; want it done under the account's plan", tc.name, out, err)
			}
			d.want(d.bucket("show", "acct:"+account), "acct:"+account, "basic", "burst", 1000, tc.left)
		})
	}
}

// A roll that a failed write stopped halfway, run again as it says, issues a key that
// keeps the old key's expiry (never, here): not the overlap's end, which the stopped
// run may have set on the old key already. A roll whose old key cannot be changed after
// its new key was written prints the new key, which works, and names the command that
// sets the old key's expiry.
func TestRollStoppedHalfway(t *testing.T) {
	c := newCLI(t)
	c.ok("keys", "init")
	calls := newRecorder(t, map[string]string{"dynamodb": os.Getenv("AWS_ENDPOINT_URL_DYNAMODB")})
	t.Setenv("AWS_ENDPOINT_URL_DYNAMODB", calls.URL)
	// A new key's item: a put of an item that must not exist, in an account.
	newKeyPut := func(action string, body []byte) bool {
		return action == "dynamodb:PutItem" && bytes.Contains(body, []byte(`"ConditionExpression":"attribute_not_exists(#id)"`)) &&
			bytes.Contains(body, []byte(`"account":{"S":`))
	}
	// The old key's item, changed on the condition that it is as read.
	oldKeyPut := func(action string, body []byte) bool {
		return action == "dynamodb:PutItem" && !bytes.Contains(body, []byte(`"ConditionExpression":"attribute_not_exists(#id)"`))
	}
	// The old key's item, changed by another hand just before the roll's write of it.
	oldKeyChanged := func(action string, body []byte) bool {
		if oldKeyPut(action, body) {
			id := regexp.MustCompile(`"id":\{"S":"(key:[0-9a-f]+)"`).FindSubmatch(body)
			_, err := c.db.UpdateItem(context.Background(), &dynamodb.UpdateItemInput{
				TableName: aws.String(table), Key: map[string]types.AttributeValue{"id": &types.AttributeValueMemberS{Value: string(id[1])}},
				UpdateExpression: aws.String("SET note = :n"), ExpressionAttributeValues: map[string]types.AttributeValue{":n": &types.AttributeValueMemberS{Value: "another hand"}},
			})
			if err != nil {
				t.Error(err)
			}
		}
		return false
	}
	tests := []struct {
		name    string
		lone    bool
		refused func(string, []byte) bool
		want    string // in the error of a roll that printed its new key
	}{
		{"a lone key, the new key's write refused", true, newKeyPut, ""},
		{"a key of an account, the new key's write refused", false, newKeyPut, ""},
		{"a lone key, the old key's write refused", true, oldKeyPut, "refused by the test"},
		{"a key of an account, the old key's write refused", false, oldKeyPut, "refused by the test"},
		{"a key of an account, changed by another hand during the roll", false, oldKeyChanged, "): changed while this command ran (in table bucketgate-keys)\n"},
	}
	c.ok("accounts", "create", "acme", "--plan", "pro")
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c.t = t
			defer func() { c.t = t }()
			create := []string{"keys", "create", "--account", "acme"}
			if tc.lone {
				create = []string{"keys", "create", "--plan", "pro"}
			}
			old := strings.TrimSpace(c.ok(create...))
			calls.refuseWhen(tc.refused)
			code, stdout, stderr := c.run("keys", "roll", old)
			calls.refuseWhen(nil)
			if code != exitError {
				t.Fatalf("the roll with a write refused: exit %d %q %q; want %d", code, stdout, stderr, exitError)
			}
			next := strings.TrimSpace(stdout)
			if next == "" { // no key issued: the roll runs again, as its error says
				if !strings.Contains(stderr, "run keys roll") {
					t.Fatalf("the stopped roll's error %q: want it to say to run it again", stderr)
				}
				next = strings.TrimSpace(c.ok("keys", "roll", old))
			} else if !keyLine.MatchString(stdout) || !strings.Contains(stderr, "bucketgate keys expire "+keyID(old)+" ") || !strings.Contains(stderr, tc.want) || strings.Contains(stderr, "run it again") {
				t.Fatalf("the roll whose old key was not changed: %q %q; want the new key, and the command that sets the old key's expiry", stdout, stderr)
			}
			if show := c.ok("keys", "show", next); !strings.Contains(show, "expiresAt  never\n") || !strings.Contains(show, "status     active\n") {
				t.Fatalf("the new key:\n%s\nwant it active and never expiring, as the old key was before its roll", show)
			}
		})
	}
}

// An account created under the name of one whose item was deleted by hand takes back
// every key that names it, the active ones working again at once on it (and what Redis
// holds of acct:NAME): accounts create says so, naming them. It said only that the
// account was created, so that a new customer given the old name got the old one's
// keys spending its buckets and quotas.
func TestAccountCreatedAgainNamesItsKeys(t *testing.T) {
	c := withAccounts(t, "acme")
	live := keyID(strings.TrimSpace(c.ok("keys", "create", "--account", "acme")))
	revoked := keyID(strings.TrimSpace(c.ok("keys", "create", "--account", "acme")))
	c.ok("keys", "revoke", revoked)
	if _, err := c.db.DeleteItem(context.Background(), &dynamodb.DeleteItemInput{TableName: aws.String(table),
		Key: map[string]types.AttributeValue{registry.KeyAttribute: &types.AttributeValueMemberS{Value: "account:acme"}}}); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, account string
		warn          bool
	}{
		{"the name of a deleted account", "acme", true},
		{"a new name", "newco", false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			code, _, stderr := c.run("accounts", "create", tc.account, "--plan", "pro")
			if code != exitOK {
				t.Fatalf("accounts create %s: exit %d %q", tc.account, code, stderr)
			}
			warned := strings.Contains(stderr, "warning: ")
			if warned != tc.warn || tc.warn && (!strings.Contains(stderr, live) || strings.Contains(stderr, revoked) || !strings.Contains(stderr, "acct:"+tc.account)) {
				t.Errorf("accounts create %s: stderr %q; want a warning naming %s, the active key that works again, and what Redis holds of acct:%s: %v", tc.account, stderr, live, tc.account, tc.warn)
			}
		})
	}
}

// keys expire and accounts expire of a revoked item (an operator undoing a revocation
// with "never") say that it stays revoked: they said only "expires never", as for an
// item they made active again, while the functions still treat it (and an account's
// every key) as unknown.
func TestExpireOfARevokedItemSaysItStaysRevoked(t *testing.T) {
	c := withAccounts(t, "gone", "live")
	c.ok("accounts", "revoke", "gone")
	revoked := strings.TrimSpace(c.ok("keys", "create", "--account", "live"))
	c.ok("keys", "revoke", revoked)
	active := strings.TrimSpace(c.ok("keys", "create", "--account", "live"))
	tests := []struct {
		name string
		args []string
		says bool
	}{
		{"a revoked key", []string{"keys", "expire", revoked, "never"}, true},
		{"a revoked account", []string{"accounts", "expire", "gone", "never"}, true},
		{"an active key", []string{"keys", "expire", active, "never"}, false},
		{"an active account", []string{"accounts", "expire", "live", "30d"}, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			code, _, stderr := c.run(tc.args...)
			if code != exitOK {
				t.Fatalf("%v: exit %d %q", tc.args, code, stderr)
			}
			if says := strings.Contains(stderr, "stays revoked"); says != tc.says {
				t.Errorf("%v: stderr %q; want it to say the item stays revoked: %v", tc.args, stderr, tc.says)
			}
		})
	}
}

// A roll keeps the old key's expiry for the new key, and says so: a key rolled again in
// the overlap an earlier roll set (its new key's output lost, say) gave a new key that
// expired with it, at the overlap's end, while the roll said only that the old key
// expires and that "until then both keys work": after it neither did.
func TestRollSaysTheNewKeysExpiry(t *testing.T) {
	c := withAccounts(t, "acme")
	expiresAt := regexp.MustCompile(`(?m)^expiresAt  (\S+)$`)
	tests := []struct {
		name   string
		create []string // keys create's flags for the old key
		rolled bool     // the old key rolled once already, with a 2h overlap
		warn   bool     // the new key expires with the old one
	}{
		{"a key in an earlier roll's overlap", nil, true, true},
		{"a key with an expiry of its own past the overlap", []string{"--expires", "2031-01-01"}, false, false},
		{"a key that never expires", nil, false, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c.t = t
			old := strings.TrimSpace(c.ok(append([]string{"keys", "create", "--account", "acme"}, tc.create...)...))
			if tc.rolled {
				c.ok("keys", "roll", "--overlap", "2h", old)
			}
			kept := expiresAt.FindStringSubmatch(c.ok("keys", "show", old))[1]
			code, stdout, stderr := c.run("keys", "roll", old)
			if code != exitOK {
				t.Fatalf("keys roll: exit %d %q", code, stderr)
			}
			next := keyID(strings.TrimSpace(stdout))
			got := expiresAt.FindStringSubmatch(c.ok("keys", "show", next))[1]
			said := strings.Contains(stderr, next+" expires "+got)
			warned := strings.Contains(stderr, "warning: ") && strings.Contains(stderr, "neither key works")
			switch {
			case got != kept:
				t.Errorf("the new key expires %s, want %s, the old key's when read", got, kept)
			case said != (got != "never"):
				t.Errorf("the new key expires %s: stderr %q says so: %v", got, stderr, said)
			case warned != tc.warn:
				t.Errorf("stderr %q: a warning that neither key works after the overlap: %v, want %v", stderr, warned, tc.warn)
			}
		})
	}
}

// keys show says why the functions treat a key as unknown, as keys list does: its
// account revoked or expired, or its item unusable (a plan the table's document dropped,
// an account the table does not hold); --json says it in accountStatus and invalid. And
// accounts show says why the functions cannot use an account.
func TestKeysShowSaysWhyAKeyIsUnknown(t *testing.T) {
	c := newCLI(t)
	c.ok("keys", "init")
	c.ok("config", "put", file(t, "gold.yaml", goldDoc))
	c.ok("accounts", "create", "gone", "--plan", "pro")
	c.ok("accounts", "create", "late", "--plan", "pro")
	ofRevoked := strings.TrimSpace(c.ok("keys", "create", "--account", "gone"))
	ofExpired := strings.TrimSpace(c.ok("keys", "create", "--account", "late"))
	onGold := strings.TrimSpace(c.ok("keys", "create", "--plan", "gold"))
	c.ok("accounts", "create", "golden", "--plan", "gold")
	working := strings.TrimSpace(c.ok("keys", "create", "--plan", "pro"))
	c.ok("accounts", "revoke", "gone")
	c.ok("accounts", "expire", "late", "2001-01-01")
	c.ok("config", "put", "--force", file(t, "no-gold.yaml", noGoldDoc))
	tests := []struct {
		name, key     string
		line          string // a whole line of keys show
		accountStatus string // of keys show --json
		invalid       string // in keys show --json's invalid
	}{
		{"a key of a revoked account", ofRevoked, "status     active (account revoked)", "revoked", ""},
		{"a key of an expired account", ofExpired, "status     active (account expired)", "expired", ""},
		{"a key whose plan the document dropped", onGold, `invalid    attribute plan: unknown plan "gold": not in the configuration document (the functions treat it as unknown)`, "", `unknown plan "gold"`},
		{"a key that works", working, "status     active", "", ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c.t = t
			if show := c.ok("keys", "show", tc.key); !strings.Contains(show, tc.line+"\n") || (tc.invalid == "") == strings.Contains(show, "invalid") {
				t.Errorf("keys show:\n%s\nwant the line %q", show, tc.line)
			}
			var j itemJSON
			if err := json.Unmarshal([]byte(c.ok("keys", "show", "--json", tc.key)), &j); err != nil || j.AccountStatus != tc.accountStatus ||
				!strings.Contains(j.Invalid, tc.invalid) || (tc.invalid == "") != (j.Invalid == "") {
				t.Errorf("keys show --json: %+v, %v; want accountStatus %q, invalid mentioning %q", j, err, tc.accountStatus, tc.invalid)
			}
		})
	}
	c.t = t
	want := `invalid    attribute plan: unknown plan "gold": not in the configuration document (the functions treat it as unknown)`
	if show := c.ok("accounts", "show", "golden"); !strings.Contains(show, want+"\n") {
		t.Errorf("accounts show of an account whose plan the document dropped:\n%s\nwant the line %q", show, want)
	}
	var j accountJSON
	if err := json.Unmarshal([]byte(c.ok("accounts", "show", "--json", "golden")), &j); err != nil || !strings.Contains(j.Invalid, `unknown plan "gold"`) {
		t.Errorf("accounts show --json: %+v, %v; want invalid naming the plan", j, err)
	}
}

// keys list says of a key whose account's item the functions cannot read (written by
// hand) what keys show says, that the account cannot be read and why, never that the
// table does not hold it; a key of an account that is gone is still listed so.
func TestKeysListAccountItemUnreadable(t *testing.T) {
	c, member, orphan := keysOfTwoAccounts(t)
	paused := map[string]types.AttributeValue{"id": &types.AttributeValueMemberS{Value: "account:acme"},
		"plan": &types.AttributeValueMemberS{Value: "pro"}, "status": &types.AttributeValueMemberS{Value: "paused"}}
	c.put(paused)
	if _, err := c.db.DeleteItem(context.Background(), &dynamodb.DeleteItemInput{TableName: aws.String(table), Key: key("account:gone")}); err != nil {
		t.Fatal(err)
	}
	unreadable := `attribute account: account acme cannot be read: invalid registry item account:acme: attribute status: "paused": want "active" or "revoked"`
	if show := c.ok("keys", "show", member); !strings.Contains(show, unreadable) {
		t.Fatalf("keys show:\n%s\nwant %q", show, unreadable)
	}
	list := c.ok("keys", "list")
	for _, want := range []string{member + "  invalid: invalid registry item " + member + ": " + unreadable, orphan + "  invalid: attribute account: account gone is not in the table"} {
		if !strings.Contains(list, want+"\n") {
			t.Errorf("keys list:\n%s\nwant the line %q", list, want)
		}
	}
}

// accounts show --json prints keys as an array, empty for an account without keys, so
// that a script iterates it (jq '.keys[]') whatever the account holds.
func TestAccountsShowJSONKeys(t *testing.T) {
	c := withAccounts(t, "empty", "one")
	c.ok("keys", "create", "--account", "one")
	tests := []struct {
		name, account, want string
	}{
		{"no keys", "empty", `"keys": []`},
		{"a key", "one", `"keys": [` + "\n"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c.t = t
			if out := c.ok("accounts", "show", "--json", tc.account); !strings.Contains(out, tc.want) {
				t.Fatalf("accounts show --json %s:\n%s\nwant %q", tc.account, out, tc.want)
			}
		})
	}
}

// --account takes an account's name as every NAME does, also written acct:NAME or
// account:NAME (as keys list and accounts list print it): keys create and keys roll put
// the key in the account of that name, never refuse the spelling.
func TestAccountFlagSpellings(t *testing.T) {
	c := newCLI(t)
	c.ok("keys", "init")
	c.ok("accounts", "create", "acme", "--plan", "pro")
	for _, prefix := range []string{"acct:", "account:"} {
		t.Run(prefix, func(t *testing.T) {
			c.t = t
			key := strings.TrimSpace(c.ok("keys", "create", "--account", prefix+"acme"))
			if show := c.ok("keys", "show", key); !strings.Contains(show, "account    acme\n") {
				t.Fatalf("keys create --account %sacme, keys show:\n%s\nwant the account acme", prefix, show)
			}
			lone := strings.TrimSpace(c.ok("keys", "create", "--plan", "pro"))
			made := "made-" + strings.TrimSuffix(prefix, ":")
			c.ok("keys", "roll", "--account", prefix+made, lone)
			if show := c.ok("keys", "show", lone); !strings.Contains(show, "account    "+made+"\n") {
				t.Fatalf("keys roll --account %s%s, keys show:\n%s\nwant the account %s", prefix, made, show, made)
			}
		})
	}
}

// An API key given where an account's name or a time is wanted (arguments swapped at
// 3 a.m.) is refused, a usage error that never quotes it: as an account's name it would
// rest in the table, in the buckets' Redis keys and in every log line of the account. So
// is a new account's name holding what may be one, or part of one, which the CLI would
// print masked (glued to other characters, cut short).
func TestKeyGivenForAName(t *testing.T) {
	c := newCLI(t)
	c.ok("keys", "init")
	c.ok("accounts", "create", "acme", "--plan", "pro")
	key := strings.TrimSpace(c.ok("keys", "create", "--plan", "pro"))
	before := c.items()
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"accounts create", []string{"accounts", "create", key, "--plan", "pro"}, "account: an API key or a name holding one, not an account's name"},
		{"accounts show acct:", []string{"accounts", "show", "acct:" + key}, "account: an API key or a name holding one, not an account's name"},
		{"accounts revoke", []string{"accounts", "revoke", key}, "account: an API key or a name holding one, not an account's name"},
		{"accounts create, a name holding a key", []string{"accounts", "create", "acme." + key, "--plan", "pro"}, "account: an API key or a name holding one, not an account's name"},
		{"keys create --account", []string{"keys", "create", "--account", key}, "--account: an API key or a name holding one, not an account's name"},
		{"keys roll --account", []string{"keys", "roll", "--account", key, key}, "--account: an API key or a name holding one, not an account's name"},
		{"buckets acct:", []string{"buckets", "reset", "--function", "fn", "acct:" + key}, "acct: an API key or a name holding one, not an account's name"},
		{"keys expire, swapped", []string{"keys", "expire", "30d", key}, "keys expire: WHEN is an API key: give KEY, then WHEN"},
		// A new account's name glued to a key, or holding one cut short, was taken.
		{"accounts create, a name glued to a key", []string{"accounts", "create", "acme_" + key, "--plan", "pro"}, "account: a name holding what may be an API key bucketgate made, or part of one (bg_ and 22 or more base64url characters: bg_...), not an account's name"},
		{"accounts create, a name holding a key cut short", []string{"accounts", "create", key[:30], "--plan", "pro"}, "account: a name holding what may be an API key bucketgate made"},
		{"keys roll --account glued to a key", []string{"keys", "roll", "--account", "acme_" + key, key}, "--account: a name holding what may be an API key bucketgate made"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c.t = t
			code, stdout, stderr := c.run(tc.args...)
			if code != exitUsage || stdout != "" || !strings.Contains(stderr, tc.want) || strings.Contains(stderr, key) {
				t.Fatalf("bucketgate %s: exit %d, stdout %q, stderr %q; want exit 2 saying %q, never the key", strings.Join(tc.args, " "), code, stdout, stderr, tc.want)
			}
		})
	}
	c.t = t
	if after := c.items(); after != before {
		t.Fatalf("a key given for a name wrote to the table:\nbefore %s\nafter  %s", before, after)
	}
}

// newRoomCLI returns a cli of a table whose plans are small, of one rule, and big, of
// seven (room for one own rule of a key of an account on it), which the CLI reaches
// through calls; put writes a record straight to the table, as another operator's
// command writes it.
func newRoomCLI(t *testing.T) (*cli, *awsRecorder, func(registry.Record)) {
	c := newCLI(t)
	big := make([]string, 7)
	for i := range big {
		big[i] = "{name: r" + strconv.Itoa(i) + ", capacity: 100, refillPerSecond: 10}"
	}
	c.env[settings.EnvConfigInline] = "defaultPlan: small\nplans:\n  small: [{name: burst, capacity: 100, refillPerSecond: 10}]\n  big: [" + strings.Join(big, ", ") + "]\n"
	c.ok("keys", "init")
	calls := newRecorder(t, map[string]string{"dynamodb": os.Getenv("AWS_ENDPOINT_URL_DYNAMODB")})
	t.Setenv("AWS_ENDPOINT_URL_DYNAMODB", calls.URL)
	return c, calls, func(rec registry.Record) {
		if _, err := c.db.PutItem(context.Background(), &dynamodb.PutItemInput{TableName: aws.String(table), Item: rec.Item()}); err != nil {
			t.Error(err)
		}
	}
}

// A change of an account's plan or rules and a write of a key of the account with own
// rules that run at once: neither leaves the key without room for its own rules unsaid
// (the functions would treat it as an unknown key). A key written between the account
// change's scan of its keys and its write is named by the account change; an account
// changed between a key command's check and its write is named by the key command.
func TestAccountChangeRacesAKeyOfIt(t *testing.T) {
	c, calls, put := newRoomCLI(t)
	ownRules := []bucketgate.Rule{{Name: "a", Capacity: 5, RefillPerSecond: 1}, {Name: "b", Capacity: 5, RefillPerSecond: 1}}
	many := []string{"--rule", "c1:9:1", "--rule", "c2:9:1", "--rule", "c3:9:1", "--rule", "c4:9:1", "--rule", "c5:9:1", "--rule", "c6:9:1"}
	for _, tc := range []struct {
		name    string
		account string
		args    []string                          // the command that races
		writes  string                            // in the body of its PutItem that the other write goes before
		other   func(account string) (key string) // the other write; the key id it races
		want    string                            // on stderr
	}{
		{"accounts set-plan, keys create --account", "acme1", []string{"accounts", "set-plan", "acme1", "big"}, `"S":"account:acme1"`,
			func(account string) string {
				k, _ := newKey()
				put(registry.Record{ID: keyID(k), Account: account, Rules: ownRules})
				return keyID(k)
			}, "account:acme1 is written, but these keys of the account, written while this command ran, have no room for their own rules beside it"},
		{"accounts override, keys create --account", "acme2", append([]string{"accounts", "override", "acme2"}, many...), `"S":"account:acme2"`,
			func(account string) string {
				k, _ := newKey()
				put(registry.Record{ID: keyID(k), Account: account, Rules: ownRules})
				return keyID(k)
			}, "account:acme2 is written, but these keys of the account, written while this command ran, have no room for their own rules beside it"},
		{"keys create --account, accounts set-plan", "acme3", []string{"keys", "create", "--account", "acme3", "--rule", "a:5:1", "--rule", "b:5:1"}, `"account":{"S":"acme3"}`,
			func(account string) string {
				put(registry.Record{ID: registry.AccountItemPrefix + account, Plan: "big"})
				return ""
			}, " is written, but a change of account acme3 (bucketgate accounts set-plan or override), written while this command ran, leaves it without a usable plan"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c.t = t
			c.ok("accounts", "create", tc.account, "--plan", "small")
			var raced string
			done := false
			calls.refuseWhen(func(action string, body []byte) bool {
				if action == "dynamodb:PutItem" && strings.Contains(string(body), tc.writes) && !done {
					done = true
					raced = tc.other(tc.account)
				}
				return false
			})
			code, stdout, stderr := c.run(tc.args...)
			calls.refuseWhen(nil)
			if raced == "" {
				raced = keyID(strings.TrimSpace(stdout))
			}
			if !done || code != exitError || !strings.Contains(stderr, tc.want) || !strings.Contains(stderr, raced) {
				t.Fatalf("bucketgate %s, raced: exit %d\n%s\nwant exit 1 naming %s: %q", strings.Join(tc.args, " "), code, stderr, raced, tc.want)
			}
			if show := c.ok("keys", "show", raced); !strings.Contains(show, "\ninvalid ") {
				t.Fatalf("the key named:\n%s\nwant it invalid, as the functions read it", show)
			}
		})
	}
}

// keys roll of a key of an account with own rules, racing an account change that leaves
// no room for them: written after the roll checked the new key, the new key is named, and
// the old one, the only one that could work, is left as it was; written after it checked
// the old key, the old key's expiry is written, and said so.
func TestRollRacesAnAccountChange(t *testing.T) {
	c, calls, put := newRoomCLI(t)
	for _, tc := range []struct {
		name    string
		account string
		before  int    // the PutItem of a key of the account the change goes before: 1 the new key's, 2 the old key's
		named   string // "new" or "old": the key named
		want    string // on stderr, OLD for the old key's id
		expires bool   // whether the old key expires
	}{
		{"before the new key", "acme1", 1, "new", "OLD is unchanged, and works as it did", false},
		{"before the old key's expiry", "acme2", 2, "old", "OLD expires ", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c.t = t
			c.ok("accounts", "create", tc.account, "--plan", "small")
			old := keyID(strings.TrimSpace(c.ok("keys", "create", "--account", tc.account, "--rule", "a:5:1", "--rule", "b:5:1")))
			puts := 0
			calls.refuseWhen(func(action string, body []byte) bool {
				if action == "dynamodb:PutItem" && strings.Contains(string(body), `"account":{"S":"`+tc.account+`"}`) {
					if puts++; puts == tc.before {
						put(registry.Record{ID: registry.AccountItemPrefix + tc.account, Plan: "big"})
					}
				}
				return false
			})
			code, stdout, stderr := c.run("keys", "roll", old)
			calls.refuseWhen(nil)
			named := map[string]string{"new": keyID(strings.TrimSpace(stdout)), "old": old}[tc.named]
			if code != exitError || !strings.Contains(stderr, named+" is written, but a change of account "+tc.account) || !strings.Contains(stderr, strings.ReplaceAll(tc.want, "OLD", old)) {
				t.Fatalf("keys roll, raced: exit %d\n%s\nwant exit 1 naming the %s key %s", code, stderr, tc.named, named)
			}
			if show := c.ok("keys", "show", old); strings.Contains(show, "expiresAt  never\n") == tc.expires {
				t.Fatalf("the old key:\n%s\nwant it to expire: %v", show, tc.expires)
			}
		})
	}
}

// An expired account made active again: config put passed its keys over while it was
// not active, so the change checks them, as a plan change would, and refuses to leave
// one without room for its own rules, naming it.
func TestAccountBackNamesKeysWithoutRoom(t *testing.T) {
	c, _, _ := newRoomCLI(t)
	c.ok("accounts", "create", "acme", "--plan", "big")
	key := keyID(strings.TrimSpace(c.ok("keys", "create", "--account", "acme", "--rule", "a:5:1")))
	c.ok("accounts", "expire", "acme", "2020-01-01")
	big := make([]string, 8) // no room left for an own rule
	for i := range big {
		big[i] = "{name: r" + strconv.Itoa(i) + ", capacity: 100, refillPerSecond: 10}"
	}
	c.ok("config", "put", file(t, "big.yaml", "defaultPlan: small\nplans:\n  small: [{name: burst, capacity: 100, refillPerSecond: 10}]\n  big: ["+strings.Join(big, ", ")+"]\n"))
	before := c.items()
	code, _, stderr := c.run("accounts", "expire", "acme", "never")
	if code != exitError || !strings.Contains(stderr, "account:acme: the change would leave keys of the account without room for their own rules") || !strings.Contains(stderr, "\n  "+key+" (plan big): rules: ") {
		t.Fatalf("accounts expire acme never: exit %d\n%s\nwant a refusal naming %s", code, stderr, key)
	}
	if after := c.items(); after != before {
		t.Fatalf("the refused change wrote:\n%s", after)
	}
	c.ok("keys", "clear-overrides", key)
	c.ok("accounts", "expire", "acme", "never")
}

// accounts show says of each key of the account what keys show says of it: a key whose
// own rules its account's plan has no room for (a document put with --force) is one the
// functions treat as unknown, not an active key.
func TestAccountsShowNamesKeysWithoutRoom(t *testing.T) {
	c, _, _ := newRoomCLI(t)
	c.ok("accounts", "create", "acme", "--plan", "small")
	squeezed := keyID(strings.TrimSpace(c.ok("keys", "create", "--account", "acme", "--rule", "a:5:1", "--rule", "b:5:1")))
	fits := keyID(strings.TrimSpace(c.ok("keys", "create", "--account", "acme")))
	small := make([]string, 7) // room for one own rule
	for i := range small {
		small[i] = "{name: r" + strconv.Itoa(i) + ", capacity: 100, refillPerSecond: 10}"
	}
	c.ok("config", "put", "--force", file(t, "small.yaml", "defaultPlan: small\nplans:\n  small: ["+strings.Join(small, ", ")+"]\n"))
	for _, tc := range []struct {
		name string
		args []string
		want []string
	}{
		{"text", []string{"accounts", "show", "acme"}, []string{"\nkey        " + squeezed + " (invalid: attribute rules: with plan small of account acme: ", "\nkey        " + fits + "\n"}},
		{"json", []string{"accounts", "show", "--json", "acme"}, []string{`"id": "` + squeezed + `",` + "\n      \"status\": \"active\",\n      \"invalid\": ", `"id": "` + fits + `",` + "\n      \"status\": \"active\"\n"}},
	} {
		out := c.ok(tc.args...)
		for _, want := range tc.want {
			if !strings.Contains(out, want) {
				t.Errorf("%s:\n%s\nwant %q", tc.name, out, want)
			}
		}
	}
	if show := c.ok("keys", "show", squeezed); !strings.Contains(show, "\ninvalid ") {
		t.Fatalf("keys show:\n%s\nwant it invalid", show)
	}
}

// A lone key changed (keys set-plan, keys override) while keys roll makes it into an
// account: the account was made with the plan and rules the key had when read, and the
// roll's last write, conditional on the key as read, fails. The roll names what the key
// has now and the command that gives it to the account, which the new key is decided as.
func TestRollRacesAKeyChange(t *testing.T) {
	c, calls, put := newRoomCLI(t)
	for _, tc := range []struct {
		name    string
		account string
		now     registry.Record // the key as the racing command writes it (its ID set by the test)
		want    string          // on stderr
	}{
		{"keys set-plan", "racer1", registry.Record{Plan: "big"}, "bucketgate accounts set-plan racer1 big"},
		{"keys override", "racer2", registry.Record{Plan: "small", Rules: []bucketgate.Rule{{Name: "burst", Capacity: 7, RefillPerSecond: 1}}},
			"bucketgate accounts override racer2 --rule burst:7:1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c.t = t
			old := keyID(strings.TrimSpace(c.ok("keys", "create", "--plan", "small")))
			tc.now.ID = old
			raced := false
			calls.refuseWhen(func(action string, body []byte) bool {
				if action == "dynamodb:PutItem" && !raced && strings.Contains(string(body), `"account":{"S":"`+tc.account+`"}`) {
					raced = true
					put(tc.now)
				}
				return false
			})
			code, _, stderr := c.run("keys", "roll", old, "--account", tc.account)
			calls.refuseWhen(nil)
			if code != exitError || !strings.Contains(stderr, tc.want) {
				t.Fatalf("keys roll, raced by %s: exit %d\n%s\nwant exit 1 saying %q", tc.name, code, stderr, tc.want)
			}
		})
	}
}

// A roll of a lone key whose account of its own, made by an earlier roll that stopped
// halfway, was revoked or has expired since (an operator tidying it away) refuses, and
// writes nothing: it took that account as it was, printed a new key of it, and moved the
// old key into it, so that both keys were unknown to the functions at once.
func TestRollRefusesItsMadeAccountGone(t *testing.T) {
	c := newCLI(t)
	c.ok("keys", "init")
	tests := []struct {
		name, attr string
		value      types.AttributeValue
		want       string
	}{
		{"revoked", "status", &types.AttributeValueMemberS{Value: "revoked"}, "is revoked"},
		{"expired", "expiresAt", &types.AttributeValueMemberN{Value: "1577836800"}, "expired"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c.t = t
			old := strings.TrimSpace(c.ok("keys", "create", "--plan", "pro"))
			id := keyID(old)
			made := map[string]types.AttributeValue{
				"id":      &types.AttributeValueMemberS{Value: "account:key-" + strings.TrimPrefix(id, "key:")},
				"plan":    &types.AttributeValueMemberS{Value: "pro"},
				"buckets": &types.AttributeValueMemberS{Value: id},
				tc.attr:   tc.value,
			}
			c.put(made)
			code, stdout, stderr := c.run("keys", "roll", old)
			if code != exitError || stdout != "" || !strings.Contains(stderr, tc.want) || !strings.Contains(stderr, "--account") {
				t.Fatalf("the roll: exit %d %q %q; want %d, no key, the account %s and --account named", code, stdout, stderr, exitError, tc.want)
			}
			if show := c.ok("keys", "show", old); strings.Contains(show, "account") || !strings.Contains(show, "status     active\n") {
				t.Fatalf("the old key after the refused roll:\n%s\nwant it lone and active, as it was", show)
			}
		})
	}
}

// accounts show lists every item that names the account, one the functions cannot read
// too (written by hand), with why, by its id alone: an operator auditing the account sees
// every key of it, the unknown ones among them. An item naming another account is not
// listed.
func TestAccountsShowListsUnreadableKeys(t *testing.T) {
	c := withAccounts(t, "acme", "other")
	working := keyID(strings.TrimSpace(c.ok("keys", "create", "--account", "acme")))
	broken := "key:" + bucketgate.KeyDigest("broken")
	elsewhere := "key:" + bucketgate.KeyDigest("elsewhere")
	for _, item := range []map[string]types.AttributeValue{
		{"id": &types.AttributeValueMemberS{Value: broken}, "account": &types.AttributeValueMemberS{Value: "acme"}, "status": &types.AttributeValueMemberS{Value: "paused"}},
		{"id": &types.AttributeValueMemberS{Value: elsewhere}, "account": &types.AttributeValueMemberS{Value: "other"}, "status": &types.AttributeValueMemberS{Value: "paused"}},
	} {
		c.put(item)
	}
	why := `attribute status: "paused": want "active" or "revoked"`
	for _, tc := range []struct {
		name string
		args []string
		want []string
	}{
		{"text", []string{"accounts", "show", "acme"}, []string{"\nkey        " + broken + " (invalid: " + why + " (the functions treat it as unknown))\n", "\nkey        " + working + "\n"}},
		{"json", []string{"accounts", "show", "--json", "acme"}, []string{`"id": "` + broken + `",`, `"invalid": "invalid registry item ` + broken + `: ` + strings.ReplaceAll(why, `"`, `\"`) + `"`, `"id": "` + working + `",`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c.t = t
			out := c.ok(tc.args...)
			for _, want := range tc.want {
				if !strings.Contains(out, want) {
					t.Errorf("%s:\n%s\nwant %q", strings.Join(tc.args, " "), out, want)
				}
			}
			if strings.Contains(out, elsewhere) {
				t.Errorf("%s:\n%s\nlists %s, a key of another account", strings.Join(tc.args, " "), out, elsewhere)
			}
		})
	}
}

// keys show and keys list of a key whose account's item is not in the table or cannot
// be read print no plan for it: the functions treat the key as unknown, never decide it
// under the plan its own item names (ignored in a key of an account), nor under one of
// its account's.
func TestKeysShowNoPlanWithoutItsAccount(t *testing.T) {
	c, member, orphan := keysOfTwoAccounts(t)
	for _, item := range []map[string]types.AttributeValue{
		{"id": &types.AttributeValueMemberS{Value: "account:acme"}, "plan": &types.AttributeValueMemberS{Value: "pro"}, "status": &types.AttributeValueMemberS{Value: "paused"}},
		{"id": &types.AttributeValueMemberS{Value: orphan}, "account": &types.AttributeValueMemberS{Value: "gone"}, "plan": &types.AttributeValueMemberS{Value: "enterprise"}},
	} {
		c.put(item)
	}
	if _, err := c.db.DeleteItem(context.Background(), &dynamodb.DeleteItemInput{TableName: aws.String(table), Key: key("account:gone")}); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ name, id string }{{"its account unreadable", member}, {"its account not in the table", orphan}} {
		t.Run(tc.name, func(t *testing.T) {
			c.t = t
			want := "plan       - (the functions treat the key as unknown: see invalid)\n"
			if show := c.ok("keys", "show", tc.id); !strings.Contains(show, want) || strings.Contains(show, "enterprise") {
				t.Errorf("keys show:\n%s\nwant the line %q", show, want)
			}
			var j itemJSON
			if err := json.Unmarshal([]byte(c.ok("keys", "show", "--json", tc.id)), &j); err != nil || jsonPlan(j.Plan) != "" || j.Invalid == "" {
				t.Errorf("keys show --json: %+v, %v; want no plan, and invalid", j, err)
			}
			var list []itemJSON
			if err := json.Unmarshal([]byte(c.ok("keys", "list", "--json")), &list); err != nil {
				t.Fatal(err)
			}
			for _, it := range list {
				if it.ID == tc.id && (jsonPlan(it.Plan) != "" || it.Invalid == "") {
					t.Errorf("keys list --json: %+v; want no plan, and invalid", it)
				}
			}
		})
	}
}

// keys create --account and keys roll racing accounts revoke or expire: the account,
// active when the command checked it, is no longer so once the new key is written, and
// the command says that the key it printed is unknown to the functions, as every key of
// the account, never that it was created in the account and works.
func TestKeyOfAnAccountRacesItsEnd(t *testing.T) {
	c, calls, put := newRoomCLI(t)
	for _, tc := range []struct {
		name, account string
		roll          bool                                  // keys roll of a key of the account, else keys create --account
		end           func(registry.Record) registry.Record // the account as the racing command writes it
		want          string
	}{
		{"keys create, accounts revoke", "acme1", false, func(r registry.Record) registry.Record { r.Status = registry.StatusRevoked; return r }, "account acme1 is revoked"},
		{"keys create, accounts expire", "acme2", false, func(r registry.Record) registry.Record { r.ExpiresAt = time.Unix(1577836800, 0); return r }, "account acme2 is expired"},
		{"keys roll, accounts revoke", "acme3", true, func(r registry.Record) registry.Record { r.Status = registry.StatusRevoked; return r }, "account acme3 is revoked"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c.t = t
			args := keyCommandOfNewAccount(c, tc.account, tc.roll)
			raced := false
			calls.refuseWhen(func(action string, body []byte) bool {
				if action == "dynamodb:PutItem" && !raced && strings.Contains(string(body), `"account":{"S":"`+tc.account+`"}`) {
					raced = true
					put(tc.end(registry.Record{ID: registry.AccountItemPrefix + tc.account, Plan: "small"}))
				}
				return false
			})
			code, stdout, stderr := c.run(args...)
			calls.refuseWhen(nil)
			written := keyID(strings.TrimSpace(stdout))
			if !raced || code != exitError || !strings.Contains(stderr, written+" is written, but "+tc.want) || !strings.Contains(stderr, "unknown") {
				t.Fatalf("bucketgate %s, raced: exit %d\n%s\nwant exit 1 saying %s is written, but %s", strings.Join(args, " "), code, stderr, written, tc.want)
			}
			if tc.roll && strings.Contains(stderr, "works as it did") {
				t.Fatalf("keys roll, raced:\n%s\nsays the old key of an account that is not active works", stderr)
			}
		})
	}
}

// keysOfTwoAccounts returns a CLI on a new table with the accounts acme and gone (plan
// pro) and the ids of a key of each, member (acme's) and orphan (gone's), for a test to
// break the accounts' items.
func keysOfTwoAccounts(t *testing.T) (c *cli, member, orphan string) {
	c = withAccounts(t, "acme", "gone")
	member = keyID(strings.TrimSpace(c.ok("keys", "create", "--account", "acme")))
	orphan = keyID(strings.TrimSpace(c.ok("keys", "create", "--account", "gone")))
	return c, member, orphan
}

// keyCommandOfNewAccount creates account (plan small) and returns the command that
// writes a key of it: keys create --account, or with roll, keys roll of a key it
// creates in the account first.
func keyCommandOfNewAccount(c *cli, account string, roll bool) []string {
	c.ok("accounts", "create", account, "--plan", "small")
	args := []string{"keys", "create", "--account", account}
	if roll {
		args = []string{"keys", "roll", keyID(strings.TrimSpace(c.ok(args...)))}
	}
	return args
}

// accounts list and keys list show an item written by hand whose id or account holds an
// API key bucketgate made with the key masked, in its id and in its error alike: the
// error quoted the id cut to 40 characters, up to 37 of the key.
func TestListsMaskMadeKeysInUnreadableItems(t *testing.T) {
	key := "bg_" + strings.Repeat("Q", 42) + "w"
	c := withAccounts(t, "acme")
	s := func(v string) types.AttributeValue { return &types.AttributeValueMemberS{Value: v} }
	c.put(map[string]types.AttributeValue{"id": s("account:acme/" + key), "plan": s("pro")},
		map[string]types.AttributeValue{"id": s("key:" + bucketgate.KeyDigest("k")), "account": s("acme." + key)})
	for _, args := range [][]string{{"accounts", "list"}, {"keys", "list"}} {
		code, stdout, stderr := c.run(args...)
		if out := stdout + stderr; code != exitOK || strings.Contains(out, key[:12]) || !strings.Contains(out, "bg_...") {
			t.Errorf("bucketgate %s: exit %d\n%s\nwant the item listed with its key masked", strings.Join(args, " "), code, out)
		}
	}
}
