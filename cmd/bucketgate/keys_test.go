package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"maps"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/bucketgate/bucketgate"
	"github.com/bucketgate/bucketgate/internal/registry"
	"github.com/bucketgate/bucketgate/internal/settings"
	"github.com/bucketgate/bucketgate/internal/testkit/dynalite"
)

const table = "bucketgate-keys"

// cli runs bucketgate command lines against one dynalite server.
type cli struct {
	t     *testing.T
	env   map[string]string
	stdin string           // what the next commands read on stdin
	db    *dynamodb.Client // the server's, to read what the CLI wrote
}

func newCLI(t *testing.T) *cli {
	t.Helper()
	db := dynalite.Start(t).Client(t)
	return &cli{t: t, env: map[string]string{settings.EnvRegistryTable: table}, db: db}
}

// run runs args and returns the exit status, stdout and stderr.
func (c *cli) run(args ...string) (int, string, string) {
	c.t.Helper()
	var stdout, stderr bytes.Buffer
	code := run(context.Background(), args, func(k string) string { return c.env[k] }, strings.NewReader(c.stdin), &stdout, &stderr)
	return code, stdout.String(), stderr.String()
}

// ok runs args, fails the test unless it succeeds, and returns stdout.
// put writes items to the table as they are, as an operator writing them by hand does.
func (c *cli) put(items ...map[string]types.AttributeValue) {
	c.t.Helper()
	for _, item := range items {
		if _, err := c.db.PutItem(context.Background(), &dynamodb.PutItemInput{TableName: aws.String(table), Item: item}); err != nil {
			c.t.Fatal(err)
		}
	}
}

// jsonPlan is the plan of an item as --json printed it, "null" for none (an item that
// cannot be read).
func jsonPlan(p *string) string {
	if p == nil {
		return "null"
	}
	return *p
}

// withAccounts returns a CLI on a new table holding the accounts named, each on plan pro.
func withAccounts(t *testing.T, names ...string) *cli {
	c := newCLI(t)
	c.ok("keys", "init")
	for _, name := range names {
		c.ok("accounts", "create", name, "--plan", "pro")
	}
	return c
}

func (c *cli) ok(args ...string) string {
	c.t.Helper()
	code, stdout, stderr := c.run(args...)
	if code != exitOK {
		c.t.Fatalf("bucketgate %s: exit %d\n%s", strings.Join(args, " "), code, stderr)
	}
	return stdout
}

// fails runs args and fails the test unless it exits with code and stderr mentions want;
// stdout must be empty.
func (c *cli) fails(code int, want string, args ...string) {
	c.t.Helper()
	got, stdout, stderr := c.run(args...)
	if got != code || !strings.Contains(stderr, want) || stdout != "" {
		c.t.Fatalf("bucketgate %s: exit %d, stdout %q, stderr %q; want exit %d mentioning %q", strings.Join(args, " "), got, stdout, stderr, code, want)
	}
}

// items returns every item of the table as DynamoDB holds it, printed: a line each, in
// order.
func (c *cli) items() string {
	c.t.Helper()
	out, err := c.db.Scan(context.Background(), &dynamodb.ScanInput{TableName: aws.String(table)})
	if err != nil {
		c.t.Fatal(err)
	}
	lines := make([]string, len(out.Items))
	for i, it := range out.Items {
		var b strings.Builder
		printAttributes(&b, it)
		lines[i] = b.String() + "\n"
	}
	slices.Sort(lines)
	return strings.Join(lines, "")
}

// printAttributes writes every name and value of item, nested ones too, by name.
func printAttributes(b *strings.Builder, item map[string]types.AttributeValue) {
	for _, name := range slices.Sorted(maps.Keys(item)) {
		v := item[name]
		b.WriteString(name + "=")
		switch v := v.(type) {
		case *types.AttributeValueMemberS:
			b.WriteString(v.Value)
		case *types.AttributeValueMemberN:
			b.WriteString(v.Value)
		case *types.AttributeValueMemberL:
			for _, e := range v.Value {
				if m, ok := e.(*types.AttributeValueMemberM); ok {
					printAttributes(b, m.Value)
				}
			}
		}
		b.WriteByte(' ')
	}
}

var keyLine = regexp.MustCompile(`^bg_[A-Za-z0-9_-]{43}\n$`)

