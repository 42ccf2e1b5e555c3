package main

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/bucketgate/bucketgate"
	"github.com/bucketgate/bucketgate/internal/registry"
	"github.com/bucketgate/bucketgate/internal/settings"
	"github.com/bucketgate/bucketgate/internal/version"
)

// version and --version print the version of this build, and nothing else but, for a
// build that carries none, a note on stderr saying so; neither takes an argument.
func TestVersion(t *testing.T) {
	want := "bucketgate " + version.String() + "\n"
	var note string // what stderr holds after the version
	if version.String() == version.Devel {
		note = devNote + "\n"
	}
	tests := []struct {
		name   string
		args   []string
		code   int
		stdout string
	}{
		{"version", []string{"version"}, exitOK, want},
		{"--version", []string{"--version"}, exitOK, want},
		{"-version", []string{"-version"}, exitOK, want},
		{"version with an argument", []string{"version", "now"}, exitUsage, ""},
		{"--version with a group", []string{"--version", "keys", "list"}, exitUsage, ""},
		{"--version twice", []string{"--version", "--version"}, exitUsage, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := run(context.Background(), tc.args, func(string) string { return "" }, strings.NewReader(""), &stdout, &stderr)
			if code != tc.code || stdout.String() != tc.stdout || code == exitOK && stderr.String() != note || code != exitOK && stderr.Len() == 0 {
				t.Fatalf("bucketgate %v: exit %d, stdout %q, stderr %q; want exit %d, stdout %q", tc.args, code, &stdout, &stderr, tc.code, tc.stdout)
			}
		})
	}
}

// The shell's settings that the functions read and the CLI does not (another program's
// LOG_LEVEL or REDIS_ADDR, a CI job's STACK_NAME) never stop a command, however they are
// set: each stopped every command with an error about it, as if the CLI needed it. One
// it reads (IPV6_PREFIX_LENGTH, for an address's identity) still stops one.
func TestFunctionsOwnSettings(t *testing.T) {
	d, _ := newDeployment(t)
	key := strings.TrimSpace(d.ok("keys", "create", "--plan", "basic"))
	commands := [][]string{{"keys", "list"}, {"config", "history"}, {"buckets", "show", key}, {"usage", key}}
	tests := []struct {
		name, value string
		code        int
	}{
		{settings.EnvLogLevel, "verbose", exitOK},
		{settings.EnvLambdaLogLevel, "VERBOSE", exitOK},
		{settings.EnvRedisAddr, "redis://localhost:6379", exitOK},
		{settings.EnvTimeoutMS, "2s", exitOK},
		{settings.EnvStackName, "acme/api/prod", exitOK},
		{settings.EnvDenyCacheSize, "big", exitOK},
		{settings.EnvIPv6Prefix, "200", exitError},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			was, had := d.env[tc.name]
			d.env[tc.name] = tc.value
			defer func() {
				if delete(d.env, tc.name); had {
					d.env[tc.name] = was
				}
			}()
			for _, args := range commands {
				code, _, stderr := d.run(args...)
				if code != tc.code || (code == exitOK) == strings.Contains(stderr, tc.name) {
					t.Errorf("%s=%s bucketgate %s: exit %d, stderr %q; want exit %d, naming %s only when it fails", tc.name, tc.value, args[0], code, stderr, tc.code, tc.name)
				}
			}
		})
	}
}

