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
type proxies []netip.Prefix

// parseProxies reads addresses and CIDR prefixes; its error names the entry. A prefix
// of every address (0.0.0.0/0, ::/0) is refused: every hop of X-Forwarded-For would be
// trusted, and the source always the leftmost, which the client writes.
func parseProxies(entries []string) (proxies, error) {
	ps := make(proxies, 0, len(entries))
	for i, e := range entries {
		p, err := netip.ParsePrefix(e)
		if err != nil {
			a, aerr := netip.ParseAddr(e)
			if aerr != nil {
				return nil, fmt.Errorf("[%d] %q: want an IP address or a CIDR prefix such as 10.0.0.0/8", i, e)
			}
			p = netip.PrefixFrom(a.Unmap(), a.Unmap().BitLen())
		}
		if a := p.Addr(); a.Is4In6() && p.Bits() >= 96 { // ::ffff:10.0.0.0/104 is 10.0.0.0/8: addresses are unmapped
			p = netip.PrefixFrom(a.Unmap(), p.Bits()-96)
		}
		if p.Bits() == 0 {
			return nil, fmt.Errorf("[%d] %q: trusts every address, so that a client names its own source in X-Forwarded-For: want the proxies' addresses or subnets", i, e)
		}
		ps = append(ps, p.Masked())
	}
	return ps, nil
}

// trusted reports whether a is a trusted proxy.
func (ps proxies) trusted(a netip.Addr) bool {
	a = a.Unmap().WithZone("")
	for _, p := range ps {
		if p.Contains(a) {
			return true
		}
	}
	return false
}

// source returns the source address of r: its peer, or, when the peer is a trusted
// proxy, the rightmost hop of X-Forwarded-For (all its headers, in order) that is not
// one; when every hop is trusted, the leftmost. A hop may carry a port, as some proxies
// write it ("203.0.113.7:5000", "[2001:db8::1]:443"): its address is the hop. A hop that
// is not an address ends the walk: it is the source, which the authorizer limits as the
// shared unknown address.
func (ps proxies) source(r *http.Request) string {
	peer := r.RemoteAddr
	if host, _, err := net.SplitHostPort(peer); err == nil {
		peer = host
	}
	a, err := netip.ParseAddr(peer)
	if len(ps) == 0 || err != nil || !ps.trusted(a) {
		return peer
	}
	hops := r.Header.Values("X-Forwarded-For")
	source := peer
	for i := len(hops) - 1; i >= 0; i-- {
		list := strings.Split(hops[i], ",")
		for j := len(list) - 1; j >= 0; j-- {
			hop := strings.TrimSpace(list[j])
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
