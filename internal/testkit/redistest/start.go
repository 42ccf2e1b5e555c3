package redistest

import (
	"testing"

	"github.com/redis/rueidis"

	"github.com/bucketgate/bucketgate/internal/settings"
	"github.com/bucketgate/bucketgate/internal/testkit"
)

// Start runs NewServer(extra...) for t and closes the server when t ends. A missing
// server binary skips t, or fails it where the suites are required (testkit.Required).
func Start(t testing.TB, extra ...string) *Server {
	t.Helper()
	s, err := NewServer(extra...)
	testkit.Check(t, err, ErrNoServer)
	t.Cleanup(s.Close)
	return s
}

// StartTLS runs NewTLSServer(extra...) for t, as Start does.
func StartTLS(t testing.TB, extra ...string) (*Server, *CA) {
	t.Helper()
	s, ca, err := NewTLSServer(extra...)
	testkit.Check(t, err, ErrNoServer)
	t.Cleanup(s.Close)
	return s, ca
}

// StartCluster runs NewCluster(masters, replicasPerMaster) for t, as Start does.
func StartCluster(t testing.TB, masters, replicasPerMaster int) *Cluster {
	t.Helper()
	c, err := NewCluster(masters, replicasPerMaster)
	testkit.Check(t, err, ErrNoServer)
	t.Cleanup(c.Close)
	return c
}

// StartFake runs NewFake(reply) for t and closes it when t ends.
func StartFake(t testing.TB, reply func(cmd []string) string) *Fake {
	t.Helper()
	f, err := NewFake(reply)
	testkit.Check(t, err, ErrNoServer)
	t.Cleanup(f.Close)
	return f
}

// StartFakeCluster starts a Fake cluster of one master (see NewFakeCluster) that
// answers with reply, closed when t ends.
func StartFakeCluster(t testing.TB, reply func(cmd []string) string) *Fake {
	t.Helper()
	f, err := NewFakeCluster(reply)
	testkit.Check(t, err, ErrNoServer)
	t.Cleanup(f.Close)
	return f
}

// Client returns a rueidis client for addr with client-side caching off, closed when t
// ends.
func Client(t testing.TB, addr string) rueidis.Client {
	t.Helper()
	c, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{addr}, DisableCache: true})
	if err != nil {
		t.Fatalf("redistest: connect to %s: %v", addr, err)
	}
	t.Cleanup(c.Close)
	return c
}

// Settings loads settings.Settings from env as if it were the environment, and fails t
// on an error.
func Settings(t testing.TB, env map[string]string) settings.Settings {
	t.Helper()
	s, err := settings.Load(func(k string) string { return env[k] })
	if err != nil {
		t.Fatalf("redistest: settings %v: %v", env, err)
	}
	return s
}
