package bucket_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"

	"github.com/bucketgate/bucketgate"
	"github.com/bucketgate/bucketgate/internal/bucket"
)

// TestRefusedIDWhileAnotherReadEnds: an instance whose secrets refuse an id signed under
// one it has not read yet, while another of its calls reads them again and brings that
// one, verifies the id under the secrets it holds then, whenever that read ends: here
// between the refusal and the read again (bucket.AtRefusal), which finds the secrets
// just read (RefusedRecheck) and reads nothing. It answered the first refusal, a
// conflict, which a client does not retry, leaving the reservation charged at its
// estimate.
func TestRefusedIDWhileAnotherReadEnds(t *testing.T) {
	tests := []struct {
		name string
		read func(f *secretFleet, a *bucket.Limiter, id string) error // a call of a that reads the secrets; id: another one signed under the new secret
	}{
		{"a settle of another id, read at its refusal", func(f *secretFleet, a *bucket.Limiter, id string) error {
			return f.settle(a, id)
		}},
		{"a reserve a minute on, read as SecretRecheck's", func(f *secretFleet, a *bucket.Limiter, _ string) error {
			f.clock.advance(bucket.SecretRecheck)
			_, err := a.Decide(context.Background(), bucketgate.Request{Identity: "a", Rules: slowRules, Op: bucketgate.OpReserve, Cost: 1})
			return err
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newSecretFleet(t)
			var a *bucket.Limiter
			var armed atomic.Bool // the next refusal runs the other call, once
			other, second := errors.New("never run: no id was refused"), ""
			a = f.instance(bucket.AtRefusal(func() {
				if armed.Swap(false) {
					other = tt.read(f, a, second)
				}
			}))
			f.reserve(a) // A reads Redis's secret
			f.run(f.c.B().Del().Key(bucket.SecretKey).Build())
			c := f.instance() // a new instance writes another one
			fromC := f.reserve(c)
			second = f.reserve(c)
			f.clock.advance(bucket.RefusedRecheck)
			armed.Store(true)
			f.settles("A, of an id of the new secret, another call's read ending at its refusal", a, fromC)
			if other != nil {
				t.Errorf("the other call: %v", other)
			}
		})
	}
}
