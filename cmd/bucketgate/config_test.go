package main

import (
	"context"
	"encoding/json"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/bucketgate/bucketgate"
	"github.com/bucketgate/bucketgate/internal/config"
	"github.com/bucketgate/bucketgate/internal/madekey"
	"github.com/bucketgate/bucketgate/internal/registry"
	"github.com/bucketgate/bucketgate/internal/settings"
)

// Documents of the configuration tests: gold's burst is 300 in the first, and the
// second drops gold and gives pro a burst of 150.
const (
	goldDoc = "defaultPlan: free\nplans:\n  free: [{name: burst, capacity: 10, refillPerSecond: 1}]\n" +
		"  pro: [{name: burst, capacity: 100, refillPerSecond: 50}]\n  gold: [{name: burst, capacity: 300, refillPerSecond: 100}]\n"
	noGoldDoc = "defaultPlan: free\nplans:\n  free: [{name: burst, capacity: 10, refillPerSecond: 1}]\n" +
		"  pro: [{name: burst, capacity: 150, refillPerSecond: 50}]\n"
)

// file writes content to a file of the test's and returns its path.
func file(t *testing.T, name, content string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// A session of every config command against dynalite: put, show, history, a refused
// put, --force, an unchanged put, rollback; and the keys commands checking plans
// against the table's document, never this shell's.
func TestConfigSession(t *testing.T) {
	c := newCLI(t)
	c.ok("keys", "init")
	c.fails(exitError, "table bucketgate-keys holds no configuration document: the functions use their RATE_LIMIT_CONFIG", "config", "show")
	if out := c.ok("config", "history"); strings.TrimSpace(out) != "VERSION  CURRENT  UPDATED  BYTES  NOTE" {
		t.Fatalf("history of no document:\n%s", out)
	}
	c.fails(exitError, `unknown plan "gold": not in the configuration document (configured: enterprise, free, pro; from this shell's`, "keys", "create", "--plan", "gold")

	code, _, stderr := c.run("config", "put", file(t, "gold.yaml", goldDoc), "--note", "gold plan")
	if code != exitOK || !strings.Contains(stderr, "wrote version 1 to table bucketgate-keys (the functions used their own document until now)") {
		t.Fatalf("put: %d %s", code, stderr)
	}
	code, stdout, stderr := c.run("config", "show")
	if code != exitOK || stdout != goldDoc || !strings.HasPrefix(stderr, "version 1 of table bucketgate-keys, written 20") || !strings.HasSuffix(stderr, ": gold plan\n") {
		t.Fatalf("show: %d\n%s\n%s", code, stdout, stderr)
	}
	var shown configJSON
	if err := json.Unmarshal([]byte(c.ok("config", "show", "--json")), &shown); err != nil || shown.Version != 1 || shown.Document != goldDoc || shown.Note != "gold plan" {
		t.Fatalf("show --json: %+v, %v", shown, err)
	}

	c.env[settings.EnvConfigInline] = noGoldDoc // this shell's document: never the one checked while the table has one
	key := strings.TrimSpace(c.ok("keys", "create", "--plan", "gold", "--owner", "acme"))
	id := keyID(key)
	c.ok("keys", "create", "--tenant", "t-gold", "--plan", "gold")
	c.ok("keys", "create", "--tenant", "t-gone", "--plan", "gold")
	c.ok("keys", "revoke", "tenant:t-gone")
	c.fails(exitError, `unknown plan "basic": not in the configuration document (configured: free, gold, pro; from version 1 of the table's configuration document)`,
		"keys", "set-plan", key, "basic")

	noGold := file(t, "no-gold.yaml", noGoldDoc)
	before := c.items()
	code, stdout, stderr = c.run("config", "put", noGold)
	if code != exitError || stdout != "" || !strings.Contains(stderr, "the document would leave active keys, tenants or accounts without a usable plan (--force writes it anyway") ||
		!strings.Contains(stderr, "\n  "+id+` (plan gold): plan: unknown plan "gold"`) || !strings.Contains(stderr, "\n  tenant:t-gold (plan gold)") || strings.Contains(stderr, "t-gone") {
		t.Fatalf("a put dropping gold: %d\n%s\nwant a refusal naming the active key and tenant on gold, not the revoked one", code, stderr)
	}
	if after := c.items(); len(after) != len(before) {
		t.Fatalf("a refused put wrote:\nbefore %s\nafter  %s", before, after)
	}
	code, _, stderr = c.run("config", "put", noGold, "--force", "--note", "gold retired")
	if code != exitOK || !strings.Contains(stderr, "warning: --force: these active keys, tenants or accounts now count as unknown:\n  "+id) ||
		!strings.Contains(stderr, "wrote version 2 to table bucketgate-keys (was 1)") {
		t.Fatalf("put --force: %d\n%s", code, stderr)
	}
	c.stdin = noGoldDoc // FILE - is stdin: the command's, which os.Stdin was read in place of
	code, _, stderr = c.run("config", "put", "-")
	c.stdin = ""
	if code != exitOK || !strings.Contains(stderr, "unchanged: version 2 of table bucketgate-keys is this document; nothing written") {
		t.Fatalf("the same document again, on stdin: %d %s", code, stderr)
	}
	if list := c.ok("keys", "list"); strings.Contains(list, "config#") || strings.Contains(list, "\nconfig ") || !strings.Contains(list, id+"  invalid: ") {
		t.Fatalf("keys list lists the configuration, or not the key that lost its plan:\n%s", list)
	}

	code, _, stderr = c.run("config", "rollback", "1")
	if code != exitOK || !strings.Contains(stderr, "wrote version 3 to table bucketgate-keys (was 2)") {
		t.Fatalf("rollback: %d %s", code, stderr)
	}
	if doc := c.ok("config", "show"); doc != goldDoc {
		t.Fatalf("after the rollback, show:\n%s\nwant version 1's document", doc)
	}
	if doc := c.ok("config", "show", "--version", "2"); doc != noGoldDoc {
		t.Fatalf("show --version 2:\n%s", doc)
	}
	history := c.ok("config", "history")
	lines := strings.Split(strings.TrimSpace(history), "\n")
	if len(lines) != 4 || !strings.HasPrefix(lines[1], "3        *        20") || !strings.HasSuffix(lines[1], "rollback to version 1") ||
		!strings.HasSuffix(lines[2], "gold retired") || !strings.HasPrefix(lines[3], "1                 20") || !strings.HasSuffix(lines[3], "gold plan") {
		t.Fatalf("history:\n%s", history)
	}
	var versions []configJSON
	if err := json.Unmarshal([]byte(c.ok("config", "history", "--json")), &versions); err != nil || len(versions) != 3 ||
		versions[0].Version != 3 || !versions[0].Current || versions[2].Bytes != len(goldDoc) || versions[1].Current {
		t.Fatalf("history --json: %+v, %v", versions, err)
	}
	c.ok("keys", "set-plan", key, "gold") // gold is back
	items := c.items()
	for _, want := range []string{"id=config ", "id=config#1 ", "id=config#2 ", "id=config#3 "} {
		if !strings.Contains(items+" ", want) {
			t.Errorf("the table does not hold %s:\n%s", strings.TrimSpace(want), items)
		}
	}

	// A document likely not meant as written is written, with a warning saying why.
	code, _, stderr = c.run("config", "put", file(t, "anon.yaml", goldDoc+"anonymous: refuse\n"))
	if code != exitOK || !strings.Contains(stderr, "warning: anonymous: refuse with unknownKeys: ip refuses a request without an API key but lets one with a made-up key through") ||
		!strings.Contains(stderr, "wrote version 4 to table bucketgate-keys (was 3)") {
		t.Fatalf("put of a document with a caveat: %d\n%s", code, stderr)
	}
}

// Two operators put on the same version: one wins, the other fails saying so, and
// nothing is lost: the winner's document is in force with its copy, and the loser
// wrote nothing.
func TestConfigRace(t *testing.T) {
	c := newCLI(t)
	c.ok("keys", "init")
	c.ok("config", "put", file(t, "v1.yaml", goldDoc))
	kt, err := openTable(env{ctx: context.Background(), getenv: func(k string) string { return c.env[k] }}, "", &stack{})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	prepare := func(doc string) configWrite {
		t.Helper()
		cfg, err := registry.LoadDocument([]byte(doc))
		if err != nil {
			t.Fatal(err)
		}
		w, err := kt.prepareConfig(ctx, doc, cfg, "", false, func(string) {})
		if err != nil {
			t.Fatal(err)
		}
		return w
	}
	first, second := prepare(noGoldDoc), prepare(strings.Replace(goldDoc, "300", "400", 1))
	if first.version != 2 || second.version != 2 {
		t.Fatalf("both prepared versions %d and %d, want 2: each read version 1", first.version, second.version)
	}
	if err := kt.commitConfig(ctx, first); err != nil {
		t.Fatalf("the first write: %v", err)
	}
	err = kt.commitConfig(ctx, second)
	if err == nil || !strings.Contains(err.Error(), "the configuration changed while this command ran: it read version 1, and version 2 was written meanwhile; nothing written") {
		t.Fatalf("the second write: %v, want it refused, naming the versions", err)
	}
	if doc := c.ok("config", "show"); doc != noGoldDoc {
		t.Fatalf("in force:\n%s\nwant the winner's", doc)
	}
	if doc := c.ok("config", "show", "--version", "2"); doc != noGoldDoc {
		t.Fatalf("the copy of version 2:\n%s\nwant the winner's", doc)
	}
	if out := c.ok("config", "history"); strings.Count(out, "\n") != 3 {
		t.Fatalf("history:\n%s\nwant versions 2 and 1 only", out)
	}

	// A first document, raced likewise: the table held none when both read.
	c2 := newCLI(t)
	c2.ok("keys", "init")
	kt2, err := openTable(env{ctx: ctx, getenv: func(k string) string { return c2.env[k] }}, "", &stack{})
	if err != nil {
		t.Fatal(err)
	}
	kt = kt2
	first, second = prepare(goldDoc), prepare(noGoldDoc)
	if err := kt.commitConfig(ctx, first); err != nil {
		t.Fatal(err)
	}
	if err := kt.commitConfig(ctx, second); err == nil || !strings.Contains(err.Error(), "it read no document, and version 1 was written meanwhile") {
		t.Fatalf("the second first document: %v", err)
	}
}

// A config put and a write of a key, tenant or account that run at once: neither leaves
// the other's work without a plan unsaid. A tenant written on gold between the put's
// scan and its write is named by the put, which is in force; one whose command checked
// gold against the document before the put and wrote it after is named by its command.
// An identity that --force let the put leave without its plan is not named again.
func TestConfigPutRacesARecordWrite(t *testing.T) {
	c := newCLI(t)
	c.ok("keys", "init")
	gold, noGold := file(t, "gold.yaml", goldDoc), file(t, "no-gold.yaml", noGoldDoc)
	c.ok("config", "put", gold)
	ctx := context.Background()
	open := func() *keyTable {
		t.Helper()
		kt, err := openTable(env{ctx: ctx, getenv: func(k string) string { return c.env[k] }}, "", &stack{})
		if err != nil {
			t.Fatal(err)
		}
		return kt
	}
	prepare := func(kt *keyTable, force bool) configWrite {
		t.Helper()
		cfg, err := registry.LoadDocument([]byte(noGoldDoc))
		if err != nil {
			t.Fatal(err)
		}
		w, err := kt.prepareConfig(ctx, noGoldDoc, cfg, "", force, func(string) {})
		if err != nil {
			t.Fatal(err)
		}
		return w
	}

	kt := open()
	w := prepare(kt, false)
	c.ok("keys", "create", "--tenant", "t-late", "--plan", "gold") // after the put's scan
	err := kt.commitConfig(ctx, w)
	if err == nil || !strings.Contains(err.Error(), "version 2 is in force, but these active keys, tenants or accounts, written while this command ran, have no usable plan under it") ||
		!strings.Contains(err.Error(), "\n  tenant:t-late (plan gold): plan: unknown plan \"gold\"") {
		t.Fatalf("a put whose scan missed a tenant written meanwhile: %v, want it named", err)
	}
	if doc := c.ok("config", "show"); doc != noGoldDoc {
		t.Fatalf("in force:\n%s\nwant the put's document", doc)
	}

	c.ok("config", "put", gold) // version 3
	c.ok("keys", "revoke", "tenant:t-late")
	kt = open()
	if _, err := kt.plans(ctx); err != nil { // the command checks its record against version 3
		t.Fatal(err)
	}
	c.ok("config", "put", noGold) // version 4: no active identity is on gold
	err = kt.put(ctx, registry.Record{ID: "tenant:t-later", Plan: "gold"})
	if err == nil || !strings.Contains(err.Error(), "tenant:t-later is written, but version 4 of the configuration document, written while this command ran, leaves it without a usable plan") ||
		!strings.Contains(err.Error(), `unknown plan "gold"`) {
		t.Fatalf("a tenant checked against version 3 and written after version 4: %v, want it named", err)
	}
	c.ok("keys", "revoke", "tenant:t-later")

	c.ok("config", "put", gold) // version 5
	c.ok("keys", "create", "--tenant", "t-forced", "--plan", "gold")
	kt = open()
	if err := kt.commitConfig(ctx, prepare(kt, true)); err != nil {
		t.Fatalf("a put --force: %v, want the identities it was forced past left unnamed", err)
	}
}

// A document that renames or drops a route's rule which a key's own rule replaces would
// turn that own rule, which limited the route's requests, into a rule of every request
// of the key (and the other way round): put refuses it, naming the key, unless --force.
func TestConfigPutRescopesOwnRules(t *testing.T) {
	c := newCLI(t)
	c.ok("keys", "init")
	const plans = "defaultPlan: free\nplans:\n  free: [{name: burst, capacity: 100, refillPerSecond: 10}]\n"
	upload := plans + "routes:\n  - {method: POST, path: /uploads, rules: [{name: uploads, capacity: 20, refill: 20, per: minute}]}\n"
	c.ok("config", "put", file(t, "v1.yaml", upload))
	key := strings.TrimSpace(c.ok("keys", "create", "--plan", "free", "--rule", "uploads:2:0.01"))
	id := keyID(key)
	c.ok("keys", "create", "--tenant", "t-plain", "--plan", "free")
	for _, tc := range []struct {
		name, doc string
	}{
		{"the route dropped", plans},
		{"the route's rule renamed", strings.Replace(upload, "name: uploads", "name: upload", 1)},
		{"the route's rule on another route", plans + "routes:\n  - {method: POST, path: /uploads}\n  - {method: POST, path: /imports, rules: [{name: uploads, capacity: 20, refill: 20, per: minute}]}\n"},
	} {
		before := c.items()
		code, stdout, stderr := c.run("config", "put", file(t, "v2.yaml", tc.doc))
		want := "and would limit every request"
		if strings.Contains(tc.doc, "/imports") {
			want = "and would limit those of routes[1] alone"
		}
		if code != exitError || stdout != "" || !strings.Contains(stderr, "the document would change which requests the own rules of active keys, tenants or accounts limit (--force writes it anyway") ||
			!strings.Contains(stderr, "\n  "+id+" (plan free): rule uploads limited the requests of routes[0] alone, "+want) || strings.Contains(stderr, "t-plain") {
			t.Errorf("%s: %d\n%s\nwant a refusal naming the key whose own rule would limit every request", tc.name, code, stderr)
		}
		if after := c.items(); after != before {
			t.Errorf("%s: the refused put wrote:\n%s", tc.name, after)
		}
	}
	code, _, stderr := c.run("config", "put", "--force", file(t, "v2.yaml", plans))
	if code != exitOK || !strings.Contains(stderr, "warning: --force: the own rules of these active keys, tenants or accounts limit other requests now:\n  "+id) {
		t.Fatalf("put --force: %d\n%s", code, stderr)
	}
	code, _, stderr = c.run("config", "put", file(t, "v3.yaml", upload))
	if code != exitError || !strings.Contains(stderr, "\n  "+id+" (plan free): rule uploads limited every request, and would limit the requests of routes[0] alone") {
		t.Fatalf("a put that narrows it back: %d\n%s", code, stderr)
	}
}

// A shadow rule added to a plan under the name of an identity's own rule would make
// that own rule shadow (an own rule keeps the shadow mark of the rule it replaces): a
// key's, an account's or a tenant's own limit, enforced until then, would limit nothing.
// put refuses it, naming them, unless --force; a promotion of the shadow rule (it, and
// the own rules with it, enforced) changes nothing they limit.
func TestConfigPutShadowsOwnRules(t *testing.T) {
	c := newCLI(t)
	c.ok("keys", "init")
	const plans = "defaultPlan: free\nplans:\n  free:\n    - {name: burst, capacity: 100, refillPerSecond: 10}\n"
	enforced := file(t, "v1.yaml", plans)
	c.ok("config", "put", enforced)
	key := keyID(strings.TrimSpace(c.ok("keys", "create", "--plan", "free", "--rule", "daily:3:day")))
	c.ok("accounts", "create", "acme", "--plan", "free", "--rule", "daily:5:day")
	c.ok("keys", "create", "--tenant", "t-own", "--plan", "free", "--rule", "daily:4:day")
	c.ok("keys", "create", "--tenant", "t-plain", "--plan", "free")
	shadowDaily := file(t, "v2.yaml", plans+"    - {name: daily, limit: 1000, period: day, shadow: true}\n")
	before := c.items()
	code, stdout, stderr := c.run("config", "put", shadowDaily)
	if code != exitError || stdout != "" || !strings.Contains(stderr, "the document would change which requests the own rules of active keys, tenants or accounts limit (--force writes it anyway") ||
		strings.Contains(stderr, "t-plain") {
		t.Fatalf("exit %d\n%s\nwant a refusal", code, stderr)
	}
	for _, id := range []string{key, "account:acme", "tenant:t-own"} {
		if !strings.Contains(stderr, "\n  "+id+" (plan free): rule daily limited its requests, and would limit none: the rule daily it replaces is shadow") {
			t.Errorf("%s not named:\n%s", id, stderr)
		}
	}
	if after := c.items(); after != before {
		t.Errorf("the refused put wrote:\n%s", after)
	}
	code, _, stderr = c.run("config", "put", "--force", shadowDaily)
	if code != exitOK || !strings.Contains(stderr, "warning: --force: the own rules of these active keys, tenants or accounts limit other requests now:\n  ") {
		t.Fatalf("put --force: %d\n%s", code, stderr)
	}
	c.ok("config", "put", file(t, "v3.yaml", plans+"    - {name: daily, limit: 1000, period: day}\n")) // promoted: the own rules enforced again
}

// An own rule that replaces a shadow rule is shadow too: override, and create with
// --rule, say so of each such rule they write, a key's, an account's or a tenant's, and
// of no other.
func TestOverrideOfAShadowRuleNoted(t *testing.T) {
	c := newCLI(t)
	c.ok("keys", "init")
	c.ok("config", "put", file(t, "v1.yaml", "defaultPlan: free\nplans:\n  free:\n    - {name: burst, capacity: 100, refillPerSecond: 10}\n    - {name: daily, limit: 1000, period: day, shadow: true}\n"))
	key := keyID(strings.TrimSpace(c.ok("keys", "create", "--plan", "free")))
	c.ok("accounts", "create", "acme", "--plan", "free")
	c.ok("keys", "create", "--tenant", "t-own", "--plan", "free")
	member := keyID(strings.TrimSpace(c.ok("keys", "create", "--account", "acme")))
	for _, tc := range []struct {
		name string
		args []string
		note bool
	}{
		{"a key's, of the shadow rule", []string{"keys", "override", key, "--rule", "daily:3:day"}, true},
		{"a key's, of an enforced rule", []string{"keys", "override", key, "--rule", "burst:5:1"}, false},
		{"an account's", []string{"accounts", "override", "acme", "--rule", "daily:5:day"}, true},
		{"a tenant's", []string{"keys", "override", "tenant:t-own", "--rule", "daily:4:day"}, true},
		{"a key of an account's, its own", []string{"keys", "override", member, "--rule", "daily:2:day"}, false},
		{"a key created with it", []string{"keys", "create", "--plan", "free", "--rule", "daily:3:day"}, true},
		{"a key created with an enforced rule", []string{"keys", "create", "--plan", "free", "--rule", "burst:5:1"}, false},
		{"a key read from stdin created with it", []string{"keys", "create", "--plan", "free", "--rule", "daily:3:day", "--key", "-"}, true},
		{"a tenant created with it", []string{"keys", "create", "--tenant", "t-new", "--plan", "free", "--rule", "daily:4:day"}, true},
		{"an account created with it", []string{"accounts", "create", "acme2", "--plan", "free", "--rule", "daily:5:day"}, true},
		{"a key of an account created with its own", []string{"keys", "create", "--account", "acme", "--rule", "daily:2:day"}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c.stdin = "legacy_9fK2mQx7Lp4Rz8Vt1Wc6Yb3N\n"
			code, _, stderr := c.run(tc.args...)
			note := strings.Contains(stderr, "note: rule daily replaces the shadow rule daily (of the plan, or of a route), so it is shadow for ")
			if code != exitOK || note != tc.note {
				t.Fatalf("exit %d, note %v, want %v:\n%s", code, note, tc.note, stderr)
			}
		})
	}
}

