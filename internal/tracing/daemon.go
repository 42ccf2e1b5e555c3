package tracing

import (
	"fmt"
	"net"
	"sync"
)

// daemon sends datagrams to the X-Ray daemon, dialing its UDP port on first use so that
// a function that is never sampled never opens a socket. It is safe for concurrent use.
type daemon struct {
	addr *net.UDPAddr

	mu   sync.Mutex
	conn *net.UDPConn // nil until the first send that dials successfully
}

// send writes b to the daemon without waiting: when the socket cannot take it at once,
// b is dropped and the error says so.
func (d *daemon) send(b []byte) error {
	conn, err := d.dial()
	if err != nil {
		return err
	}
	if err := writeNow(conn, b); err != nil {
		return fmt.Errorf("send to X-Ray daemon %s: %w", d.addr, err)
	}
	return nil
}

// dial returns the socket to the daemon, opening it if need be. Dialing UDP sends
// nothing and does not wait; a failed dial is tried again on the next send.
func (d *daemon) dial() (*net.UDPConn, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.conn != nil {
		return d.conn, nil
	}
	conn, err := net.DialUDP("udp", nil, d.addr)
	if err != nil {
		return nil, fmt.Errorf("dial X-Ray daemon %s: %w", d.addr, err)
	}
	d.conn = conn
	return conn, nil
}
