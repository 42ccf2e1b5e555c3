package check

import (
	"fmt"
	"net/netip"
	"strings"

	"github.com/bucketgate/bucketgate"
	"github.com/bucketgate/bucketgate/checkapi"
	"github.com/bucketgate/bucketgate/internal/identity"
	"github.com/bucketgate/bucketgate/internal/madekey"
	"github.com/bucketgate/bucketgate/internal/settings"
	"github.com/bucketgate/bucketgate/internal/textcut"
)

// parseIdentity reads the explicit identity at path, spelled as the authorizer and the
// registry spell them: "key:<digest>", "ip:<source>" exactly as sources (the
// authorizer's) resolve a source, "acct:<name>" for an account, or "tenant:<key>" for a
// key of the check function's own. It returns the identity and its logged form, a tenant's key as its digest.
// An API key bucketgate made after the kind is refused, unquoted: it would rest in Redis.
func parseIdentity(path string, raw []byte, sources identity.Resolver) (id, logged string, err error) {
	id, err = stringValue(path, raw)
	if err != nil {
		return "", "", err
	}
	if err := madekey.InIdentity(path, id); err != nil { // never quoted: it is a secret
		return "", "", err
	}
	if d, ok := strings.CutPrefix(id, bucketgate.KeyPrefix); ok && bucketgate.ValidDigest(d) {
		return id, id, nil
	}
	if key, ok := strings.CutPrefix(id, identityPrefix); ok {
		if key == "" || len(key) > checkapi.MaxKey {
			return "", "", fmt.Errorf("%s: %s with a key of %d bytes: want 1 to %d, as the check function takes its keys", path, identityPrefix, len(key), checkapi.MaxKey)
		}
		return id, bucketgate.LogForm(id), nil
	}
	if name, ok := strings.CutPrefix(id, bucketgate.AccountPrefix); ok {
		if !bucketgate.ValidAccountName(name) {
			return "", "", fmt.Errorf("%s: %q: an account's name is 1 to %d letters, digits, '.', '_' or '-'", path, textcut.To(id, 2*maxShown), bucketgate.MaxAccountName)
		}
		return id, id, nil
	}
	if a, ok := strings.CutPrefix(id, bucketgate.IPPrefix); ok {
		if err := checkSource(a, sources); err != nil {
			return "", "", fmt.Errorf("%s: %q: %w", path, textcut.To(id, 2*maxShown), err)
		}
		return id, id, nil
	}
	// It may be an API key itself: never quoted, so never logged.
	return "", "", fmt.Errorf("%s: %d bytes, not shown: %w", path, len(id), errIdentity)
}

// errIdentity says how an identity is spelled.
var errIdentity = fmt.Errorf("want %s<the first %d hex digits of the API key's SHA-256, never the key>, %s<address> (an IPv6 source by its prefix, such as %s2001:db8::/64) as the authorizer logs them, %s<name> for an account, or %s<key> for a key of this function's own",
	bucketgate.KeyPrefix, bucketgate.DigestLen, bucketgate.IPPrefix, bucketgate.IPPrefix, bucketgate.AccountPrefix, identityPrefix)

// checkSource reports a source a that the authorizer never writes in an identity,
// naming the spelling it uses when there is one: it writes an IPv4 address (and an
// IPv4-mapped IPv6 one) as the IPv4 address, an IPv6 address as its prefix of the
// grouping's length masked (the address itself when the grouping counts addresses one
// by one), a missing or unreadable source as identity.UnknownAddr. A reset or refund of
// another spelling would miss the bucket the authorizer spends.
func checkSource(a string, sources identity.Resolver) error {
	if a == identity.UnknownAddr {
		return nil
	}
	bits := sources.IPv6Prefix()
	addr, err := netip.ParseAddr(a)
	if err != nil {
		p, perr := netip.ParsePrefix(a)
		switch {
		case perr != nil:
			return errIdentity
		case p.Addr().Is4():
			return fmt.Errorf("want %s<address>: the authorizer counts IPv4 sources one by one", bucketgate.IPPrefix)
		case p.Bits() < bits:
			return fmt.Errorf("want an address or a /%d prefix: the authorizer groups IPv6 sources by /%d (%s), and a /%d holds many of its identities", bits, bits, settings.EnvIPv6Prefix, p.Bits())
		}
		addr = p.Addr()
	}
	want := sources.ResolveCopies(identity.KeyCopies{}, addr.String()).IP.String()
	if want == bucketgate.IPPrefix+a {
		return nil
	}
	return fmt.Errorf("want %s, as the authorizer spells this source (it groups IPv6 sources by /%d, %s)", want, bits, settings.EnvIPv6Prefix)
}