// keys show and accounts show (and the lists) mark an own rule that replaces a shadow
// rule of the plan (or of a route, but for a tenant's), and so limits nothing: "(shadow)"
// after it in the text, "shadow": true in --json, as override noted it; never a key of
// an account's own rule, always enforced. They printed it as any own rule.
func TestShowMarksShadowedOwnRules(t *testing.T) {
	c := newCLI(t)
	c.ok("keys", "init")
	c.ok("config", "put", file(t, "v1.yaml", "defaultPlan: free\nplans:\n  free:\n    - {name: burst, capacity: 100, refillPerSecond: 10}\n    - {name: daily, limit: 1000, period: day, shadow: true}\n"))
	key := keyID(strings.TrimSpace(c.ok("keys", "create", "--plan", "free", "--rule", "daily:3:day", "--rule", "burst:5:1")))
	c.ok("accounts", "create", "acme", "--plan", "free", "--rule", "daily:5:day")
	c.ok("keys", "create", "--tenant", "t-own", "--plan", "free", "--rule", "daily:4:day")
	member := keyID(strings.TrimSpace(c.ok("keys", "create", "--account", "acme", "--rule", "daily:2:day")))
	for _, tc := range []struct {
		name, want string // want: the rules line's value
		show       []string
		shadow     map[string]bool // --json: rule -> shadow
	}{
		{"a key's", "daily:3:day (shadow) burst:5:1", []string{"keys", "show", key}, map[string]bool{"daily": true, "burst": false}},
		{"an account's", "daily:5:day (shadow)", []string{"accounts", "show", "acme"}, map[string]bool{"daily": true}},
		{"a tenant's", "daily:4:day (shadow)", []string{"keys", "show", "tenant:t-own"}, map[string]bool{"daily": true}},
		{"a key of an account's, its own", "daily:2:day", []string{"keys", "show", member}, map[string]bool{"daily": false}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c.t = t
			if out := c.ok(tc.show...); !regexp.MustCompile(`(?m)^rules +` + regexp.QuoteMeta(tc.want) + `$`).MatchString(out) {
				t.Fatalf("bucketgate %s:\n%s\nwant the line rules %s", strings.Join(tc.show, " "), out, tc.want)
			}
			var got struct {
				Rules []struct {
					Name   string `json:"name"`
					Shadow bool   `json:"shadow"`
				} `json:"rules"`
			}
			out := c.ok(append(tc.show, "--json")...)
			if err := json.Unmarshal([]byte(out), &got); err != nil {
				t.Fatal(err)
			}
			shadow := map[string]bool{}
			for _, r := range got.Rules {
				shadow[r.Name] = r.Shadow
			}
			if !maps.Equal(shadow, tc.shadow) {
				t.Fatalf("bucketgate %s --json: rules' shadow %v, want %v:\n%s", strings.Join(tc.show, " "), shadow, tc.shadow, out)
			}
		})
	}
	c.t = t
	for _, list := range [][]string{{"keys", "list"}, {"accounts", "list"}} {
		if out := c.ok(list...); !strings.Contains(out, ":day (shadow)") || strings.Contains(out, "daily:2:day (shadow)") {
			t.Fatalf("bucketgate %s: want the shadow own rules marked, a key of an account's not:\n%s", strings.Join(list, " "), out)
		}
	}
}

