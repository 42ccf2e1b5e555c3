package testkit

import (
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// Listening reports whether process pid holds the socket listening on addr's port (a
// host:port), as /proc tells (Linux, where the kits' servers run): a start whose server
// answers on its port may have been answered by another process that bound the port
// between its probe and the server's bind, after which the server exits. False, with
// no error, for a process that has exited.
func Listening(pid int, addr string) (bool, error) {
	_, p, err := net.SplitHostPort(addr)
	if err != nil {
		return false, fmt.Errorf("testkit: listening on %q: %w", addr, err)
	}
	port, err := strconv.ParseUint(p, 10, 16)
	if err != nil {
		return false, fmt.Errorf("testkit: listening on %q: port: %w", addr, err)
	}
	sockets := map[string]bool{} // "socket:[inode]", as a descriptor's link names it
	for _, table := range []string{"/proc/net/tcp", "/proc/net/tcp6"} {
		text, err := os.ReadFile(table)
		if errors.Is(err, fs.ErrNotExist) { // no IPv6
			continue
		}
		if err != nil {
			return false, fmt.Errorf("testkit: listening on %s: %w", addr, err)
		}
		for _, line := range strings.Split(string(text), "\n")[1:] { // a heading first
			// sl local_address rem_address st ... inode: 0: 0100007F:1F90 00000000:0000 0A ...
			f := strings.Fields(line)
			if len(f) < 10 || f[3] != "0A" { // 0A: LISTEN
				continue
			}
			_, hexPort, _ := strings.Cut(f[1], ":")
			if n, err := strconv.ParseUint(hexPort, 16, 16); err == nil && n == port {
				sockets["socket:["+f[9]+"]"] = true
			}
		}
	}
	if len(sockets) == 0 {
		return false, nil
	}
	dir := filepath.Join("/proc", strconv.Itoa(pid), "fd")
	fds, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) { // exited
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("testkit: listening on %s: %w", addr, err)
	}
	for _, fd := range fds {
		if link, err := os.Readlink(filepath.Join(dir, fd.Name())); err == nil && sockets[link] {
			return true, nil
		}
	}
	return false, nil
}
