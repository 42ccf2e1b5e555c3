//go:build unix

package tracing

import (
	"net"
	"syscall"
)

// writeNow makes one non-blocking write of the datagram b on conn: when the socket's
// buffer is full it fails with EAGAIN instead of waiting for room.
func writeNow(conn *net.UDPConn, b []byte) error {
	raw, err := conn.SyscallConn()
	if err != nil {
		return err
	}
	var werr error
	err = raw.Write(func(fd uintptr) bool {
		_, werr = syscall.Write(int(fd), b)
		return true // done, written or not: never wait for the socket to be writable
	})
	if err != nil {
		return err
	}
	return werr
}
