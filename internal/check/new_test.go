package check

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"testing"

	"github.com/alicebob/miniredis/v2"
	"github.com/aws/aws-lambda-go/lambda"

	"github.com/bucketgate/bucketgate/internal/app"
	"github.com/bucketgate/bucketgate/internal/telemetry"
	"github.com/bucketgate/bucketgate/internal/testkit/samples"
)

// envOf is an app.Env over a fixed environment, with its metrics and logs captured.
func envOf(env map[string]string, metrics, logs *bytes.Buffer) app.Env {
	return app.Env{
		Getenv:  func(k string) string { return env[k] },
		Metrics: metrics,
		Log:     telemetry.NewLogger(logs, slog.LevelDebug),
	}
}

func TestNewFailsWithWhatToSet(t *testing.T) {
	tests := []struct {
		name string
		env  map[string]string
		want string
	}{
		{"no Redis address", map[string]string{}, "set REDIS_ADDR"},
		{"bad inline config", map[string]string{"REDIS_ADDR": "127.0.0.1:1", "RATE_LIMIT_CONFIG": "defaultPlan: gold\nplans: {free: [{name: burst, capacity: 10, refillPerSecond: 1}]}"}, `RATE_LIMIT_CONFIG: rate-limit configuration: defaultPlan: unknown plan "gold"`},
		{"missing config file", map[string]string{"REDIS_ADDR": "127.0.0.1:1", "RATE_LIMIT_CONFIG_FILE": "/nonexistent/limits.yaml"}, "RATE_LIMIT_CONFIG_FILE=/nonexistent/limits.yaml"},
		{"bad fail mode", map[string]string{"REDIS_ADDR": "127.0.0.1:1", "FAIL_MODE": "ajar"}, `FAIL_MODE="ajar"`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h, err := New(envOf(tc.env, &bytes.Buffer{}, &bytes.Buffer{}))
			if err == nil || h != nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("New = %v, %v; want an error containing %q", h, err, tc.want)
			}
		})
	}
}

func TestNewWiring(t *testing.T) {
	mr := miniredis.RunT(t)
	mr.SetTime(testTime)
	var metrics, logs bytes.Buffer
	h, err := New(envOf(map[string]string{"REDIS_ADDR": mr.Addr(), "REDIS_TIMEOUT_MS": "2000"}, &metrics, &logs))
	if err != nil {
		t.Fatal(err)
	}
	out, err := lambda.NewHandler(h).Invoke(context.Background(), samples.Read(t, "check-single.json"))
	if err != nil {
		t.Fatal(err)
	}
	assertJSONEqual(t, out, `{"allowed":true,"reason":"ok","limit":100,"remaining":99,"retryAfterMs":0,"resetAfterMs":20,"rule":"burst","plan":"pro"}`)
	if !strings.Contains(metrics.String(), `"Function":"check"`) || !strings.Contains(logs.String(), `"msg":"decision"`) {
		t.Fatalf("metrics %q and logs %q: want an EMF line of function check and a debug decision line", &metrics, &logs)
	}
}
