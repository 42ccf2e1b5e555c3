package authorizer

import (
	"context"
	"encoding/json"
	"errors"
	"testing"

	"github.com/bucketgate/bucketgate/internal/config"
	"github.com/bucketgate/bucketgate/internal/testkit/samples"
)

// FuzzHandler: any event through the whole handler (decoding, identity, routes of the
// sample configuration, the decision on miniredis, the answer) is answered with valid
// JSON of its event's shape, or fails with one of the handler's errors (a bad event,
// Unauthorized, unavailable); nothing panics. The seeds are FuzzDecodeEvent's samples.
func FuzzHandler(f *testing.F) {
	for _, name := range []string{restEvent, restProEvent, httpEvent} {
		f.Add(samples.Read(f, name))
	}
	for _, name := range []string{"apigw-custom-auth-request-type-request.json", "apigw-v2-custom-authorizer-v1-request.json", "apigw-v2-custom-authorizer-v2-request.json"} {
		f.Add(samples.ReadLambdaEvent(f, name))
	}
	cfg, err := config.ReadFile(samples.Path(sampleConfigFile))
	if err != nil {
		f.Fatal(err)
	}
	fx := newFixture(f, options{config: cfg})
	f.Fuzz(func(t *testing.T, raw []byte) {
		out, err := fx.lh.Invoke(context.Background(), raw)
		switch {
		case err != nil:
			if !errors.Is(err, ErrBadEvent) && !errors.Is(err, ErrUnauthorized) && !errors.Is(err, ErrUnavailable) {
				t.Fatalf("error %v: want a bad event, Unauthorized or unavailable", err)
			}
		case !json.Valid(out):
			t.Fatalf("answer is not JSON: %q", out)
		default:
			var a answer
			if err := json.Unmarshal(out, &a); err != nil || a.PolicyDocument == nil && a.IsAuthorized == nil {
				t.Fatalf("answer %s: neither a policy nor a simple answer (%v)", out, err)
			}
		}
	})
}