// A session of every keys command against dynalite: what is written, what is printed,
// and where the raw key goes (stdout of create, nowhere else).
func TestKeysSession(t *testing.T) {
	c := newCLI(t)
	c.fails(exitError, "table bucketgate-keys does not exist in region us-east-1: check the region (AWS_REGION or the profile's) and the table's name (the stack's output RegistryTableName), or create it: bucketgate keys init", "keys", "list")
	c.ok("keys", "init")
	c.fails(exitError, "table bucketgate-keys already exists", "keys", "init")

	out := c.ok("keys", "create", "--plan", "pro", "--owner", "acme", "--note", "trial", "--rule", "burst:7:0.5", "--rule", "daily:1000:1000/day", "--expires", "2030-01-31")
	if !keyLine.MatchString(out) {
		t.Fatalf("create printed %q: want the key alone on one line", out)
	}
	key := strings.TrimSpace(out)
	id := "key:" + bucketgate.KeyDigest(key)
	show := c.ok("keys", "show", key)
	for _, want := range []string{"id         " + id, "plan       pro", "status     active", "expiresAt  2030-01-31T00:00:00Z",
		"rules      burst:7:0.5 daily:1000:0.011574074074074073", "owner      acme", "note       trial"} {
		if !strings.Contains(show, want+"\n") {
			t.Errorf("show:\n%s\nwant a line %q", show, want)
		}
	}
	if byID := c.ok("keys", "show", id); byID != show {
		t.Errorf("show by id:\n%s\nwant the same as by key:\n%s", byID, show)
	}

	c.ok("keys", "override", key, "--rule", "burst:9:1", "--rule", "hourly:50:50/hour")
	c.ok("keys", "set-plan", id, "enterprise")
	var rec recordJSON
	if err := json.Unmarshal([]byte(c.ok("keys", "show", "--json", key)), &rec); err != nil {
		t.Fatal(err)
	}
	if jsonPlan(rec.Plan) != "enterprise" || len(rec.Rules) != 3 || rec.Rules[0].Capacity != 9 || rec.Rules[2].Name != "hourly" {
		t.Fatalf("after override and set-plan: %+v", rec)
	}
	c.ok("keys", "expire", key, "2001-01-01")
	if show := c.ok("keys", "show", key); !strings.Contains(show, "status     expired\n") {
		t.Fatalf("after expire in the past:\n%s", show)
	}
	c.ok("keys", "clear-overrides", key)
	c.ok("keys", "expire", key, "never")
	c.ok("keys", "revoke", key)
	if show := c.ok("keys", "show", key); !strings.Contains(show, "status     revoked") || !strings.Contains(show, "expiresAt  never") ||
		!strings.Contains(show, "rules      -") {
		t.Fatalf("after clear-overrides, expire never and revoke:\n%s", show)
	}

	code, _, stderr := c.run("keys", "create", "--tenant", "acme-svc", "--plan", "free")
	if code != exitOK || !strings.Contains(stderr, "created tenant:acme-svc on plan free") {
		t.Fatalf("create a tenant: %d %s", code, stderr)
	}
	c.fails(exitError, "tenant:acme-svc is already in table", "keys", "create", "--tenant", "acme-svc", "--plan", "free")
	list := c.ok("keys", "list")
	if lines := strings.Split(strings.TrimSpace(list), "\n"); len(lines) != 3 || !strings.HasPrefix(lines[1], id+"  enterprise  revoked") ||
		!strings.HasPrefix(lines[2], "tenant:acme-svc") {
		t.Fatalf("list:\n%s", list)
	}
	noTrailingSpaces(t, "keys list", list)
	noTrailingSpaces(t, "keys show of a tenant without owner or note", c.ok("keys", "show", "tenant:acme-svc"))
	var all []itemJSON
	if err := json.Unmarshal([]byte(c.ok("keys", "list", "--json")), &all); err != nil || len(all) != 2 || all[1].ID != "tenant:acme-svc" {
		t.Fatalf("list --json: %+v, %v", all, err)
	}

	// revoke takes the key's id as well as the key.
	other := strings.TrimSpace(c.ok("keys", "create", "--plan", "free"))
	c.ok("keys", "revoke", "key:"+bucketgate.KeyDigest(other))
	if show := c.ok("keys", "show", other); !strings.Contains(show, "status     revoked\n") {
		t.Fatalf("after revoke by id:\n%s", show)
	}

	items := c.items()
	if strings.Contains(items, key) || !strings.Contains(items, id) {
		t.Fatalf("the table holds the raw key, or not its id:\n%s", items)
	}
}

