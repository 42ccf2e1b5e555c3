package redistest

import (
	"errors"
	"testing"

	"github.com/redis/rueidis"

	"github.com/bucketgate/bucketgate/internal/settings"
)

// Start runs NewServer(extra...) for t and closes the server when t ends. A missing
// server binary skips t, or fails it where the suites are required (Required).
func Start(t testing.TB, extra ...string) *Server {
	t.Helper()
	s, err := NewServer(extra...)
	check(t, err)
	t.Cleanup(s.Close)
	return s
}

// StartTLS runs NewTLSServer(extra...) for t, as Start does.
func StartTLS(t testing.TB, extra ...string) (*Server, *CA) {
	t.Helper()
	s, ca, err := NewTLSServer(extra...)
	check(t, err)
	t.Cleanup(s.Close)
	return s, ca
}

// StartCluster runs NewCluster(masters, replicasPerMaster) for t, as Start does.
func StartCluster(t testing.TB, masters, replicasPerMaster int) *Cluster {
	t.Helper()
	c, err := NewCluster(masters, replicasPerMaster)
	check(t, err)
	t.Cleanup(c.Close)
	return c
}

// StartFake runs NewFake(reply) for t and closes it when t ends.
func StartFake(t testing.TB, reply func(cmd []string) string) *Fake {
	t.Helper()
	f, err := NewFake(reply)
	check(t, err)
	t.Cleanup(f.Close)
	return f
}

// check fails or skips t for a start's error err, if any.
func check(t testing.TB, err error) {
	t.Helper()
	switch {
	case err == nil:
	case errors.Is(err, ErrNoServer) && !Required():
		t.Skipf("SKIPPING real-server test: %v; CI (or %s=1) fails instead of skipping", err, RequireEnv)
	default:
		t.Fatal(err)
	}
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
