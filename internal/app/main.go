package app

import (
	"io"
	"log/slog"
	"os"

	"github.com/aws/aws-lambda-go/lambda"

	"github.com/bucketgate/bucketgate/internal/telemetry"
	"github.com/bucketgate/bucketgate/internal/tracing"
)

// Env is what a function's handler is built from: the environment and where its
// output goes. In Lambda, Getenv is os.Getenv, Metrics os.Stdout (CloudWatch reads the
// EMF lines there) and Log writes JSON lines to os.Stderr.
type Env struct {
	// Getenv reads one environment variable; "" means unset.
	Getenv func(string) string
	// Metrics receives the EMF lines.
	Metrics io.Writer
	// Log receives the function's log lines.
	Log *slog.Logger
}

// Builder builds a function's Lambda handler from env; its error says what to set.
type Builder func(env Env) (lambda.Handler, error)

// Build reads the log level through getenv, sends the function's logs (and the X-Ray
// SDK's) to logOut and its metrics to metrics, and builds its handler with build. It
// returns the logger even with an error, so that the error can be logged.
func Build(getenv func(string) string, metrics, logOut io.Writer, build Builder) (lambda.Handler, *slog.Logger, error) {
	level, err := telemetry.LogLevel(getenv)
	log := telemetry.NewLogger(logOut, level)
	if err != nil {
		return nil, log, err
	}
	tracing.SetLogger(log)
	h, err := build(Env{Getenv: getenv, Metrics: metrics, Log: log})
	return h, log, err
}

// Main is the main function of a Lambda function named function: it builds the handler
// from the process environment with build and serves the Lambda Runtime API with it.
// It never returns. A failed init logs one error line that names the function and what
// to set, and exits with status 1: the Lambda runtime reports the exit, the log says why.
func Main(function string, build Builder) {
	h, log, err := Build(os.Getenv, os.Stdout, os.Stderr, build)
	if err != nil {
		log.Error("init failed", slog.String(AttrFunction, function), slog.String(telemetry.AttrError, err.Error()))
		os.Exit(1)
	}
	lambda.Start(h)
}

// AttrFunction is the log attribute naming the function whose init failed.
const AttrFunction = "function"