// Bad input: put exits 1 with the loader's error naming the field and writes nothing;
// so do the other commands' mistakes.
func TestConfigBadInput(t *testing.T) {
	c := newCLI(t)
	c.ok("keys", "init")
	c.ok("config", "put", file(t, "v1.yaml", goldDoc))
	before := c.items()
	madeKey := "bg_" + strings.Repeat("Q", 42) + "w"
	big := goldDoc + "#" + strings.Repeat("x", config.MaxDocument) + "\n"
	huge := goldDoc + "#" + strings.Repeat("x", maxItemBytes) + "\n"
	tests := []struct {
		name string
		code int
		want string
		args []string
	}{
		{"too large for the loader", exitError, "rate-limit configuration: document is 262349 bytes, want at most 262144: nothing written", []string{"config", "put", file(t, "big.yaml", big)}},
		{"too large for the item", exitError, "more than 409600 bytes: a registry item holds at most 400 KB", []string{"config", "put", file(t, "huge.yaml", huge)}},
		{"invalid YAML", exitError, "rate-limit configuration: ", []string{"config", "put", file(t, "bad.yaml", "defaultPlan: [free\n")}},
		{"invalid JSON", exitError, "rate-limit configuration: ", []string{"config", "put", file(t, "bad.json", `{"defaultPlan": "free", "plans": {`)}},
		{"unknown field", exitError, "plan (line 6, column 1): unknown field; did you mean plans?: nothing written", []string{"config", "put", file(t, "typo.yaml", goldDoc+"plan: x\n")}},
		{"rule out of range", exitError, "plans.free[0]", []string{"config", "put", file(t, "zero.yaml", strings.Replace(goldDoc, "capacity: 10,", "capacity: 0,", 1))}},
		{"keys in the document", exitError, "keys, tenants: a document in the registry table lists no keys or tenants", []string{"config", "put", file(t, "keys.yaml", goldDoc+"tenants: {t1: free}\n")}},
		{"not UTF-8", exitError, "the document is not UTF-8 text", []string{"config", "put", file(t, "latin1.yaml", goldDoc+"# caf\xe9\n")}},
		{"empty", exitError, "rate-limit configuration", []string{"config", "put", file(t, "empty.yaml", "")}},
		{"no file", exitError, "no-such.yaml: no such file", []string{"config", "put", filepath.Join(t.TempDir(), "no-such.yaml")}},
		// A key bucketgate made anywhere in a document (a comment, a route's path) went
		// into the table, which every function reads, and out of it whole on config
		// show: refused, naming its line, never quoting it.
		{"a key in a comment", exitError, "comment.yaml: line 6 holds an API key bucketgate made (bg_...)", []string{"config", "put", file(t, "comment.yaml", goldDoc+"# acme's key: "+madeKey+"\n")}},
		{"a key in a route's path", exitError, "path.yaml: line 6 holds an API key bucketgate made (bg_...)", []string{"config", "put", file(t, "path.yaml", goldDoc+"routes: [{path: /v1/"+madeKey+"}]\n")}},
		// So was one glued to other characters, or cut short, which config show masks:
		// refused, as the mask config show prints in its place is.
		{"a key glued in a comment", exitError, "glued.yaml: line 6 holds what may be an API key bucketgate made, or part of one (bg_ and 22 or more base64url characters: bg_...)", []string{"config", "put", file(t, "glued.yaml", goldDoc+"# acme's key: x"+madeKey+"\n")}},
		{"a key cut short in a route's path", exitError, "cut.yaml: line 6 holds what may be an API key bucketgate made", []string{"config", "put", file(t, "cut.yaml", goldDoc+"routes: [{path: /v1/"+madeKey[:30]+"}]\n")}},
		{"the mask config show prints", exitError, "masked.yaml: line 6 holds bg_..., which config show prints in place of what may be an API key bucketgate made: write what the line should hold", []string{"config", "put", file(t, "masked.yaml", goldDoc+"routes: [{path: /v1/bg_...}]\n")}},
		// A 0 beside a bucket's numbers, which an earlier bucketgate read as left out: the
		// functions still load a stored document with one (a warning), put refuses it.
		{"concurrency 0 beside a bucket", exitError, "zero.yaml: rate-limit configuration: plans.free[0].concurrency (line 3, column 71): 0 beside the rule's other numbers", []string{"config", "put", file(t, "zero.yaml", strings.Replace(goldDoc, "refillPerSecond: 1}", "refillPerSecond: 1, concurrency: 0}", 1))}},
		{"refillPerSecond that rounds to 0 beside a refill", exitError, `tiny.yaml: rate-limit configuration: plans.free[0].refillPerSecond (line 3, column 80): "1e-400", which rounds to 0, beside the rule's other numbers`, []string{"config", "put", file(t, "tiny.yaml", strings.Replace(goldDoc, "refillPerSecond: 1}", "refill: 60, per: minute, refillPerSecond: 1e-400}", 1))}},
		{"a rule twice in a route", exitError, "twice.yaml: rate-limit configuration: routes[0].rules[1] (line 6, column 73): rule u appears twice in the route", []string{"config", "put", file(t, "twice.yaml", goldDoc+"routes: [{path: /x, rules: [{name: u, capacity: 9, refillPerSecond: 1}, {name: u, capacity: 9, refillPerSecond: 1}]}]\n")}},
		{"no FILE", exitUsage, "config put: want 1 argument(s), got 0", []string{"config", "put"}},
		{"an empty FILE", exitUsage, "config put: FILE is empty: name a file, or - for stdin", []string{"config", "put", ""}}, // was exit 1, "open : no such file or directory"
		{"unknown command", exitUsage, `config: unknown command "get": want history, put, rollback, show`, []string{"config", "get"}},
		{"rollback to nothing", exitError, "no such item: table bucketgate-keys holds no version 7", []string{"config", "rollback", "7"}},
		{"rollback to no number", exitUsage, `config rollback: "latest": want a version, 1 or more`, []string{"config", "rollback", "latest"}},
		// Read as Go reads a number, 010 was version 8, where config rollback 010 is 10.
		{"show a zero-padded version", exitUsage, `invalid value "010" for flag -version: "010": want a whole decimal number`, []string{"config", "show", "--version", "010"}},
		{"roll back to a zero-padded version", exitUsage, `config rollback: "010": want a version, 1 or more`, []string{"config", "rollback", "010"}},
		{"show version 0", exitUsage, "config show: --version 0: want 1 or more", []string{"config", "show", "--version", "0"}},
		{"show a version not there", exitError, "holds no version 9", []string{"config", "show", "--version", "9"}},
		{"note twice", exitUsage, "given twice", []string{"config", "put", file(t, "v.yaml", noGoldDoc), "--note", "a", "--note", "b"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c.t = t
			c.fails(tc.code, tc.want, tc.args...)
		})
	}
	c.t = t
	if after := c.items(); len(after) != len(before) {
		t.Fatalf("bad input wrote to the table:\nbefore %s\nafter  %s", before, after)
	}
}

