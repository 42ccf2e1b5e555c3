package guard_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/bucketgate/bucketgate"
	"github.com/bucketgate/bucketgate/internal/app"
	"github.com/bucketgate/bucketgate/internal/bucket"
	"github.com/bucketgate/bucketgate/internal/guard"
	"github.com/bucketgate/bucketgate/internal/redisconn"
	"github.com/bucketgate/bucketgate/internal/testkit/redistest"
)

// onMaster returns an identity whose slot lies on master i of a redistest cluster of n
// masters, in a circuit whose slots all lie there.
func onMaster(t *testing.T, i, n int) string {
	t.Helper()
	lo, hi := i*bucket.Slots/n, (i+1)*bucket.Slots/n-1
	for k := range 100000 {
		id := fmt.Sprintf("master-%d-%d", i, k)
		c := bucket.Slot(id) / guard.CircuitSlots
		if c*guard.CircuitSlots >= lo && (c+1)*guard.CircuitSlots-1 <= hi {
			return id
		}
	}
	t.Fatalf("no identity on master %d of %d", i, n)
	return ""
}

// TestClusterMasterDown: while a master of a cluster is down, the circuits of its slots
// open and the identities of the other masters are still decided by Redis, through the
// production chain (app.NewGuard), which knows the connection is to a cluster; a guard
// with one circuit for every request refuses them too once that circuit opens.
func TestClusterMasterDown(t *testing.T) {
	const masters = 3
	cluster := redistest.StartCluster(t, masters, 0)
	for _, m := range cluster.Masters[1:] {
		// The surviving masters keep serving their slots once the cluster misses one.
		run(t, m, "CONFIG", "SET", "cluster-require-full-coverage", "no")
	}
	s := redistest.Settings(t, map[string]string{"REDIS_ADDR": strings.Join(cluster.Seeds(), ","), "REDIS_TIMEOUT_MS": faultTimeoutMS})
	perRange, conn, err := app.NewGuard(s, slog.New(slog.DiscardHandler), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(conn.Close)
	single, err := redisconn.New(s)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(single.Close)
	opts := app.GuardOptions(s)
	opts.ProbeInterval = time.Hour // no probe closes the one circuit during the test
	oneCircuit := guard.New(bucket.NewLazy(single.Client), opts)

	down, alive := request(onMaster(t, 0, masters)), request(onMaster(t, masters-1, masters))
	tests := []struct {
		name      string
		g         *guard.Guard
		aliveOpen bool // whether the circuit answers for the identity on a healthy master
	}{
		{"a circuit per slot range (app.NewGuard)", perRange, false},
		{"one circuit", oneCircuit, true},
	}
	for _, tc := range tests {
		for _, q := range []bucketgate.Request{down, alive} { // connected, script loaded on both masters
			if r := decide(t, tc.g, q); r.Failure != guard.FailureNone {
				t.Fatalf("%s: %s before the fault: %+v", tc.name, q.Identity, r)
			}
		}
	}

	cluster.Masters[0].Stop()
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			for deadline := time.Now().Add(slack); ; {
				r := decide(t, tc.g, down)
				if r.Failure == guard.FailureNone || r.Reason != bucketgate.ReasonUnavailable {
					t.Fatalf("%s on the master that is down: %+v", down.Identity, r)
				}
				if r.CircuitOpen {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("the circuit of %s not open %v after its master went down", down.Identity, slack)
				}
			}
			r := decide(t, tc.g, alive)
			if r.CircuitOpen != tc.aliveOpen || (!tc.aliveOpen && (r.Failure != guard.FailureNone || !r.Allowed)) {
				t.Fatalf("%s on a healthy master: %+v, want circuit open %v", alive.Identity, r, tc.aliveOpen)
			}
			rs := decideBatch(t, tc.g, context.Background(), down, alive)
			if !rs[0].CircuitOpen || rs[1].CircuitOpen != tc.aliveOpen || (!tc.aliveOpen && rs[1].Failure != guard.FailureNone) {
				t.Fatalf("a batch of both: %+v", rs)
			}
		})
	}
}

// inCircuit returns an identity whose circuit is that of slot.
func inCircuit(t *testing.T, slot int) string {
	t.Helper()
	for k := range 100000 {
		id := fmt.Sprintf("circuit-%d", k)
		if bucket.Slot(id)/guard.CircuitSlots == slot/guard.CircuitSlots {
			return id
		}
	}
	t.Fatalf("no identity in the circuit of slot %d", slot)
	return ""
}

