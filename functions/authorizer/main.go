// Command authorizer is bucketgate's API Gateway Lambda REQUEST authorizer: one binary
// for REST APIs (a policy, 429 through the ACCESS_DENIED gateway response) and HTTP APIs
// (payload 1.0 or 2.0). main only wires; the handler is in handler.go.
package main

import (
	"io"
	"log/slog"
	"os"
	"time"

	"github.com/aws/aws-lambda-go/lambda"

	"github.com/bucketgate/bucketgate/internal/app"
	"github.com/bucketgate/bucketgate/internal/identity"
	"github.com/bucketgate/bucketgate/internal/telemetry"
	"github.com/bucketgate/bucketgate/internal/tracing"
)

// functionName is the Function dimension of the authorizer's metrics.
const functionName = "authorizer"

func main() {
	level, err := telemetry.LogLevel(os.Getenv)
	log := telemetry.NewLogger(os.Stderr, level)
	if err != nil {
		fail(log, err)
	}
	tracing.SetLogger(log)
	h, err := newHandler(os.Getenv, os.Stdout, log)
	if err != nil {
		fail(log, err)
	}
	lambda.Start(h.Handle)
}

// newHandler builds the Handler from the environment read through getenv, with metrics
// written to metrics and logs to log.
func newHandler(getenv func(string) string, metrics io.Writer, log *slog.Logger) (*Handler, error) {
	ids, err := identity.Load(getenv)
	if err != nil {
		return nil, err
	}
	g, cfg, s, err := app.NewDecider(getenv)
	if err != nil {
		return nil, err
	}
	return &Handler{
		Decider:    g,
		Plans:      cfg,
		Identities: ids,
		Metrics:    telemetry.NewEmitter(metrics, s.Namespace, functionName),
		Log:        log,
		Now:        time.Now,
	}, nil
}

// fail ends a failed init: the Lambda runtime reports the exit and the log says why.
func fail(log *slog.Logger, err error) {
	log.Error("authorizer init failed", slog.String(telemetry.AttrError, err.Error()))
	os.Exit(1)
}
