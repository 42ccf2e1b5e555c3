package settings

import (
	"fmt"
	"net"
	"strconv"
	"strings"
)

// ElastiCache Serverless endpoints look like
// "<cache>-<id>.serverless.<region code>.cache.amazonaws.com" (".com.cn" in China).
const (
	serverlessLabel   = ".serverless."
	elastiCacheSuffix = ".cache.amazonaws.com"
	chinaSuffix       = ".cn"
)

// IsServerlessEndpoint reports whether host (a host name, without port) is an
// ElastiCache Serverless endpoint, which accepts only TLS and speaks cluster mode.
func IsServerlessEndpoint(host string) bool {
	h := strings.TrimSuffix(strings.ToLower(host), ".") // a fully qualified name may end in a dot
	h = strings.TrimSuffix(h, chinaSuffix)
	if !strings.HasSuffix(h, elastiCacheSuffix) {
		return false
	}
	// One label (the cache), "serverless", one label (the region), then the suffix.
	name, region, ok := strings.Cut(strings.TrimSuffix(h, elastiCacheSuffix), serverlessLabel)
	return ok && name != "" && !strings.Contains(name, ".") && region != "" && !strings.Contains(region, ".")
}

// elastiCacheAddr returns the first of addrs whose host is an ElastiCache endpoint
// (serverless or a node or replication group: *.cache.amazonaws.com[.cn]).
func elastiCacheAddr(addrs []string) (string, bool) {
	for _, a := range addrs {
		host, _, err := splitHostPort(a)
		h := strings.TrimSuffix(strings.TrimSuffix(strings.ToLower(host), "."), chinaSuffix)
		if err == nil && strings.HasSuffix(h, elastiCacheSuffix) {
			return a, true
		}
	}
	return "", false
}

func anyServerless(addrs []string) bool {
	for _, a := range addrs {
		if host, _, err := splitHostPort(a); err == nil && IsServerlessEndpoint(host) {
			return true
		}
	}
	return false
}

// splitHostPort is net.SplitHostPort that also refuses an empty host and a port that
// is not a TCP port number (1 to 65535, decimal).
func splitHostPort(addr string) (host, port string, err error) {
	if host, port, err = net.SplitHostPort(addr); err != nil {
		return host, port, err
	}
	if host == "" {
		return host, port, &net.AddrError{Err: "empty host", Addr: addr}
	}
	if n, err := strconv.ParseUint(port, 10, 16); err != nil || n == 0 {
		return host, port, &net.AddrError{Err: fmt.Sprintf("port %q: want a number from 1 to 65535", port), Addr: addr}
	}
	return host, port, nil
}