// Items written by hand with the wrong types are documents that do not load: the CLI
// says so, naming the attribute, refuses to check plans against them, cannot roll back
// to one, and put replaces the item in force with the next version.
func TestConfigHandWrittenItems(t *testing.T) {
	c := newCLI(t)
	c.ok("keys", "init")
	c.ok("config", "put", file(t, "v1.yaml", goldDoc))
	put := func(item map[string]types.AttributeValue) {
		t.Helper()
		c.put(item)
	}
	s := func(v string) types.AttributeValue { return &types.AttributeValueMemberS{Value: v} }
	n := func(v string) types.AttributeValue { return &types.AttributeValueMemberN{Value: v} }
	put(map[string]types.AttributeValue{"id": s("config"), "document": s(noGoldDoc), "version": s("4")})
	put(map[string]types.AttributeValue{"id": s("config#2"), "document": n("2"), "version": n("2")})
	put(map[string]types.AttributeValue{"id": s("config#3"), "document": s(goldDoc + "routs: []\n"), "version": n("3")})

	c.fails(exitError, "invalid registry item config: attribute version: got a string (S), want a number (N)", "config", "show")
	c.fails(exitError, "the configuration document of table bucketgate-keys cannot be read: invalid registry item config: attribute version", "keys", "create", "--plan", "pro")
	c.fails(exitError, "attribute document: got a number (N), want a string (S)", "config", "rollback", "2")
	c.fails(exitError, "configuration version 3 (config#3): rate-limit configuration: routs (line 6, column 1): unknown field; did you mean routes?: nothing written", "config", "rollback", "3")
	if out := c.ok("config", "history"); !strings.Contains(out, "invalid: invalid registry item config#2: attribute document") || !strings.Contains(out, "\n3 ") {
		t.Fatalf("history with hand-written copies:\n%s", out)
	}
	code, _, stderr := c.run("config", "put", file(t, "v.yaml", noGoldDoc))
	if code != exitOK || !strings.Contains(stderr, "wrote version 5 to table bucketgate-keys (was 4)") {
		t.Fatalf("put over a hand-written item: %d %s; want version 5, above every version the table holds", code, stderr)
	}
	if doc := c.ok("config", "show"); doc != noGoldDoc {
		t.Fatalf("after the put:\n%s", doc)
	}
	c.ok("keys", "create", "--plan", "pro")
}

