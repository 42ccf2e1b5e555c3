package benchreport

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/bucketgate/bucketgate/internal/testkit/redistest"
)

// TestScriptCommand: the command redis-benchmark times is one the script accepts,
// and one it refuses (an extra argument) fails the check instead of being timed.
func TestScriptCommand(t *testing.T) {
	ctx := context.Background()
	srv := redistest.Start(t)
	admin := redistest.Client(t, srv.Addr)
	sha, err := scriptSHA1(ctx, admin)
	if err != nil {
		t.Fatal(err)
	}
	cmd := scriptCommand(sha, "bg:{check}")
	if err := checkScriptCommand(ctx, admin, cmd); err != nil {
		t.Fatalf("the benchmark's own command: %v", err)
	}
	bad := slices.Delete(slices.Clone(cmd), 5, 6) // three values after the key: no layout of the script's
	if err := checkScriptCommand(ctx, admin, bad); err == nil || !strings.Contains(err.Error(), "bucketgate: ARGV must be") {
		t.Fatalf("a command the script refuses: err = %v, want the script's refusal", err)
	}
	args := redisBenchmarkArgs(ThroughputPlan{Requests: 10, Keyspace: 5, Clients: 1, Pipeline: 1}, "h", "p", sha)
	if !slices.Equal(args[len(args)-len(cmd):], scriptCommand(sha, "bg:{rb-__rand_int__}")) {
		t.Fatalf("redis-benchmark's arguments %q do not end in the checked command", args)
	}
}
