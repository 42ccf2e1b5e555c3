package bucket

import (
	"encoding/base64"
	"encoding/binary"
	"time"

	"github.com/bucketgate/bucketgate"
)

// Clock makes a Limiter read the time of its secret's reads (SecretRecheck,
// RefusedRecheck, keptFor) from now: a test's clock, in place of time.Now.
func Clock(now func() time.Time) Option { return func(l *Limiter) { l.now = now } }

// MaxLoads is maxLoads, for the tests: the most rounds of a batch's calls that Redis
// refused with NOSCRIPT before each goes with the script's text.
const MaxLoads = maxLoads

// KeptFor is keptFor, for the tests: how long a Limiter keeps a secret it no longer
// signs with.
var KeptFor = keptFor

// idV2 is r's id of kind for identity and rules as a limiter made it before ids printed
// their rules (idVersion2): no rules' number or prints in the payload, the names of
// rules (namesPrint) in the MAC.
func (r reservation) idV2(kind string, secret []byte, identity string, rules []bucketgate.Rule) string {
	p := make([]byte, payloadBytes, payloadBytes+len(r.claims))
	base64.RawURLEncoding.Decode(p[:nonceBytes], []byte(r.nonce))
	binary.BigEndian.PutUint64(p[nonceBytes:], uint64(r.skip)<<skipShift|uint64(r.ttl)<<32|uint64(r.estimate))
	binary.BigEndian.PutUint64(p[nonceBytes+8:], uint64(r.expiry))
	payload := base64.RawURLEncoding.EncodeToString(append(p, r.claims...))
	return idVersion2 + payload + "." + mac(secret, kind, identity, namesPrint(rules), payload)
}

// AsV2 is id, a reservation's id (a lease's, lease true) that a limiter of secret made
// for identity and rules, as a limiter made it before ids printed their rules: an id in
// flight across the upgrade.
func AsV2(secret []byte, id string, lease bool, identity string, rules []bucketgate.Rule) string {
	payload, _, _, _ := cutID(id)
	r, _ := decodePayload(payload, false)
	kind := kindReservation
	if lease {
		kind = kindLease
	}
	return r.idV2(kind, secret, identity, rules)
}

// SecretReadOf returns when l last read Redis's secrets (SecretRecheck's start), for the
// tests.
func SecretReadOf(l *Limiter) time.Time {
	l.secrets.mu.Lock()
	defer l.secrets.mu.Unlock()
	return l.secrets.read
}

// MaxTryAgains is maxTryAgains, for the tests: the most rounds a batch sends again the
// calls that Redis refused with TRYAGAIN.
const MaxTryAgains = int32(maxTryAgains)

// LeaseMember is the member of the lease whose id is id (a Limiter's) in its
// concurrency rules' sets: its nonce; empty for an id that is not one.
func LeaseMember(id string) string {
	payload, _, v2, ok := cutID(id)
	if !ok {
		return ""
	}
	r, _ := decodePayload(payload, v2)
	return r.nonce
}

// AtRefusal makes a Limiter run refused whenever an id is refused under the secrets it
// holds, before it reads them again (RefusedRecheck): a test ends another call's read
// there, or learns that a call got that far.
func AtRefusal(refused func()) Option { return func(l *Limiter) { l.secrets.refused = refused } }
