// Command check is bucketgate's direct-invocation decision API, an AWS Lambda function:
// services invoke it with one check ({"key", "plan" or "rules", "cost"}) or a batch
// ({"checks": [...]}) and get the decision back (see package checkapi for the contract
// and package checkclient for a Go client). main only wires; Handler does the work.
package main

import (
	"fmt"
	"io"
	"log/slog"
	"os"
	"time"

	"github.com/aws/aws-lambda-go/lambda"

	"github.com/bucketgate/bucketgate/internal/bucket"
	"github.com/bucketgate/bucketgate/internal/config"
	"github.com/bucketgate/bucketgate/internal/guard"
	"github.com/bucketgate/bucketgate/internal/redisconn"
	"github.com/bucketgate/bucketgate/internal/settings"
	"github.com/bucketgate/bucketgate/internal/telemetry"
)

// envLogLevel is set by Lambda's advanced logging controls (DEBUG shows one line per
// decision); unset or unknown means INFO.
const envLogLevel = "AWS_LAMBDA_LOG_LEVEL"

func main() {
	h, err := newHandler(os.Getenv, os.Stdout, os.Stderr)
	if err != nil {
		fmt.Fprintf(os.Stderr, "check: init failed: %v\n", err)
		os.Exit(1)
	}
	lambda.Start(h)
}

// newHandler wires the Handler from the environment: metrics to stdout, logs to
// logOut. Its error says which variable to set or fix.
func newHandler(getenv func(string) string, stdout, logOut io.Writer) (*Handler, error) {
	s, err := settings.Load(getenv)
	if err != nil {
		return nil, err
	}
	cfg, err := config.Load(getenv)
	if err != nil {
		return nil, err
	}
	client, err := redisconn.New(s)
	if err != nil {
		return nil, err
	}
	var level slog.Level
	if level.UnmarshalText([]byte(getenv(envLogLevel))) != nil {
		level = slog.LevelInfo
	}
	return &Handler{
		Decider: guard.New(bucket.New(client), guard.Options{Timeout: s.Timeout, FailOpen: s.FailOpen}),
		Plans:   cfg,
		Metrics: telemetry.NewEmitter(stdout, s.Namespace, functionName),
		Log:     slog.New(slog.NewJSONHandler(logOut, &slog.HandlerOptions{Level: level})),
		Now:     time.Now,
	}, nil
}