// A configuration item that does not load (written by hand, or by hand damaged) leaves
// the lists and shows of the table working: they warn that nothing is checked against
// the plans, and print every item, as keys show does.
func TestListsWhenTheDocumentDoesNotLoad(t *testing.T) {
	c := newCLI(t)
	c.ok("keys", "init")
	c.ok("accounts", "create", "acme", "--plan", "pro")
	key := keyID(strings.TrimSpace(c.ok("keys", "create", "--plan", "pro")))
	s := func(v string) types.AttributeValue { return &types.AttributeValueMemberS{Value: v} }
	n := func(v string) types.AttributeValue { return &types.AttributeValueMemberN{Value: v} }
	items := []struct {
		name string
		item map[string]types.AttributeValue
		want string // in the warning
	}{
		{"an item of the wrong shape", map[string]types.AttributeValue{"id": s("config"), "document": s(goldDoc), "version": s("4")},
			"invalid registry item config: attribute version: got a string (S), want a number (N)"},
		{"a document that does not load", map[string]types.AttributeValue{"id": s("config"), "document": s(goldDoc + "routs: []\n"), "version": n("4")},
			"routs (line 6, column 1): unknown field"},
	}
	commands := []struct {
		name string
		args []string
		want string // on stdout
	}{
		{"keys list", []string{"keys", "list"}, key + "  pro"},
		{"keys list --json", []string{"keys", "list", "--json"}, `"id": "` + key + `"`},
		{"accounts list", []string{"accounts", "list"}, "account:acme  pro"},
		{"keys show", []string{"keys", "show", key}, "id         " + key + "\n"},
		{"accounts show", []string{"accounts", "show", "acme"}, "id         account:acme\n"},
	}
	for _, it := range items {
		c.put(it.item)
		for _, cmd := range commands {
			t.Run(it.name+"/"+cmd.name, func(t *testing.T) {
				code, stdout, stderr := c.run(cmd.args...)
				if code != exitOK || !strings.Contains(stdout, cmd.want) || !strings.HasPrefix(stderr, "warning: ") ||
					!strings.Contains(stderr, "not checked against the plans: ") || !strings.Contains(stderr, it.want) {
					t.Fatalf("bucketgate %s: exit %d\nstdout %s\nstderr %s\nwant exit 0, %q, and a warning saying %q", strings.Join(cmd.args, " "), code, stdout, stderr, cmd.want, it.want)
				}
			})
		}
	}
}

// With REGISTRY_TABLE, buckets --plan names a plan of the table's document: a plan it
// lacks is refused before the check function is invoked.
func TestBucketsPlanFromTheTable(t *testing.T) {
	c := newCLI(t)
	c.ok("keys", "init")
	c.env[envCheckFunction] = "no-such-function"
	c.ok("config", "put", file(t, "v.yaml", noGoldDoc))
	c.fails(exitError, `unknown plan "gold": not in version 1 of the configuration document of table bucketgate-keys (configured: free, pro)`,
		"buckets", "show", "--plan", "gold", "ip:192.0.2.1")
}

// A plan change that gives a key's or an account's own rule another reach (the new plan
// has a rule of its name, which a route's had alone, or the other way round) is refused
// as config put refuses a document that would, naming the rule, unless --force; a
// tenant's own rules have no route to reach, and a plan change with none is no change.
func TestSetPlanRescopesOwnRules(t *testing.T) {
	c := newCLI(t)
	c.ok("keys", "init")
	const uploads = "{name: uploads, capacity: 20, refill: 20, per: minute}"
	c.ok("config", "put", file(t, "v1.yaml", "defaultPlan: free\nplans:\n  free: [{name: burst, capacity: 100, refillPerSecond: 10}]\n"+
		"  pro: [{name: burst, capacity: 100, refillPerSecond: 10}, "+uploads+"]\n"+
		"routes:\n  - {method: POST, path: /uploads, rules: ["+uploads+"]}\n"))
	key := strings.TrimSpace(c.ok("keys", "create", "--plan", "free", "--rule", "uploads:2:0.01"))
	c.ok("accounts", "create", "acme", "--plan", "pro", "--rule", "uploads:3:0.01")
	c.ok("keys", "create", "--tenant", "t-own", "--plan", "free", "--rule", "uploads:2:0.01")
	plain := strings.TrimSpace(c.ok("keys", "create", "--plan", "free"))
	expired := keyID(strings.TrimSpace(c.ok("keys", "create", "--plan", "free", "--rule", "uploads:2:0.01")))
	c.ok("keys", "expire", expired, "2021-01-01") // keys expire makes it active again under the plan set now
	for _, tc := range []struct {
		name  string
		group string
		item  string
		plan  string
		want  string // the refusal's line; "" for none
	}{
		{"a key's route rule onto every request", "keys", key, "pro", "\n  " + keyID(key) + " (plan pro, was free): rule uploads limited the requests of routes[0] alone, and would limit every request"},
		{"an expired key's", "keys", expired, "pro", "\n  " + expired + " (plan pro, was free): rule uploads limited the requests of routes[0] alone, and would limit every request"},
		{"an account's plan rule onto a route", "accounts", "acme", "free", "\n  account:acme (plan free, was pro): rule uploads limited every request, and would limit the requests of routes[0] alone"},
		{"a tenant", "keys", "tenant:t-own", "pro", ""},
		{"no own rule", "keys", plain, "pro", ""},
	} {
		c.refusesReach(t, tc.name, tc.want, tc.group, "set-plan", tc.item, tc.plan)
	}
}

