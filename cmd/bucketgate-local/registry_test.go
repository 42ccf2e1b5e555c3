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
	srv := dynalite.Start(t)
	srv.Setenv(t)
	env := map[string]string{
		"REDIS_ADDR":                miniAt(t).Addr(),
		"RATE_LIMIT_CONFIG":         slowPlans,
		settings.EnvRegistryTable:   "bucketgate-keys",
		settings.EnvRegistryCacheMS: "300",
		envDynamoDBEndpoint:         srv.URL,
	}
	cli := buildCLI(t)
	keys := func(args ...string) string {
		t.Helper()
		cmd := exec.Command(cli, append([]string{"keys"}, args...)...)
		cmd.Env = os.Environ()
		for k, v := range env {
			cmd.Env = append(cmd.Env, k+"="+v)
		}
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("bucketgate keys %s: %v\n%s", strings.Join(args, " "), err, stderrOf(err))
		}
		return string(out)
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
	time.Sleep(300 * time.Millisecond) // REGISTRY_CACHE_MS
	if r := g.get(t, "/scores", key); r.status != http.StatusTooManyRequests || r.body["plan"] != "free" {
		t.Fatalf("the revoked key: %d %v, want 429 on the IP's spent free bucket", r.status, r.body)
	}
	if out := g.stdout.String(); !strings.Contains(out, "registry    DynamoDB table bucketgate-keys at "+srv.URL+", cached 300 ms") {
		t.Errorf("the banner does not name the registry table:\n%s", out)
	}
	if strings.Contains(g.stdout.String()+g.stderr.String(), key) {
		t.Errorf("the gateway printed the raw key")
	}
}

// buildCLI builds cmd/bucketgate into the test's directory and returns its path.
func buildCLI(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "bucketgate")
	if out, err := exec.Command("go", "build", "-o", bin, "github.com/bucketgate/bucketgate/cmd/bucketgate").CombinedOutput(); err != nil {
		t.Fatalf("go build ./cmd/bucketgate: %v\n%s", err, out)
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
