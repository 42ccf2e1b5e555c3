package main

import (
	"bytes"
	"encoding/json"
	"os"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/bucketgate/bucketgate"
	"github.com/bucketgate/bucketgate/internal/registry"
)

// An item that cannot be read is never printed as active by --json (a script filtering
// on status would count it): its status is unreadable, with invalid saying why; and
// accounts show of an account whose own item cannot be read prints it so, with its
// keys, each invalid, as keys list lists them.
func TestUnreadableItemsStatus(t *testing.T) {
	c := withAccounts(t, "acme", "paused")
	member := keyID(strings.TrimSpace(c.ok("keys", "create", "--account", "paused")))
	broken := "key:" + bucketgate.KeyDigest("broken")
	for _, item := range []map[string]types.AttributeValue{
		{"id": &types.AttributeValueMemberS{Value: broken}, "account": &types.AttributeValueMemberS{Value: "acme"}, "status": &types.AttributeValueMemberS{Value: "paused"}},
		{"id": &types.AttributeValueMemberS{Value: "account:paused"}, "plan": &types.AttributeValueMemberS{Value: "pro"}, "status": &types.AttributeValueMemberS{Value: "paused"}},
	} {
		c.put(item)
	}
	type item struct {
		ID, Status, Invalid string
		Keys                []item
	}
	one := func(t *testing.T, out string) []item {
		var it item
		if err := json.Unmarshal([]byte(out), &it); err != nil {
			t.Fatalf("%v:\n%s", err, out)
		}
		return []item{it}
	}
	many := func(t *testing.T, out string) []item {
		var its []item
		if err := json.Unmarshal([]byte(out), &its); err != nil {
			t.Fatalf("%v:\n%s", err, out)
		}
		return its
	}
	keysOf := func(f func(*testing.T, string) []item) func(*testing.T, string) []item {
		return func(t *testing.T, out string) []item { return f(t, out)[0].Keys }
	}
	tests := []struct {
		name  string
		args  []string
		items func(*testing.T, string) []item
		id    string // the item to look at
		want  string // its status
	}{
		{"keys list", []string{"keys", "list", "--json"}, many, broken, statusUnreadable},
		{"accounts list", []string{"accounts", "list", "--json"}, many, "account:paused", statusUnreadable},
		{"a key of accounts show", []string{"accounts", "show", "--json", "acme"}, keysOf(one), broken, statusUnreadable},
		{"accounts show of it", []string{"accounts", "show", "--json", "paused"}, one, "account:paused", statusUnreadable},
		{"a key of an unreadable account", []string{"accounts", "show", "--json", "paused"}, keysOf(one), member, "active"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c.t = t
			var found bool
			for _, it := range tc.items(t, c.ok(tc.args...)) {
				if it.ID != tc.id {
					continue
				}
				found = true
				if it.Status != tc.want || it.Invalid == "" {
					t.Errorf("%s: %s has status %q, invalid %q; want %q and why it is invalid", strings.Join(tc.args, " "), it.ID, it.Status, it.Invalid, tc.want)
				}
			}
			if !found {
				t.Errorf("%s lists no %s", strings.Join(tc.args, " "), tc.id)
			}
		})
	}
	c.t = t
	out := c.ok("accounts", "show", "paused")
	for _, want := range []string{"status    " + statusUnreadable + "\n", "invalid   attribute status:", "key       " + member + " (invalid: "} {
		if !strings.Contains(out, want) {
			t.Errorf("accounts show paused:\n%s\nwant %q", out, want)
		}
	}
}

