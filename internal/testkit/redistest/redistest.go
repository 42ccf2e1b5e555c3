// Package redistest runs real Redis-compatible servers (redis-server, or valkey-server
// when BUCKETGATE_REDIS_SERVER names it) on free loopback ports, for tests and for the
// programs of tools/.
//
// NewServer, NewTLSServer and NewCluster start servers and return them with a Close
// method, in the style of net/http/httptest. Start, StartTLS and StartCluster do the
// same for a test and close them when it ends; where the server binary is missing, they
// fail the test when the environment says the real-server suites are required (CI set,
// or BUCKETGATE_REQUIRE_SERVERS=1) and otherwise skip it with a loud message.
package redistest

import (
	"bufio"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/bucketgate/bucketgate/internal/testkit"
)

// Environment variables that choose and require the server binary.
const (
	// ServerEnv names the server binary, a name on PATH or a path: redis-server when
	// unset, valkey-server for Valkey (the engine ElastiCache creates by default).
	ServerEnv = "BUCKETGATE_REDIS_SERVER"
	// DefaultServer is the server binary when ServerEnv is unset.
	DefaultServer = "redis-server"
)

// ErrNoServer is wrapped by the error of every start when the server binary is not
// there.
var ErrNoServer = errors.New("no Redis server binary")

// startTimeout bounds how long a server may take to answer PING after it starts.
const startTimeout = 10 * time.Second

// startAttempts is how many free ports a start tries before it gives up: another
// process may take the port between the probe and the server's bind.
const startAttempts = 5

// maxOutput is the most bytes of a server's own output (its log file, and what it wrote
// before it opened one) that an error quotes.
const maxOutput = 2000

// loopback is the address every server binds.
const loopback = "127.0.0.1"

// Files in a server's directory: its log, and what it writes to stdout and stderr.
const (
	logFile    = "server.log"
	outputFile = "output.txt"
)

// Server is one server process on loopback.
type Server struct {
	// Addr is the server's host:port on loopback.
	Addr string
	// Dir is the server's working directory (log, cluster config), removed by Close.
	Dir string
	// BusPort is the cluster bus port of a cluster node; zero otherwise.
	BusPort int

	bin       string
	args      []string
	tlsConfig *tls.Config // how the readiness check reaches a TLS-only server; nil for plain TCP
	cleanup   func()      // removes what belongs to the server besides Dir; nil for nothing

	mu     sync.Mutex
	cmd    *exec.Cmd     // nil while stopped
	exited chan struct{} // closed when cmd has exited
}

// Binary returns the path of the server binary that ServerEnv names, or an error
// wrapping ErrNoServer that says how to install it.
func Binary() (string, error) {
	name := os.Getenv(ServerEnv)
	if name == "" {
		name = DefaultServer
	}
	path, err := exec.LookPath(name)
	if err != nil {
		return "", fmt.Errorf("%w: %s is not on PATH (apt-get install redis-server; valkey-server comes from bookworm-backports): %w", ErrNoServer, name, err)
	}
	return path, nil
}

// NewServer starts a standalone server on a free loopback port with extra arguments
// (for example "--requirepass", "secret"). Close stops it.
func NewServer(extra ...string) (*Server, error) {
	return newServer(nil, func(port int) ([]string, error) {
		return append([]string{"--port", strconv.Itoa(port)}, extra...), nil
	})
}

// newServer starts a server with the base arguments and those args gives for a free
// port, trying other ports when one was taken meanwhile. tlsConfig, when not nil, is
// how the readiness check reaches a TLS-only server.
func newServer(tlsConfig *tls.Config, args func(port int) ([]string, error)) (*Server, error) {
	bin, err := Binary()
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "redistest-")
	if err != nil {
		return nil, fmt.Errorf("redistest: %w", err)
	}
	var lastErr error
	for range startAttempts {
		port, err := FreePort()
		if err != nil {
			lastErr = err
			break
		}
		a, err := args(port)
		if err != nil {
			lastErr = err
			break
		}
		s := &Server{
			Addr:      net.JoinHostPort(loopback, strconv.Itoa(port)),
			Dir:       dir,
			bin:       bin,
			args:      append(baseArgs(dir), a...),
			tlsConfig: tlsConfig,
		}
		if lastErr = s.start(); lastErr == nil {
			return s, nil
		}
	}
	_ = os.RemoveAll(dir)
	return nil, fmt.Errorf("redistest: %s did not start: %w", filepath.Base(bin), lastErr)
}

