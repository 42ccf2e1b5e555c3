//go:build !unix

package tracing

import "net"

// writeNow writes the datagram b on conn. Off Unix it is a plain write, which waits
// only if the socket's buffer is full.
func writeNow(conn *net.UDPConn, b []byte) error {
	_, err := conn.Write(b)
	return err
}
