package bucket_test

import (
	"context"
	"errors"
	"maps"
	"reflect"
	"testing"

	"github.com/redis/rueidis"

	"github.com/bucketgate/bucketgate"
	"github.com/bucketgate/bucketgate/internal/bucket"
	"github.com/bucketgate/bucketgate/internal/testkit/redistest"
)

// badStates are stored fields that bucket.lua never writes, by a stray writer or another
// program: each must fail its own identity's checks and refunds with ErrBadState before
// any write, and leave every other identity alone.
var badStates = []struct {
	name   string
	fields map[string]string // the identity's hash; nil: a string key instead of a hash
}{
	{"NaN tokens", map[string]string{"burst:tokens": "nan", "burst:ts": "1"}},
	{"infinite tokens", map[string]string{"burst:tokens": "inf", "burst:ts": "1"}},
	{"minus infinite tokens", map[string]string{"burst:tokens": "-inf", "burst:ts": "1"}},
	{"tokens of minus infinity", map[string]string{"burst:tokens": "-inf", "burst:ts": "9000000000000000"}}, // a stamp in 2255: no refill; a debt (below zero) is finite
	{"tokens not a number", map[string]string{"burst:tokens": "five", "burst:ts": "1"}},
	{"empty tokens", map[string]string{"burst:tokens": "", "burst:ts": "1"}},
	{"NaN stamp", map[string]string{"burst:tokens": "5", "burst:ts": "nan"}},
	{"infinite stamp", map[string]string{"burst:tokens": "5", "burst:ts": "inf"}},
	{"minus infinite stamp", map[string]string{"burst:tokens": "5", "burst:ts": "-inf"}},
	{"stamp not a number", map[string]string{"burst:tokens": "5", "burst:ts": "yesterday"}},
	{"tokens without a stamp", map[string]string{"burst:tokens": "5"}},
	{"stamp without tokens", map[string]string{"burst:ts": "1"}},
	{"second rule bad", map[string]string{"burst:tokens": "5", "burst:ts": "1", "daily:tokens": "nan", "daily:ts": "1"}},
	{"key of another type", nil},
}

// testBadStates runs every bad state on c: checks, peeks and refunds of the identity
// fail with ErrBadState and write nothing, another identity is decided as usual, and a
// reset clears the fields (a key of another type has to be deleted).
func testBadStates(t *testing.T, c rueidis.Client) {
	ctx := context.Background()
	rules := []bucketgate.Rule{free[0], {Name: "daily", Capacity: 1000, RefillPerSecond: 1000.0 / 86400}}
	l := bucket.New(c)
	for _, tc := range badStates {
		t.Run(tc.name, func(t *testing.T) {
			id := "bad-" + tc.name
			key := bucket.Key(id)
			if tc.fields == nil {
				do(t, c, c.B().Set().Key(key).Value("not a hash").Build())
			} else {
				for f, v := range tc.fields {
					do(t, c, c.B().Hset().Key(key).FieldValue().FieldValue(f, v).Build())
				}
			}
			for _, q := range []bucketgate.Request{
				{Identity: id, Rules: rules, Cost: 1},
				{Identity: id, Rules: rules},
				{Identity: id, Rules: rules, Cost: 1, Op: bucketgate.OpRefund},
			} {
				d, err := l.Decide(ctx, q)
				if !errors.Is(err, bucket.ErrBadState) || errors.Is(err, bucketgate.ErrInvalid) || !reflect.DeepEqual(d, bucketgate.Decision{}) {
					t.Fatalf("%v of cost %d: %+v, %v: want ErrBadState", q.Op, q.Cost, d, err)
				}
			}
			if tc.fields != nil {
				if got, err := c.Do(ctx, c.B().Hgetall().Key(key).Build()).AsStrMap(); err != nil || !maps.Equal(got, tc.fields) {
					t.Fatalf("fields became %v (%v), want them untouched: %v", got, err, tc.fields)
				}
			}
			if d := decide(t, l, bucketgate.Request{Identity: "good-" + tc.name, Rules: rules, Cost: 1}); !d.Allowed {
				t.Fatalf("another identity: %+v", d)
			}
			reset := bucketgate.Request{Identity: id, Rules: rules, Op: bucketgate.OpReset}
			if tc.fields == nil {
				if _, err := l.Decide(ctx, reset); !errors.Is(err, bucket.ErrBadState) {
					t.Fatalf("reset of a key of another type: %v, want ErrBadState", err)
				}
				return
			}
			if d := decide(t, l, reset); !d.Allowed || d.Remaining != 10 {
				t.Fatalf("reset: %+v, want allowed with 10 left", d)
			}
			if n := mustInt(t, do(t, c, c.B().Exists().Key(key).Build())); n != 0 {
				t.Fatalf("the key outlived the reset of its every field")
			}
			if d := decide(t, l, bucketgate.Request{Identity: id, Rules: rules, Cost: 1}); !d.Allowed || d.Remaining != 9 {
				t.Fatalf("after the reset: %+v", d)
			}
		})
	}
}

func TestBadStateRealRedis(t *testing.T) {
	srv := redistest.Start(t)
	testBadStates(t, redistest.Client(t, srv.Addr))
}

func TestBadStateMiniredis(t *testing.T) {
	testBadStates(t, newMini(t).client)
}
