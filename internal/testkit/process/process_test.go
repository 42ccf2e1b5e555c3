package process_test

import (
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/bucketgate/bucketgate/internal/testkit/process"
)

// serveEnv, set to a port, makes the test binary a server on it: the server the tests
// start.
const serveEnv = "PROCESS_TEST_SERVE_PORT"

func TestMain(m *testing.M) {
	if port := os.Getenv(serveEnv); port != "" {
		l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", port))
		if err != nil {
			os.Exit(1)
		}
		for {
			c, err := l.Accept()
			if err != nil {
				os.Exit(1)
			}
			c.Close()
		}
	}
	os.Exit(m.Run())
}

// server is the Spec of the test binary serving.
func server() process.Spec {
	return process.Spec{
		Name: "test-server",
		Command: func(port int) *exec.Cmd {
			cmd := exec.Command(os.Args[0])
			cmd.Env = append(os.Environ(), serveEnv+"="+strconv.Itoa(port))
			return cmd
		},
		Timeout:  10 * time.Second,
		Attempts: 2,
	}
}

// A started server accepts connections on Addr until Close, which may be called twice.
func TestStartAndClose(t *testing.T) {
	p, err := process.Start(server())
	if err != nil {
		t.Fatal(err)
	}
	c, err := net.Dial("tcp", p.Addr)
	if err != nil {
		t.Fatalf("dial %s: %v", p.Addr, err)
	}
	c.Close()
	p.Close()
	p.Close()
	if c, err := net.DialTimeout("tcp", p.Addr, time.Second); err == nil {
		c.Close()
		t.Fatalf("%s still accepts connections after Close", p.Addr)
	}
}

// A server that exits, or is not ready in time, is a start error that names it and
// says what it wrote.
func TestStartErrors(t *testing.T) {
	tests := []struct {
		name string
		spec process.Spec
		want []string
	}{
		{"exits", process.Spec{Name: "quitter", Command: func(int) *exec.Cmd { return exec.Command("sh", "-c", "echo no port for me >&2; exit 3") },
			Timeout: 10 * time.Second, Attempts: 2}, []string{"quitter did not start: quitter on 127.0.0.1:", " exited: no port for me"}},
		{"never ready", process.Spec{Name: "sleeper", Command: func(int) *exec.Cmd { return exec.Command("sh", "-c", "echo waiting; exec sleep 30") },
			Ready: func(string) bool { return false }, Timeout: 200 * time.Millisecond}, []string{"sleeper on 127.0.0.1:", "was not ready within 200ms: waiting"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p, err := process.Start(tc.spec)
			if p != nil || err == nil {
				t.Fatalf("Start = %v, %v; want an error", p, err)
			}
			for _, want := range tc.want {
				if !strings.Contains(err.Error(), want) {
					t.Fatalf("error %q lacks %q", err, want)
				}
			}
		})
	}
}

// A server is ready only when it is the one listening on its port: a port that another
// process took between the probe and the server's bind (the server exits) is given up
// for another, not handed to the test with whatever listens there.
func TestStartOnATakenPort(t *testing.T) {
	spec := server()
	serve := spec.Command
	var other net.Listener
	spec.Command = func(port int) *exec.Cmd {
		if other == nil { // the first port: another process binds it first
			var err error
			if other, err = net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port))); err != nil {
				t.Fatalf("take port %d: %v", port, err)
			}
			t.Cleanup(func() { other.Close() })
		}
		return serve(port)
	}
	p, err := process.Start(spec)
	if err != nil {
		t.Fatalf("Start with its first port taken: %v; want the second port", err)
	}
	defer p.Close()
	if p.Addr == other.Addr().String() {
		t.Fatalf("Start handed over %s, which another process holds", p.Addr)
	}
}