// baseArgs are the arguments every server gets: loopback only, no persistence.
func baseArgs(dir string) []string {
	return []string{
		"--bind", loopback,
		"--save", "",
		"--appendonly", "no",
		"--dir", dir,
		"--logfile", filepath.Join(dir, logFile),
	}
}

// start runs the process and waits until it answers PING.
func (s *Server) start() error {
	out, err := os.Create(filepath.Join(s.Dir, outputFile))
	if err != nil {
		return err
	}
	defer out.Close() // the process holds its own descriptor
	cmd := exec.Command(s.bin, s.args...)
	cmd.Stdout, cmd.Stderr = out, out
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return err
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	if err := s.awaitReady(cmd.Process.Pid, exited); err != nil {
		_ = cmd.Process.Kill()
		<-exited
		return fmt.Errorf("%w: %s", err, s.said())
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.cmd, s.exited = cmd, exited
	return nil
}

// awaitReady polls the server, process pid, with PING until it answers, exits, or
// startTimeout passes. An answer counts only from pid: another process that took the
// port first (another test's server) answers PING too, and pid exits for the port.
func (s *Server) awaitReady(pid int, exited <-chan struct{}) error {
	deadline := time.Now().Add(startTimeout)
	for time.Now().Before(deadline) {
		select {
		case <-exited:
			return fmt.Errorf("%s %v exited", filepath.Base(s.bin), s.args)
		default:
		}
		if s.readyCheck() == nil {
			switch ours, err := testkit.Listening(pid, s.Addr); {
			case err != nil:
				return err
			case !ours:
				return fmt.Errorf("another process took %s before %s could listen on it", s.Addr, filepath.Base(s.bin))
			}
			return nil
		}
		time.Sleep(20 * time.Millisecond)
	}
	return fmt.Errorf("%s on %s did not answer PING within %v", filepath.Base(s.bin), s.Addr, startTimeout)
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

// said returns the end of what the server said: its log file, and what it wrote to
// stdout and stderr (a server refusing an argument says why there, before any log).
func (s *Server) said() string {
	var text string
	for _, name := range []string{logFile, outputFile} {
		b, _ := os.ReadFile(filepath.Join(s.Dir, name))
		text += string(b)
	}
	if text = strings.TrimSpace(text); text == "" {
		return "(the server wrote nothing)"
	}
	if len(text) > maxOutput {
		text = "..." + text[len(text)-maxOutput:]
	}
	return text
}

// Stop kills the server process and waits for it; Restart starts it again. It is safe
// to call more than once.
func (s *Server) Stop() {
	s.mu.Lock()
	cmd, exited := s.cmd, s.exited
	s.cmd = nil
	s.mu.Unlock()
	if cmd == nil {
		return
	}
	_ = cmd.Process.Signal(syscall.SIGCONT) // a paused server cannot die otherwise
	_ = cmd.Process.Kill()
	<-exited
}

// Close stops the server and removes its directory.
func (s *Server) Close() {
	s.Stop()
	_ = os.RemoveAll(s.Dir)
	if s.cleanup != nil {
		s.cleanup()
	}
}

// Running reports whether the server process runs (paused counts as running).
func (s *Server) Running() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.cmd != nil
}

// Pause stops the server process with SIGSTOP: connections stay open, nothing answers.
func (s *Server) Pause() { s.signal(syscall.SIGSTOP) }

// Resume continues a paused server with SIGCONT.
func (s *Server) Resume() { s.signal(syscall.SIGCONT) }

func (s *Server) signal(sig syscall.Signal) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd != nil {
		_ = s.cmd.Process.Signal(sig)
	}
}

// Restart stops the server and starts it again on the same address, with an empty
// dataset and script cache.
func (s *Server) Restart() error {
	s.Stop()
	if err := s.start(); err != nil {
		return fmt.Errorf("redistest: restart %s: %w", s.Addr, err)
	}
	return nil
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

// ACLUser returns the server arguments that create ACL user name with password and
// every permission, and switch the passwordless default user off, so that a client
// must authenticate as name: NewServer(ACLUser("app", "secret")...).
func ACLUser(name, password string) []string {
	return []string{"--user", name, "on", ">" + password, "~*", "&*", "+@all", "--user", "default", "off"}
}
