package authorizer

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"

	"github.com/aws/aws-lambda-go/events"

	"github.com/bucketgate/bucketgate/internal/app"
	"github.com/bucketgate/bucketgate/internal/config"
	"github.com/bucketgate/bucketgate/internal/identity"
	"github.com/bucketgate/bucketgate/internal/settings"
	"github.com/bucketgate/bucketgate/internal/telemetry"
	"github.com/bucketgate/bucketgate/internal/testkit/redistest"
	"github.com/bucketgate/bucketgate/internal/testkit/samples"
)

func TestNewInitErrors(t *testing.T) {
	tests := []struct {
		name string
		env  map[string]string
		want string
	}{
		{"no Redis address", map[string]string{}, settings.EnvRedisAddr},
		{"bad API key header", map[string]string{identity.EnvHeader: "X Key", settings.EnvRedisAddr: "127.0.0.1:1"}, identity.EnvHeader},
		{"bad configuration", map[string]string{config.EnvInline: "plans: {}", settings.EnvRedisAddr: "127.0.0.1:1"}, config.EnvInline},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h, err := New(app.Env{Getenv: func(k string) string { return tc.env[k] }, Metrics: &bytes.Buffer{}, Log: slog.New(slog.DiscardHandler)})
			if err == nil || h != nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("New = %v, %v; want an error naming %s", h, err, tc.want)
			}
		})
	}
}

// The wiring main uses, end to end: environment in, EMF on the metrics writer, answer out.
func TestNewWiring(t *testing.T) {
	m, _ := redistest.Mini(t)
	var metrics bytes.Buffer
	env := map[string]string{
		settings.EnvRedisAddr: m.Addr(),
		settings.EnvNamespace: "acme/limits",
		identity.EnvHeader:    "X-Tenant-Key",
		config.EnvFile:        samples.Path(sampleConfigFile),
		telemetry.EnvLogLevel: "debug",
	}
	h, err := New(app.Env{Getenv: func(k string) string { return env[k] }, Metrics: &metrics, Log: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	ev := withHeaders(t, samples.Read(t, restEvent), map[string]string{"x-tenant-key": sampleProKey})
	out, err := h.Handle(t.Context(), ev)
	if err != nil {
		t.Fatal(err)
	}
	resp, ok := out.(events.APIGatewayCustomAuthorizerResponse)
	if !ok {
		t.Fatalf("answer %T, want a REST policy answer", out)
	}
	if resp.PrincipalID != "key:"+proDigest || resp.Context[KeyPlan] != "pro" {
		t.Errorf("principal %q context %v: the custom header or the configuration file was not used", resp.PrincipalID, resp.Context)
	}
	if !strings.Contains(metrics.String(), `"Namespace":"acme/limits"`) {
		t.Errorf("EMF not in the configured namespace: %s", metrics.String())
	}
}
