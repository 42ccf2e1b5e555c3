package bucket

import (
	"cmp"
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/bucketgate/bucketgate"
	"github.com/bucketgate/bucketgate/internal/lua"
	"github.com/bucketgate/bucketgate/internal/madekey"
	"github.com/bucketgate/bucketgate/internal/textcut"
)

// DefaultIdempotency is how long a Limiter remembers a RequestID when no Idempotency
// option says otherwise.
const DefaultIdempotency = 10 * time.Minute

// MinIdempotency and MaxIdempotency bound the Idempotency option.
const (
	MinIdempotency = time.Second
	MaxIdempotency = 24 * time.Hour
)

// Idempotency makes a Limiter remember each RequestID for ttl (MinIdempotency to
// MaxIdempotency): the same identity and RequestID within ttl answers the first
// decision; a reserve's or an acquire's RequestID is remembered its Request.TTL longer,
// so that no id it gave is given again while it may be held. A settled reservation's
// outcome is kept ttl past its expiry. It panics
// on another duration: the settings that give it are checked first.
func Idempotency(ttl time.Duration) Option {
	if ttl < MinIdempotency || ttl > MaxIdempotency || ttl%time.Millisecond != 0 {
		panic(fmt.Sprintf("bucket: idempotency %v: want whole milliseconds from %v to %v", ttl, MinIdempotency, MaxIdempotency))
	}
	return func(l *Limiter) { l.idempotency = ttl }
}

// idVersion starts every reservation and lease id the limiter makes:
// "r3.<payload>.<mac>", both base64url; the payload is the nonce, the estimate (0 for a
// lease) with a reservation's ttl (ms) in its high 32 bits and, in their top 8
// (skipShift), the rules its reserve took nothing from, and the expiry (Unix ms), then
// the number of its reserve's (or acquire's) rules and the print of each (rulePrint, in
// byKind's order), then the claims (Request.Claims, 0 to MaxClaims bytes); the MAC
// covers the version, the kind, the identity and the payload. A settle or a release
// names the rules of its request now: those the id prints are the ones it gives back
// to (or takes from), a rule added since gets nothing, and one removed since is gone.
const idVersion = "r3."

// idVersion2 starts an id made before ids printed their rules: "r2.<payload>.<mac>",
// its payload without the rules' number and prints, its MAC over the kind, the
// identity, the rules' names (namesPrint) and the payload. Such an id is verified as
// before: only for the very names (and kinds) of its reserve's rules.
const idVersion2 = "r2."

// Lengths in an id, in bytes: the nonce, the payload before its rules' number (nonce,
// estimate, expiry), the MAC, and a rule's print.
const (
	nonceBytes   = 16
	payloadBytes = nonceBytes + 8 + 8
	macBytes     = 16
	printBytes   = 4
)

// skipShift is where a reservation's skip (bucketgate.MaxRules bits) starts in the
// payload's second 8 bytes, above the ttl's 22 bits (bucketgate.MaxTTL in ms), which
// start at bit 32. An id made before ids carried it has none: its settle gives back to
// (and takes from) every rule.
const skipShift = 56

// holds reports whether q's script call carries a hold: a settle, a cancel, or an
// idempotent request.
func holds(q bucketgate.Request) bool {
	return q.RequestID != "" || settles(q)
}

// settles reports whether q settles a reservation: OpSettle or OpCancel.
func settles(q bucketgate.Request) bool {
	return q.Op == bucketgate.OpSettle || q.Op == bucketgate.OpCancel
}

// signs reports whether q needs the secret: a reserve, a settle, a cancel, an acquire
// or a release.
func signs(q bucketgate.Request) bool {
	return q.Op == bucketgate.OpReserve || settles(q) || q.Op == bucketgate.OpRelease || q.Acquires()
}

// mac returns the first macBytes of HMAC-SHA256 under secret of parts, each followed by
// a zero byte, in base64url.
func mac(secret []byte, parts ...string) string {
	h := hmac.New(sha256.New, secret)
	for _, p := range parts {
		h.Write([]byte(p))
		h.Write([]byte{0})
	}
	return base64.RawURLEncoding.EncodeToString(h.Sum(nil)[:macBytes])
}

