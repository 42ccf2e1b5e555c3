// Package process runs a server that another program provides (dynalite, moto_server)
// as a child process on a free loopback port, for the test kits of those servers: its
// output kept in a file for the error of a failed start, the process killed when the
// test process dies, and stopped by Close.
package process

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/bucketgate/bucketgate/internal/testkit"
	"github.com/bucketgate/bucketgate/internal/testkit/redistest"
)

// Spec says how to start a server and how to tell that it serves.
type Spec struct {
	// Name names the server in errors and in its output file's name.
	Name string
	// Command returns the command that serves on 127.0.0.1:port.
	Command func(port int) *exec.Cmd
	// Ready reports whether the server at addr serves; nil: it accepts a connection.
	Ready func(addr string) bool
	// Timeout bounds how long one start may take to be ready.
	Timeout time.Duration
	// Attempts is how many free ports a start tries (another process may take one
	// between the probe and the bind).
	Attempts int
}

// Process is one server process on loopback.
type Process struct {
	// Addr is the server's host:port on loopback.
	Addr string

	cmd    *exec.Cmd
	output string        // the file holding what the server wrote
	exited chan struct{} // closed when cmd has exited
	once   sync.Once
}

// pollInterval is how often a start asks whether the server is ready.
const pollInterval = 20 * time.Millisecond

// Start starts the server of spec on a free loopback port and waits until it is ready.
// Close stops it.
func Start(spec Spec) (*Process, error) {
	var lastErr error
	for range max(spec.Attempts, 1) {
		port, err := redistest.FreePort()
		if err != nil {
			return nil, err
		}
		p, err := start(spec, port)
		if err == nil {
			return p, nil
		}
		lastErr = err
	}
	return nil, fmt.Errorf("%s did not start: %w", spec.Name, lastErr)
}

// start runs the server on port and waits until it is ready.
func start(spec Spec, port int) (*Process, error) {
	out, err := os.CreateTemp("", spec.Name+"-*.txt")
	if err != nil {
		return nil, err
	}
	defer out.Close() // the process holds its own descriptor
	p := &Process{Addr: net.JoinHostPort("127.0.0.1", strconv.Itoa(port)), cmd: spec.Command(port), output: out.Name(), exited: make(chan struct{})}
	p.cmd.Stdout, p.cmd.Stderr = out, out
	p.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := p.cmd.Start(); err != nil {
		_ = os.Remove(p.output)
		return nil, err
	}
	go func() { _ = p.cmd.Wait(); close(p.exited) }()
	if err := p.awaitReady(spec); err != nil {
		said, _ := os.ReadFile(p.output)
		p.Close()
		return nil, fmt.Errorf("%w: %s", err, said)
	}
	return p, nil
}

// awaitReady waits until the server is ready, exits, or spec.Timeout passes. Ready
// counts only when the server's process is the one listening on the port: another that
// took the port first answers as well, and the server exits for the port.
func (p *Process) awaitReady(spec Spec) error {
	ready := spec.Ready
	if ready == nil {
		ready = accepts
	}
	deadline := time.Now().Add(spec.Timeout)
	for time.Now().Before(deadline) {
		select {
		case <-p.exited:
			return fmt.Errorf("%s on %s exited", spec.Name, p.Addr)
		default:
		}
		if ready(p.Addr) {
			switch ours, err := testkit.Listening(p.cmd.Process.Pid, p.Addr); {
			case err != nil:
				return err
			case !ours:
				return fmt.Errorf("another process took %s before %s could listen on it", p.Addr, spec.Name)
			}
			return nil
		}
		time.Sleep(pollInterval)
	}
	return fmt.Errorf("%s on %s was not ready within %v", spec.Name, p.Addr, spec.Timeout)
}

// accepts reports whether addr accepts a connection.
func accepts(addr string) bool {
	c, err := net.DialTimeout("tcp", addr, time.Second)
	if err == nil {
		c.Close()
	}
	return err == nil
}

// Close kills the server and waits for it. It is safe to call more than once.
func (p *Process) Close() {
	p.once.Do(func() {
		_ = p.cmd.Process.Kill()
		<-p.exited
		_ = os.Remove(p.output)
	})
}
