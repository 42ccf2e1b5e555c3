package check

import (
	"fmt"
	"net/netip"
	"strconv"
	"strings"

	"github.com/bucketgate/bucketgate"
	"github.com/bucketgate/bucketgate/internal/identity"
)

// parseIdentity reads the explicit identity at path: "key:<digest>" or "ip:<address or
// IPv6 prefix>", as the authorizer spells them.
func parseIdentity(path string, raw []byte) (string, error) {
	id, err := stringValue(path, raw)
	if err != nil {
		return "", err
	}
	if d, ok := strings.CutPrefix(id, bucketgate.KeyPrefix); ok && bucketgate.ValidDigest(d) {
		return id, nil
	}
	if a, ok := strings.CutPrefix(id, bucketgate.IPPrefix); ok && canonicalSource(a) {
		return id, nil
	}
	shown := strconv.Quote(truncate(id, 2*maxShown))
	if !strings.HasPrefix(id, bucketgate.IPPrefix) { // it may be an API key itself: never quoted, so never logged
		shown = fmt.Sprintf("%d bytes, not shown", len(id))
	}
	return "", fmt.Errorf("%s: %s: want %s<the first %d hex digits of the API key's SHA-256, never the key> or %s<address> (an IPv6 source by its prefix, such as %s2001:db8::/64), as the authorizer logs them",
		path, shown, bucketgate.KeyPrefix, bucketgate.DigestLen, bucketgate.IPPrefix, bucketgate.IPPrefix)
}

// canonicalSource reports whether s is a source as the authorizer writes it: an
// address in its canonical text, an IPv6 prefix with no bits past its length, or the
// shared unknown source.
func canonicalSource(s string) bool {
	if s == identity.UnknownAddr {
		return true
	}
	if a, err := netip.ParseAddr(s); err == nil {
		return a.String() == s && !a.Is4In6() && a.Zone() == ""
	}
	p, err := netip.ParsePrefix(s)
	return err == nil && p.Addr().Is6() && p == p.Masked() && p.String() == s
}

// truncate returns at most n bytes of s.
func truncate(s string, n int) string {
	if len(s) > n {
		return s[:n]
	}
	return s
}