// TestClusterSecretMasterDown: while a master that keeps the reservations' secrets
// (bucket.SecretKey, or the kept ones, bucket.SecretsKeptKey: two slots, in general two
// masters) is down, an instance that has not read them yet cannot reserve for any
// identity; those failures count in the circuit of the key it could not read, so that
// the checks of identities of the other masters, the other key's among them, are still
// decided.
func TestClusterSecretMasterDown(t *testing.T) {
	const masters = 3
	tests := []struct {
		name        string
		down, other string // the key whose master is down, the other one
	}{
		{"the secret's master", bucket.SecretKey, bucket.SecretsKeptKey},
		{"the kept secrets' master", bucket.SecretsKeptKey, bucket.SecretKey},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cluster := redistest.StartCluster(t, masters, 0)
			for _, m := range cluster.Masters {
				run(t, m, "CONFIG", "SET", "cluster-require-full-coverage", "no")
			}
			slot := func(key string) int {
				n, err := strconv.Atoi(run(t, cluster.Masters[0], "CLUSTER", "KEYSLOT", key))
				if err != nil {
					t.Fatal(err)
				}
				return n
			}
			if n := slot(bucket.SecretKey); n != bucket.SecretSlot {
				t.Fatalf("SecretSlot %d, CLUSTER KEYSLOT %s says %d", bucket.SecretSlot, bucket.SecretKey, n)
			}
			holder := slot(tc.down) * masters / bucket.Slots // redistest gives each master an equal range
			alive := inCircuit(t, slot(tc.other))
			if bucket.Slot(alive)*masters/bucket.Slots == holder {
				t.Fatalf("%s and %s on one master", tc.down, tc.other)
			}
			cluster.Masters[holder].Stop()

			s := redistest.Settings(t, map[string]string{"REDIS_ADDR": strings.Join(cluster.Seeds(), ","), "REDIS_TIMEOUT_MS": faultTimeoutMS})
			g, conn, err := app.NewGuard(s, slog.New(slog.DiscardHandler), nil) // a cold start: no secret read yet
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(conn.Close)
			reserve := bucketgate.Request{Identity: alive, Rules: burst, Cost: 1, Op: bucketgate.OpReserve}
			for i := range guard.DefaultFailuresToOpen + 1 {
				if r := decide(t, g, reserve); r.Failure == guard.FailureNone || r.Reason != bucketgate.ReasonUnavailable || !errors.Is(r.Err, bucket.ErrNoSecret) {
					t.Fatalf("reserve %d without the secret: %+v", i+1, r)
				}
			}
			if r := decide(t, g, request(alive)); r.Failure != guard.FailureNone || r.CircuitOpen || !r.Allowed {
				t.Fatalf("a check of %s on a healthy master: %+v", alive, r)
			}
		})
	}
}

// TestClusterSecretMasterDownInARequest: in a cluster whose master of the reservations'
// secrets is down, a request (bucket.OneRead) whose settle could not check its id
// (Signed, on an instance that has not read them yet) asks nothing more of that
// master's circuit: its checks there are answered by the failure policy at once
// (ErrFailedInRequest), while those of the other masters' identities are still decided.
func TestClusterSecretMasterDownInARequest(t *testing.T) {
	const masters = 3
	cluster := redistest.StartCluster(t, masters, 0)
	for _, m := range cluster.Masters {
		run(t, m, "CONFIG", "SET", "cluster-require-full-coverage", "no")
	}
	holder := bucket.SecretSlot * masters / bucket.Slots // redistest gives each master an equal range
	alive, beside := onMaster(t, (holder+1)%masters, masters), inCircuit(t, bucket.SecretSlot)
	cluster.Masters[holder].Stop()
	s := redistest.Settings(t, map[string]string{"REDIS_ADDR": strings.Join(cluster.Seeds(), ","), "REDIS_TIMEOUT_MS": faultTimeoutMS})
	g, conn, err := app.NewGuard(s, slog.New(slog.DiscardHandler), nil) // a cold start: no secret read yet
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(conn.Close)
	decide(t, g, request(alive)) // connected: the cluster's circuits
	ctx := bucket.OneRead(context.Background())
	id := "r3." + strings.Repeat("A", 60) + "." + strings.Repeat("A", 22) // spelled as an id: its check needs the secrets
	if err := g.Signed(ctx, alive, id, false); !errors.Is(err, bucket.ErrNoSecret) {
		t.Fatalf("Signed with the secret's master down: %v, want ErrNoSecret", err)
	}
	rs, err := g.DecideBatch(ctx, []bucketgate.Request{request(alive), request(beside)})
	if err != nil {
		t.Fatal(err)
	}
	if r := rs[0]; r.Failure != guard.FailureNone || !r.Allowed {
		t.Errorf("the check of %s, on a healthy master: %+v, want it decided", alive, r)
	}
	if r := rs[1]; r.Reason != bucketgate.ReasonUnavailable || !errors.Is(r.Err, guard.ErrFailedInRequest) || !errors.Is(r.Err, bucket.ErrNoSecret) {
		t.Errorf("the check of %s, in the secret's circuit: %+v, want unavailable, not asked (ErrFailedInRequest)", beside, r)
	}
}
