package benchreport

import (
	"context"
	"net"
	"slices"
	"strings"
	"testing"

	"github.com/bucketgate/bucketgate/internal/redistest"
)

// TestRedisBenchmarkArgs: the command redis-benchmark times is one the script accepts,
// and one it refuses (an extra argument) fails the check instead of being timed.
func TestRedisBenchmarkArgs(t *testing.T) {
	ctx := context.Background()
	srv := redistest.Start(t)
	admin := redistest.Client(t, srv.Addr)
	host, port, err := net.SplitHostPort(srv.Addr)
	if err != nil {
		t.Fatal(err)
	}
	sha, err := scriptSHA1(ctx, admin)
	if err != nil {
		t.Fatal(err)
	}
	args := redisBenchmarkArgs(ThroughputPlan{Requests: 10, Keyspace: 5, Clients: 1, Pipeline: 1}, host, port, sha)
	if err := checkRedisBenchmarkArgs(ctx, admin, args); err != nil {
		t.Fatalf("the benchmark's own command: %v", err)
	}
	i := slices.Index(args, "EVALSHA")
	bad := slices.Insert(slices.Clone(args), i+5, "extra")
	if err := checkRedisBenchmarkArgs(ctx, admin, bad); err == nil || !strings.Contains(err.Error(), "bucketgate: ARGV must be") {
		t.Fatalf("a command the script refuses: err = %v, want the script's refusal", err)
	}
}
