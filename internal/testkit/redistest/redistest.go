// Package redistest starts real redis-server processes on free loopback ports for tests
// and stops them when the test ends.
//
// Where redis-server is missing, a test that needs it fails when the environment says
// the real-Redis suites are required (CI set, or BUCKETGATE_REQUIRE_REDIS=1) and
// otherwise skips with a loud message.
package redistest

import (
	"bufio"
	"crypto/tls"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/redis/rueidis"

	"github.com/bucketgate/bucketgate/internal/settings"
)

// RequireEnv names the environment variable that, set to 1, makes a missing
// redis-server a test failure instead of a skip. CI (any value) does the same.
const RequireEnv = "BUCKETGATE_REQUIRE_REDIS"

// startTimeout bounds how long a server may take to answer PING after it starts.
const startTimeout = 10 * time.Second

// startAttempts is how many free ports Start tries before it gives up: another process
// may take the port between the probe and the server's bind.
const startAttempts = 5

// loopback is the address every test server binds.
const loopback = "127.0.0.1"

// Server is one redis-server process owned by a test.
type Server struct {
	// Addr is the server's host:port on loopback.
	Addr string
	// Dir is the server's working directory (logs, cluster config), removed at cleanup.
	Dir string
	// BusPort is the cluster bus port of a cluster node; zero otherwise.
	BusPort int

	cmd       *exec.Cmd
	exited    chan struct{}
	args      []string
	tlsConfig *tls.Config // how readyCheck reaches a TLS-only server; nil for plain TCP
	t         TB
}

// Binary returns the path of redis-server, or fails or skips t when it is missing.
func Binary(t TB) string {
	t.Helper()
	path, err := exec.LookPath("redis-server")
	if err == nil {
		return path
	}
	if os.Getenv("CI") != "" || os.Getenv(RequireEnv) == "1" {
		t.Fatalf("redis-server is required here (CI or %s=1) but not on PATH: apt-get install redis-server", RequireEnv)
	}
	t.Skipf("SKIPPING real-Redis test: redis-server not on PATH (apt-get install redis-server); CI fails instead of skipping")
	return ""
}

// Start runs a standalone redis-server on a free loopback port with extra arguments
// (for example "--requirepass", "secret") and stops it when t ends.
func Start(t TB, extra ...string) *Server {
	t.Helper()
	return start(t, nil, func(port int) ([]string, error) {
		return append([]string{"--port", strconv.Itoa(port)}, extra...), nil
	})
}

// start runs redis-server with baseArgs and the arguments args gives for a free port,
// trying other ports when one was taken meanwhile. tlsConfig, when not nil, is how the
// readiness check reaches a TLS-only server.
func start(t TB, tlsConfig *tls.Config, args func(port int) ([]string, error)) *Server {
	t.Helper()
	bin := Binary(t)
	dir := t.TempDir()
	var lastErr error
	for range startAttempts {
		port, err := FreePort()
		if err != nil {
			t.Fatalf("redistest: %v", err)
		}
		a, err := args(port)
		if err != nil {
			t.Fatalf("redistest: %v", err)
		}
		s := &Server{
			Addr:      net.JoinHostPort(loopback, strconv.Itoa(port)),
			Dir:       dir,
			t:         t,
			tlsConfig: tlsConfig,
			args:      append(baseArgs(dir), a...),
		}
		if lastErr = s.run(bin); lastErr == nil {
			t.Cleanup(s.Stop)
			return s
		}
	}
	t.Fatalf("redistest: redis-server did not start: %v", lastErr)
	return nil
}

// baseArgs are the arguments every test server gets: loopback only, no persistence.
func baseArgs(dir string) []string {
	return []string{
		"--bind", loopback,
		"--save", "",
		"--appendonly", "no",
		"--dir", dir,
		"--logfile", filepath.Join(dir, "redis.log"),
	}
}

