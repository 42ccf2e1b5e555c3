package redistest_test

import (
	"context"
	"errors"
	"net"
	"os"
	"strings"
	"testing"

	"github.com/bucketgate/bucketgate/internal/testkit/redistest"
)

// A server that refuses to start is reported with its own words, not an empty "exited".
func TestNewServerQuotesTheServer(t *testing.T) {
	if _, err := redistest.Binary(); err != nil {
		redistest.Start(t) // skips or fails as any real-server test does
	}
	_, err := redistest.NewServer("--no-such-directive", "1")
	if err == nil {
		t.Fatal("a server with a bad directive started")
	}
	if !strings.Contains(err.Error(), "FATAL CONFIG FILE ERROR") || !strings.Contains(err.Error(), "no-such-directive") {
		t.Errorf("error %q does not quote the server's own complaint", err)
	}
}

// ServerEnv chooses the engine: Redis OSS by default, Valkey by name.
func TestServerEnv(t *testing.T) {
	tests := []struct {
		name, binary string
		valkey       bool
	}{
		{"redis", redistest.DefaultServer, false},
		{"valkey", "valkey-server", true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv(redistest.ServerEnv, tc.binary)
			srv := redistest.Start(t)
			info, err := srv.Command(context.Background(), "INFO", "server")
			if err != nil {
				t.Fatal(err)
			}
			if got := strings.Contains(info, "valkey_version:"); got != tc.valkey {
				t.Errorf("%s=%s: INFO server says valkey %v, want %v:\n%s", redistest.ServerEnv, tc.binary, got, tc.valkey, info)
			}
		})
	}
}

func TestMissingBinary(t *testing.T) {
	t.Setenv(redistest.ServerEnv, "no-such-redis-server")
	_, err := redistest.NewServer()
	if !errors.Is(err, redistest.ErrNoServer) || !strings.Contains(err.Error(), "no-such-redis-server") {
		t.Fatalf("NewServer without its binary: %v; want ErrNoServer naming the binary", err)
	}
}

// Close stops the server and removes its directory; Restart brings a stopped one back.
func TestStopRestartClose(t *testing.T) {
	srv := redistest.Start(t)
	ctx := context.Background()
	srv.Stop()
	if srv.Running() {
		t.Fatal("running after Stop")
	}
	if _, err := srv.Command(ctx, "PING"); err == nil {
		t.Fatal("a stopped server answered")
	}
	if err := srv.Restart(); err != nil {
		t.Fatal(err)
	}
	if pong, err := srv.Command(ctx, "PING"); err != nil || pong != "PONG" {
		t.Fatalf("after Restart: %q, %v", pong, err)
	}
	srv.Close()
	if _, err := srv.Command(ctx, "PING"); err == nil {
		t.Fatal("a closed server answered")
	}
	if _, err := os.Stat(srv.Dir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("Close left %s behind: %v", srv.Dir, err)
	}
}

// A server is ready only when it is the one listening on its address: a restart on an
// address that another server took meanwhile (a port picked, freed, then bound by
// another test's server first) fails, saying so, instead of handing the test the other
// server, which answers PING as well.
func TestRestartOnATakenAddress(t *testing.T) {
	srv := redistest.Start(t)
	srv.Stop()
	other, err := net.Listen("tcp", srv.Addr)
	if err != nil {
		t.Fatalf("take %s: %v", srv.Addr, err)
	}
	t.Cleanup(func() { other.Close() })
	go func() { // another server: PONG to anything
		for {
			c, err := other.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				buf := make([]byte, 512)
				for {
					if _, err := c.Read(buf); err != nil {
						return
					}
					if _, err := c.Write([]byte("+PONG\r\n")); err != nil {
						return
					}
				}
			}()
		}
	}()
	err = srv.Restart()
	if err == nil || srv.Running() {
		t.Fatalf("Restart on %s, which another server holds: %v, running %v; want an error, not the other server", srv.Addr, err, srv.Running())
	}
	if !strings.Contains(err.Error(), srv.Addr) {
		t.Errorf("error %q does not name the address", err)
	}
}
