package authorizer

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/aws/aws-lambda-go/lambda"
	"github.com/redis/rueidis"

	"github.com/bucketgate/bucketgate/internal/bucket"
	"github.com/bucketgate/bucketgate/internal/config"
	"github.com/bucketgate/bucketgate/internal/guard"
	"github.com/bucketgate/bucketgate/internal/identity"
	"github.com/bucketgate/bucketgate/internal/registry"
	"github.com/bucketgate/bucketgate/internal/settings"
	"github.com/bucketgate/bucketgate/internal/telemetry"
	"github.com/bucketgate/bucketgate/internal/testkit/redistest"
	"github.com/bucketgate/bucketgate/internal/testkit/samples"
)

// Paths of the sample events and their configuration, from this package's directory.
const (
	restEvent        = "authorizer-rest.json"
	restProEvent     = "authorizer-rest-pro.json"
	httpEvent        = "authorizer-http.json"
	sampleConfigFile = "authorizer-config.yaml"
	// sampleProKey is the raw API key in the pro samples, mapped to pro by its digest.
	sampleProKey = "bg-sample-pro-key"
)

// testFunction is the Function dimension of the tests' metrics.
const testFunction = "authorizer"

// testTimeout is the decision deadline in tests: generous for a loaded 2-core machine,
// it only bounds how long a dead Redis is waited for.
const testTimeout = 2 * time.Second

// t0 is the Redis clock at the start of every test, a whole second.
var t0 = time.Date(2025, 12, 11, 16, 15, 0, 0, time.UTC)

// tLocal is the local clock of every fixture (its start) and of the tests' registry
// caches: set apart from Redis's to tell them apart.
var tLocal = t0.Add(time.Hour)

// fixture is a Handler on miniredis with its output captured.
type fixture struct {
	mr      *miniredis.Miniredis
	h       *Handler
	lh      lambda.Handler
	logs    bytes.Buffer
	metrics bytes.Buffer
	now     time.Time // the local clock, set apart from Redis's to tell them apart
}

// options of a fixture.
type options struct {
	config   *config.Config // nil: the built-in default
	failOpen bool
	cache    *registry.Cache // the registry; nil: the configuration's keys
	// live, when set, is the configuration instead of config and cache.
	live Configuration
	// redis, when set, is the Redis the Guard decides on instead of the fixture's
	// miniredis (which then holds nothing).
	redis rueidis.Client
}

func newFixture(t testing.TB, o options) *fixture {
	t.Helper()
	mr, client := redistest.Mini(t)
	mr.SetTime(t0)
	cfg := o.config
	if cfg == nil {
		cfg = config.Default()
	}
	ids, err := identity.NewResolver(settings.DefaultAPIKeyHeader, settings.DefaultIPv6Prefix)
	if err != nil {
		t.Fatal(err)
	}
	live := o.live
	if live == nil {
		live = registry.NewStatic(cfg, o.cache)
	}
	if o.redis != nil {
		client = o.redis
	}
	f := &fixture{mr: mr, now: tLocal}
	f.h = &Handler{
		Guard:      guard.New(bucket.New(client), guard.Options{Timeout: testTimeout, FailOpen: o.failOpen, FailuresToOpen: guard.DefaultFailuresToOpen}),
		Config:     live,
		Identities: ids,
		Metrics:    telemetry.NewEmitter(&f.metrics, settings.DefaultNamespace, settings.DefaultStackName, testFunction),
		Log:        telemetry.NewLogger(&f.logs, slog.LevelDebug),
		Now:        func() time.Time { return f.now },
	}
	f.lh = f.h
	return f
}

// invoke runs event through the Lambda handler as the runtime would.
func (f *fixture) invoke(t *testing.T, event []byte) (answer, error) {
	t.Helper()
	out, err := f.lh.Invoke(context.Background(), event)
	if err != nil {
		return answer{}, err
	}
	var a answer
	dec := json.NewDecoder(bytes.NewReader(out))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&a); err != nil {
		t.Fatalf("answer %s: %v", out, err)
	}
	a.raw = out
	return a, nil
}

// mustInvoke is invoke for an event that must be answered.
func (f *fixture) mustInvoke(t *testing.T, event []byte) answer {
	t.Helper()
	a, err := f.invoke(t, event)
	if err != nil {
		t.Fatalf("invoke: %v", err)
	}
	return a
}

// answer is any authorizer answer as JSON: a policy answer (REST, HTTP API 1.0) or a
// simple one (HTTP API 2.0).
type answer struct {
	PrincipalID    string         `json:"principalId"`
	PolicyDocument *policyJSON    `json:"policyDocument"`
	IsAuthorized   *bool          `json:"isAuthorized"`
	Context        map[string]any `json:"context"`
	raw            []byte
}

type policyJSON struct {
	Version   string
	Statement []struct {
		Action   []string
		Effect   string
		Resource []string
	}
}

// allowed reports whether the answer lets the request through, whatever its format.
func (a answer) allowed(t *testing.T) bool {
	t.Helper()
	switch {
	case a.IsAuthorized != nil:
		return *a.IsAuthorized
	case a.PolicyDocument != nil && len(a.PolicyDocument.Statement) == 1:
		return a.PolicyDocument.Statement[0].Effect == effectAllow
	}
	t.Fatalf("answer is neither simple nor a one-statement policy: %s", a.raw)
	return false
}

// num returns the number under key in the context.
func (a answer) num(t *testing.T, key string) int64 {
	t.Helper()
	v, ok := a.Context[key].(float64)
	if !ok {
		t.Fatalf("context %s = %#v, want a number (context %v)", key, a.Context[key], a.Context)
	}
	return int64(v)
}

// str returns the string under key in the context.
func (a answer) str(t *testing.T, key string) string {
	t.Helper()
	v, ok := a.Context[key].(string)
	if !ok {
		t.Fatalf("context %s = %#v, want a string (context %v)", key, a.Context[key], a.Context)
	}
	return v
}

// sampleConfig returns the configuration shipped for the sample events.
func sampleConfig(t testing.TB) *config.Config {
	t.Helper()
	c, err := config.Parse(samples.Read(t, sampleConfigFile))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// mustParse parses a configuration document written in a test.
func mustParse(t testing.TB, doc string) *config.Config {
	t.Helper()
	c, err := config.Parse([]byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// withHeaders returns the event (REST or HTTP API) with its headers replaced by h.
func withHeaders(t testing.TB, event []byte, h map[string]string) []byte {
	t.Helper()
	return withAllHeaders(t, event, h, nil)
}

// withAllHeaders returns the event with its headers replaced by h and its multi-value
// headers by multi (none when nil).
func withAllHeaders(t testing.TB, event []byte, h map[string]string, multi map[string][]string) []byte {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(event, &m); err != nil {
		t.Fatal(err)
	}
	m["headers"] = h
	delete(m, "multiValueHeaders")
	if multi != nil {
		m["multiValueHeaders"] = multi
	}
	out, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return out
}