// --table, --function and --stack given empty (a script's unset variable: --function
// "$FN") or blank are refused as usage errors naming the flag, before anything is read,
// written or invoked: each was taken as not given, and the command went on with
// REGISTRY_TABLE's table, CHECK_FUNCTION's function or BUCKETGATE_STACK's stack, else
// bucketgate-operator, which may be another deployment's. So are buckets' --plan (the
// identity's own rules, not the plan's, were reset) and --account of keys create and
// keys roll (a lone key made, an account named after the key).
func TestEmptyNameFlags(t *testing.T) {
	d, _ := newDeployment(t)
	key := strings.TrimSpace(d.ok("keys", "create", "--plan", "gold"))
	before := d.items()
	empty := func(flag string) string { return "for flag -" + flag + ": empty: name one, or leave the flag out" }
	noAccount := `--account "": want an account's name`
	tests := []struct {
		name, want string
		args       []string
	}{
		{"keys list --table", empty("table"), []string{"keys", "list", "--table", ""}},
		{"keys revoke --table=", empty("table"), []string{"keys", "revoke", "--table=", key}},
		{"accounts list --table", empty("table"), []string{"accounts", "list", "--table", ""}},
		{"config history --table", empty("table"), []string{"config", "history", "--table", ""}},
		{"a blank --table", empty("table"), []string{"keys", "list", "--table", " "}},
		{"buckets reset --function", empty("function"), []string{"buckets", "reset", "--function", "", key}},
		{"usage --function", empty("function"), []string{"usage", "--function=", key}},
		{"--stack before the group", empty("stack"), []string{"--stack", "", "keys", "list"}},
		{"--stack of a command", empty("stack"), []string{"keys", "revoke", key, "--stack="}},
		{"--stack of buckets", empty("stack"), []string{"buckets", "reset", "--stack", "", key}},
		{"a blank --stack", empty("stack"), []string{"--stack", "\t", "usage", key}},
		{"buckets reset --plan", empty("plan"), []string{"buckets", "reset", "--plan", "", key}},
		{"keys create --account with --plan", noAccount, []string{"keys", "create", "--plan", "gold", "--account", ""}},
		{"keys create --account alone", noAccount, []string{"keys", "create", "--account="}},
		{"keys roll --account", noAccount, []string{"keys", "roll", "--account", "", key}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			d.t = t
			d.fails(exitUsage, tc.want, tc.args...)
		})
	}
	d.t = t
	d.didNothing(before, "an empty flag's command")
}

// An API key bucketgate made where a name or a value goes (a key pasted in the wrong
// place) is refused before any call, and no error quotes it: a table's, a function's or
// a plan's name holding one is a usage error (it went out in a request: DescribeTable,
// Invoke, a check's plan in the function's logs), and a WHEN, a duration, a version or
// a file named by one is masked in the error that refuses it (bg_...), as keys expire's
// WHEN is. They were quoted whole; a usage day (--from, --to), cut to 40 characters, 37
// of the key's (which no mask then knew). A plan of keys create, accounts create or
// set-plan holding one was looked up in the registry first, and refused as an unknown
// plan (exit status 1), not as a usage error.
func TestMadeKeyInNamesAndValues(t *testing.T) {
	d, _ := newDeployment(t)
	key := strings.TrimSpace(d.ok("keys", "create", "--plan", "gold"))
	before := d.items()
	made := "bg_" + strings.Repeat("Q", 42) + "w"
	name := func(flag string) string {
		return `invalid value "bg_..." for flag -` + flag + ": an API key bucketgate made"
	}
	tests := []struct {
		name string
		code int
		want string
		args []string
	}{
		{"--table", exitUsage, name("table"), []string{"keys", "list", "--table", made}},
		{"--function", exitUsage, name("function"), []string{"buckets", "reset", "--function", made, key}},
		{"--stack", exitUsage, name("stack"), []string{"--stack", made, "keys", "list"}},
		{"buckets --plan", exitUsage, name("plan"), []string{"buckets", "show", "--plan", made, key}},
		{"keys create --plan", exitUsage, "usage: keys create: --plan: an API key bucketgate made (bg_...), which no table, function, stack or plan is named by", []string{"keys", "create", "--plan", made}},
		{"accounts create --plan", exitUsage, "usage: accounts create: --plan: an API key bucketgate made (bg_...)", []string{"accounts", "create", "acme", "--plan", made}},
		{"keys set-plan PLAN", exitUsage, "usage: keys set-plan: PLAN: an API key bucketgate made (bg_...)", []string{"keys", "set-plan", key, made}},
		{"accounts set-plan PLAN", exitUsage, "usage: accounts set-plan: PLAN: an API key bucketgate made (bg_...)", []string{"accounts", "set-plan", "acme", made}},
		{"--expires", exitUsage, `--expires: "bg_...": want an RFC 3339 time`, []string{"keys", "create", "--plan", "gold", "--expires", made}},
		{"--overlap", exitUsage, `--overlap "bg_...": want a duration`, []string{"keys", "roll", key, "--overlap", made}},
		{"usage --from", exitUsage, `--from "bg_...": want a day as YYYY-MM-DD`, []string{"usage", "--from", made, key}},
		{"usage --to", exitUsage, `--to "bg_...": want a day as YYYY-MM-DD`, []string{"usage", "--to", made, key}},
		{"config rollback N", exitUsage, `config rollback: "bg_...": want a version`, []string{"config", "rollback", made}},
		{"config put FILE", exitError, "open bg_...: no such file or directory", []string{"config", "put", made}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			d.t = t
			d.fails(tc.code, tc.want, tc.args...)
			if _, _, stderr := d.run(tc.args...); strings.Contains(stderr, made[:12]) {
				t.Fatalf("bucketgate %s: the error quotes the key:\n%s", tc.name, stderr)
			}
		})
	}
	d.t = t
	d.didNothing(before, "a command given a key for a name or a value")
}

