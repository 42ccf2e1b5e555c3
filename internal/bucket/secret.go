package bucket

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/redis/rueidis"

	"github.com/bucketgate/bucketgate"
	"github.com/bucketgate/bucketgate/internal/wallclock"
)

// Secret makes a Limiter sign its reservation and lease ids with HMAC-SHA256 under
// secret (16 bytes at least), and refuse an id not signed so for the identity of its
// settle or release and rules it shares one of. Every instance deciding on the same Redis must have the
// same secret. Without one, a Limiter uses the one Redis keeps (SecretKey): see
// SecretRecheck.
func Secret(secret []byte) Option {
	if len(secret) < 16 {
		panic(fmt.Sprintf("bucket: a secret of %d bytes: want 16 or more", len(secret)))
	}
	s := append([]byte(nil), secret...)
	return func(l *Limiter) { l.secrets.current, l.secrets.fixed = s, true }
}

// SecretKey is the Redis key of the secret that signs reservation and lease ids when no
// Secret option gives one: 64 hex digits, written by the first instance that needs it
// (SET NX) and never expiring. A Redis that loses it (a FLUSHALL, a restore) gets it
// back, or another one, at the next read (SecretRecheck).
const SecretKey = KeyPrefix + "secret"

// ErrNoSecret is wrapped by the error of a call that needed the secret Redis keeps
// (SecretKey, with SecretsKeptKey) and could not read it: Redis did not answer for one
// of those keys, whose master in a cluster is in general not the identity's, and which
// NoSecretSlot names.
var ErrNoSecret = errors.New("the reservations' secret could not be read")

// noSecretError is the error of a read of the secrets that Redis did not answer for
// key (SecretKey or SecretsKeptKey): it wraps ErrNoSecret and Redis's error.
type noSecretError struct {
	key string
	err error
}

func (e *noSecretError) Error() string {
	return fmt.Sprintf("bucket: %v (%s): %v", ErrNoSecret, e.key, e.err)
}

func (e *noSecretError) Unwrap() []error { return []error{ErrNoSecret, e.err} }

// NoSecretSlot returns the Redis Cluster hash slot of the key of the reservations'
// secrets that err, a call's error wrapping ErrNoSecret, says Redis did not answer for:
// SecretSlot for SecretKey, SecretsKeptSlot for SecretsKeptKey.
// In a cluster, that slot's master is the one that failed. It reports false for any
// other error.
func NoSecretSlot(err error) (int, bool) {
	var e *noSecretError
	if !errors.As(err, &e) {
		return 0, false
	}
	return slotOf([]byte(e.key)), true
}

// NotAsked reports whether err, a call's error, is the failure of a read of the
// secrets that the call did not make: another call's, which it waited for (or whose
// end its deadline did not see), or the last one, within RefusedRecheck before it, or
// one that another call of its request made (OneRead). The
// call asked Redis nothing, and its failure is not Redis's answer to it: the read's own
// call met it.
func NotAsked(err error) bool {
	var e notAskedError
	return errors.As(err, &e)
}

// notAskedError is the error of a call that met the failure of a read of the secrets
// it did not make (see NotAsked).
type notAskedError struct{ error }

func (e notAskedError) Unwrap() error { return e.error }

// notAsked returns err, the failure of a read of the secrets, as a call that did not
// make the read meets it; nil for nil.
func notAsked(err error) error {
	if err == nil {
		return nil
	}
	return notAskedError{err}
}

// OneRead returns ctx for the calls to a Limiter that answer one request (a settle or a
// release by its id alone: Signed, then its decision; a batch of them): once a call
// within ctx failed to get the secrets (a read of them that Redis did not answer, made
// or waited for, or the connection not made: Signed's first such failure, or a failed
// read of a Limiter that holds none yet; not the failure of a read before the request,
// which a refused id's RefusedRecheck finds too recent to read again), the calls after
// it within ctx do not ask Redis for them again: Signed verifies the id under the
// secrets held, and fails with that error otherwise, as a call that did not make the
// read (NotAsked), and so does a call that needs them on a Limiter that holds none yet;
// FailedRead tells the caller, so that it asks nothing more of that Redis for the
// request (package guard). The request waits for Redis once and a circuit breaker
// counts one failure. A request after it, with a ctx of its own, reads them.
func OneRead(ctx context.Context) context.Context {
	return context.WithValue(ctx, oneReadKey{}, new(oneRead))
}