// The lists and shows print their items past a configuration document that does not
// load (a warning), never past a failure to read it (AWS's error): that exits 1, as
// every command whose table read fails, rather than print items unchecked as if the
// document were broken.
func TestListsFailWhenTheDocumentsReadFails(t *testing.T) {
	c := newCLI(t)
	c.ok("keys", "init")
	c.ok("accounts", "create", "acme", "--plan", "pro")
	member := keyID(strings.TrimSpace(c.ok("keys", "create", "--account", "acme")))
	calls := newRecorder(t, map[string]string{"dynamodb": os.Getenv("AWS_ENDPOINT_URL_DYNAMODB")})
	t.Setenv("AWS_ENDPOINT_URL_DYNAMODB", calls.URL)
	calls.refuseWhen(func(action string, body []byte) bool {
		return action == "dynamodb:GetItem" && bytes.Contains(body, []byte(`"id":{"S":"`+registry.ConfigID+`"}`))
	})
	for _, args := range [][]string{
		{"keys", "list"}, {"keys", "list", "--json"}, {"keys", "show", member}, {"keys", "show", "--json", member},
		{"accounts", "list"}, {"accounts", "show", "acme"}, {"accounts", "show", "--json", "acme"},
	} {
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			c.t = t
			c.fails(exitError, "refused by the test", args...)
		})
	}
}

// keys create --account and keys roll read the account again once the key is written:
// when that read fails (AWS's error, each time it is made), they say so, and that the key is written, never
// that a change written meanwhile leaves the key without a usable plan.
func TestKeyOfAnAccountRecheckReadFails(t *testing.T) {
	c, calls, _ := newRoomCLI(t)
	for _, tc := range []struct {
		name, account string
		roll          bool // keys roll of a key of the account, else keys create --account
	}{
		{"keys create", "acme1", false},
		{"keys roll", "acme2", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c.t = t
			args := keyCommandOfNewAccount(c, tc.account, tc.roll)
			written, refused := false, false
			calls.refuseWhen(func(action string, body []byte) bool {
				if action == "dynamodb:PutItem" && bytes.Contains(body, []byte(`"account":{"S":"`+tc.account+`"}`)) {
					written = true
				}
				if written && action == "dynamodb:GetItem" && bytes.Contains(body, []byte(`"id":{"S":"account:`+tc.account+`"}`)) {
					refused = true
					return true
				}
				return false
			})
			code, stdout, stderr := c.run(args...)
			calls.refuseWhen(nil)
			id := keyID(strings.TrimSpace(stdout))
			if !refused || code != exitError || !strings.Contains(stderr, id+" is written, but reading account "+tc.account+" again") ||
				!strings.Contains(stderr, "refused by the test") || strings.Contains(stderr, "without a usable plan") {
				t.Fatalf("bucketgate %s, the read after the write refused (%v): exit %d\n%s\nwant exit 1 saying %s is written and the read failed", strings.Join(args, " "), refused, code, stderr, id)
			}
		})
	}
}

// config history --json names a copy that cannot be read by its id, as the text does,
// and never makes up a version for one whose version cannot be read.
func TestConfigHistoryJSONNamesUnreadableCopies(t *testing.T) {
	c := newCLI(t)
	c.ok("keys", "init")
	c.ok("config", "put", file(t, "v1.yaml", goldDoc))
	for _, item := range []map[string]types.AttributeValue{
		{"id": &types.AttributeValueMemberS{Value: registry.VersionPrefix + "7"}, "document": &types.AttributeValueMemberS{Value: goldDoc}, "version": &types.AttributeValueMemberS{Value: "seven"}},
	} {
		c.put(item)
	}
	var versions []map[string]any
	out := c.ok("config", "history", "--json")
	if err := json.Unmarshal([]byte(out), &versions); err != nil {
		t.Fatalf("%v:\n%s", err, out)
	}
	var found bool
	for _, v := range versions {
		if v["invalid"] == nil {
			continue
		}
		found = true
		if v["id"] != registry.VersionPrefix+"7" || v["version"] != nil {
			t.Errorf("config history --json:\n%s\nwant the copy that cannot be read named by its id %s%s, with no version", out, registry.VersionPrefix, "7")
		}
	}
	if !found {
		t.Errorf("config history --json:\n%s\nlists no copy that cannot be read", out)
	}
}

