package app_test

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/aws/aws-lambda-go/lambda"

	"github.com/bucketgate/bucketgate/internal/app"
	"github.com/bucketgate/bucketgate/internal/telemetry"
)

// echo is a Lambda handler that answers its payload.
type echo struct{}

func (echo) Invoke(_ context.Context, payload []byte) ([]byte, error) { return payload, nil }

func TestBuild(t *testing.T) {
	errBuild := errors.New("set REDIS_ADDR")
	tests := []struct {
		name     string
		env      map[string]string
		buildErr error
		wantErr  string // "" for success
	}{
		{"built", map[string]string{telemetry.EnvLogLevel: "debug"}, nil, ""},
		{"builder error passed on", nil, errBuild, "set REDIS_ADDR"},
		{"bad log level stops before the builder", map[string]string{telemetry.EnvLogLevel: "loud"}, nil, telemetry.EnvLogLevel},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var metrics, logs bytes.Buffer
			called := false
			h, log, err := app.Build(env(tc.env), &metrics, &logs, func(e app.Env) (lambda.Handler, error) {
				called = true
				e.Log.Debug("building")
				_, _ = e.Metrics.Write([]byte("emf\n"))
				if e.Getenv(telemetry.EnvLogLevel) != tc.env[telemetry.EnvLogLevel] {
					t.Error("the builder reads another environment")
				}
				if tc.buildErr != nil {
					return nil, tc.buildErr
				}
				return echo{}, nil
			})
			if log == nil {
				t.Fatal("no logger, not even to log the error with")
			}
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) || h != nil {
					t.Fatalf("Build = %v, %v; want an error naming %s", h, err, tc.wantErr)
				}
				return
			}
			if err != nil || !called {
				t.Fatalf("Build: %v (builder called: %v)", err, called)
			}
			if out, err := h.Invoke(context.Background(), []byte(`{}`)); err != nil || string(out) != `{}` {
				t.Errorf("handler answered %s, %v", out, err)
			}
			if metrics.String() != "emf\n" || !strings.Contains(logs.String(), `"msg":"building"`) {
				t.Errorf("metrics %q logs %q: the builder's writers are not the ones given at LOG_LEVEL", &metrics, &logs)
			}
		})
	}
}