// REGISTRY_TABLE, CHECK_FUNCTION and BUCKETGATE_STACK holding an API key bucketgate made
// (a key exported under the wrong name) are refused as --table, --function and --stack
// holding one are: a usage error naming the variable, before any call, never quoting
// the key. It went out as the table's name in DynamoDB's requests, the function's in
// Lambda's, the stack's in CloudFormation's.
func TestMadeKeyInEnvironment(t *testing.T) {
	d, _ := newDeployment(t)
	t.Setenv("AWS_ENDPOINT_URL_CLOUDFORMATION", d.lambda.URL) // no request may reach AWS
	key := strings.TrimSpace(d.ok("keys", "create", "--plan", "gold"))
	before := d.items()
	made := "bg_" + strings.Repeat("Q", 42) + "w"
	tests := []struct {
		name, variable string
		args           []string
	}{
		{"REGISTRY_TABLE", settings.EnvRegistryTable, []string{"keys", "list"}},
		{"CHECK_FUNCTION", envCheckFunction, []string{"buckets", "reset", key}},
		{"BUCKETGATE_STACK", envStack, []string{"keys", "list"}},
		{"BUCKETGATE_STACK of buckets", envStack, []string{"buckets", "show", key}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			d.t = t
			was, set := d.env[tc.variable]
			d.env[tc.variable] = made
			defer func() {
				if delete(d.env, tc.variable); set {
					d.env[tc.variable] = was
				}
			}()
			d.fails(exitUsage, tc.variable+": an API key bucketgate made (bg_...), which no table, function, stack or plan is named by", tc.args...)
			if _, _, stderr := d.run(tc.args...); strings.Contains(stderr, made[:12]) {
				t.Fatalf("bucketgate %s: the error quotes the key:\n%s", tc.name, stderr)
			}
		})
	}
	d.t = t
	d.didNothing(before, "a command with a key in a variable")
}

// didNothing fails d's test if the table's items are not before or the check function was
// invoked: what commands refused before any call (what names them) must not do.
func (d *deployment) didNothing(before, what string) {
	d.t.Helper()
	if after := d.items(); after != before {
		d.t.Fatalf("%s wrote to the table:\nbefore %s\nafter  %s", what, before, after)
	}
	if payloads := d.check.payloads.String(); payloads != "" {
		d.t.Fatalf("%s invoked the function:\n%s", what, payloads)
	}
}