// noTrailingSpaces fails t if a line of out, what a command printed, ends with a space:
// an empty last value (an owner or a note) printed its column's padding.
func noTrailingSpaces(t *testing.T, what, out string) {
	t.Helper()
	for _, line := range strings.Split(out, "\n") {
		if strings.HasSuffix(line, " ") {
			t.Errorf("%s prints a line ending with spaces: %q", what, line)
		}
	}
}

// Bad input is an error naming the problem, on stderr with a non-zero exit, and nothing
// is written.
func TestKeysBadInput(t *testing.T) {
	c := newCLI(t)
	c.ok("keys", "init")
	key := strings.TrimSpace(c.ok("keys", "create", "--plan", "free"))
	before := c.items()
	tests := []struct {
		name string
		code int
		want string
		args []string
	}{
		{"no group", exitUsage, "name a group", nil},
		{"unknown group", exitUsage, `unknown group "key"`, []string{"key", "list"}},
		{"no command", exitUsage, "keys: name a command", []string{"keys"}},
		{"unknown command", exitUsage, `unknown command "delete"`, []string{"keys", "delete", key}},
		{"no plan", exitUsage, "--plan is required", []string{"keys", "create"}},
		// An empty --plan (a script's unset variable) was "--plan is required", although given.
		{"an empty plan", exitUsage, "usage: keys create: --plan is empty: name a plan", []string{"keys", "create", "--plan", ""}},
		{"a blank plan", exitUsage, "usage: keys create: --plan is empty: name a plan", []string{"keys", "create", "--plan= "}},
		{"an empty plan with an account", exitUsage, "usage: keys create: --plan is empty: name a plan", []string{"keys", "create", "--plan", "", "--account", "acme"}},
		{"a table name too short", exitUsage, `--table "t": want a table name: 3 to 255 letters, digits, '_', '-' or '.'`, []string{"keys", "list", "--table", "t"}},
		{"a table's ARN", exitUsage, `--table "arn:aws:dynamodb:us-east-1:123456789012:table/` + table + `": want a table name`, []string{"keys", "show", key, "--table", "arn:aws:dynamodb:us-east-1:123456789012:table/" + table}},
		{"unknown plan", exitError, ` not written: attribute plan: unknown plan "gold": not in the configuration document (configured: enterprise, free, pro; from this shell's RATE_LIMIT_CONFIG`, []string{"keys", "create", "--plan", "gold"}},
		{"rule without rate", exitUsage, `"burst:7": want NAME:CAPACITY:RATE`, []string{"keys", "create", "--plan", "pro", "--rule", "burst:7"}},
		{"fractional capacity", exitUsage, `capacity "1.5": want a whole decimal number`, []string{"keys", "create", "--plan", "pro", "--rule", "burst:1.5:1"}},
		{"capacity out of range", exitUsage, "capacity 0: want 1 to 1000000000", []string{"keys", "create", "--plan", "pro", "--rule", "burst:0:1"}},
		{"bad rule name", exitUsage, `name "a b"`, []string{"keys", "create", "--plan", "pro", "--rule", "a b:1:1"}},
		{"bad period", exitUsage, `per "fortnight"`, []string{"keys", "create", "--plan", "pro", "--rule", "q:10:1/fortnight"}},
		{"zero rate", exitUsage, `rate "0"`, []string{"keys", "create", "--plan", "pro", "--rule", "q:10:0"}},
		{"duplicate rule", exitUsage, `name "q" given twice`, []string{"keys", "create", "--plan", "pro", "--rule", "q:10:1", "--rule", "q:5:1"}},
		{"override with a rule twice", exitUsage, `"q:5:1": name "q" given twice: give each rule once`, []string{"keys", "override", key, "--rule", "q:10:1", "--rule", "q:5:1"}},
		{"bad expiry", exitUsage, `"tomorrow": want an RFC 3339 time`, []string{"keys", "create", "--plan", "pro", "--expires", "tomorrow"}},
		// An empty WHEN (a script's unset variable) was never: an expiry removed, a key
		// meant to expire made without one.
		{"an empty expiry", exitUsage, `--expires: "": want an RFC 3339 time`, []string{"keys", "create", "--plan", "pro", "--expires", ""}},
		{"an account's empty expiry", exitUsage, `--expires: "": want an RFC 3339 time`, []string{"accounts", "create", "acme", "--plan", "pro", "--expires="}},
		{"expire with an empty WHEN", exitUsage, `keys expire: "": want an RFC 3339 time`, []string{"keys", "expire", key, ""}},
		{"an expiry passed", exitUsage, "--expires 2020-01-31: 2020-01-31T00:00:00Z has passed: the key would never work", []string{"keys", "create", "--plan", "pro", "--expires", "2020-01-31"}},
		{"unknown key", exitError, "no such item: key:" + bucketgate.KeyDigest("nobody's") + " is not in table", []string{"keys", "revoke", "nobody's"}},
		{"set an unknown plan", exitError, `unknown plan "gold"`, []string{"keys", "set-plan", key, "gold"}},
		// An empty PLAN (a script's unset variable) was read as the item's, exit status 1:
		// "attribute plan: missing: every item needs a plan".
		{"set an empty plan", exitUsage, "usage: keys set-plan: PLAN is empty: name a plan", []string{"keys", "set-plan", key, ""}},
		{"override without rules", exitUsage, "give at least one --rule", []string{"keys", "override", key}},
		{"two keys", exitUsage, "want 1 argument(s), got 2", []string{"keys", "revoke", key, key}},
		{"empty tenant", exitUsage, "tenant: with no tenant key", []string{"keys", "show", "tenant:"}},
		{"key: without a digest", exitUsage, "key: wants the key's digest, 32 lowercase hex digits", []string{"keys", "revoke", "key:"}},
		{"key: with a short digest", exitUsage, "key: wants the key's digest", []string{"keys", "show", "key:" + strings.Repeat("a", 31)}},
		{"key: with an uppercase digest", exitUsage, "key: wants the key's digest", []string{"keys", "expire", "key:" + strings.ToUpper(bucketgate.KeyDigest(key)), "never"}},
		{"tenant longer than a key", exitUsage, "--tenant: a tenant key of 1001 bytes: want 1 to 1000 bytes of UTF-8 text", []string{"keys", "create", "--plan", "free", "--tenant", strings.Repeat("t", 1001)}},
		{"empty tenant key", exitUsage, "--tenant: a tenant key of 0 bytes: want 1 to 1000", []string{"keys", "create", "--plan", "free", "--tenant", ""}},
		{"empty --key", exitUsage, "--key takes - alone", []string{"keys", "create", "--plan", "free", "--key="}},
		{"tenant not UTF-8", exitUsage, "--tenant: a tenant key of 4 bytes: want 1 to 1000", []string{"keys", "create", "--plan", "free", "--tenant", "acm\xff"}},
		{"plan twice", exitUsage, `invalid value "pro" for flag -plan: given twice: give it once`, []string{"keys", "create", "--plan", "free", "--plan", "pro"}},
		{"expiry twice, apart", exitUsage, "flag -expires: given twice", []string{"keys", "create", "--expires", "30d", "--plan", "free", "--expires=60d"}},
		{"no table", exitUsage, "no registry table: set REGISTRY_TABLE or --table", []string{"keys", "list"}}, // REGISTRY_TABLE unset below
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c.t = t
			if tc.name == "no table" {
				delete(c.env, settings.EnvRegistryTable)
				defer func() { c.env[settings.EnvRegistryTable] = table }()
			}
			c.fails(tc.code, tc.want, tc.args...)
		})
	}
	c.t = t
	if after := c.items(); after != before {
		t.Fatalf("bad input wrote to the table:\nbefore %s\nafter  %s", before, after)
	}
	for _, tc := range tests {
		_, _, stderr := c.run(tc.args...)
		if strings.Contains(stderr, key) {
			t.Fatalf("%s: stderr quotes the raw key: %s", tc.name, stderr)
		}
	}
}

