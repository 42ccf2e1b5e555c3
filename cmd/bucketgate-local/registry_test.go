package main

import (
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/bucketgate/bucketgate/internal/settings"
	"github.com/bucketgate/bucketgate/internal/testkit/dynalite"
)

// slowPlans refill once an hour, so that a test's requests never see a refill.
const slowPlans = "defaultPlan: free\nplans: {free: [{name: burst, capacity: 3, refill: 1, per: hour}], pro: [{name: burst, capacity: 100, refill: 1, per: hour}]}"

// statuses sends n requests with key and returns their statuses, space separated.
func (g *gateway) statuses(t *testing.T, n int, key func(i int) string) string {
	t.Helper()
	codes := make([]string, n)
	for i := range codes {
		codes[i] = strconv.Itoa(g.get(t, "/scores", key(i)).status)
	}
	return strings.Join(codes, " ")
}

// From one IP, a new made-up key with every request shares that IP's bucket: the
// burst runs out as it does without a key.
func TestMadeUpKeysShareTheIPBucket(t *testing.T) {
	g := startGateway(t, map[string]string{"REDIS_ADDR": miniAt(t).Addr(), "RATE_LIMIT_CONFIG": slowPlans})
	got := g.statuses(t, 5, func(i int) string { return "made-up-" + strconv.Itoa(i) })
	if want := "200 200 200 429 429"; got != want {
		t.Fatalf("made-up keys: %s, want %s", got, want)
	}
	if got := g.statuses(t, 1, func(int) string { return "" }); got != "429" {
		t.Fatalf("no key from the same IP: %s, want 429: the same bucket", got)
	}
}

// The session with a local table (docs/keys.md), through the real local gateway and the real
// CLI: keys init, keys create, curl with the new key, keys revoke, curl again.
func TestRegistrySession(t *testing.T) {
	env := tableEnv(t)
	env["RATE_LIMIT_CONFIG"] = slowPlans
	cli := buildCLI(t)
	keys := func(args ...string) string {
		t.Helper()
		return runBucketgate(t, cli, env, append([]string{"keys"}, args...)...)
	}
	keys("init")
	key := strings.TrimSpace(keys("create", "--plan", "pro"))
	g := startGateway(t, env)
	if got := g.statuses(t, 5, func(int) string { return key }); got != "200 200 200 200 200" {
		t.Fatalf("the new key on pro: %s, want five 200", got)
	}
	if got := g.statuses(t, 4, func(int) string { return "made-up" }); got != "200 200 200 429" {
		t.Fatalf("a made-up key beside it, limited as the IP on free: %s", got)
	}
	keys("revoke", key)
	if r := g.getAfterCache(t, "/scores", key, func(r reply) bool { return r.body["plan"] == "free" }); r.status != http.StatusTooManyRequests || r.body["plan"] != "free" {
		t.Fatalf("the revoked key: %d %v, want 429 on the IP's spent free bucket", r.status, r.body)
	}
	if out := g.stdout.String(); !strings.Contains(out, "registry    DynamoDB table bucketgate-keys at "+env[envDynamoDBEndpoint]+", cached 300 ms") {
		t.Errorf("the banner does not name the registry table:\n%s", out)
	}
	if strings.Contains(g.stdout.String()+g.stderr.String(), key) {
		t.Errorf("the gateway printed the raw key")
	}
}