// reservation is what a reservation id or a lease id carries: a lease's estimate and
// ttl are 0.
type reservation struct {
	nonce            string // base64url
	estimate, expiry int64  // tokens, Unix ms
	ttl              int64  // ms from the reserve to the expiry; 0 in an id made before ids carried it
	claims           string // Request.Claims of its reserve or acquire
	// skip holds the shadow rules its reserve was a shadow denial of, by index in the
	// script's rules (byKind's order, the concurrency rules last), which prints numbers
	// alike: the reserve took nothing from them, so its settle gives them nothing back
	// and takes nothing more.
	skip bucketgate.RuleSet
	// prints is rulePrint of each rule of its reserve or acquire, in byKind's order;
	// empty in an id of idVersion2, which the names of its rules sign instead.
	prints string
}

// The kinds of signed ids, each in its MAC, so that no id of one kind is one of the
// other: a reservation's, a lease's.
const (
	kindReservation = "reservation"
	kindLease       = "lease"
)

// id is r's id of kind (kindReservation, kindLease) for identity, signed under secret:
// the one signing function of every id the limiter makes, one format and one signature
// for both kinds, rules' prints and claims and all.
func (r reservation) id(kind string, secret []byte, identity string) string {
	p := make([]byte, payloadBytes, payloadBytes+1+len(r.prints)+len(r.claims))
	base64.RawURLEncoding.Decode(p[:nonceBytes], []byte(r.nonce)) // a nonce is base64url of nonceBytes
	binary.BigEndian.PutUint64(p[nonceBytes:], uint64(r.skip)<<skipShift|uint64(r.ttl)<<32|uint64(r.estimate))
	binary.BigEndian.PutUint64(p[nonceBytes+8:], uint64(r.expiry))
	p = append(append(p, byte(len(r.prints)/printBytes)), r.prints...)
	payload := base64.RawURLEncoding.EncodeToString(append(p, r.claims...))
	return idVersion + payload + "." + mac(secret, idVersion, kind, identity, payload)
}

// parseID reads q's id of kind, made under secret for q's identity and for rules of
// which q still has one at least (any rules when q has none: Limiter.Signed asks for
// the signature alone; an id of idVersion2, for q's very rules); its
// error wraps ErrConflict for any other, and says so of an id of the other kind
// (MisplacedID).
func parseID(kind string, secret []byte, q bucketgate.Request) (reservation, error) {
	refused := fmt.Errorf("%w: %s %q: not an id this limiter made for the identity and any rule of the request (a rule is its name and kind)", bucketgate.ErrConflict, kind, quotedID(q.ID))
	payload, sum, v2, ok := cutID(q.ID)
	want := ""
	switch {
	case !ok:
	case v2:
		want = mac(secret, kind, q.Identity, namesPrint(q.Rules), payload)
	default:
		want = mac(secret, idVersion, kind, q.Identity, payload)
	}
	if !ok || !hmac.Equal([]byte(sum), []byte(want)) {
		if err := MisplacedID(q.ID, kind == kindLease); err != nil {
			return reservation{}, err
		}
		return reservation{}, refused
	}
	r, ok := decodePayload(payload, v2)
	if !ok || !r.fits(kind == kindLease) {
		return reservation{}, refused // signed, so never: but bounds are checked where read
	}
	if _, shared := r.skipOf(q.Rules); !shared && q.Rules != nil { // no rules: Signed's
		return reservation{}, refused
	}
	return r, nil
}

// skipOf returns the rules of rules, by index in byKind's order (the script's), that
// r's settle gives nothing back to and takes nothing more from: those r does not print
// (added since its reserve, or of another kind now) and those its reserve took nothing
// from; and whether r prints one of rules at least. An id of idVersion2, signed for the
// very names of rules, skips what its reserve skipped.
func (r reservation) skipOf(rules []bucketgate.Rule) (bucketgate.RuleSet, bool) {
	if r.prints == "" {
		return r.skip, true
	}
	var skip bucketgate.RuleSet
	shared := false
	for j, rule := range byKind(rules) {
		k, want := -1, rulePrint(rule)
		for i := 0; i < len(r.prints); i += printBytes {
			if r.prints[i:i+printBytes] == want {
				k = i / printBytes
				break
			}
		}
		shared = shared || k >= 0
		if k < 0 || r.skip.Has(k) {
			skip |= 1 << j
		}
	}
	return skip, shared
}

