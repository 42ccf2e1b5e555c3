package main

import (
	"strings"
	"testing"

	"github.com/bucketgate/bucketgate"
)

// TestKeyFromStdin: everywhere the CLI takes an API key, "-" reads it from the first
// line of stdin instead, so that it stays out of the process list and the shell's
// history; the key itself is printed nowhere.
func TestKeyFromStdin(t *testing.T) {
	d, _ := newDeployment(t)
	key := strings.TrimSpace(d.ok("keys", "create", "--plan", "gold"))
	id := "key:" + bucketgate.KeyDigest(key)
	d.stdin = key + "\n"
	for _, args := range [][]string{
		{"keys", "show", "-"},
		{"keys", "override", "-", "--rule", "burst:40:1"},
		{"keys", "set-plan", "-", "basic"},
		{"keys", "expire", "-", "never"},
		{"keys", "clear-overrides", "-"},
		{"buckets", "show", "-"},
		{"buckets", "refund", "--cost", "1", "-"},
		{"buckets", "reset", "-"},
		{"keys", "revoke", "-"},
	} {
		code, stdout, stderr := d.run(args...)
		if code != exitOK || !strings.Contains(stdout+stderr, id) || strings.Contains(stdout+stderr, key) {
			t.Fatalf("%s with the key on stdin: exit %d\n%s%s\nwant %s named, never the key", strings.Join(args, " "), code, stdout, stderr, id)
		}
	}
	if show := d.ok("keys", "show", id); !strings.Contains(show, "status     revoked") {
		t.Fatalf("the revocation read from stdin missed the key:\n%s", show)
	}
	for _, tc := range []struct{ stdin, want string }{
		{"", "stdin is empty"},
		{"\n", "stdin is empty"},
		{key + "\n" + key + "\n", "more than one line"},
	} {
		d.stdin = tc.stdin
		d.fails(exitUsage, tc.want, "keys", "show", "-")
	}
}

// TestCreateWithAnExistingKey: keys create --key - registers a key read from stdin (one
// issued elsewhere, being moved into the registry), by its digest, and refuses one with
// too little entropy for its digest to stay secret in the logs: a dictionary reverses
// the unsalted digest of a short or guessable key.
func TestCreateWithAnExistingKey(t *testing.T) {
	c := newCLI(t)
	c.ok("keys", "init")
	strong := "legacy_9fK2mQx7Lp4Rz8Vt1Wc6Yb3N"
	c.stdin = strong + "\n"
	code, stdout, stderr := c.run("keys", "create", "--plan", "pro", "--key", "-")
	if code != exitOK || stdout != "" || !strings.Contains(stderr, "created key:"+bucketgate.KeyDigest(strong)) || strings.Contains(stdout+stderr, strong) {
		t.Fatalf("create --key -: exit %d\n%s%s", code, stdout, stderr)
	}
	if show := c.ok("keys", "show", "key:"+bucketgate.KeyDigest(strong)); !strings.Contains(show, "plan       pro") {
		t.Fatalf("show:\n%s", show)
	}
	for _, weak := range []string{"password123", "acme-prod-key", "0123456789abcdef01234567", strings.Repeat("a", 40)} {
		c.stdin = weak
		c.fails(exitUsage, "bits of entropy", "keys", "create", "--plan", "pro", "--key", "-")
	}
	c.stdin = strong
	c.fails(exitUsage, "--key takes - alone", "keys", "create", "--plan", "pro", "--key", strong)
}
