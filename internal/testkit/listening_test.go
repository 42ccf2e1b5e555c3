package testkit_test

import (
	"net"
	"os"
	"os/exec"
	"testing"

	"github.com/bucketgate/bucketgate/internal/testkit"
)

// Listening tells the process holding a listening socket from any other, and a port
// nobody listens on, on IPv4 and IPv6 loopback.
func TestListening(t *testing.T) {
	listen := func(network, addr string) (string, error) {
		l, err := net.Listen(network, addr)
		if err != nil {
			return "", err
		}
		t.Cleanup(func() { l.Close() })
		return l.Addr().String(), nil
	}
	v4, err := listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	exited := exec.Command("true")
	if err := exited.Run(); err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("tcp4", "127.0.0.1:0") // a port free again
	if err != nil {
		t.Fatal(err)
	}
	free := l.Addr().String()
	l.Close()
	type test struct {
		name string
		pid  int
		addr string
		want bool
	}
	tests := []test{
		{"this process", os.Getpid(), v4, true},
		{"another process", os.Getppid(), v4, false},
		{"a process that exited", exited.Process.Pid, v4, false},
		{"a port nobody listens on", os.Getpid(), free, false},
	}
	if v6, err := listen("tcp6", "[::1]:0"); err == nil {
		tests = append(tests, test{"this process, IPv6", os.Getpid(), v6, true})
	} else {
		t.Logf("no IPv6 loopback here (%v): IPv4 alone", err)
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got, err := testkit.Listening(tc.pid, tc.addr); err != nil || got != tc.want {
				t.Errorf("Listening(%d, %s) = %v, %v; want %v", tc.pid, tc.addr, got, err, tc.want)
			}
		})
	}
	if _, err := testkit.Listening(os.Getpid(), "no port"); err == nil {
		t.Error("Listening of an address without a port: no error")
	}
}