// refusesReach runs the command args: with want "", it must pass; else it must refuse
// the change of an own rule's reach naming want, write nothing, and pass with --force,
// warning of the same.
func (c *cli) refusesReach(t *testing.T, name, want string, args ...string) {
	t.Helper()
	before := c.items()
	code, stdout, stderr := c.run(args...)
	switch {
	case want == "" && code != exitOK:
		t.Errorf("%s: exit %d\n%s", name, code, stderr)
	case want == "":
	case code != exitError || stdout != "" || !strings.Contains(stderr, "would change which requests the own rules of ") || !strings.Contains(stderr, "(--force sets it anyway") || !strings.Contains(stderr, want):
		t.Errorf("%s: exit %d\n%s\nwant a refusal naming %q", name, code, stderr, want)
	case c.items() != before:
		t.Errorf("%s: the refused %s wrote:\n%s", name, args[1], c.items())
	default:
		code, _, stderr = c.run(append(args, "--force")...)
		if code != exitOK || !strings.Contains(stderr, "warning: --force: the own rules of ") || !strings.Contains(stderr, want) {
			t.Errorf("%s: %s --force: exit %d\n%s", name, args[1], code, stderr)
		}
	}
}

// An expired key or account made active again by expire: config put passed it over
// while it was not active, so the change compares the reach of its own rules under the
// document in force when it expired and under the one in force now, and refuses a
// change of it as set-plan does, naming the rule, unless --force.
func TestExpireBackRescopesOwnRules(t *testing.T) {
	c := newCLI(t)
	c.ok("keys", "init")
	const uploads = "{name: uploads, capacity: 20, refill: 20, per: minute}"
	v1 := "defaultPlan: free\nplans:\n  free: [{name: burst, capacity: 100, refillPerSecond: 10}]\n" +
		"routes:\n  - {method: POST, path: /uploads, rules: [" + uploads + "]}\n"
	c.ok("config", "put", file(t, "v1.yaml", v1))
	key := keyID(strings.TrimSpace(c.ok("keys", "create", "--plan", "free", "--rule", "uploads:2:0.01")))
	c.ok("accounts", "create", "acme", "--plan", "free", "--rule", "uploads:3:0.01")
	c.ok("keys", "create", "--tenant", "t-own", "--plan", "free", "--rule", "uploads:2:0.01")
	plain := keyID(strings.TrimSpace(c.ok("keys", "create", "--plan", "free")))
	for _, args := range [][]string{{"keys", "expire", key}, {"accounts", "expire", "acme"}, {"keys", "expire", "tenant:t-own"}, {"keys", "expire", plain}} {
		c.ok(append(args, "2021-01-01")...)
	}
	c.ok("config", "put", file(t, "v2.yaml", strings.Replace(v1, "name: uploads", "name: upload", 1)))
	// Version 1 was in force when they expired.
	copy1 := registry.StoredConfig{ID: registry.VersionID(1), Document: v1, Version: 1, UpdatedAt: time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC)}
	c.put(copy1.Item())
	for _, tc := range []struct {
		name  string
		group string
		item  string
		want  string // the refusal's line; "" for none
	}{
		{"a key", "keys", key, "\n  " + key + " (plan free): rule uploads limited the requests of routes[0] alone, and would limit every request"},
		{"an account", "accounts", "acme", "\n  account:acme (plan free): rule uploads limited the requests of routes[0] alone, and would limit every request"},
		{"a tenant", "keys", "tenant:t-own", ""},
		{"no own rule", "keys", plain, ""},
	} {
		c.refusesReach(t, tc.name, tc.want, tc.group, "expire", tc.item, "never")
	}
}

