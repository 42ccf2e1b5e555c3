package stress

import (
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"time"
)

// Proxy buffering.
const (
	// proxyChunk is the most bytes the proxy reads at once.
	proxyChunk = 32 << 10
	// proxyQueue is how many chunks may wait out their latency per direction of a
	// connection before the proxy stops reading from it.
	proxyQueue = 1024
)

// Proxy is a TCP proxy on loopback to one upstream address that holds every chunk of
// bytes, in both directions, for a latency that can change while it runs. Bytes keep
// their order: a chunk waits for its own latency and for the chunks before it.
type Proxy struct {
	// Addr is the proxy's host:port on loopback.
	Addr string

	upstream string
	ln       net.Listener
	latency  atomic.Int64 // nanoseconds

	mu    sync.Mutex
	conns map[net.Conn]struct{}
	wg    sync.WaitGroup
}

// StartProxy starts a proxy to upstream with no added latency.
func StartProxy(upstream string) (*Proxy, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("proxy: %w", err)
	}
	p := &Proxy{Addr: ln.Addr().String(), upstream: upstream, ln: ln, conns: map[net.Conn]struct{}{}}
	p.wg.Go(p.accept)
	return p, nil
}

// SetLatency sets how long every chunk read from now on is held, in each direction.
func (p *Proxy) SetLatency(d time.Duration) { p.latency.Store(int64(d)) }

// Close stops accepting, closes every connection and waits for them.
func (p *Proxy) Close() error {
	err := p.ln.Close()
	p.mu.Lock()
	conns := p.conns
	p.conns = nil // closed: track refuses from now on
	p.mu.Unlock()
	for c := range conns {
		_ = c.Close()
	}
	p.wg.Wait()
	return err
}

// track adds c to the connections Close closes, or closes it and reports false when
// the proxy is closed.
func (p *Proxy) track(c net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.conns == nil {
		_ = c.Close()
		return false
	}
	p.conns[c] = struct{}{}
	return true
}

// untrack closes c and forgets it.
func (p *Proxy) untrack(c net.Conn) {
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.conns, c)
	_ = c.Close()
}

// accept serves every connection until the listener closes.
func (p *Proxy) accept() {
	for {
		client, err := p.ln.Accept()
		if err != nil {
			return
		}
		if !p.track(client) {
			return
		}
		p.wg.Go(func() { p.serve(client) })
	}
}

// serve connects client to the upstream and shuttles bytes both ways until either
// side closes.
func (p *Proxy) serve(client net.Conn) {
	defer p.untrack(client)
	server, err := net.DialTimeout("tcp", p.upstream, time.Second)
	if err != nil {
		return
	}
	if !p.track(server) {
		return
	}
	defer p.untrack(server)
	done := make(chan struct{}, 2)
	go func() { p.pipe(server, client); done <- struct{}{} }()
	go func() { p.pipe(client, server); done <- struct{}{} }()
	<-done // one direction ended: end both
	_ = client.Close()
	_ = server.Close()
	<-done
}

// chunk is bytes read, and when they may be written.
type chunk struct {
	data []byte
	due  time.Time
}

// pipe copies src to dst, holding each chunk for the latency when it was read, until
// src ends; it returns once every chunk read is written or dst failed.
func (p *Proxy) pipe(dst, src net.Conn) {
	queue := make(chan chunk, proxyQueue)
	writerDone := make(chan struct{})
	go func() {
		defer close(writerDone)
		for c := range queue {
			time.Sleep(time.Until(c.due))
			if _, err := dst.Write(c.data); err != nil {
				_ = src.Close() // unblock the reader
				for range queue {
				}
				return
			}
		}
	}()
	buf := make([]byte, proxyChunk)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			queue <- chunk{data: append([]byte(nil), buf[:n]...), due: time.Now().Add(time.Duration(p.latency.Load()))}
		}
		if err != nil {
			break
		}
	}
	close(queue)
	<-writerDone
}
