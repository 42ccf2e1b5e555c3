package stress

import (
	"bufio"
	"io"
	"net"
	"strings"
	"testing"
	"time"
)

// echoServer answers every line with the line upper-cased, until the test ends.
func echoServer(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				r := bufio.NewReader(c)
				for {
					line, err := r.ReadString('\n')
					if err != nil {
						return
					}
					if _, err := io.WriteString(c, strings.ToUpper(line)); err != nil {
						return
					}
				}
			}()
		}
	}()
	return ln.Addr().String()
}

func startProxy(t *testing.T, upstream string) *Proxy {
	t.Helper()
	p, err := StartProxy(upstream)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Close() })
	return p
}

// dial connects to the proxy and returns the connection and a reader on it.
func dial(t *testing.T, p *Proxy) (net.Conn, *bufio.Reader) {
	t.Helper()
	c, err := net.Dial("tcp", p.Addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c, bufio.NewReader(c)
}

// roundTrip sends line through c and returns the answer.
func roundTrip(t *testing.T, c net.Conn, r *bufio.Reader, line string) string {
	t.Helper()
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := io.WriteString(c, line+"\n"); err != nil {
		t.Fatal(err)
	}
	got, err := r.ReadString('\n')
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSuffix(got, "\n")
}

func TestProxyForwardsInOrder(t *testing.T) {
	p := startProxy(t, echoServer(t))
	c, r := dial(t, p)
	// Many lines in flight at once, larger than one chunk in total: they come back whole
	// and in order.
	const lines = 2000
	var sent strings.Builder
	for i := range lines {
		sent.WriteString(strings.Repeat("x", i%50) + "line\n")
	}
	go func() { _, _ = io.WriteString(c, sent.String()) }()
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	for i := range lines {
		got, err := r.ReadString('\n')
		if want := strings.Repeat("X", i%50) + "LINE\n"; err != nil || got != want {
			t.Fatalf("line %d: %q, %v; want %q", i, got, err, want)
		}
	}
}

func TestProxyHoldsForItsLatency(t *testing.T) {
	p := startProxy(t, echoServer(t))
	c, r := dial(t, p)
	if got := roundTrip(t, c, r, "warm"); got != "WARM" {
		t.Fatalf("got %q", got)
	}
	const latency = 30 * time.Millisecond
	p.SetLatency(latency)
	start := time.Now()
	if got := roundTrip(t, c, r, "slow"); got != "SLOW" {
		t.Fatalf("got %q", got)
	}
	// A lower bound only: the proxy can never be faster than its latency both ways.
	if took := time.Since(start); took < 2*latency {
		t.Fatalf("round trip took %v with %v each way", took, latency)
	}
}

func TestProxyCloseEndsConnections(t *testing.T) {
	p := startProxy(t, echoServer(t))
	c, r := dial(t, p)
	if got := roundTrip(t, c, r, "a"); got != "A" {
		t.Fatalf("got %q", got)
	}
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := r.ReadString('\n'); err == nil {
		t.Fatal("the connection outlived the proxy")
	}
	if _, err := net.Dial("tcp", p.Addr); err == nil {
		t.Fatal("the proxy still accepts")
	}
}