// A config put and a write of a key with an own rule named like a route's that run at
// once: neither leaves the change of the rule's reach unsaid. A key written between the
// put's scan and its write is named by the put; one whose command checked it against
// the document before the put and wrote it after, by its command.
func TestConfigPutRacesAnOwnRulesReach(t *testing.T) {
	c := newCLI(t)
	c.ok("keys", "init")
	const plans = "defaultPlan: free\nplans:\n  free: [{name: burst, capacity: 100, refillPerSecond: 10}]\n"
	upload := plans + "routes:\n  - {method: POST, path: /uploads, rules: [{name: uploads, capacity: 20, refill: 20, per: minute}]}\n"
	c.ok("config", "put", file(t, "v1.yaml", upload))
	ctx := context.Background()
	kt, err := openTable(env{ctx: ctx, getenv: func(k string) string { return c.env[k] }}, "", &stack{})
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := registry.LoadDocument([]byte(plans))
	if err != nil {
		t.Fatal(err)
	}
	w, err := kt.prepareConfig(ctx, plans, cfg, "", false, func(string) {})
	if err != nil {
		t.Fatal(err)
	}
	late := keyID(strings.TrimSpace(c.ok("keys", "create", "--plan", "free", "--rule", "uploads:2:0.01"))) // after the put's scan
	err = kt.commitConfig(ctx, w)
	if err == nil || !strings.Contains(err.Error(), "version 2 is in force, but it changes which requests the own rules of these active keys, tenants or accounts, written while this command ran, limit") ||
		!strings.Contains(err.Error(), "\n  "+late+" (plan free): rule uploads limited the requests of routes[0] alone, and would limit every request") {
		t.Fatalf("a put whose scan missed a key written meanwhile: %v, want it named", err)
	}

	c.ok("keys", "revoke", late)
	kt, err = openTable(env{ctx: ctx, getenv: func(k string) string { return c.env[k] }}, "", &stack{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := kt.plans(ctx); err != nil { // the command checks its record against version 2
		t.Fatal(err)
	}
	c.ok("config", "put", file(t, "v3.yaml", upload)) // no active key has such a rule
	key, err := newKey()
	if err != nil {
		t.Fatal(err)
	}
	err = kt.put(ctx, registry.Record{ID: keyID(key), Plan: "free", Rules: []bucketgate.Rule{{Name: "uploads", Capacity: 2, RefillPerSecond: 0.01}}})
	if err == nil || !strings.Contains(err.Error(), keyID(key)+" is written, but version 3 of the configuration document, written while this command ran, changes which requests its own rules limit") ||
		!strings.Contains(err.Error(), "rule uploads limited every request, and would limit the requests of routes[0] alone") {
		t.Fatalf("a key checked against version 2 and written after version 3: %v, want it named", err)
	}
}

// An expire that makes a key with own rules active again finds the document in force
// when it expired from the copies' times, which are whole seconds: a copy written in
// the second the key expired was written after (the key stopped working at the start of
// that second, and config put passed it over), so its change is refused as any other.
// When the copies cannot say what was in force then (the one in force then deleted or
// unreadable; no document in the table yet, and the functions' own unknown without
// --stack), the expire is written with a warning that says the reach of its own rules
// was not checked, never silently.
func TestExpireBackChecksTheCopiesInForce(t *testing.T) {
	expired := time.Date(2021, 1, 1, 0, 0, 0, 0, time.UTC)
	v1 := "defaultPlan: free\nplans:\n  free: [{name: burst, capacity: 100, refillPerSecond: 10}]\n" +
		"routes:\n  - {method: POST, path: /uploads, rules: [{name: uploads, capacity: 20, refill: 20, per: minute}]}\n"
	v2 := strings.Replace(v1, "name: uploads", "name: upload", 1)
	copyOf := func(v int64, doc string, at time.Time) map[string]types.AttributeValue {
		return registry.StoredConfig{ID: registry.VersionID(v), Document: doc, Version: v, UpdatedAt: at}.Item()
	}
	const refused = "rule uploads limited the requests of routes[0] alone, and would limit every request"
	for _, tc := range []struct {
		name   string
		first  bool                                      // the key expired before the table held a document
		copies map[int64]map[string]types.AttributeValue // what the copies become; nil: deleted
		want   string                                    // refused, written, or warned: written with the warning
	}{
		{"a put in the second it expired", false, map[int64]map[string]types.AttributeValue{
			1: copyOf(1, v1, expired.Add(-time.Hour)), 2: copyOf(2, v2, expired)}, "refused"},
		{"a put the second before", false, map[int64]map[string]types.AttributeValue{
			1: copyOf(1, v1, expired.Add(-time.Hour)), 2: copyOf(2, v2, expired.Add(-time.Second))}, "written"},
		{"the copy in force then deleted", false, map[int64]map[string]types.AttributeValue{
			1: nil, 2: copyOf(2, v2, expired.Add(time.Hour))}, "warned"},
		{"the copy in force then unreadable", false, map[int64]map[string]types.AttributeValue{
			1: {"id": &types.AttributeValueMemberS{Value: registry.VersionID(1)}, "document": &types.AttributeValueMemberS{Value: v1}, "version": &types.AttributeValueMemberS{Value: "one"}},
			2: copyOf(2, v2, expired.Add(time.Hour))}, "warned"},
		{"no document then, the functions' own unknown", true, map[int64]map[string]types.AttributeValue{
			1: copyOf(1, v2, expired.Add(time.Hour))}, "warned"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := newCLI(t)
			c.ok("keys", "init")
			c.env[settings.EnvConfigInline] = v1 // the functions' own, as this shell knows it
			if !tc.first {
				c.ok("config", "put", file(t, "v1.yaml", v1))
			}
			key := keyID(strings.TrimSpace(c.ok("keys", "create", "--plan", "free", "--rule", "uploads:2:0.01")))
			c.ok("keys", "expire", key, expired.Format(time.RFC3339))
			c.ok("config", "put", file(t, "v2.yaml", v2))
			for v, item := range tc.copies {
				var err error
				if item == nil {
					_, err = c.db.DeleteItem(context.Background(), &dynamodb.DeleteItemInput{TableName: aws.String(table),
						Key: map[string]types.AttributeValue{registry.KeyAttribute: &types.AttributeValueMemberS{Value: registry.VersionID(v)}}})
				} else {
					_, err = c.db.PutItem(context.Background(), &dynamodb.PutItemInput{TableName: aws.String(table), Item: item})
				}
				if err != nil {
					t.Fatal(err)
				}
			}
			code, _, stderr := c.run("keys", "expire", key, "never")
			warned := strings.Contains(stderr, "warning: not checked whether the documents written while "+key+" was expired")
			switch {
			case tc.want == "refused" && (code != exitError || !strings.Contains(stderr, refused)):
				t.Fatalf("exit %d\n%s\nwant the expire refused naming %q", code, stderr, refused)
			case tc.want == "written" && (code != exitOK || strings.Contains(stderr, "warning")):
				t.Fatalf("exit %d\n%s\nwant it written: the document in force when it expired is the one in force now", code, stderr)
			case tc.want == "warned" && (code != exitOK || !warned):
				t.Fatalf("exit %d\n%s\nwant it written with a warning that the reach of its own rules was not checked", code, stderr)
			}
		})
	}
}

// Items written by hand whose plan, owner or note, or a configuration copy whose note,
// holds an API key bucketgate made are shown with the key masked, by every command that
// prints them, in text and JSON alike: stored data is input. They printed it whole (the
// note of config show and history, the plan of keys show, accounts show and keys list,
// the plan of a record that config put names).
func TestStoredTextMasksMadeKeys(t *testing.T) {
	key := "bg_" + strings.Repeat("Q", 42) + "w"
	c := withAccounts(t, "acme")
	c.ok("config", "put", file(t, "gold.yaml", goldDoc))
	s := func(v string) types.AttributeValue { return &types.AttributeValueMemberS{Value: v} }
	n := func(v string) types.AttributeValue { return &types.AttributeValueMemberN{Value: v} }
	id := "key:" + bucketgate.KeyDigest("k")
	c.put(map[string]types.AttributeValue{"id": s(id), "plan": s(key), "owner": s("ops " + key), "note": s("see " + key)},
		map[string]types.AttributeValue{"id": s("account:acme"), "plan": s(key), "note": s("see " + key)},
		map[string]types.AttributeValue{"id": s("config"), "document": s(goldDoc), "version": n("1"), "note": s("why " + key)},
		map[string]types.AttributeValue{"id": s("config#1"), "document": s(goldDoc), "version": n("1"), "note": s("why " + key)})
	for _, tc := range []struct {
		name string
		args []string
		code int
		want string // in the output, the masked key's place
	}{
		{"keys list", []string{"keys", "list"}, exitOK, "bg_..."},
		{"keys list --json", []string{"keys", "list", "--json"}, exitOK, `"note": "see bg_..."`},
		{"keys show", []string{"keys", "show", id}, exitOK, "plan       bg_...\n"},
		{"keys show --json", []string{"keys", "show", "--json", id}, exitOK, `"plan": "bg_..."`},
		{"accounts list", []string{"accounts", "list"}, exitOK, "bg_..."},
		{"accounts show", []string{"accounts", "show", "acme"}, exitOK, "plan       bg_...\n"},
		{"accounts show --json", []string{"accounts", "show", "--json", "acme"}, exitOK, `"plan": "bg_..."`},
		{"config show", []string{"config", "show"}, exitOK, ": why bg_...\n"},
		{"config show --json", []string{"config", "show", "--json"}, exitOK, `"note": "why bg_..."`},
		{"config history", []string{"config", "history"}, exitOK, "why bg_...\n"},
		{"config history --json", []string{"config", "history", "--json"}, exitOK, `"note": "why bg_..."`},
		{"config put", []string{"config", "put", file(t, "no-gold.yaml", noGoldDoc)}, exitError, "(plan bg_...)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, stdout, stderr := c.run(tc.args...)
			if out := stdout + stderr; code != tc.code || strings.Contains(out, key[:12]) || !strings.Contains(out, tc.want) {
				t.Fatalf("bucketgate %s: exit %d\n%s\nwant exit %d, %q, the key masked", strings.Join(tc.args, " "), code, out, tc.code, tc.want)
			}
		})
	}
}