// While the table holds no document, plans are those of this shell's configuration
// document, as the functions load theirs; a command that checks no plan needs none.
func TestKeysFollowTheConfiguration(t *testing.T) {
	c := newCLI(t)
	c.env[settings.EnvConfigInline] = "defaultPlan: basic\nplans: {basic: [{name: burst, capacity: 5, refillPerSecond: 1}], gold: [{name: burst, capacity: 50, refillPerSecond: 5}]}"
	c.ok("keys", "init")
	key := strings.TrimSpace(c.ok("keys", "create", "--plan", "gold"))
	c.fails(exitError, `unknown plan "pro": not in the configuration document (configured: basic, gold; from this shell's`, "keys", "set-plan", key, "pro")
	c.env[settings.EnvConfigInline] = "defaultPlan: x\nplans: {}"
	c.fails(exitError, "RATE_LIMIT_CONFIG", "keys", "set-plan", key, "basic")
	c.ok("keys", "show", key) // needs no plans
}

// The shell's document is read as the functions read it, which have a table: a route's
// ttlMs that only an identity's own concurrency rule could use is no error with a table,
// however the command names it (--table, REGISTRY_TABLE).
func TestKeysReadTheShellsDocumentWithATable(t *testing.T) {
	c := newCLI(t)
	c.env[settings.EnvConfigInline] = "defaultPlan: basic\nplans: {basic: [{name: burst, capacity: 5, refillPerSecond: 1}]}\n" +
		"routes: [{method: GET, path: /v1/stream, ttlMs: 60000}]"
	c.ok("keys", "init")
	for _, tc := range []struct {
		name   string // how the command names the table
		env    string // REGISTRY_TABLE
		args   []string
		tenant string
	}{
		{"REGISTRY_TABLE", table, nil, "t-env"},
		{"--table", "", []string{"--table", table}, "t-flag"},
	} {
		c.env[settings.EnvRegistryTable] = tc.env
		if code, _, stderr := c.run(append([]string{"keys", "create", "--tenant", tc.tenant, "--plan", "basic", "--rule", "streams:2:concurrent"}, tc.args...)...); code != exitOK {
			t.Errorf("%s: keys create: exit %d\n%s", tc.name, code, stderr)
		}
	}
}