// fits reports whether r, an id's payload not yet trusted, is within what the limiter
// writes in an id of a lease (lease true) or of a reservation: a lease's has no
// estimate, ttl or skip; a reservation's an estimate of 1 to bucketgate.MaxCapacity, a
// ttl of bucketgate.MaxTTL at most and, with prints, a skip of printed rules only; both
// an expiry of 0 or more.
func (r reservation) fits(lease bool) bool {
	if lease {
		return r.estimate == 0 && r.ttl == 0 && r.skip == 0 && r.expiry >= 0
	}
	return r.estimate >= 1 && r.estimate <= bucketgate.MaxCapacity && r.ttl <= bucketgate.MaxTTL.Milliseconds() && r.expiry >= 0 &&
		(r.prints == "" || r.skip < 1<<(len(r.prints)/printBytes))
}

// MisplacedID returns the error of id sent as a lease (lease true) or as a reservation
// when it is spelled as an id of the other kind (a lease's carries no estimate, a
// reservation's does): a conflict that says which it is, since no secret verifies it as
// the kind it was sent as; nil otherwise. It verifies nothing: the id's kind only words
// the refusal of an id refused anyway.
func MisplacedID(id string, lease bool) error {
	payload, _, v2, ok := cutID(id)
	if !ok {
		return nil
	}
	r, ok := decodePayload(payload, v2)
	switch {
	case !ok || (r.estimate == 0) == lease:
		return nil
	case lease:
		return fmt.Errorf("%w: %s %q: a reservation's id, not a lease's: a settle or a cancel ends it", bucketgate.ErrConflict, kindLease, quotedID(id))
	}
	return fmt.Errorf("%w: %s %q: a lease's id, not a reservation's: a release returns it", bucketgate.ErrConflict, kindReservation, quotedID(id))
}

// quotedID is id, a caller's, as an error quotes it: its first 32 bytes, marked when
// cut, with every API key bucketgate made that it holds masked (madekey.Mask, before the
// cut), since a caller may pass its key by mistake.
func quotedID(id string) string { return textcut.Marked(madekey.Mask(id), 32) }

// cutID returns the payload and the MAC of id, as written, and whether id is of
// idVersion2; false when id is not spelled as one (a MAC is macBytes in base64url).
func cutID(id string) (payload, sum string, v2, ok bool) {
	rest, ok := strings.CutPrefix(id, idVersion)
	if !ok {
		rest, v2 = strings.CutPrefix(id, idVersion2)
	}
	if !ok && !v2 || len(id) > bucketgate.MaxID {
		return "", "", false, false
	}
	payload, sum, ok = strings.Cut(rest, ".")
	if b, err := base64.RawURLEncoding.DecodeString(sum); !ok || err != nil || len(b) != macBytes {
		return "", "", false, false
	}
	return payload, sum, v2, true
}

// decodePayload reads an id's payload, not yet trusted, of idVersion2 (v2) or
// idVersion; false when it cannot be one.
func decodePayload(payload string, v2 bool) (reservation, bool) {
	p, err := base64.RawURLEncoding.DecodeString(payload)
	if err != nil || len(p) < payloadBytes {
		return reservation{}, false
	}
	est := binary.BigEndian.Uint64(p[nonceBytes:])
	r := reservation{
		nonce:    base64.RawURLEncoding.EncodeToString(p[:nonceBytes]),
		estimate: int64(est & math.MaxUint32),
		ttl:      int64(est >> 32 & (1<<(skipShift-32) - 1)),
		skip:     bucketgate.RuleSet(est >> skipShift),
		expiry:   int64(binary.BigEndian.Uint64(p[nonceBytes+8:])),
	}
	rest := p[payloadBytes:]
	if !v2 {
		if len(rest) == 0 || rest[0] < 1 || int(rest[0]) > bucketgate.MaxRules || len(rest) < 1+int(rest[0])*printBytes {
			return reservation{}, false
		}
		n := 1 + int(rest[0])*printBytes
		r.prints, rest = string(rest[1:n]), rest[n:]
	}
	if len(rest) > bucketgate.MaxClaims {
		return reservation{}, false
	}
	r.claims = string(rest)
	return r, true
}

// Claims returns the claims (bucketgate.Request.Claims) that reservation (or lease) id
// id carries, so that a settle by the id alone can find the identity and rules its
// reserve had; false when id carries none or is not spelled whole as an id the limiter
// writes (its MAC's length, its payload's figures), so that what is malformed is
// refused before anything follows its claims. They are not verified: the MAC covers
// them and the prints of its rules, and the settle that names the rules they lead to
// is refused (ErrConflict) unless the limiter signed the id, claims and all, and it
// shares one of those rules.
func Claims(id string) (string, bool) {
	payload, _, v2, ok := cutID(id)
	if !ok {
		return "", false
	}
	r, ok := decodePayload(payload, v2)
	return r.claims, ok && r.claims != "" && (r.fits(true) || r.fits(false))
}