// A stored document holding an API key bucketgate made (written before config put
// refused one, or by hand) is shown with the key masked (bg_...), in the text and the
// JSON alike, and a warning on stderr saying to put a version without it; so is the key
// in the warning of a document that does not load. config show printed the key whole.
func TestConfigShowMasksAKey(t *testing.T) {
	c := newCLI(t)
	c.ok("keys", "init")
	key := "bg_" + strings.Repeat("Q", 42) + "w"
	for _, tc := range []struct{ name, doc, want string }{
		{"in a comment", goldDoc + "# acme's key: " + key + "\n", "# acme's key: bg_..."},
		{"as a field the loader refuses", goldDoc + key + ": 1\n", "warning: configuration version 1 (config): rate-limit configuration: bg_... (line 6, column 1): unknown field"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c.t = t
			c.put(map[string]types.AttributeValue{"id": &types.AttributeValueMemberS{Value: "config"}, "document": &types.AttributeValueMemberS{Value: tc.doc}, "version": &types.AttributeValueMemberN{Value: "1"}})
			for _, args := range [][]string{{"config", "show"}, {"config", "show", "--json"}} {
				code, stdout, stderr := c.run(args...)
				if code != exitOK || strings.Contains(stdout+stderr, key[3:]) || !strings.Contains(stdout+stderr, tc.want) ||
					!strings.Contains(stderr, "warning: line 6 of the document holds an API key bucketgate made (bg_...), shown masked, which config put refuses") {
					t.Fatalf("bucketgate %s: exit %d\n%s%s\nwant the document with the key masked, %q, and a warning naming its line", strings.Join(args, " "), code, stdout, stderr, tc.want)
				}
			}
		})
	}
}

// config show prints every document config put takes as it is, so that a document
// shown, edited and put again changes nothing but the edit (put again unedited, nothing
// at all), whatever near misses of an API key bucketgate made it holds (bg_ and 21
// base64url characters, the most that are never masked; a route's path of bg_ and a
// name; a digest; another prefix). A document holding one, or what may be part of one,
// which config show prints masked (stored before config put refused it, or by hand), put
// back as shown, is refused, naming the mask's line: taken, a route's path of a key
// became /v1/bg_..., which config put took.
func TestConfigShowPutRoundTrip(t *testing.T) {
	c := newCLI(t)
	c.ok("keys", "init")
	key := "bg_" + strings.Repeat("Q", 42) + "w"
	route := func(path string) string {
		return goldDoc + "routes:\n  - {path: " + path + ", rules: [{name: search, capacity: 5, refillPerSecond: 1}]}\n"
	}
	for _, tc := range []struct{ name, doc string }{
		{"bg_ and 21 characters in a route's path", route("/v1/" + key[:3+21] + "/x")},
		{"bg_ and a name in a route's path", route("/v1/bg_tenant-42/**")},
		{"21 characters after bg_, then a slash", route("/v1/" + key[:3+21] + "/" + key[3+21:])},
		{"a digest in a comment", goldDoc + "# acme: key:" + bucketgate.KeyDigest(key) + "\n"},
		{"another prefix", goldDoc + "# bg-" + key[3:] + " BG_" + key[3:] + "\n"},
		{"CRLF line ends", strings.ReplaceAll(route("/v1/"+key[:3+21]), "\n", "\r\n")},
		{"JSON", `{"defaultPlan": "free", "plans": {"free": [{"name": "burst", "capacity": 10, "refillPerSecond": 1}]}, "routes": [{"path": "/v1/` + key[:3+21] + `"}]}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c.t = t
			c.ok("config", "put", file(t, "doc.yaml", tc.doc))
			code, shown, stderr := c.run("config", "show")
			if code != exitOK || shown != tc.doc || strings.Contains(stderr, "warning") {
				t.Fatalf("bucketgate config show: exit %d\n%s%s\nwant the document put, as it is:\n%s", code, shown, stderr, tc.doc)
			}
			var j configJSON
			if err := json.Unmarshal([]byte(c.ok("config", "show", "--json")), &j); err != nil || j.Document != tc.doc {
				t.Fatalf("bucketgate config show --json: document %q (%v), want %q", j.Document, err, tc.doc)
			}
			if code, _, stderr := c.run("config", "put", file(t, "shown.yaml", shown)); code != exitOK || !strings.Contains(stderr, "unchanged: version") {
				t.Fatalf("bucketgate config put of what config show printed: exit %d\n%s\nwant it unchanged", code, stderr)
			}
		})
	}
	for _, tc := range []struct{ name, doc string }{
		{"a key in a route's path", route("/v1/" + key)},
		{"a key glued in a route's path", route("/v1/x" + key)},
		{"a key cut short in a comment", goldDoc + "# acme:\n# " + key[:30] + "\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c.t = t
			c.put(registry.StoredConfig{ID: registry.ConfigID, Document: tc.doc, Version: 99}.Item())
			before := c.items()
			code, shown, stderr := c.run("config", "show")
			if code != exitOK || strings.Contains(shown, key[3:3+22]) || !strings.Contains(stderr, "warning: line 7 of the document holds") {
				t.Fatalf("bucketgate config show: exit %d\n%s%s\nwant the document masked, and a warning naming line 7", code, shown, stderr)
			}
			c.fails(exitError, "shown.yaml: line 7 holds bg_..., which config show prints in place of what may be an API key bucketgate made", "config", "put", file(t, "shown.yaml", shown))
			if after := c.items(); after != before {
				t.Fatalf("config put of a masked document wrote:\nbefore %s\nafter  %s", before, after)
			}
		})
	}
}

// A rollback to a stored version holding an API key bucketgate made (written before
// config put refused one, or by hand) goes on, as a rollback in an incident must, with
// a warning naming the key's line, never the key. It wrote the key back as the version in
// force, for every function to read, and said nothing.
func TestConfigRollbackWarnsOfAKey(t *testing.T) {
	c := newCLI(t)
	c.ok("keys", "init")
	key := "bg_" + strings.Repeat("Q", 42) + "w"
	c.ok("config", "put", file(t, "v1.yaml", goldDoc))
	c.ok("config", "put", file(t, "v2.yaml", goldDoc+"# version 2\n"))
	withKey := goldDoc + "# acme's key: " + key + "\n"
	c.put(registry.StoredConfig{ID: registry.VersionID(1), Document: withKey, Version: 1, UpdatedAt: time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC)}.Item())
	code, stdout, stderr := c.run("config", "rollback", "1")
	if code != exitOK || strings.Contains(stdout+stderr, key[3:]) || !strings.Contains(stderr, "wrote version 3") ||
		!strings.Contains(stderr, "warning: line 6 of version 1 holds an API key bucketgate made (bg_...)") {
		t.Fatalf("bucketgate config rollback 1: exit %d\n%s%s\nwant version 3 written, and a warning naming line 6, the key masked", code, stdout, stderr)
	}
	if code, stdout, stderr := c.run("config", "show"); code != exitOK || stdout != madekey.Mask(withKey) || !strings.Contains(stderr, "version 3 of table") {
		t.Fatalf("bucketgate config show after the rollback: exit %d\n%s%s\nwant version 3, version 1's document, the key masked", code, stdout, stderr)
	}
}

// A stored document with a 0 that config put now refuses (stored by an earlier
// bucketgate, which read it as left out) loads in the functions as before, with a
// warning; config show says so too, naming the field, so that the document can be put
// again without it. It said nothing.
func TestConfigShowNamesAZeroOfAnEarlierRelease(t *testing.T) {
	c := newCLI(t)
	c.ok("keys", "init")
	doc := strings.Replace(goldDoc, "refillPerSecond: 1}", "refillPerSecond: 1, concurrency: 0}", 1)
	c.put(map[string]types.AttributeValue{"id": &types.AttributeValueMemberS{Value: "config"}, "document": &types.AttributeValueMemberS{Value: doc}, "version": &types.AttributeValueMemberN{Value: "1"}})
	code, stdout, stderr := c.run("config", "show")
	if code != exitOK || stdout != doc || !strings.Contains(stderr, "warning: configuration version 1 (config): plans.free[0].concurrency (line 3, column 71): 0 beside the rule's other numbers") {
		t.Fatalf("bucketgate config show: exit %d\n%s%s\nwant the document and a warning naming the field", code, stdout, stderr)
	}
}