// A change writes back only the item it read: a write made between its read and its
// write (a revocation, another rule, an expiry, by another operator) is kept, and the
// change fails saying so.
func TestKeysChangeKeepsAConcurrentWrite(t *testing.T) {
	c := newCLI(t)
	c.ok("keys", "init")
	kt, err := openTable(env{ctx: context.Background(), getenv: func(k string) string { return c.env[k] }}, "", &stack{})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name  string
		write []string // the other operator's command, KEY for the key
		want  string   // a line of show after it all
	}{
		{"revoke", []string{"revoke", "KEY"}, "status     revoked"},
		{"a rule's capacity", []string{"override", "KEY", "--rule", "burst:8:1"}, "rules      burst:8:1 daily:100:0.0011574074074074073"},
		{"another rule", []string{"override", "KEY", "--rule", "hourly:9:9/hour"}, "rules      burst:7:1 daily:100:0.0011574074074074073 hourly:9:0.0025"},
		{"an expiry", []string{"expire", "KEY", "2031-01-01"}, "expiresAt  2031-01-01T00:00:00Z"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c.t = t
			key := strings.TrimSpace(c.ok("keys", "create", "--plan", "free", "--rule", "burst:7:1", "--rule", "daily:100:100/day"))
			write := slices.Clone(tc.write)
			write[slices.Index(write, "KEY")] = key
			err := kt.change(context.Background(), keyID(key), func(r *registry.Record) error {
				c.ok(append([]string{"keys"}, write...)...) // between this change's read and its write
				r.Plan = "pro"
				return nil
			})
			if err == nil || !strings.Contains(err.Error(), "changed while this command ran") {
				t.Fatalf("set-plan across %s: %v, want an error saying the item changed", tc.name, err)
			}
			if show := c.ok("keys", "show", key); !strings.Contains(show, tc.want+"\n") || !strings.Contains(show, "plan       free\n") {
				t.Fatalf("after a change raced %s:\n%s\nwant %q, on its plan", tc.name, show, tc.want)
			}
			c.ok("keys", "set-plan", key, "pro") // nothing in between: it writes
			if show := c.ok("keys", "show", key); !strings.Contains(show, "plan       pro\n") || !strings.Contains(show, tc.want+"\n") {
				t.Fatalf("after set-plan:\n%s", show)
			}
		})
	}
}

