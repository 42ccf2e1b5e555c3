package bucket_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/bucketgate/bucketgate"
	"github.com/bucketgate/bucketgate/internal/bucket"
)

// newMiniSecretFleet is a secretFleet on miniredis, whose clock (TIME) is the fleet's:
// advance moves both. Keys do not expire: what a test sees is the kept secrets' times,
// not their key's (which a longer IDEMPOTENCY_TTL_MS of another instance may keep).
func newMiniSecretFleet(t *testing.T) *secretFleet {
	m := newMini(t)
	return &secretFleet{t: t, c: m.client, clock: new(clock), mini: m}
}

// advance moves f's clock and, on miniredis, Redis's with it.
func (f *secretFleet) advance(d time.Duration) {
	f.clock.advance(d)
	if f.mini != nil {
		f.mini.SetTime(f.clock.now())
	}
}

// TestSecretKeptByRedisTime: a kept secret verifies ids until a time of Redis's clock,
// so that instances whose clocks are apart (Lambda hosts, or `make run` on a laptop
// beside a deployed stack) agree on the ids it verifies, as instances on one clock do.
// Its time was the writer's clock, which each reader compared with its own: a reader
// ahead refused the ids the writer still verified, one behind verified them past their
// time.
func TestSecretKeptByRedisTime(t *testing.T) {
	kept := bucket.KeptFor(bucket.DefaultIdempotency)
	const skew = time.Hour
	tests := []struct {
		name     string
		after    time.Duration // since the kept secret's write, by Redis's clock and the writer's
		apart    time.Duration // the other instance's clock less the writer's
		verifies bool
	}{
		{"one clock, just before the kept secret's time", kept - time.Millisecond, 0, true},
		{"one clock, at the kept secret's time", kept, 0, false},
		{"a clock an hour ahead, before the time", kept - skew/2, skew, true},
		{"a clock an hour behind, past the time", kept + skew/2, -skew, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newMiniSecretFleet(t)
			writer := f.instance()
			id := f.reserve(writer)
			f.run(f.c.B().Set().Key(bucket.SecretKey).Value(strings.Repeat("7", 64)).Build()) // another instance's
			f.advance(bucket.SecretRecheck)
			f.reserve(writer) // signs with the other secret, and writes its own as kept
			f.advance(tt.after)
			other := bucket.New(f.c, bucket.Clock(func() time.Time { return f.clock.now().Add(tt.apart) }))
			for who, l := range map[string]*bucket.Limiter{"the writer": writer, "an instance started since": other} {
				err := l.Signed(context.Background(), "a", id, false)
				if got := err == nil; got != tt.verifies || err != nil && !errors.Is(err, bucketgate.ErrConflict) {
					t.Errorf("%s: Signed = %v, want verified: %v", who, err, tt.verifies)
				}
			}
		})
	}
}

// TestSecretKeptTwoLatest: three changes of the secret within the time one is kept
// leave the two latest kept and the first dropped, for the instance that held them all
// and for one started since.
func TestSecretKeptTwoLatest(t *testing.T) {
	f := newMiniSecretFleet(t)
	a := f.instance()
	ids := []string{f.reserve(a)}
	for _, digit := range "789" {
		f.run(f.c.B().Set().Key(bucket.SecretKey).Value(strings.Repeat(string(digit), 64)).Build())
		f.advance(bucket.SecretRecheck)
		ids = append(ids, f.reserve(a))
	}
	f.refuses("A, of its id under the first secret", a, ids[0])
	for i, id := range ids[1:] {
		f.settles(fmt.Sprintf("A, of its id under secret %d", i+2), a, id)
	}
	f.refuses("a new instance, of the id under the first secret", f.instance(), ids[0])
}

// TestSecretKeptTrimmed: a write of a kept secret removes those past their time on
// Redis's clock, so that the set holds only secrets that may still verify ids.
func TestSecretKeptTrimmed(t *testing.T) {
	f := newMiniSecretFleet(t)
	a := f.instance()
	f.reserve(a)
	for _, digit := range "78" {
		f.run(f.c.B().Set().Key(bucket.SecretKey).Value(strings.Repeat(string(digit), 64)).Build())
		f.advance(bucket.KeptFor(bucket.DefaultIdempotency)) // past the time of the one kept before
		f.reserve(a)                                         // signs with the new secret, and writes its own as kept
	}
	n, err := f.c.Do(context.Background(), f.c.B().Zcard().Key(bucket.SecretsKeptKey).Build()).AsInt64()
	if err != nil || n != 1 {
		t.Errorf("%s holds %d secrets (%v), want 1: the latest written", bucket.SecretsKeptKey, n, err)
	}
}
