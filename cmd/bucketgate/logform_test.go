package main

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/bucketgate/bucketgate"
	"github.com/bucketgate/bucketgate/internal/config"
	"github.com/bucketgate/bucketgate/internal/registry"
	"github.com/bucketgate/bucketgate/internal/settings"
	"github.com/bucketgate/bucketgate/internal/telemetry"
)

// The runbook's step for an invalid registry item works for a tenant: the functions'
// error line names it by its key's digest (tenant:<digest>), and the keys commands take
// that name, as they take key:<digest> for an API key. A tenant whose raw key is itself
// such a name is still found by it first.
func TestKeysTakeATenantAsTheLogsNameIt(t *testing.T) {
	c := newCLI(t)
	c.ok("keys", "init")
	hexKey := strings.Repeat("ab", bucketgate.DigestLen/2) // a raw tenant key that looks like a digest
	for id, plan := range map[string]string{"tenant:billing-svc": "nope", "tenant:" + hexKey: "free"} {
		_, err := c.db.PutItem(context.Background(), &dynamodb.PutItemInput{TableName: aws.String(table), Item: map[string]types.AttributeValue{
			"id": &types.AttributeValueMemberS{Value: id}, "plan": &types.AttributeValueMemberS{Value: plan},
		}})
		if err != nil {
			t.Fatal(err)
		}
	}
	// The functions read the item and log it invalid.
	cfg, err := config.Parse([]byte("defaultPlan: free\nplans: {free: [{name: burst, capacity: 10, refillPerSecond: 1}]}\n"))
	if err != nil {
		t.Fatal(err)
	}
	var logs bytes.Buffer
	cache := registry.NewCache(registry.NewTable(c.db, table), registry.Options{Size: 10, Log: telemetry.NewLogger(&logs, nil)})
	if e, err := cache.Lookup(context.Background(), cfg, "tenant:billing-svc"); err != nil || !e.Invalid {
		t.Fatalf("Lookup = %+v, %v; want an invalid item", e, err)
	}
	var line map[string]any
	if err := json.Unmarshal(logs.Bytes(), &line); err != nil || line["msg"] != registry.MsgInvalidItem {
		t.Fatalf("log %s: %v; want one line %q", &logs, err, registry.MsgInvalidItem)
	}
	logged, _ := line[registry.AttrItem].(string)

	tests := []struct {
		name, arg, want string // want: the id shown
	}{
		{"as the error line names it", logged, "tenant:billing-svc"},
		{"by its key", "tenant:billing-svc", "tenant:billing-svc"},
		{"a raw key that looks like a digest", "tenant:" + hexKey, "tenant:" + hexKey},
		{"that raw key's digest", bucketgate.LogForm("tenant:" + hexKey), "tenant:" + hexKey},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if code, show, stderr := c.run("keys", "show", tc.arg); code != exitOK || !strings.HasPrefix(show, "id         "+tc.want+"\n") {
				t.Fatalf("keys show %s: exit %d\n%s%s\nwant %s", tc.arg, code, show, stderr, tc.want)
			}
		})
	}
	c.ok("keys", "set-plan", logged, "free") // the runbook's fix
	if show := c.ok("keys", "show", "tenant:billing-svc"); !strings.Contains(show, "plan       free\n") {
		t.Fatalf("after set-plan by the logged name:\n%s\nwant plan free", show)
	}
	c.fails(exitError, "is not in table", "keys", "show", "tenant:"+strings.Repeat("0", bucketgate.DigestLen))
}

// The buckets commands take a registered tenant as the functions' log lines name it,
// tenant:<digest> (the check function's operator lines among them), and reach its own
// buckets; a tenant:<digest> that no registered tenant's key has is taken as a tenant
// whose key is those digits, with a note saying so. Without a registry table, which
// alone could tell, the note says that none tells, not that no tenant has it.
func TestBucketsTakeATenantAsTheLogsNameIt(t *testing.T) {
	d, _ := newDeployment(t)
	d.ok("keys", "create", "--tenant", "acme-svc", "--plan", "gold")
	if _, err := d.check.Invoke(t.Context(), []byte(`{"key": "acme-svc", "cost": 7}`)); err != nil {
		t.Fatal(err)
	}
	logged := bucketgate.LogForm("tenant:acme-svc")
	d.want(d.bucket("show", logged), "tenant:acme-svc", "gold", "burst", 50, 43)
	d.want(d.bucket("reset", logged), "tenant:acme-svc", "gold", "burst", 50, 50)

	other := "tenant:" + strings.Repeat("0", bucketgate.DigestLen)
	if code, stdout, stderr := d.run("buckets", "show", other); code != exitOK || !strings.Contains(stdout, "identity    "+other+"\n") ||
		!strings.Contains(stderr, "note: no registered tenant's key is "+other[len("tenant:"):]+" or has it as its digest") {
		t.Fatalf("buckets show %s: exit %d\n%s%s\nwant its buckets, with a note", other, code, stdout, stderr)
	}

	delete(d.env, settings.EnvRegistryTable) // the functions' document may register it: nothing here can tell
	if code, stdout, stderr := d.run("buckets", "show", other); code != exitOK || !strings.Contains(stdout, "identity    "+other+"\n") ||
		strings.Contains(stderr, "no registered tenant") || !strings.Contains(stderr, "note: no registry table tells which tenant "+other+" names") {
		t.Fatalf("buckets show %s without a table: exit %d\n%s%s\nwant its buckets, with a note that no table tells", other, code, stdout, stderr)
	}
}