// A write whose answer the network lost is sent again by the SDK, and finds the item
// its first attempt wrote: create, a change, a roll and a config put succeed and say so
// (a new key printed), rather than fail saying the item is already there or changed
// meanwhile, which left a key nobody holds, or a change made that was said not made.
func TestWriteWhoseAnswerWasLost(t *testing.T) {
	c := newCLI(t)
	c.ok("keys", "init")
	lone := strings.TrimSpace(c.ok("keys", "create", "--plan", "pro"))
	calls := newRecorder(t, map[string]string{"dynamodb": os.Getenv("AWS_ENDPOINT_URL_DYNAMODB")})
	t.Setenv("AWS_ENDPOINT_URL_DYNAMODB", calls.URL)
	sent := map[string]bool{} // the bodies of the writes sent, whose first answer is lost
	calls.loseWhen(func(action string, body []byte) bool {
		first := action == "dynamodb:PutItem" && !sent[string(body)]
		sent[string(body)] = true
		return first
	})
	tests := []struct {
		name string
		args []string
		want string // on stderr
	}{
		{"keys create", []string{"keys", "create", "--plan", "pro"}, "created key:"},
		{"keys create --tenant", []string{"keys", "create", "--plan", "pro", "--tenant", "acme"}, "created tenant:acme on plan pro\n"},
		{"accounts create", []string{"accounts", "create", "acme", "--plan", "pro"}, "created account acme on plan pro"},
		{"keys create --account", []string{"keys", "create", "--account", "acme"}, " in account acme: the key above is shown this once"},
		{"keys set-plan", []string{"keys", "set-plan", lone, "free"}, " is on plan free, keeping its buckets\n"},
		{"keys roll", []string{"keys", "roll", lone}, ": until then both keys work, on the same buckets\n"},
		{"config put", []string{"config", "put", file(t, "gold.yaml", goldDoc)}, "wrote version 1 to table"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c.t = t
			code, stdout, stderr := c.run(tc.args...)
			if code != exitOK || !strings.Contains(stderr, tc.want) {
				t.Fatalf("bucketgate %s, its write's first answer lost: exit %d, stderr %q; want exit 0 and %q", strings.Join(tc.args, " "), code, stderr, tc.want)
			}
			if puts := strings.Count(strings.Join(calls.take(), " "), "dynamodb:PutItem"); puts < 2 {
				t.Fatalf("%d PutItem: want the write sent again", puts)
			}
			if key := strings.TrimSpace(stdout); key != "" {
				if show := c.ok("keys", "show", key); !strings.Contains(show, "status     active\n") {
					t.Fatalf("the key printed:\n%s", show)
				}
			}
		})
	}
}

// failingWriter fails every write, as stdout on a full disk does.
type failingWriter struct{}

func (failingWriter) Write([]byte) (int, error) { return 0, errors.New("no space left on device") }

// A new key that cannot be printed is held by nobody: create and roll exit 1 saying so,
// and revoke it, rather than exit 0 saying "the key above is shown this once"; a roll
// leaves the old key as it was.
func TestKeyNotPrinted(t *testing.T) {
	c := newCLI(t)
	c.ok("keys", "init")
	old := strings.TrimSpace(c.ok("keys", "create", "--plan", "pro"))
	tests := []struct {
		name string
		args []string
	}{
		{"create", []string{"keys", "create", "--plan", "pro"}},
		{"roll", []string{"keys", "roll", old}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			before := c.ok("keys", "list", "--json")
			var stderr bytes.Buffer
			code := run(context.Background(), tc.args, func(k string) string { return c.env[k] }, strings.NewReader(""), failingWriter{}, &stderr)
			if code != exitError || !strings.Contains(stderr.String(), "the new key could not be printed: no space left on device") || strings.Contains(stderr.String(), "shown this once") {
				t.Fatalf("bucketgate %s to a failing stdout: exit %d, stderr %q; want exit 1 saying the key was not printed", strings.Join(tc.args, " "), code, stderr.String())
			}
			var items []itemJSON
			if err := json.Unmarshal([]byte(c.ok("keys", "list", "--json")), &items); err != nil {
				t.Fatal(err)
			}
			for _, it := range items {
				switch {
				case strings.Contains(before, it.ID) && it.ID == keyID(old) && (it.Status != "active" || it.ExpiresAt != ""):
					t.Errorf("the old key changed: %+v", it)
				case !strings.Contains(before, it.ID) && it.Status != "revoked":
					t.Errorf("the key nobody holds is %s, want revoked: %+v", it.Status, it)
				}
			}
		})
	}
}

