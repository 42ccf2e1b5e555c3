package redistest

import (
	"bytes"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/bucketgate/bucketgate/internal/testkit"
)

// Proxy is a TCP proxy on loopback that stands for a DNS name whose address changes,
// such as an ElastiCache primary endpoint after a failover: each new connection goes to
// the target of the moment, and those made before a change stay with the old target.
// Stall makes the connections it holds lose everything sent on them, as a network that
// dropped them silently does; SetDelay makes them slow, as a distant server's are.
type Proxy struct {
	// Addr is the proxy's host:port on loopback.
	Addr string

	ln     net.Listener
	mu     sync.Mutex
	target string
	conns  map[net.Conn]*atomic.Bool // both ends of every connection, with whether it is stalled
	delay  atomic.Int64              // how long each read waits before it is passed on, in nanoseconds
	sent   bytes.Buffer              // what clients sent, up to maxSent bytes; guarded by mu
	wg     sync.WaitGroup
}

// NewProxy starts a Proxy to target. Close stops it.
func NewProxy(target string) (*Proxy, error) {
	ln, err := net.Listen("tcp", net.JoinHostPort(loopback, "0"))
	if err != nil {
		return nil, fmt.Errorf("redistest: proxy: %w", err)
	}
	p := &Proxy{Addr: ln.Addr().String(), ln: ln, target: target, conns: map[net.Conn]*atomic.Bool{}}
	p.wg.Add(1)
	go p.accept()
	return p, nil
}

// StartProxy runs NewProxy(target) for t and closes the proxy when t ends.
func StartProxy(t testing.TB, target string) *Proxy {
	t.Helper()
	p, err := NewProxy(target)
	testkit.Check(t, err, ErrNoServer)
	t.Cleanup(p.Close)
	return p
}

// SetTarget sends the connections made from now on to target.
func (p *Proxy) SetTarget(target string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.target = target
}

// Stall makes every connection made so far drop what either end sends, without
// closing: the ends see nothing more, and no error. Connections made later are not
// stalled.
func (p *Proxy) Stall() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, stalled := range p.conns {
		stalled.Store(true)
	}
}

// maxSent is how much of what clients send a Proxy keeps, for Sent.
const maxSent = 1 << 20

// Sent returns what the clients have sent through the proxy so far (its first MiB),
// passed on or not: a test tells by it that a command has left its client.
func (p *Proxy) Sent() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.sent.String()
}

// SetDelay makes every connection, those made so far and later, pass on what either end
// sends d after it arrived (a healthy Redis far away); zero passes it on at once.
func (p *Proxy) SetDelay(d time.Duration) { p.delay.Store(int64(d)) }

// Close closes the listener and every connection and waits for them.
func (p *Proxy) Close() {
	_ = p.ln.Close()
	p.mu.Lock()
	for c := range p.conns {
		_ = c.Close()
	}
	p.mu.Unlock()
	p.wg.Wait()
}

func (p *Proxy) accept() {
	defer p.wg.Done()
	for {
		client, err := p.ln.Accept()
		if err != nil {
			return
		}
		p.mu.Lock()
		target := p.target
		p.mu.Unlock()
		server, err := net.Dial("tcp", target)
		if err != nil {
			_ = client.Close()
			continue
		}
		stalled := new(atomic.Bool)
		p.mu.Lock()
		p.conns[client], p.conns[server] = stalled, stalled
		p.mu.Unlock()
		p.wg.Add(2)
		go p.pipe(client, server, stalled, false)
		go p.pipe(server, client, stalled, true)
	}
}

// pipe copies from src to dst until either ends, dropping what it reads once stalled,
// then closes both; fromClient keeps what it reads for Sent.
func (p *Proxy) pipe(dst, src net.Conn, stalled *atomic.Bool, fromClient bool) {
	defer p.wg.Done()
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if d := time.Duration(p.delay.Load()); n > 0 && d > 0 {
			time.Sleep(d)
		}
		if n > 0 && fromClient {
			p.mu.Lock()
			p.sent.Write(buf[:min(n, maxSent-p.sent.Len())])
			p.mu.Unlock()
		}
		if n > 0 && !stalled.Load() {
			if _, err := dst.Write(buf[:n]); err != nil {
				break
			}
		}
		if err != nil {
			break
		}
	}
	p.mu.Lock()
	delete(p.conns, dst)
	delete(p.conns, src)
	p.mu.Unlock()
	_ = dst.Close()
	_ = src.Close()
}
