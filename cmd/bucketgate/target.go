package main

import (
	"fmt"
	"net/netip"
	"strings"

	"github.com/bucketgate/bucketgate"
	"github.com/bucketgate/bucketgate/checkapi"
	"github.com/bucketgate/bucketgate/internal/identity"
	"github.com/bucketgate/bucketgate/internal/madekey"
)

// target is whose buckets a buckets command reaches.
type target struct {
	// id is the identity as printed: key:<digest>, acct:<name>, ip:<source> or
	// tenant:<key>.
	id string
	// req names it to the check function, by its Identity: the operator's path, which
	// the function logs at info.
	req checkapi.Request
}

// sources turns an address into the authorizer's identity of its source.
type sources struct {
	resolver identity.Resolver
	// ipv6Prefix is the resolver's prefix length, in bits.
	ipv6Prefix int
}

// parseTarget reads IDENTITY: "tenant:<key>", "key:<digest>", "acct:<name>" (an
// account), "ip:<address>" or an IP address (an IPv6 one standing for its prefix, as the authorizer groups it), or
// "ip:unknown" (the shared identity of requests without a readable source), or any
// other text as an API key, by its digest. Text that looks like a mistyped address or an
// identity of another kind is refused rather than taken for a key, and so is a tenant key
// that the check function refuses (checkTenant: one that holds an API key bucketgate
// made, among others), before any request. The error never quotes arg: it may be a key.
func parseTarget(arg string, src sources) (target, error) {
	kind, rest, hasKind := strings.Cut(arg, ":")
	switch {
	case strings.Trim(arg, " \t") == "":
		return target{}, fmt.Errorf("%w: IDENTITY is empty", errUsage)
	case kind == string(bucketgate.KindTenant):
		if rest == "" {
			return target{}, fmt.Errorf("%w: tenant: with no tenant key", errUsage)
		}
		if err := checkTenant(rest); err != nil {
			return target{}, fmt.Errorf("%w: tenant: %w", errUsage, err)
		}
		return identityTarget(arg), nil
	case kind == string(bucketgate.KindKey):
		if !bucketgate.ValidDigest(rest) {
			return target{}, errNotDigest
		}
		return identityTarget(arg), nil
	case kind == string(bucketgate.KindAccount):
		if err := checkAccountName("acct", rest); err != nil {
			return target{}, err
		}
		return identityTarget(arg), nil
	case kind == string(bucketgate.KindIP) && rest == identity.UnknownAddr:
		return identityTarget(arg), nil
	case kind == string(bucketgate.KindIP):
		return src.target(rest)
	case isAddress(arg):
		return src.target(arg)
	case looksLikeAddress(arg):
		return target{}, fmt.Errorf("%w: IDENTITY looks like an IP address but is not one (want 203.0.113.10, 2001:db8::1 or 2001:db8::/64)", errUsage)
	case hasKind && isKindName(kind):
		return target{}, fmt.Errorf("%w: IDENTITY has an unknown kind before ':': want key:<digest>, acct:<name>, ip:<address>, tenant:<key>, an API key or an IP address", errUsage)
	}
	return identityTarget(keyID(strings.Trim(arg, " \t"))), nil
}

// madeTenant returns arg, or for tenant:<key> whose key is an API key bucketgate made,
// which no check function tenant has (the function refuses one as a key), tenant:<its
// digest>, the tenant a service names by the key's digest, saying so on stderr: the key
// itself leaves the terminal in no request.
func madeTenant(e env, arg string) string {
	key, ok := strings.CutPrefix(arg, bucketgate.TenantPrefix)
	if !ok || !madekey.Is(key) {
		return arg
	}
	digest := bucketgate.KeyDigest(key)
	fmt.Fprintf(e.stderr, "note: tenant:%s... is an API key bucketgate made, which no tenant's key is (the check function refuses it): taken as tenant:%s, the tenant named by the key's digest (the API key itself is key:%s)\n",
		madekey.Prefix, digest, digest)
	return bucketgate.TenantPrefix + digest
}

// madeKeyDigest returns, for tenant:<key> whose key is or holds an API key bucketgate
// made (madekey.Holds), which no function looks up (the check function refuses such a
// key), the digest of its key.
func madeKeyDigest(id string) (string, bool) {
	key, ok := strings.CutPrefix(id, bucketgate.TenantPrefix)
	if !ok || !madekey.Holds(key) {
		return "", false
	}
	return bucketgate.KeyDigest(key), true
}

// shownID is id, the id of an item, as printed: every API key bucketgate made that it
// could show masked (madekey.Mask), and for a tenant whose key is masked so, its key's
// digest after it, which names it: tenant:acme/bg_... (digest <digest>).
func shownID(id string) string {
	shown := madekey.Mask(id)
	if key, ok := strings.CutPrefix(id, bucketgate.TenantPrefix); ok && shown != id {
		return shown + " (digest " + bucketgate.KeyDigest(key) + ")"
	}
	return shown
}

// identityTarget names the identity id.
func identityTarget(id string) target {
	return target{id: id, req: checkapi.Request{Identity: id}}
}

// target returns the identity of the source s: an address, or an IPv6 prefix of the
// authorizer's length.
func (src sources) target(s string) (target, error) {
	if _, err := netip.ParseAddr(s); err == nil {
		return identityTarget(src.resolver.Resolve(nil, nil, s).IP.String()), nil
	}
	p, err := netip.ParsePrefix(s)
	switch {
	case err != nil:
		return target{}, fmt.Errorf("%w: ip:%s: not an IP address or IPv6 prefix", errUsage, s)
	case p.Addr().Is4() && p.Bits() != 32:
		return target{}, fmt.Errorf("%w: ip:%s: IPv4 sources count one by one: give the address", errUsage, s)
	case p.Addr().Is6() && p.Bits() != src.ipv6Prefix:
		return target{}, fmt.Errorf("%w: ip:%s: the authorizer groups IPv6 sources by /%d (IPV6_PREFIX_LENGTH): give an address or a /%d prefix, and set IPV6_PREFIX_LENGTH as the functions have it",
			errUsage, s, src.ipv6Prefix, src.ipv6Prefix)
	}
	return identityTarget(src.resolver.Resolve(nil, nil, p.Addr().String()).IP.String()), nil
}

// isAddress reports whether s is an IP address or prefix.
func isAddress(s string) bool {
	if _, err := netip.ParseAddr(s); err == nil {
		return true
	}
	_, err := netip.ParsePrefix(s)
	return err == nil
}

// looksLikeAddress reports text meant as an address: digits and dots with a dot (IPv4),
// or hex digits before a colon (IPv6).
func looksLikeAddress(s string) bool {
	if strings.Contains(s, ".") && strings.Trim(s, "0123456789./") == "" {
		return true
	}
	before, _, ok := strings.Cut(s, ":")
	return ok && strings.Trim(before, "0123456789abcdefABCDEF") == ""
}

// isKindName reports text that names a kind of identity: 1 to 16 lowercase letters.
func isKindName(s string) bool {
	return s != "" && len(s) <= 16 && strings.Trim(s, "abcdefghijklmnopqrstuvwxyz") == ""
}