// An owner or a note never holds an API key bucketgate made: the table would hold the
// key as it is (an owner goes in the crossing events too, and keys list prints both), so
// --owner and --note refuse one, never quoting it, before anything is written; so do they
// what may be one, or part of one, that the CLI would print masked (a key glued to other
// characters, or cut short), and so does --rule a rule named by either (its name rests
// in Redis and the metrics). No error about a flag's value quotes one (the flag package
// quotes the values it refuses).
func TestFreeTextHoldsNoKey(t *testing.T) {
	c := newCLI(t)
	c.ok("keys", "init")
	key, err := newKey()
	if err != nil {
		t.Fatal(err)
	}
	const held = "holds an API key bucketgate made (bg_...)"
	const glued = "holds what may be an API key bucketgate made, or part of one (bg_ and 22 or more base64url characters: bg_...)"
	tests := []struct {
		name, want string
		args       []string
	}{
		{"keys create --owner", held, []string{"keys", "create", "--plan", "pro", "--owner", key}},
		{"keys create --note", held, []string{"keys", "create", "--plan", "pro", "--note", "rotated from " + key}},
		{"accounts create --owner", held, []string{"accounts", "create", "acme", "--plan", "pro", "--owner", "acme " + key}},
		{"config put --note", held, []string{"config", "put", file(t, "gold.yaml", goldDoc), "--note", key}},
		{"a --rule holding one", `invalid value "bg_..." for flag -rule: "bg_...": want NAME:CAPACITY:RATE`, []string{"keys", "create", "--plan", "pro", "--rule", key}},
		// Glued to other characters, or cut short, a key went into the table as it was.
		{"keys create --owner glued to a key", glued, []string{"keys", "create", "--plan", "pro", "--owner", "ops_" + key}},
		{"keys create --note with a key cut short", glued, []string{"keys", "create", "--plan", "pro", "--note", "see " + key[:30]}},
		{"accounts create --note glued to a key", glued, []string{"accounts", "create", "acme", "--plan", "pro", "--note", key + "x"}},
		{"a --rule named by a key", `invalid value "bg_...:5:1" for flag -rule: rule name: ` + held[len("holds "):], []string{"keys", "create", "--plan", "pro", "--rule", key + ":5:1"}},
		{"a --rule named by a key glued", `invalid value "r_bg_...:5:1" for flag -rule: rule name: ` + glued[len("holds "):], []string{"keys", "create", "--plan", "pro", "--rule", "r_" + key + ":5:1"}},
		{"accounts override --rule named by a key glued", `for flag -rule: rule name: ` + glued[len("holds "):], []string{"accounts", "override", "acme", "--rule", "r_" + key + ":5:1"}},
	}
	before := c.items()
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			code, stdout, stderr := c.run(tc.args...)
			if code != exitUsage || !strings.Contains(stderr, tc.want) || strings.Contains(stdout+stderr, key[3:]) {
				t.Fatalf("bucketgate %s: exit %d\n%s%s\nwant a usage error with %q, never quoting the key", strings.Join(tc.args, " "), code, stdout, stderr, tc.want)
			}
		})
	}
	if after := c.items(); after != before {
		t.Fatalf("a refused owner or note wrote to the table:\nbefore %s\nafter  %s", before, after)
	}
}