// A write that reads the configuration document again after it (to check the item
// against a document written meanwhile) and fails to (AWS's error) says so, the item
// written, rather than exit 0 unchecked.
func TestRecheckOfTheDocumentReadFails(t *testing.T) {
	c, calls, _ := newRoomCLI(t)
	c.ok("config", "put", file(t, "v1.yaml", goldDoc))
	written := false
	calls.refuseWhen(func(action string, body []byte) bool {
		if action == "dynamodb:PutItem" && bytes.Contains(body, []byte(`"id":{"S":"key:`)) {
			written = true
		}
		return written && action == "dynamodb:GetItem" && bytes.Contains(body, []byte(`"id":{"S":"`+registry.ConfigID+`"}`))
	})
	code, stdout, stderr := c.run("keys", "create", "--plan", "free")
	calls.refuseWhen(nil)
	id := keyID(strings.TrimSpace(stdout))
	if !written || code != exitError || !strings.Contains(stderr, id+" is written, but reading the configuration document again") || !strings.Contains(stderr, "refused by the test") {
		t.Fatalf("keys create, the document's read after the write refused: exit %d\n%s\nwant exit 1 saying %s is written and the read failed", code, stderr, id)
	}
}

// An account change reads the account's keys again once it is written (for a key
// written meanwhile that it leaves without room): when that scan fails (AWS's error),
// the command says so, naming the account as written, and exits 1, never 0 unchecked.
func TestAccountChangeRecheckScanFails(t *testing.T) {
	c, calls, _ := newRoomCLI(t)
	for _, tc := range []struct {
		name    string
		account string
		args    []string
	}{
		{"set-plan", "acme1", []string{"accounts", "set-plan", "acme1", "big"}},
		{"override", "acme2", []string{"accounts", "override", "acme2", "--rule", "hour:100:100/hour"}},
		{"expire never of an expired account", "acme3", []string{"accounts", "expire", "acme3", "never"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c.t = t
			c.ok("accounts", "create", tc.account, "--plan", "small")
			c.ok("keys", "create", "--account", tc.account)
			if tc.name == "expire never of an expired account" {
				c.put(map[string]types.AttributeValue{
					"id": &types.AttributeValueMemberS{Value: "account:" + tc.account}, "plan": &types.AttributeValueMemberS{Value: "small"},
					"expiresAt": &types.AttributeValueMemberN{Value: "1000"},
				})
			}
			written, refused := false, false
			calls.refuseWhen(func(action string, body []byte) bool {
				if action == "dynamodb:PutItem" && bytes.Contains(body, []byte(`"id":{"S":"account:`+tc.account+`"}`)) {
					written = true
				}
				refused = refused || written && action == "dynamodb:Scan"
				return written && action == "dynamodb:Scan"
			})
			code, _, stderr := c.run(tc.args...)
			calls.refuseWhen(nil)
			if !refused || code != exitError || !strings.Contains(stderr, "account:"+tc.account+" is written, but its keys could not be read again") ||
				!strings.Contains(stderr, "refused by the test") {
				t.Fatalf("bucketgate %s, the scan after the write refused (%v): exit %d\n%s\nwant exit 1 saying the account is written and its keys were not read again", strings.Join(tc.args, " "), refused, code, stderr)
			}
		})
	}
}

