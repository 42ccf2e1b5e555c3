package middleware

import (
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"strings"
)

// proxies are the trusted proxies: a request from one is from the rightmost hop of its
// X-Forwarded-For that is not one.
type proxies struct {
	prefixes []netip.Prefix
	unix     bool // a peer on a Unix socket, which has no address, is one
}

// unixProxy is the TrustedProxies entry that trusts a peer on a Unix socket.
const unixProxy = "unix"

// parseProxies reads addresses, CIDR prefixes and unixProxy; its error names the entry.
// A prefix of every address (0.0.0.0/0, ::/0) is refused: every hop of X-Forwarded-For
// would be trusted, and the source always the leftmost, which the client writes.
func parseProxies(entries []string) (proxies, error) {
	var ps proxies
	for i, e := range entries {
		if e == unixProxy {
			ps.unix = true
			continue
		}
		p, err := netip.ParsePrefix(e)
		if err != nil {
			a, aerr := netip.ParseAddr(e)
			if aerr != nil {
				return proxies{}, fmt.Errorf("[%d] %q: want an IP address, a CIDR prefix such as 10.0.0.0/8, or %q (a peer on a Unix socket)", i, e, unixProxy)
			}
			p = netip.PrefixFrom(a.Unmap(), a.Unmap().BitLen())
		}
		if a := p.Addr(); a.Is4In6() && p.Bits() >= 96 { // ::ffff:10.0.0.0/104 is 10.0.0.0/8: addresses are unmapped
			p = netip.PrefixFrom(a.Unmap(), p.Bits()-96)
		}
		if p.Bits() == 0 {
			return proxies{}, fmt.Errorf("[%d] %q: trusts every address, so that a client names its own source in X-Forwarded-For: want the proxies' addresses or subnets", i, e)
		}
		ps.prefixes = append(ps.prefixes, p.Masked())
	}
	return ps, nil
}

// trusted reports whether a is a trusted proxy.
func (ps proxies) trusted(a netip.Addr) bool {
	a = a.Unmap().WithZone("")
	for _, p := range ps.prefixes {
		if p.Contains(a) {
			return true
		}
	}
	return false
}

// trustedPeer reports whether r's peer is a trusted proxy: its address, or a Unix
// socket (the server's end of r's connection is one) when ps trusts those.
func (ps proxies) trustedPeer(r *http.Request, peer string) bool {
	if local, ok := r.Context().Value(http.LocalAddrContextKey).(net.Addr); ok && local.Network() == "unix" {
		return ps.unix
	}
	a, err := netip.ParseAddr(peer)
	return err == nil && ps.trusted(a)
}

// source returns the source address of r: its peer, or, when the peer is a trusted
// proxy (see trustedPeer), the rightmost hop of X-Forwarded-For (all its headers, in
// order) that is not one; when every hop is trusted, the leftmost. A hop may carry a port, as some proxies
// write it ("203.0.113.7:5000", "[2001:db8::1]:443"): its address is the hop. A hop that
// is not an address ends the walk: it is the source, which the authorizer limits as the
// shared unknown address.
func (ps proxies) source(r *http.Request) string {
	peer := r.RemoteAddr
	if host, _, err := net.SplitHostPort(peer); err == nil {
		peer = host
	}
	if !ps.trustedPeer(r, peer) {
		return peer
	}
	hops := r.Header.Values("X-Forwarded-For")
	source := peer
	for i := len(hops) - 1; i >= 0; i-- {
		for list, more := hops[i], true; more; { // hop by hop from the right: no list of them
			j := strings.LastIndexByte(list, ',')
			hop := strings.TrimSpace(list[j+1:])
			if more = j >= 0; more {
				list = list[:j]
			}
			a, err := netip.ParseAddr(hop)
			if ap, perr := netip.ParseAddrPort(hop); err != nil && perr == nil {
				a, err, hop = ap.Addr(), nil, ap.Addr().String()
			}
			if err != nil || !ps.trusted(a) {
				return hop
			}
			source = hop
		}
	}
	return source
}