func (s *Server) run(bin string) error {
	s.cmd = exec.Command(bin, s.args...)
	s.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := s.cmd.Start(); err != nil {
		return err
	}
	exited := make(chan struct{})
	s.exited = exited
	go func() { _ = s.cmd.Wait(); close(exited) }()
	deadline := time.Now().Add(startTimeout)
	for time.Now().Before(deadline) {
		select {
		case <-exited:
			return fmt.Errorf("redis-server %v exited: %s", s.args, s.logTail())
		default:
		}
		if s.readyCheck() == nil {
			return nil
		}
		time.Sleep(20 * time.Millisecond)
	}
	_ = s.cmd.Process.Kill()
	<-exited
	return fmt.Errorf("redis-server on %s did not answer PING within %v: %s", s.Addr, startTimeout, s.logTail())
}

// readyCheck sends PING over plain TCP, or TLS for a TLS-only server.
func (s *Server) readyCheck() error {
	conn, err := s.dial()
	if err != nil {
		return err
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(time.Second))
	if _, err := conn.Write([]byte("PING\r\n")); err != nil {
		return err
	}
	line, err := bufio.NewReader(conn).ReadString('\n')
	if err != nil {
		return err
	}
	if !strings.HasPrefix(line, "+PONG") && !strings.HasPrefix(line, "-NOAUTH") {
		return fmt.Errorf("PING answered %q", strings.TrimSpace(line))
	}
	return nil
}

// dial connects to the server, with TLS when it only speaks TLS.
func (s *Server) dial() (net.Conn, error) {
	d := &net.Dialer{Timeout: time.Second}
	if s.tlsConfig != nil {
		return tls.DialWithDialer(d, "tcp", s.Addr, s.tlsConfig)
	}
	return d.Dial("tcp", s.Addr)
}

func (s *Server) logTail() string {
	b, _ := os.ReadFile(filepath.Join(s.Dir, "redis.log"))
	if len(b) > 2000 {
		b = b[len(b)-2000:]
	}
	return strings.TrimSpace(string(b))
}

// Stop kills the server and waits for it. It is safe to call more than once.
func (s *Server) Stop() {
	if s.cmd == nil || s.cmd.Process == nil {
		return
	}
	_ = s.cmd.Process.Signal(syscall.SIGCONT) // a paused server cannot die otherwise
	_ = s.cmd.Process.Kill()
	<-s.exited
	s.cmd = nil
}

// Running reports whether the server process runs (paused counts as running).
func (s *Server) Running() bool { return s.cmd != nil }

// Pause stops the server process with SIGSTOP: connections stay open, nothing answers.
func (s *Server) Pause() { _ = s.cmd.Process.Signal(syscall.SIGSTOP) }

// Resume continues a paused server with SIGCONT.
func (s *Server) Resume() { _ = s.cmd.Process.Signal(syscall.SIGCONT) }

// Restart stops the server and starts it again on the same address, with an empty
// dataset and script cache.
func (s *Server) Restart() {
	s.t.Helper()
	s.Stop()
	if err := s.run(Binary(s.t)); err != nil {
		s.t.Fatalf("redistest: restart: %v", err)
	}
}

// FreePort returns a TCP port on 127.0.0.1 that was free a moment ago.
func FreePort() (int, error) {
	l, err := net.Listen("tcp", net.JoinHostPort(loopback, "0"))
	if err != nil {
		return 0, fmt.Errorf("find a free port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// Client returns a rueidis client for addr with client-side caching off, closed when t
// ends.
func Client(t TB, addr string) rueidis.Client {
	t.Helper()
	c, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{addr}, DisableCache: true})
	if err != nil {
		t.Fatalf("redistest: connect to %s: %v", addr, err)
	}
	t.Cleanup(c.Close)
	return c
}

// ACLUser returns the redis-server arguments that create ACL user name with password
// and every permission, and switch the passwordless default user off, so that a
// client must authenticate as name: Start(t, ACLUser("app", "secret")...).
func ACLUser(name, password string) []string {
	return []string{"--user", name, "on", ">" + password, "~*", "&*", "+@all", "--user", "default", "off"}
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