// namesPrint is the fingerprint of the names of rules, with the kind of each but a
// bucket (kindOf): what the settle of an id of idVersion2 must share with its reserve
// (16 hex digits of their SHA-256), and an idempotent request with its first.
func namesPrint(rules []bucketgate.Rule) string {
	h := sha256.New()
	for _, r := range rules {
		h.Write([]byte(r.Name))
		h.Write([]byte{kindOf(r)})
	}
	return hex.EncodeToString(h.Sum(nil)[:8])
}

// rulePrint is the print of rule r in an id (printBytes of the SHA-256 of its name and
// kindOf), which a settle's rule must have to be given back to. A rule of a name the
// reserve had but of another kind (a plan made a bucket a quota) is another rule, which
// never held the estimate: a settle must give it nothing back.
func rulePrint(r bucketgate.Rule) string {
	sum := sha256.Sum256(append([]byte(r.Name), 0, kindOf(r)))
	return string(sum[:printBytes])
}

// rulesPrint is rulePrint of each of rules in byKind's order (the script's), as an id
// carries them.
func rulesPrint(rules []bucketgate.Rule) string {
	var b strings.Builder
	for _, r := range byKind(rules) {
		b.WriteString(rulePrint(r))
	}
	return b.String()
}

// kindOf is the kind of r in a print: 0 for a bucket (as before kinds were printed), 1
// for a quota, 2 for a concurrency rule.
func kindOf(r bucketgate.Rule) byte {
	switch {
	case r.IsQuota():
		return 1
	case r.IsConcurrency():
		return 2
	}
	return 0
}

// requestPrint is the fingerprint of q a record keeps, so that a RequestID used again
// for another request is refused: its rules' names (namesPrint), then ':' and its operation (r, c
// or f: a reserve, a check, a refund), cost and, for a reserve or an acquire, ttl
// ("r10/300000").
func requestPrint(q bucketgate.Request) string {
	var b strings.Builder
	b.WriteString(namesPrint(q.Rules))
	switch q.Op {
	case bucketgate.OpReserve:
		fmt.Fprintf(&b, ":r%d/%d", q.Cost, ttlOf(q).Milliseconds())
	case bucketgate.OpRefund:
		fmt.Fprintf(&b, ":f%d", q.Cost)
	default:
		fmt.Fprintf(&b, ":c%d", q.Cost)
		if q.Acquires() {
			fmt.Fprintf(&b, "/%d", ttlOf(q).Milliseconds())
		}
	}
	return b.String()
}

// ttlOf is how long q, a reserve or an acquire, holds its reservation or lease.
func ttlOf(q bucketgate.Request) time.Duration { return cmp.Or(q.TTL, bucketgate.DefaultTTL) }

// hold is what a script call with a hold carries beyond the request: its record's key
// suffix (lua.RecordInfix or lua.SettledInfix and a nonce) and ARGV's hold
// (lua.ArgHold); and, for a reserve, the nonce of its reservation. The zero hold is none.
type hold struct {
	record, arg, nonce string
	lease              string // a release's nonce
	resets             bool   // a settle that reads the identity's resets (lua.ResetSuffix)
}

// hold returns q's hold, none when q has none, with the secret when q needs it; an error
// wrapping ErrConflict for a settle whose id this limiter did not make for q's identity
// and rules.
func (l *Limiter) hold(ctx context.Context, c rediser, q bucketgate.Request) (hold, []byte, error) {
	if !signs(q) && q.RequestID == "" {
		return hold{}, nil, nil
	}
	var secret []byte
	if signs(q) {
		var err error
		if secret, err = l.secretOf(ctx, c); err != nil {
			return hold{}, nil, err
		}
	}
	if q.Op == bucketgate.OpRelease {
		r, err := l.verify(ctx, c, kindLease, q)
		if err != nil {
			return hold{}, nil, err
		}
		return hold{lease: r.nonce}, secret, nil
	}
	if settles(q) {
		r, err := l.verify(ctx, c, kindReservation, q)
		if err != nil {
			return hold{}, nil, err
		}
		reserve := reserveOf(r, q)
		arg := fmt.Sprintf("%d %d %d", r.estimate, r.expiry, l.idempotency.Milliseconds()) + reserve
		if skip, _ := r.skipOf(q.Rules); skip != 0 && q.Cost != r.estimate {
			arg += fmt.Sprintf(" %s%d", lua.SkipMark, skip)
		}
		return hold{record: lua.SettledInfix + r.nonce, arg: arg, resets: reserve != ""}, secret, nil
	}
	if q.RequestID == "" { // a reserve or an acquire: its nonce at random, no record
		var b [nonceBytes]byte
		rand.Read(b[:]) // never fails (crypto/rand)
		return hold{nonce: base64.RawURLEncoding.EncodeToString(b[:])}, secret, nil
	}
	nonce := requestNonce(q.Identity, q.RequestID)
	return hold{record: lua.RecordInfix + nonce, arg: fmt.Sprintf("%d %s", recordLife(q, l.idempotency).Milliseconds(), requestPrint(q)), nonce: nonce}, secret, nil
}