// oneReadKey is the context key of a request's oneRead (OneRead).
type oneReadKey struct{}

// oneRead is what a request (OneRead) knows of the reads of the secrets its calls made:
// the error of the first that failed; nil until one did.
type oneRead struct {
	mu  sync.Mutex
	err error
}

// FailedRead returns the error with which a call within ctx's request (OneRead) failed
// to get the secrets (see OneRead): ErrNoSecret's, ErrBadState's for a key that is not
// the secrets, or the connection's; nil when none did or ctx has no OneRead.
func FailedRead(ctx context.Context) error {
	r, ok := ctx.Value(oneReadKey{}).(*oneRead)
	if !ok {
		return nil
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.err
}

// readFailed keeps err, the failure of a call within ctx to get the secrets, for the
// calls after it within ctx's request (OneRead), unless one failed before it; nothing
// without one.
func readFailed(ctx context.Context, err error) {
	if r, ok := ctx.Value(oneReadKey{}).(*oneRead); ok {
		r.mu.Lock()
		if r.err == nil {
			r.err = err
		}
		r.mu.Unlock()
	}
}

// SecretsKeptKey is the Redis key of the secrets that signed ids before SecretKey's: a
// sorted set of each, scored by the time until which it verifies ids (Unix ms of Redis's
// clock, the TIME of the node that keeps this key, so that instances whose clocks are
// apart agree on it), written by an instance that finds at SecretKey another secret than
// the one it signed with, and read with SecretKey, so that every instance, one started
// after the change too, verifies the ids signed before it. It expires keptFor after the
// write that needs it longest: the writers' idempotency times may differ.
const SecretsKeptKey = KeyPrefix + "secret:kept"

// SecretRecheck is how long a Limiter without the Secret option signs with the secret
// it read from Redis (SecretKey) before it reads it again, on the next call that signs
// or verifies an id, in one round trip: SET NX of its own secret, GET, and the kept
// secrets (SecretsKeptKey). A Redis that lost the key gets that Limiter's secret back,
// so that the ids signed before still verify everywhere; a Redis that holds another
// secret (written by an instance started after the loss) makes the Limiter sign with
// that one, and keep its own to verify ids with for keptFor, in SecretsKeptKey too,
// where every instance reads it. Every instance of a fleet signs with Redis's secret
// within SecretRecheck of a change, or at its first refused id (RefusedRecheck).
const SecretRecheck = time.Minute

// RefusedRecheck is how soon after its last read a Limiter without the Secret option
// reads Redis's secrets again when an id is refused under every secret it holds, and
// then verifies the id once more: an instance that has not read a new secret yet
// settles at its first refused id, and forged ids cost Redis one read a second at most.
const RefusedRecheck = time.Second

// keptSecrets is how many secrets a Limiter keeps beside the one that signs, to verify
// ids with: two, so that a second change within the time one is kept loses nothing.
const keptSecrets = 2

// keptFor is how long a Limiter of idempotency ttl keeps a secret it no longer signs
// with to verify ids: an id signed under it, by this instance or another one that has
// not read the new secret yet (SecretRecheck), is held until bucketgate.MaxTTL later at
// most, and its settle is answered again until idempotency past its expiry (the
// settled record's life). Past that, its settle is refused whatever the secret.
func keptFor(idempotency time.Duration) time.Duration {
	return SecretRecheck + bucketgate.MaxTTL + idempotency
}

// secrets is what a Limiter signs and verifies ids with.
type secrets struct {
	mu      sync.Mutex
	current []byte                  // signs and verifies; nil until read from Redis
	fixed   bool                    // set by Secret: never read from Redis
	read    time.Time               // the Limiter's clock when current was last read, or a read again failed
	failed  error                   // the error of the last read again when it failed; nil after a success
	reading chan struct{}           // closed when the read again in flight ends; nil when none is
	first   chan struct{}           // closed when the first read in flight ends; nil when none is
	kept    [keptSecrets]keptSecret // verify only, each until its time
	refused func()                  // run by verify between a refusal and the read again; tests only (export_test.go)
}

// keptSecret is a secret that verifies ids until until (the Limiter's clock: one read
// from SecretsKeptKey, its time there less Redis's time at the read, after the
// Limiter's time of the read).
type keptSecret struct {
	secret []byte
	until  time.Time
}

// secretOf returns the secret that signs l's ids: the Secret option's, or the one Redis
// keeps, read (and made, the first time) through c (firstRead), and read again when
// SecretRecheck has passed since (recheck), the call going on with the one held when
// that read fails.
func (l *Limiter) secretOf(ctx context.Context, c rediser) ([]byte, error) {
	if err := l.firstRead(ctx, c); err != nil {
		return nil, err
	}
	current, _ := l.recheck(ctx, c, SecretRecheck, false)
	return current, nil
}

// firstRead reads the secrets through c when l holds none yet. Until the first read
// succeeds, one call at a time reads, and the others wait for it until their own ctx
// ends: a read that fails leaves the next to one of them, but to none of its own
// request's (OneRead), which fail with its error (NotAsked). A ctx done already reads
// nothing: nil when l holds the secrets, else an error.
func (l *Limiter) firstRead(ctx context.Context, c rediser) error {
	s := &l.secrets
	for {
		s.mu.Lock()
		if s.current != nil {
			s.mu.Unlock()
			return nil
		}
		if err := FailedRead(ctx); err != nil {
			s.mu.Unlock()
			return notAsked(err)
		}
		if wait := s.first; wait != nil {
			s.mu.Unlock()
			select {
			case <-wait:
				continue
			case <-ctx.Done(): // the other call's read may take until its own deadline
				return secretError(SecretKey, ctx.Err())
			}
		}
		if err := ctx.Err(); err != nil {
			s.mu.Unlock()
			return secretError(SecretKey, err)
		}
		done := make(chan struct{})
		s.first = done
		s.mu.Unlock()
		var b [32]byte
		rand.Read(b[:]) // never fails (crypto/rand)
		now := l.now()
		got, kept, _, err := readSecret(ctx, c, []byte(hex.EncodeToString(b[:])), now)
		s.mu.Lock()
		if err == nil {
			s.current, s.read = got, now
			s.keepAll(kept)
		}
		s.first = nil
		s.mu.Unlock()
		close(done)
		if err != nil {
			readFailed(ctx, err)
		}
		return err
	}
}

// recheck reads Redis's secrets again through c when after has passed since the last
// read, no other call is reading them and ctx is not done, and returns the secret that
// signs. Other calls go on with the secrets they have meanwhile, or, wait true, wait
// for that read until ctx ends, and return its outcome. Its error says why the secrets
// held may be behind Redis's: this read failed; or the last one did, or the one waited
// for, or ctx ended while waiting (NotAsked); or ctx is done (after has passed since
// the last read); nil when they are as fresh as after asks (read by this call, by the
// one waited for, or by another one since the caller looked at them), or no other read
// is wanted (the Secret option, a read of another call in flight after a success, wait
// false). The read has half the time left to ctx's deadline (halfLeft):
// in a cluster whose master of the secrets stalls, the call's own round trip, to
// another master, has the other half. A read that fails changes nothing but the error
// kept for the calls after it: the next one comes after again (the call's own round
// trip meets the failure). The failure of a read waited for, or ctx ending while
// waiting, is ctx's request's (OneRead), as the failure of a read it made is Signed's
// to keep. A secret that no longer signs is written to SecretsKeptKey, in a round trip
// more once per change.
func (l *Limiter) recheck(ctx context.Context, c rediser, after time.Duration, wait bool) ([]byte, error) {
	s := &l.secrets
	s.mu.Lock()
	now := l.now()
	mine := s.current
	if in := s.reading; in != nil && wait {
		s.mu.Unlock()
		select {
		case <-in:
		case <-ctx.Done():
			err := notAsked(secretError(SecretKey, ctx.Err()))
			readFailed(ctx, err) // waited for: the request's failure too
			return mine, err
		}
		s.mu.Lock()
		current, err := s.current, notAsked(s.failed)
		s.mu.Unlock()
		if err != nil {
			readFailed(ctx, err)
		}
		return current, err
	}
	young := wallclock.Young(now, s.read, after)
	if s.fixed || s.reading != nil || ctx.Err() != nil || young {
		err := notAsked(s.failed)
		if err == nil && !young && !s.fixed && s.reading == nil {
			err = secretError(SecretKey, ctx.Err())
		}
		s.mu.Unlock()
		return mine, err
	}
	done := make(chan struct{})
	s.reading = done
	s.mu.Unlock()
	read, cancel := halfLeft(ctx)
	got, kept, at, err := readSecret(read, c, mine, now)
	cancel()
	s.mu.Lock()
	s.reading, s.read, s.failed = nil, now, err
	if err != nil {
		close(done)
		s.mu.Unlock()
		return mine, err
	}
	until := now.Add(keptFor(l.idempotency))
	changed := !bytes.Equal(got, mine)
	if changed {
		s.adopt(got, until)
	}
	s.keepAll(kept)
	close(done)
	s.mu.Unlock()
	if changed {
		// Best effort: every instance that signed with mine writes it when it changes.
		// The expiry is set (NX) or made later (GT), never sooner: an instance of a
		// shorter idempotency would drop the secrets a longer one keeps. Those past
		// their time go (only the keptSecrets latest are ever read: readSecret), by
		// score, which the functions' ACL grants (ZREMRANGEBYSCORE, which the script
		// calls; not ZREMRANGEBYRANK). The time is Redis's, the kept set's node's (at).
		life := keptFor(l.idempotency)
		c.DoMulti(ctx,
			c.B().Zadd().Key(SecretsKeptKey).Gt().ScoreMember().ScoreMember(float64(at.Add(life).UnixMilli()), string(mine)).Build(),
			c.B().Zremrangebyscore().Key(SecretsKeptKey).Min("-inf").Max(strconv.FormatInt(at.UnixMilli(), 10)).Build(),
			c.B().Pexpire().Key(SecretsKeptKey).Milliseconds(life.Milliseconds()).Nx().Build(),
			c.B().Pexpire().Key(SecretsKeptKey).Milliseconds(life.Milliseconds()).Gt().Build())
	}
	return got, nil
}

// adopt makes secret the one that signs, and keeps the one before it to verify ids
// until until.
func (s *secrets) adopt(secret []byte, until time.Time) {
	old := s.current
	for i, k := range s.kept {
		if bytes.Equal(k.secret, secret) {
			s.kept[i] = keptSecret{}
		}
	}
	s.current = secret
	s.keep(keptSecret{old, until})
}

// keepAll keeps each of kept, the secrets read from SecretsKeptKey.
func (s *secrets) keepAll(kept []keptSecret) {
	for _, k := range kept {
		s.keep(k)
	}
}

// keep keeps k's secret to verify ids until its time, in place of the kept secret that
// expires first when that is sooner; one kept already keeps the later of both times.
// The secret that signs is never kept.
func (s *secrets) keep(k keptSecret) {
	if bytes.Equal(k.secret, s.current) {
		return
	}
	slot := 0
	for i, held := range s.kept {
		if bytes.Equal(held.secret, k.secret) {
			if k.until.After(held.until) {
				s.kept[i].until = k.until
			}
			return
		}
		if held.until.Before(s.kept[slot].until) {
			slot = i
		}
	}
	if k.until.After(s.kept[slot].until) {
		s.kept[slot] = k
	}
}

// Signed returns nil when id, a reservation's id (or, lease true, a lease's), is one
// this limiter signed for identity, whatever rules it prints, or when only a request's
// rules can tell (an id of idVersion2, whose MAC covers their names); an error wrapping
// ErrConflict when it is not (verified as verify does, Redis's secrets read again once
// at a refusal), or the error of reading the secret. It reads the secrets when l holds
// none yet, and again only for an id they refuse (RefusedRecheck): reading them again
// once SecretRecheck has passed is left to the calls that sign, so that an id they
// verify asks Redis nothing. With ctx done already, it asks Redis nothing: it verifies
// id under the secrets l holds, and fails when it holds none yet (an instance that
// never read them), or when they refuse id and their last read is RefusedRecheck old,
// failed or in flight (id may be signed under a secret not read yet). Nor does it ask
// Redis anything within a request (OneRead) in which a call failed to get them: it
// fails with that failure (NotAsked) unless the secrets held verify id; and the
// failure it met asking Redis (a read, the connection), or waiting for another call's
// read, is the request's (FailedRead). A settle or a release by the id alone asks it
// before it follows the id's claims, so that an id the limiter did not make reads no
// registry, and its refusal says nothing of where its claims lead.
func (l *Limiter) Signed(ctx context.Context, identity, id string, lease bool) (err error) {
	if _, _, v2, ok := cutID(id); ok && v2 {
		return nil
	}
	kind := kindReservation
	if lease {
		kind = kindLease
	}
	q := bucketgate.Request{Identity: identity, ID: id}
	if failed := FailedRead(ctx); failed != nil {
		l.secrets.mu.Lock()
		held := l.secrets.current != nil
		l.secrets.mu.Unlock()
		if _, err := l.verifyHeld(kind, q); !held || err != nil { // a refusal may be a secret not read yet's
			return notAsked(failed)
		}
		return nil
	}
	if ctx.Err() == nil { // else it asks nothing: its failure is no Redis's
		defer func() {
			if err != nil && !errors.Is(err, bucketgate.ErrConflict) && !NotAsked(err) { // a read waited for is recheck's to keep
				readFailed(ctx, err)
			}
		}()
	}
	c, err := l.redis(ctx)
	if err != nil {
		return fmt.Errorf("bucket secret: %w", err)
	}
	if err := l.firstRead(ctx, c); err != nil {
		return err
	}
	_, err = l.verify(ctx, c, kind, q)
	return err
}

// verify reads q's id of kind, made for q's identity and rules (see parseID) under a
// secret l holds: the one that signs, then those it keeps. An id refused under all of
// them makes l read Redis's secrets again (RefusedRecheck), or wait for another call's
// read in flight, and is verified once more under the secrets held then, which another
// call's read may have brought since the refusal. Its error wraps ErrConflict for an id
// l did not make; it is the error of reading the secrets (ErrNoSecret) when they could
// not be read so (Redis failed, now or at the last read, or ctx is done): the id may be
// signed under a secret Redis has now, which l has not read yet, and a retry once Redis
// answers settles it.
func (l *Limiter) verify(ctx context.Context, c rediser, kind string, q bucketgate.Request) (reservation, error) {
	r, err := l.verifyHeld(kind, q)
	if err == nil {
		return r, nil
	}
	if l.secrets.refused != nil {
		l.secrets.refused()
	}
	_, unread := l.recheck(ctx, c, RefusedRecheck, true)
	// Under the secrets held now, whoever read them: another call's read that ended
	// since the refusal leaves none to make, and brought what this one would have.
	if r, err = l.verifyHeld(kind, q); err == nil || unread == nil {
		return r, err
	}
	return reservation{}, unread
}

// verifyHeld reads q's id of kind under the secrets l holds now, dropping those kept
// past their time.
func (l *Limiter) verifyHeld(kind string, q bucketgate.Request) (reservation, error) {
	s := &l.secrets
	var held [1 + keptSecrets][]byte
	s.mu.Lock()
	held[0] = s.current
	for i, k := range s.kept {
		switch {
		case k.secret == nil:
		case l.now().Before(k.until):
			held[1+i] = k.secret
		default:
			s.kept[i] = keptSecret{}
		}
	}
	s.mu.Unlock()
	var err error
	for _, secret := range held {
		if secret == nil {
			continue
		}
		var r reservation
		if r, err = parseID(kind, secret, q); err == nil {
			return r, nil
		}
	}
	return reservation{}, err
}

// secretError is the error of a read of key, SecretKey or SecretsKeptKey, that failed
// with err: bad state for a key of another type (Redis answered: its circuit stays
// closed), else a noSecretError.
func secretError(key string, err error) error {
	if strings.Contains(err.Error(), "WRONGTYPE") {
		return fmt.Errorf("%w: %s is a key of another type, not the reservations' secrets: delete it: %w", ErrBadState, key, err)
	}
	return &noSecretError{key, err}
}

// readSecret writes mine as Redis's secret through c unless it has one (SET NX), and
// returns the one it has, the kept ones (SecretsKeptKey) that still verify ids by
// Redis's clock, keptSecrets at most, each until its time on the clock of now (the
// Limiter's at the read), and at, Redis's time at the read (the TIME of the kept set's
// node), in one round trip; in two more when the server is a replica (READONLY: a
// standalone primary demoted by a failover, see readOnly), after making the connection
// again.
func readSecret(ctx context.Context, c rediser, mine []byte, now time.Time) (secret []byte, kept []keptSecret, at time.Time, err error) {
	read := func() []rueidis.RedisResult {
		return c.DoMulti(ctx,
			c.B().Set().Key(SecretKey).Value(string(mine)).Nx().Build(),
			c.B().Get().Key(SecretKey).Build(),
			c.B().Zrange().Key(SecretsKeptKey).Min("+inf").Max("-inf").Byscore().Rev().Limit(0, keptSecrets).Withscores().Build(),
			c.B().Eval().Script(nodeTime).Numkeys(1).Key(SecretsKeptKey).Build()) // the clock of the kept secrets' times
	}
	res := read()
	if readOnly(res[0]) {
		reconnect(ctx, c)
		res = read()
	}
	s, err := res[1].ToString()
	if err != nil {
		if refused := res[0].Error(); rueidis.IsRedisNil(err) && refused != nil && !rueidis.IsRedisNil(refused) {
			err = refused // the write refused (OOM) is why there is nothing to read
		}
		return nil, nil, at, secretError(SecretKey, err)
	}
	if len(s) < 32 {
		return nil, nil, at, fmt.Errorf("%w: the reservations' secret (%s) is %d bytes, want 32 or more: delete it, and the next call that signs writes one", ErrBadState, SecretKey, len(s))
	}
	scores, err := res[2].AsZScores()
	if err != nil {
		return nil, nil, at, secretError(SecretsKeptKey, err)
	}
	parts, err := res[3].AsStrSlice()
	if err != nil {
		return nil, nil, at, secretError(SecretsKeptKey, err)
	}
	if at, err = parseTime(parts); err != nil {
		return nil, nil, at, fmt.Errorf("the clock of %s: %w", SecretsKeptKey, err)
	}
	for _, z := range scores {
		until := time.UnixMilli(int64(z.Score))
		if !until.After(at) {
			break // by rank: the rest are past their time too
		}
		if len(z.Member) < 32 {
			return nil, nil, at, fmt.Errorf("%w: a kept secret (%s) is %d bytes, want 32 or more: delete it", ErrBadState, SecretsKeptKey, len(z.Member))
		}
		kept = append(kept, keptSecret{[]byte(z.Member), now.Add(until.Sub(at))})
	}
	return []byte(s), kept, at, nil
}
