package bucket

import (
	"cmp"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"strings"
	"time"

	"github.com/bucketgate/bucketgate"
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
// decision. It panics on another duration: the settings that give it are checked first.
func Idempotency(ttl time.Duration) Option {
	if ttl < MinIdempotency || ttl > MaxIdempotency || ttl%time.Millisecond != 0 {
		panic(fmt.Sprintf("bucket: idempotency %v: want whole milliseconds from %v to %v", ttl, MinIdempotency, MaxIdempotency))
	}
	return func(l *Limiter) { l.idempotency = ttl }
}

// Secret makes a Limiter sign its reservation ids with HMAC-SHA256 under secret, and
// refuse an id not signed so for its identity before it asks Redis. Every instance
// deciding on the same Redis must have the same secret. Without one (the default), ids
// carry a MAC under the empty key, which any caller can compute: an id is then refused
// unless Redis holds its record, made for that identity and found by a random 128-bit
// nonce (or by the RequestID of the reserve).
func Secret(secret []byte) Option {
	s := append([]byte(nil), secret...)
	return func(l *Limiter) { l.secret = s }
}

// idVersion starts every reservation id: "r1.<nonce>.<mac>", both base64url.
const idVersion = "r1."

// nonceBytes is the length of a nonce and of a MAC in an id, in bytes.
const nonceBytes = 16

// holds reports whether q's script call carries a hold: a reserve, a settle, a cancel,
// or an idempotent request.
func holds(q bucketgate.Request) bool {
	return q.RequestID != "" || q.Op == bucketgate.OpReserve || q.Op == bucketgate.OpSettle || q.Op == bucketgate.OpCancel
}

// mac returns the first nonceBytes of HMAC-SHA256 under l's secret of what, a label
// and then the identity and a value, separated by zero bytes, in base64url.
func (l *Limiter) mac(label, identity, value string) string {
	h := hmac.New(sha256.New, l.secret)
	h.Write([]byte(label))
	h.Write([]byte{0})
	h.Write([]byte(identity))
	h.Write([]byte{0})
	h.Write([]byte(value))
	return base64.RawURLEncoding.EncodeToString(h.Sum(nil)[:nonceBytes])
}

// nonce returns the nonce of q's record: a settle's from its id (checked against its
// MAC), an idempotent request's from its RequestID, a reserve's without one at random.
func (l *Limiter) nonce(q bucketgate.Request) (string, error) {
	switch {
	case q.Op == bucketgate.OpSettle || q.Op == bucketgate.OpCancel:
		rest, ok := strings.CutPrefix(q.ID, idVersion)
		nonce, sum, ok2 := strings.Cut(rest, ".")
		if !ok || !ok2 || len(nonce) != base64.RawURLEncoding.EncodedLen(nonceBytes) ||
			!hmac.Equal([]byte(sum), []byte(l.mac("reservation", q.Identity, nonce))) {
			return "", fmt.Errorf("%w: reservation %q: not an id this limiter made for the identity", bucketgate.ErrConflict, truncate(q.ID))
		}
		return nonce, nil
	case q.RequestID != "":
		return l.mac("request", q.Identity, q.RequestID), nil
	}
	var b [nonceBytes]byte
	rand.Read(b[:]) // never fails (crypto/rand)
	return base64.RawURLEncoding.EncodeToString(b[:]), nil
}

// reservationID is the id of the reservation whose record has nonce, for identity.
func (l *Limiter) reservationID(identity, nonce string) string {
	return idVersion + nonce + "." + l.mac("reservation", identity, nonce)
}

// truncate cuts s to 32 bytes for a message.
func truncate(s string) string {
	if len(s) > 32 {
		return s[:32] + "..."
	}
	return s
}

// namesPrint is the fingerprint of the names of rules: what a settle must share with its
// reserve (16 hex digits of their SHA-256).
func namesPrint(rules []bucketgate.Rule) string {
	h := sha256.New()
	for _, r := range rules {
		h.Write([]byte(r.Name))
		h.Write([]byte{0})
	}
	return hex.EncodeToString(h.Sum(nil)[:8])
}

// requestPrint is the fingerprint of q a record keeps, so that a RequestID used again
// for another request is refused: its rules' names, then ':' and its operation (r, c
// or f: a reserve, a check, a refund), cost and, for a reserve, ttl ("r10/300000").
func requestPrint(q bucketgate.Request, ttl time.Duration) string {
	var b strings.Builder
	b.WriteString(namesPrint(q.Rules))
	switch q.Op {
	case bucketgate.OpReserve:
		fmt.Fprintf(&b, ":r%d/%d", q.Cost, ttl.Milliseconds())
	case bucketgate.OpRefund:
		fmt.Fprintf(&b, ":f%d", q.Cost)
	default:
		fmt.Fprintf(&b, ":c%d", q.Cost)
	}
	return b.String()
}

// hold is what a script call with a hold carries beyond the request: its record's
// nonce and ARGV's hold (lua.ArgHold). The zero hold is none.
type hold struct {
	nonce, arg string
}

// hold returns q's hold, none when q has none; an error wrapping ErrConflict for a
// settle whose id this limiter did not make for q's identity.
func (l *Limiter) hold(q bucketgate.Request) (hold, error) {
	if !holds(q) {
		return hold{}, nil
	}
	nonce, err := l.nonce(q)
	if err != nil {
		return hold{}, err
	}
	if q.Op == bucketgate.OpSettle || q.Op == bucketgate.OpCancel {
		return hold{nonce: nonce, arg: namesPrint(q.Rules)}, nil
	}
	get, life, ttl := "0", time.Duration(0), time.Duration(0)
	if q.RequestID != "" {
		get, life = "1", l.idempotency
	}
	if q.Op == bucketgate.OpReserve {
		ttl = cmp.Or(q.TTL, bucketgate.DefaultTTL)
		life = ttl + l.idempotency // an expired reservation is told from an unknown one for as long
	}
	return hold{nonce: nonce, arg: fmt.Sprintf("%s %d %d %s", get, life.Milliseconds(), ttl.Milliseconds(), requestPrint(q, ttl))}, nil
}

// held completes d, the decision on q with hold h, with what the hold gives: an
// allowed reserve's id. Expires, Replayed and Settled are the reply's (decodeReply).
func (l *Limiter) held(d bucketgate.Decision, q bucketgate.Request, h hold) bucketgate.Decision {
	if q.Op == bucketgate.OpReserve && d.Allowed {
		d.Reservation = l.reservationID(q.Identity, h.nonce)
	}
	return d
}