// accounts show of an account whose own item cannot be read never prints an empty plan
// as if it were the account's: the plan line says it cannot be read (see invalid), and
// --json has no plan (null), the status unreadable and invalid saying why; both exit 0.
func TestAccountsShowUnreadablePlan(t *testing.T) {
	c := withAccounts(t)
	for _, tc := range []struct {
		name, account string
		item          map[string]types.AttributeValue
	}{
		{"a plan that is a number", "numbered", map[string]types.AttributeValue{"plan": &types.AttributeValueMemberN{Value: "7"}}},
		{"no plan", "planless", map[string]types.AttributeValue{"owner": &types.AttributeValueMemberS{Value: "ops"}}},
		{"a plan, a bad status", "paused", map[string]types.AttributeValue{"plan": &types.AttributeValueMemberS{Value: "pro"}, "status": &types.AttributeValueMemberS{Value: "paused"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c.t = t
			tc.item["id"] = &types.AttributeValueMemberS{Value: "account:" + tc.account}
			c.put(tc.item)
			out := c.ok("accounts", "show", tc.account)
			var plan string
			for line := range strings.Lines(out) {
				if v, ok := strings.CutPrefix(line, "plan "); ok {
					plan = strings.TrimSpace(v)
				}
			}
			if !strings.Contains(plan, "cannot be read") || !strings.Contains(out, "\ninvalid ") {
				t.Errorf("accounts show %s:\n%s\nwant a plan line saying the item cannot be read, and why (invalid)", tc.account, out)
			}
			var j map[string]any
			out = c.ok("accounts", "show", "--json", tc.account)
			if err := json.Unmarshal([]byte(out), &j); err != nil {
				t.Fatalf("%v:\n%s", err, out)
			}
			if p, ok := j["plan"]; !ok || p != nil || j["status"] != statusUnreadable || j["invalid"] == nil {
				t.Errorf("accounts show --json %s:\n%s\nwant plan null, status %s and invalid saying why", tc.account, out, statusUnreadable)
			}
		})
	}
}

// accounts show of an account whose own item cannot be read names whose buckets it
// spends as far as its buckets attribute tells on its own: the key a roll made it from
// while the attribute is readable, acct:NAME when the item has none, and unknown (-, null
// in --json) when the attribute cannot be read either; never acct:NAME for an account
// that spends a key's buckets.
func TestAccountsShowUnreadableIdentity(t *testing.T) {
	c := withAccounts(t)
	made := "key:" + bucketgate.KeyDigest("bg-the-rolled-key")
	badPlan := &types.AttributeValueMemberN{Value: "7"}
	tests := []struct {
		name, account string
		item          map[string]types.AttributeValue
		identity      string // "" for unknown
	}{
		{"made by a roll", "rolled", map[string]types.AttributeValue{"plan": badPlan, "buckets": &types.AttributeValueMemberS{Value: made}}, made},
		{"made by a roll, buckets a number", "rolled-n", map[string]types.AttributeValue{"plan": &types.AttributeValueMemberS{Value: "pro"}, "buckets": &types.AttributeValueMemberN{Value: "5"}}, ""},
		{"made by a roll, buckets no key's", "rolled-s", map[string]types.AttributeValue{"plan": &types.AttributeValueMemberS{Value: "pro"}, "buckets": &types.AttributeValueMemberS{Value: "acct:other"}}, ""},
		{"made by accounts create", "created", map[string]types.AttributeValue{"plan": badPlan}, "acct:created"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c.t = t
			tc.item["id"] = &types.AttributeValueMemberS{Value: "account:" + tc.account}
			c.put(tc.item)
			out := c.ok("accounts", "show", tc.account)
			want := tc.identity
			if want == "" {
				want = "- (the item cannot be read: see invalid)"
			}
			var identity string
			for line := range strings.Lines(out) {
				if v, ok := strings.CutPrefix(line, "identity "); ok {
					identity = strings.TrimSpace(v)
				}
			}
			if identity != want || !strings.Contains(out, "\ninvalid ") {
				t.Errorf("accounts show %s:\n%s\nwant the identity %q", tc.account, out, want)
			}
			var j map[string]any
			out = c.ok("accounts", "show", "--json", tc.account)
			if err := json.Unmarshal([]byte(out), &j); err != nil {
				t.Fatalf("%v:\n%s", err, out)
			}
			if id, ok := j["identity"]; !ok || tc.identity == "" && id != nil || tc.identity != "" && id != tc.identity {
				t.Errorf("accounts show --json %s:\n%s\nwant identity %q (null for unknown)", tc.account, out, tc.identity)
			}
		})
	}
}