// A tenant whose key is an API key bucketgate made (tenant:bg_..., which a CLI wrote
// before such a key was refused as a tenant's, or written by hand), which no function
// looks up any more (the check function refuses the key), never has its key printed or
// sent: keys list names it by the key's digest, with a note on stderr saying to delete
// the item and to register the tenant again by that digest; and tenant:<digest> is not
// taken for it (keys show printed the key, buckets show sent it to the check function,
// which refused it), but for the tenant of that digest; config put does not refuse a
// document for leaving it without its plan (naming it by its key).
func TestTenantOfAMadeKey(t *testing.T) {
	d, _ := newDeployment(t)
	key, err := newKey()
	if err != nil {
		t.Fatal(err)
	}
	digest := bucketgate.KeyDigest(key)
	d.put(map[string]types.AttributeValue{"id": &types.AttributeValueMemberS{Value: "tenant:" + key}, "plan": &types.AttributeValueMemberS{Value: "gold"}})
	d.ok("keys", "create", "--tenant", "acme-svc", "--plan", "basic")
	shown := "tenant:bg_... (digest " + digest + ")"
	note := "note: " + shown + " is a tenant whose key is or holds an API key bucketgate made, which no function looks up any more (the check function refuses such a key), and its item holds the key: delete the item"
	again := "bucketgate keys create --tenant " + digest + " --plan gold"
	tests := []struct {
		name           string
		args           []string
		code           int
		stdout, stderr []string // what each holds
	}{
		{"keys list", []string{"keys", "list"}, exitOK, []string{shown + "  gold ", "\ntenant:acme-svc "}, []string{note, again}},
		{"keys list --json", []string{"keys", "list", "--json"}, exitOK, []string{`"id": "` + shown + `"`, `"id": "tenant:acme-svc"`}, []string{note, again}},
		{"keys show by the digest", []string{"keys", "show", "tenant:" + digest}, exitError, nil, []string{"tenant:" + digest + " is not in table " + table + ", nor the digest of a tenant's key in it"}},
		{"buckets show by the digest", []string{"buckets", "show", "tenant:" + digest}, exitOK, []string{"identity    tenant:" + digest + "\n"}, []string{"note: no registered tenant's key is " + digest}},
		// No function reads the item: a document without its plan leaves no tenant without one.
		{"config put without its plan", []string{"config", "put", file(t, "basic.yaml", "defaultPlan: basic\nplans:\n  basic: [{name: burst, capacity: 5, refillPerSecond: 0.001}]\n")}, exitOK, nil, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			code, stdout, stderr := d.run(tc.args...)
			ok := code == tc.code && !strings.Contains(stdout+stderr, key)
			for _, want := range tc.stdout {
				ok = ok && strings.Contains(stdout, want)
			}
			for _, want := range tc.stderr {
				ok = ok && strings.Contains(stderr, want)
			}
			if !ok {
				t.Fatalf("bucketgate %s: exit %d\n%s%s\nwant exit %d, never the key, stdout with %q, stderr with %q", strings.Join(tc.args, " "), code, stdout, stderr, tc.code, tc.stdout, tc.stderr)
			}
		})
	}
	if payloads := d.check.payloads.String(); strings.Contains(payloads, key) {
		t.Fatalf("the key went to the check function:\n%s", payloads)
	}
}