// Text that holds an API key bucketgate made glued to other base64url characters, or
// cut short (an item written by hand, a name an earlier CLI took: an account's, a
// rule's, a tenant's key, a document's comment), is printed masked by every command
// that prints it, on stdout and stderr, in text and JSON alike (bg_... from the prefix
// on; a tenant's item with its key's digest, which names it). Each printed the key whole
// but where it was a key alone or after punctuation: an account's name (acme_bg_...), a
// rule's (r_bg_...), a stored document's line, a note on stderr naming the account.
func TestOutputMasksWhatMayBeAKey(t *testing.T) {
	d, _ := newDeployment(t)
	key := "bg_" + strings.Repeat("Q", 42) + "w"
	shown := strings.Repeat("Q", 22) // 132 bits of it
	account, tenant := "acme_"+key, "tenant:t_"+key
	doc := bucketsConfig + "# acme: x" + key + "\n"
	s := func(v string) types.AttributeValue { return &types.AttributeValueMemberS{Value: v} }
	n := func(v string) types.AttributeValue { return &types.AttributeValueMemberN{Value: v} }
	rules := &types.AttributeValueMemberL{Value: []types.AttributeValue{&types.AttributeValueMemberM{Value: map[string]types.AttributeValue{
		"name": s("r_" + key), "capacity": n("5"), "refillPerSecond": n("1")}}}}
	lone, member := "key:"+bucketgate.KeyDigest("lone"), "key:"+bucketgate.KeyDigest("member")
	d.put(map[string]types.AttributeValue{"id": s(lone), "plan": s("basic"), "owner": s("ops_" + key), "note": s("see " + key[:40])},
		map[string]types.AttributeValue{"id": s(member), "account": s(account), "rules": rules},
		map[string]types.AttributeValue{"id": s(registry.AccountItemPrefix + account), "plan": s("basic"), "rules": rules},
		map[string]types.AttributeValue{"id": s(tenant), "plan": s("gold")},
		registry.StoredConfig{ID: registry.ConfigID, Document: doc, Version: 1, Note: "why_" + key}.Item(),
		registry.StoredConfig{ID: registry.VersionID(1), Document: doc, Version: 1, Note: "why_" + key}.Item())
	tenantShown := "tenant:t_bg_... (digest " + bucketgate.KeyDigest("t_"+key) + ")"
	for _, tc := range []struct {
		name string
		args []string
		want string // in the output, where the key was
	}{
		{"keys list", []string{"keys", "list"}, "basic (acct:acme_bg_...)"},
		{"keys list, a tenant", []string{"keys", "list"}, tenantShown},
		{"keys list --json", []string{"keys", "list", "--json"}, `"account": "acme_bg_..."`},
		{"keys show", []string{"keys", "show", member}, "account    acme_bg_...\n"},
		{"keys show, a rule", []string{"keys", "show", member}, "rules      r_bg_...:5:1\n"},
		{"keys show --json", []string{"keys", "show", "--json", member}, `"name": "r_bg_..."`},
		{"keys show, an owner", []string{"keys", "show", lone}, "owner      ops_bg_...\n"},
		{"keys show, a note cut short", []string{"keys", "show", lone}, "note       see bg_...\n"},
		{"keys show, a tenant", []string{"keys", "show", "tenant:" + bucketgate.KeyDigest("t_"+key)}, "id         " + tenantShown + "\n"},
		{"accounts list", []string{"accounts", "list"}, "account:acme_bg_...  basic"},
		{"accounts show", []string{"accounts", "show", account}, "identity   acct:acme_bg_...\n"},
		{"accounts show --json", []string{"accounts", "show", "--json", account}, `"id": "account:acme_bg_..."`},
		{"config show", []string{"config", "show"}, "# acme: xbg_...\n"},
		{"config show --json", []string{"config", "show", "--json"}, `# acme: xbg_...\n"`},
		{"config history", []string{"config", "history"}, "why_bg_...\n"},
		{"buckets show", []string{"buckets", "show", "acct:" + account}, "acct:acme_bg_..."},
		{"buckets show of a key of the account", []string{"buckets", "show", member}, "are those of acct:acme_bg_..."},
		{"usage", []string{"usage", "acct:" + account}, "identity  acct:acme_bg_...\n"},
		{"keys create in the account", []string{"keys", "create", "--account", account}, "in account acme_bg_..."},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d.t = t
			code, stdout, stderr := d.run(tc.args...)
			if out := stdout + stderr; code != exitOK || strings.Contains(out, shown) || !strings.Contains(out, tc.want) {
				t.Fatalf("bucketgate %s: exit %d\n%s%s\nwant %q, nothing of the key", strings.Join(tc.args, " "), code, stdout, stderr, tc.want)
			}
		})
	}
}