// The session of the docs that moves plans into the table, through the real local
// gateway and the real CLI: config put, a key on a plan the table's document adds,
// curl, a put that changes the plan, curl within the cache period (Redis's clock held
// still: no refill), config rollback.
func TestRegistryConfigSession(t *testing.T) {
	env := tableEnv(t)
	cli := buildCLI(t)
	bg := func(args ...string) string {
		t.Helper()
		return runBucketgate(t, cli, env, args...)
	}
	bg("keys", "init")
	plans := filepath.Join(t.TempDir(), "plans.yaml")
	write := func(goldBurst int) {
		t.Helper()
		doc := "defaultPlan: free\nplans:\n  free: [{name: burst, capacity: 3, refill: 1, per: hour}]\n" +
			"  gold: [{name: burst, capacity: " + strconv.Itoa(goldBurst) + ", refill: 1, per: hour}]\n"
		if err := os.WriteFile(plans, []byte(doc), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write(5)
	bg("config", "put", plans, "--note", "gold plan")
	if got := bg("config", "show"); !strings.Contains(got, "gold: [{name: burst, capacity: 5") {
		t.Fatalf("config show:\n%s", got)
	}
	key := strings.TrimSpace(bg("keys", "create", "--plan", "gold"))
	g := startGateway(t, env)
	if got := g.statuses(t, 6, func(int) string { return key }); got != "200 200 200 200 200 429" {
		t.Fatalf("the key on gold, version 1: %s, want a burst of 5", got)
	}
	write(8)
	bg("config", "put", plans, "--note", "gold burst 8")
	if r := g.getAfterCache(t, "/scores", key, func(r reply) bool { return r.body["limit"] == 8.0 }); r.status != http.StatusTooManyRequests || r.body["limit"] != 8.0 {
		t.Fatalf("after the put: %d %v; want 429 on gold's 8: the bucket keeps its tokens, none", r.status, r.body)
	}
	other := strings.TrimSpace(bg("keys", "create", "--plan", "gold"))
	if got := g.statuses(t, 9, func(int) string { return other }); got != "200 200 200 200 200 200 200 200 429" {
		t.Fatalf("a new key on gold, version 2: %s, want a burst of 8", got)
	}
	bg("config", "rollback", "1")
	if r := g.getAfterCache(t, "/scores", key, func(r reply) bool { return r.body["limit"] == 5.0 }); r.status != http.StatusTooManyRequests || r.body["limit"] != 5.0 {
		t.Fatalf("after the rollback: %d %v; want 429 on gold's 5 again", r.status, r.body)
	}
	if history := bg("config", "history"); strings.Count(history, "\n") != 4 || !strings.Contains(history, "rollback to version 1") {
		t.Fatalf("config history:\n%s", history)
	}
	if out := g.stdout.String(); !strings.Contains(out, "the table's configuration document when it holds one") {
		t.Errorf("the banner does not say where the plans come from:\n%s", out)
	}
}

// getAfterCache waits out the cache period (REGISTRY_CACHE_MS, 300 ms) and asks for path
// with key, again after each further period until done says the change shows, for 5 s
// at most: on a loaded machine the read that follows a period may give up (the document
// or entry in force stays one period more). It returns the last reply.
func (g *gateway) getAfterCache(t *testing.T, path, key string, done func(reply) bool) reply {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); ; {
		time.Sleep(300 * time.Millisecond)
		r := g.get(t, path, key)
		if done(r) || time.Now().After(deadline) {
			return r
		}
	}
}

// tableEnv starts dynalite for the test and returns the environment of a session with
// the local table bucketgate-keys on it: a miniredis whose clock is held still, and a
// cache period of 300 ms.
func tableEnv(t *testing.T) map[string]string {
	t.Helper()
	srv := dynalite.Start(t)
	srv.Setenv(t)
	return map[string]string{
		"REDIS_ADDR":                miniAt(t).Addr(),
		settings.EnvRegistryTable:   "bucketgate-keys",
		settings.EnvRegistryCacheMS: "300",
		envDynamoDBEndpoint:         srv.URL,
	}
}

// runBucketgate runs the bucketgate binary cli with args and the environment env added to
// this process's, and returns its stdout; it fails the test if the command fails.
func runBucketgate(t *testing.T, cli string, env map[string]string, args ...string) string {
	t.Helper()
	cmd := exec.Command(cli, args...)
	cmd.Env = os.Environ()
	for k, v := range env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("bucketgate %s: %v\n%s", strings.Join(args, " "), err, stderrOf(err))
	}
	return string(out)
}

// buildCLI builds cmd/bucketgate into the test's directory and returns its path.
func buildCLI(t *testing.T) string { return build(t, "bucketgate") }

// build builds the command cmd/name into the test's directory and returns its path.
func build(t *testing.T, name string) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), name)
	if out, err := exec.Command("go", "build", "-o", bin, "github.com/bucketgate/bucketgate/cmd/"+name).CombinedOutput(); err != nil {
		t.Fatalf("go build ./cmd/%s: %v\n%s", name, err, out)
	}
	return bin
}

// stderrOf returns what a failed command wrote to stderr.
func stderrOf(err error) string {
	if ee, ok := err.(*exec.ExitError); ok {
		return string(ee.Stderr)
	}
	return ""
}