// An owner or a note is text on one line: the CLI refuses a line break or another
// control character in --owner and --note, and prints one that an item written by hand
// holds quoted, so that it never forges a line of keys list (a key that is not there).
func TestFreeTextStaysOnItsLine(t *testing.T) {
	c := newCLI(t)
	c.ok("keys", "init")
	c.ok("config", "put", file(t, "gold.yaml", goldDoc))
	forged := "x\nkey:00000000000000000000000000000000  gold  active  never"
	tests := []struct {
		name string
		args []string
	}{
		{"keys create --owner", []string{"keys", "create", "--plan", "pro", "--owner", forged}},
		{"keys create --note", []string{"keys", "create", "--plan", "pro", "--note", "a\tb"}},
		{"keys create --tenant", []string{"keys", "create", "--plan", "pro", "--tenant", forged}},
		{"accounts create --note", []string{"accounts", "create", "acme", "--plan", "pro", "--note", forged}},
		{"config put --note", []string{"config", "put", file(t, "doc.yaml", goldDoc+"# again\n"), "--note", forged}},
		{"config rollback --note", []string{"config", "rollback", "1", "--note", "\x1b[2J"}},
	}
	before := c.items()
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c.t = t
			c.fails(exitUsage, "want text on one line", tc.args...)
		})
	}
	c.t = t
	if after := c.items(); after != before {
		t.Fatalf("a refused owner or note wrote to the table:\nbefore %s\nafter  %s", before, after)
	}

	id := "key:" + bucketgate.KeyDigest("handwritten")
	_, err := c.db.PutItem(context.Background(), &dynamodb.PutItemInput{TableName: aws.String(table), Item: map[string]types.AttributeValue{
		"id": &types.AttributeValueMemberS{Value: id}, "plan": &types.AttributeValueMemberS{Value: "pro"},
		"owner": &types.AttributeValueMemberS{Value: forged}, "note": &types.AttributeValueMemberS{Value: "a\tb"},
	}})
	if err != nil {
		t.Fatal(err)
	}
	quoted := strconv.Quote(forged)
	if list := c.ok("keys", "list"); strings.Count(list, "\n") != 2 || !strings.Contains(list, quoted) || !strings.Contains(list, `"a\tb"`) {
		t.Fatalf("keys list of an item written by hand:\n%s\nwant a header and one line, the owner and note quoted", list)
	}
	if show := c.ok("keys", "show", id); !strings.Contains(show, "owner      "+quoted+"\n") || strings.Count(show, "\n") != 7 {
		t.Fatalf("keys show of an item written by hand:\n%s\nwant the owner quoted on its line", show)
	}

	// A tenant's key is text too: its id is quoted, usable or not.
	tenant, broken := "tenant:"+forged, "tenant:\x1b[2J"+forged
	for id, plan := range map[string]string{tenant: "pro", broken: "nope"} {
		_, err := c.db.PutItem(context.Background(), &dynamodb.PutItemInput{TableName: aws.String(table), Item: map[string]types.AttributeValue{
			"id": &types.AttributeValueMemberS{Value: id}, "plan": &types.AttributeValueMemberS{Value: plan},
		}})
		if err != nil {
			t.Fatal(err)
		}
	}
	if list := c.ok("keys", "list"); strings.Count(list, "\n") != 4 || strings.ContainsAny(list, "\x1b\t") ||
		!regexp.MustCompile(regexp.QuoteMeta(strconv.Quote(tenant))+` +pro +active`).MatchString(list) || !strings.Contains(list, strconv.Quote(broken)+"  invalid: ") {
		t.Fatalf("keys list of tenants written by hand:\n%s\nwant a line each, their ids quoted", list)
	}
	if show := c.ok("keys", "show", tenant); !strings.Contains(show, "id         "+strconv.Quote(tenant)+"\n") || strings.Count(show, "\n") != 7 {
		t.Fatalf("keys show of a tenant written by hand:\n%s\nwant its id quoted on its line", show)
	}
	if show := c.ok("keys", "show", broken); strings.Contains(show, "\x1b") || strings.Count(show, "\n") != 8 {
		t.Fatalf("keys show of an invalid tenant written by hand:\n%s\nwant its id quoted on its lines", show)
	}
	noPro := file(t, "nopro.yaml", "defaultPlan: free\nplans:\n  free: [{name: burst, capacity: 10, refillPerSecond: 1}]\n")
	if code, stdout, stderr := c.run("config", "put", noPro); code != exitError || stdout != "" || !strings.Contains(stderr, "\n  "+strconv.Quote(tenant)+" (plan pro): ") || strings.Contains(stderr, "\nkey:0") {
		t.Fatalf("config put leaving a tenant written by hand without its plan: exit %d, stderr:\n%s\nwant exit 1 naming it quoted on its line", code, stderr)
	}
}

// --expires of a new key or account takes never, its default, as keys expire and
// accounts expire take it: a script passing one WHEN to both was refused at create. An
// empty one (a script's unset variable) is refused, not taken for never.
func TestParseExpires(t *testing.T) {
	tests := []struct {
		name, in string
		never    bool
		err      string
	}{
		{"never", "never", true, ""},
		{"empty", "", false, `"": want an RFC 3339 time`},
		{"days", "30d", false, ""},
		{"passed", "2020-01-31", false, "2020-01-31T00:00:00Z has passed: the key would never work"},
		{"words", "tomorrow", false, `"tomorrow": want an RFC 3339 time`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			at, err := parseExpires(tc.in, "key")
			switch {
			case tc.err == "" && err != nil:
				t.Fatalf("%q: %v", tc.in, err)
			case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
				t.Fatalf("%q: %v, %v; want an error mentioning %q", tc.in, at, err, tc.err)
			case tc.err == "" && at.IsZero() != tc.never:
				t.Fatalf("%q: %v; want never %v", tc.in, at, tc.never)
			}
		})
	}
}
