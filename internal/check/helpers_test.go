package check

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"reflect"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/aws/aws-lambda-go/lambda"
	"github.com/aws/aws-lambda-go/lambda/messages"
	"github.com/redis/rueidis"

	"github.com/bucketgate/bucketgate/internal/bucket"
	"github.com/bucketgate/bucketgate/internal/config"
	"github.com/bucketgate/bucketgate/internal/guard"
	"github.com/bucketgate/bucketgate/internal/identity"
	"github.com/bucketgate/bucketgate/internal/registry"
	"github.com/bucketgate/bucketgate/internal/settings"
	"github.com/bucketgate/bucketgate/internal/telemetry"
	"github.com/bucketgate/bucketgate/internal/testkit/redistest"
)

// testTime is the Redis time of every miniredis test.
var testTime = time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)

// testFunction is the Function dimension of the tests' metrics.
const testFunction = "check"

// testTimeout is the decision deadline of the tests: long enough for a slow machine.
const testTimeout = 2 * time.Second

// fixture is a Handler on one Redis with its metrics and logs captured.
type fixture struct {
	h       *Handler
	cfg     *config.Config // the handler's configuration
	metrics *bytes.Buffer
	logs    *bytes.Buffer
}

// newFixture returns a Handler deciding on client under cfg (nil: the default
// configuration) with the failure policy opts (a zero Timeout is testTimeout).
func newFixture(t testing.TB, client rueidis.Client, cfg *config.Config, opts guard.Options) *fixture {
	t.Helper()
	if cfg == nil {
		cfg = config.Default()
	}
	if opts.Timeout == 0 {
		opts.Timeout = testTimeout
	}
	f := &fixture{cfg: cfg, metrics: &bytes.Buffer{}, logs: &bytes.Buffer{}}
	f.h = &Handler{
		Guard:      guard.New(bucket.New(client), opts),
		Config:     registry.NewStatic(cfg, nil),
		Identities: testSources(t),
		Metrics:    telemetry.NewEmitter(f.metrics, settings.DefaultNamespace, settings.DefaultStackName, testFunction),
		Log:        slog.New(slog.NewJSONHandler(f.logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
		Now:        func() time.Time { return testTime },
	}
	return f
}

// testSources groups IPv6 sources by /64, as the authorizer does by default.
func testSources(t testing.TB) identity.Resolver {
	t.Helper()
	r, err := identity.NewResolver(settings.DefaultAPIKeyHeader, settings.DefaultIPv6Prefix)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// startMiniredis returns a miniredis at testTime and a client of it.
func startMiniredis(t testing.TB) (*miniredis.Miniredis, rueidis.Client) {
	t.Helper()
	mr := miniredis.RunT(t)
	mr.SetTime(testTime)
	return mr, redistest.Client(t, mr.Addr())
}

// invoke runs payload through the handler as the Lambda runtime does.
func (f *fixture) invoke(payload []byte) ([]byte, error) {
	return lambda.NewHandler(f.h).Invoke(context.Background(), payload)
}

// pausedWithin is the invocation deadline of a call that a test makes to a paused
// Redis (invokeWithin): short, as only the paused server meets it, while the calls
// Redis answers keep the fixture's decision deadline (testTimeout), which a loaded
// machine's scheduling cannot exhaust.
const pausedWithin = 100 * time.Millisecond

// invokeWithin runs payload as invoke does, under an invocation deadline left from
// now (the Lambda context's).
func (f *fixture) invokeWithin(left time.Duration, payload []byte) ([]byte, error) {
	ctx, cancel := context.WithTimeout(context.Background(), left)
	defer cancel()
	return lambda.NewHandler(f.h).Invoke(ctx, payload)
}

// invokeOK runs payload and fails t on a function error.
func (f *fixture) invokeOK(t *testing.T, payload []byte) []byte {
	t.Helper()
	out, err := f.invoke(payload)
	if err != nil {
		t.Fatalf("invoke %s: %v", payload, err)
	}
	return out
}

// functionError returns the function error of an invocation, failing t when there is
// none or it is of another kind.
func functionError(t *testing.T, err error) messages.InvokeResponse_Error {
	t.Helper()
	var ive messages.InvokeResponse_Error
	if !errors.As(err, &ive) {
		t.Fatalf("error %v (%T): want a messages.InvokeResponse_Error", err, err)
	}
	return ive
}

// assertJSONEqual fails t unless got and want are the same JSON value.
func assertJSONEqual(t *testing.T, got []byte, want string) {
	t.Helper()
	var g, w any
	if err := json.Unmarshal(got, &g); err != nil {
		t.Fatalf("got invalid JSON %s: %v", got, err)
	}
	if err := json.Unmarshal([]byte(want), &w); err != nil {
		t.Fatalf("want is invalid JSON %s: %v", want, err)
	}
	if !reflect.DeepEqual(g, w) {
		t.Fatalf("got  %s\nwant %s", got, want)
	}
}