// A tenant whose key holds an API key bucketgate made (tenant:acme/bg_..., which a CLI
// wrote before such a key was refused as a tenant's), which no function looks up either,
// never has the key printed or sent: keys list shows it masked (tenant:acme/bg_... and its
// key's digest), with the note saying to delete the item, as it shows one whose key is
// the API key; an item of such a tenant that cannot be read is named so in its error
// too; keys show does not take it by its key's digest (it printed the item's id, the
// key) nor by its key (refused, naming the problem), nor do buckets show and usage,
// before any call (the check function refused it); config put does not refuse a document
// for leaving it without its plan (naming it by its key).
func TestTenantHoldingAMadeKey(t *testing.T) {
	d, _ := newDeployment(t)
	key, err := newKey()
	if err != nil {
		t.Fatal(err)
	}
	broken, err := newKey() // the key in an item that cannot be read
	if err != nil {
		t.Fatal(err)
	}
	digest := bucketgate.KeyDigest("acme/" + key)
	d.put(map[string]types.AttributeValue{"id": &types.AttributeValueMemberS{Value: "tenant:acme/" + key}, "plan": &types.AttributeValueMemberS{Value: "gold"}},
		map[string]types.AttributeValue{"id": &types.AttributeValueMemberS{Value: "tenant:" + broken + "/x"}})
	shown := "tenant:acme/bg_... (digest " + digest + ")"
	note := "note: " + shown + " is a tenant whose key is or holds an API key bucketgate made, which no function looks up any more (the check function refuses such a key), and its item holds the key: delete the item"
	refused := "tenant: a tenant key that is or holds an API key bucketgate made (bg_...): the check function refuses it"
	tests := []struct {
		name           string
		args           []string
		code           int
		stdout, stderr []string // what each holds
	}{
		{"keys list", []string{"keys", "list"}, exitOK, []string{shown + "  gold ", "invalid: invalid registry item tenant:bg_.../x (digest " + bucketgate.KeyDigest(broken+"/x") + "): attribute plan"}, []string{note}},
		{"keys list --json", []string{"keys", "list", "--json"}, exitOK, []string{`"id": "` + shown + `"`}, []string{note}},
		{"keys show by the digest", []string{"keys", "show", "tenant:" + digest}, exitError, nil, []string{"tenant:" + digest + " is not in table " + table + ", nor the digest of a tenant's key in it"}},
		{"keys show by the key", []string{"keys", "show", "tenant:acme/" + key}, exitUsage, nil, []string{refused}},
		{"buckets show", []string{"buckets", "show", "tenant:acme/" + key}, exitUsage, nil, []string{refused}},
		{"usage", []string{"usage", "tenant:acme/" + key}, exitUsage, nil, []string{refused}},
		// No function reads the item: a document without its plan leaves no tenant without one.
		{"config put without its plan", []string{"config", "put", file(t, "basic.yaml", "defaultPlan: basic\nplans:\n  basic: [{name: burst, capacity: 5, refillPerSecond: 0.001}]\n")}, exitOK, nil, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			code, stdout, stderr := d.run(tc.args...)
			ok := code == tc.code && !strings.Contains(stdout+stderr, key[3:]) && !strings.Contains(stdout+stderr, broken[3:])
			for _, want := range tc.stdout {
				ok = ok && strings.Contains(stdout, want)
			}
			for _, want := range tc.stderr {
				ok = ok && strings.Contains(stderr, want)
			}
			if !ok {
				t.Fatalf("bucketgate %s: exit %d\n%s%s\nwant exit %d, never a key, stdout with %q, stderr with %q", strings.Join(tc.args, " "), code, stdout, stderr, tc.code, tc.stdout, tc.stderr)
			}
		})
	}
	if payloads := d.check.payloads.String(); strings.Contains(payloads, key[3:]) {
		t.Fatalf("the key went to the check function:\n%s", payloads)
	}
}

// The note of keys list on a tenant whose key is an API key bucketgate made suggests
// the command that registers the tenant again with the item's plan and rules: a plan
// holding a key (an item written by hand; the CLI refuses one) is masked in it, as
// keys list masks it in the list. It was written out whole on stderr.
func TestMadeKeyTenantNoteMasksThePlan(t *testing.T) {
	d, _ := newDeployment(t)
	key, err := newKey()
	if err != nil {
		t.Fatal(err)
	}
	plan, err := newKey()
	if err != nil {
		t.Fatal(err)
	}
	d.put(map[string]types.AttributeValue{"id": &types.AttributeValueMemberS{Value: "tenant:" + key}, "plan": &types.AttributeValueMemberS{Value: plan}})
	code, stdout, stderr := d.run("keys", "list")
	if again := "bucketgate keys create --tenant " + bucketgate.KeyDigest(key) + " --plan bg_..."; code != exitOK || !strings.Contains(stderr, again) ||
		strings.Contains(stdout+stderr, key[3:]) || strings.Contains(stdout+stderr, plan[3:]) {
		t.Fatalf("keys list: exit %d\n%s%s\nwant exit 0, a note with %q, never a key", code, stdout, stderr, again)
	}
}
