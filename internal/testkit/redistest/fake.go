package redistest

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"sync"
)

// maxFakeArg bounds one bulk string a Fake accepts, in bytes.
const maxFakeArg = 1 << 20

// Fake is a TCP server on loopback speaking just enough RESP2 for a rueidis client in
// standalone mode, for replies no real server gives. It answers the connection
// handshake itself (HELLO is refused, so the client falls back to RESP2; CLUSTER says
// cluster support is disabled; PING, CLIENT and AUTH succeed) and every other command
// with what its reply function returns: raw RESP, such as "*1\r\n:1\r\n". A fake made
// by NewFakeCluster is a cluster of one master instead, which holds every slot.
type Fake struct {
	// Addr is the fake's host:port on loopback.
	Addr string

	ln      net.Listener
	cluster bool // CLUSTER SLOTS names the fake as the master of every slot
	mu      sync.Mutex
	reply   func(cmd []string) string
	conns   map[net.Conn]struct{}
	wg      sync.WaitGroup
}

// NewFake starts a Fake that answers with reply. Close stops it.
func NewFake(reply func(cmd []string) string) (*Fake, error) { return newFake(reply, false) }

// NewFakeCluster starts a Fake that a rueidis client takes for a cluster of one master,
// itself, holding every slot: a redirection (MOVED or ASK) that its reply function
// answers names its own address. Close stops it.
func NewFakeCluster(reply func(cmd []string) string) (*Fake, error) { return newFake(reply, true) }

// newFake starts a Fake that answers with reply, as a cluster or not.
func newFake(reply func(cmd []string) string, cluster bool) (*Fake, error) {
	ln, err := net.Listen("tcp", net.JoinHostPort(loopback, "0"))
	if err != nil {
		return nil, fmt.Errorf("redistest: fake server: %w", err)
	}
	f := &Fake{Addr: ln.Addr().String(), ln: ln, cluster: cluster, reply: reply, conns: map[net.Conn]struct{}{}}
	f.wg.Add(1)
	go f.accept()
	return f, nil
}

// SetReply changes how the fake answers commands from now on.
func (f *Fake) SetReply(reply func(cmd []string) string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.reply = reply
}

// Close closes the listener and every connection and waits for them.
func (f *Fake) Close() {
	_ = f.ln.Close()
	f.mu.Lock()
	for c := range f.conns {
		_ = c.Close()
	}
	f.mu.Unlock()
	f.wg.Wait()
}

func (f *Fake) accept() {
	defer f.wg.Done()
	for {
		c, err := f.ln.Accept()
		if err != nil {
			return
		}
		f.mu.Lock()
		f.conns[c] = struct{}{}
		f.mu.Unlock()
		f.wg.Add(1)
		go f.serve(c)
	}
}

func (f *Fake) serve(c net.Conn) {
	defer f.wg.Done()
	defer func() {
		f.mu.Lock()
		delete(f.conns, c)
		f.mu.Unlock()
		_ = c.Close()
	}()
	r := bufio.NewReader(c)
	for {
		cmd, err := readCommand(r)
		if err != nil {
			return
		}
		if _, err := io.WriteString(c, f.answer(cmd)); err != nil {
			return
		}
	}
}

// answer handles the handshake commands and passes every other one to reply.
func (f *Fake) answer(cmd []string) string {
	switch strings.ToUpper(cmd[0]) {
	case "HELLO":
		return "-ERR unknown command 'HELLO'\r\n"
	case "CLUSTER":
		if f.cluster {
			host, port, _ := net.SplitHostPort(f.Addr)
			return fmt.Sprintf("*1\r\n*3\r\n:0\r\n:16383\r\n*2\r\n$%d\r\n%s\r\n:%s\r\n", len(host), host, port)
		}
		return "-ERR This instance has cluster support disabled\r\n"
	case "PING":
		return "+PONG\r\n"
	case "CLIENT", "AUTH", "SELECT":
		return "+OK\r\n"
	}
	f.mu.Lock()
	reply := f.reply
	f.mu.Unlock()
	return reply(cmd)
}

// readCommand reads one RESP array of bulk strings, the form every client command takes.
func readCommand(r *bufio.Reader) ([]string, error) {
	n, err := readHeader(r, '*')
	if err != nil {
		return nil, err
	}
	if n < 1 {
		return nil, errors.New("empty command")
	}
	cmd := make([]string, n)
	for i := range cmd {
		size, err := readHeader(r, '$')
		if err != nil {
			return nil, err
		}
		if size < 0 || size > maxFakeArg {
			return nil, fmt.Errorf("bulk string of %d bytes", size)
		}
		buf := make([]byte, size+len("\r\n"))
		if _, err := io.ReadFull(r, buf); err != nil {
			return nil, err
		}
		cmd[i] = string(buf[:size])
	}
	return cmd, nil
}

// readHeader reads a line "<kind><integer>\r\n".
func readHeader(r *bufio.Reader, kind byte) (int, error) {
	line, err := r.ReadString('\n')
	if err != nil {
		return 0, err
	}
	line = strings.TrimRight(line, "\r\n")
	if len(line) < 2 || line[0] != kind {
		return 0, fmt.Errorf("want %q header, got %q", kind, line)
	}
	return strconv.Atoi(line[1:])
}