// requestNonce is the nonce of identity's request with the RequestID requestID: its
// record is named by it, in the identity's own slot (only a request of that identity
// reaches it), and so are its reservation and its lease, whose member in the sets of
// concurrency rules it is.
func requestNonce(identity, requestID string) string {
	sum := sha256.Sum256([]byte("request\x00" + identity + "\x00" + requestID))
	return base64.RawURLEncoding.EncodeToString(sum[:nonceBytes])
}

// reserveOf is what a settle q of reservation r adds to its hold when it gives back:
// " " and the time of r's reserve (Unix ms), after which a reset of a rule (its resets,
// lua.ResetSuffix) leaves that rule nothing to give back; then, when q has a quota, " "
// and, for each bucket and quota of q in order (the script's rules), comma-separated,
// the end (Unix seconds) of its window at r's reserve, 0 for a bucket. The script gives
// back only to a quota whose window is still that one (or, on the reserve's UTC day, to
// the window stored, which no midnight ended since, whatever window q's rules, edited
// since, put the reserve in): a count of a later window never held the estimate. Empty when q gives nothing back, or r was made before ids carried
// their ttl.
func reserveOf(r reservation, q bucketgate.Request) string {
	if r.ttl == 0 || q.Cost >= r.estimate {
		return ""
	}
	b := strconv.AppendInt([]byte{' '}, r.expiry-r.ttl, 10)
	if !slices.ContainsFunc(q.Rules, bucketgate.Rule.IsQuota) {
		return string(b)
	}
	b = append(b, ' ')
	first := len(b)
	for _, rule := range q.Rules {
		if rule.IsConcurrency() {
			continue
		}
		if len(b) > first {
			b = append(b, ',')
		}
		_, end := rule.Window(time.UnixMilli(r.expiry - r.ttl))
		b = strconv.AppendInt(b, max(end.Unix(), 0), 10)
	}
	return string(b)
}

// recordLife is how long the record of q's RequestID lives: idempotency, and for a
// request that holds something (a reserve, an acquire) its ttl more. Its reservation
// and lease ids are named by the RequestID (their nonce), so the RequestID must answer
// its first decision for as long as what that gave may be held, and a settle of it
// answered again (idempotency past its expiry): otherwise the same RequestID made a
// second lease of the same member while the first was held (counted once), or a second
// reservation whose settle answered the first's outcome and settled nothing.
func recordLife(q bucketgate.Request, idempotency time.Duration) time.Duration {
	if q.Holds() {
		return idempotency + ttlOf(q)
	}
	return idempotency
}

// held completes d, the decision on q with hold h, with an allowed reserve's id, an
// allowed acquire's lease, and their expiry: Redis's time of the decision (the first
// one's, replayed) and q's ttl. A reserve that acquires has both ids, of one nonce.
func held(d bucketgate.Decision, q bucketgate.Request, h hold, secret []byte) bucketgate.Decision {
	if !d.Allowed || d.At.IsZero() {
		return d
	}
	r := reservation{nonce: h.nonce, expiry: d.At.UnixMilli() + ttlOf(q).Milliseconds(), claims: q.Claims, prints: rulesPrint(q.Rules)}
	if q.Op == bucketgate.OpReserve {
		r.estimate, r.ttl, r.skip = q.Cost, ttlOf(q).Milliseconds(), d.ShadowLimited // d in the script's order
		d.Reservation, d.Expires = r.id(kindReservation, secret, q.Identity), time.UnixMilli(r.expiry)
		r.estimate, r.ttl, r.skip = 0, 0, 0
	}
	if q.Acquires() {
		d.Lease, d.Expires = r.id(kindLease, secret, q.Identity), time.UnixMilli(r.expiry)
	}
	return d
}
