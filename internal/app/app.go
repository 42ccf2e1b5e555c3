// Package app is where bucketgate's Lambda functions are put together. It reads the
// settings once, loads the rate-limit configuration, connects to Redis, builds the
// decision chain (engine, X-Ray subsegment, failure policy) and then each function's
// handler, handing every part its options as plain values: no other package reads the
// environment. Each function's main is app.Main with the function.
package app

import (
	"fmt"
	"io"
	"log/slog"
	"os"
	"time"

	"github.com/aws/aws-lambda-go/lambda"

	"github.com/bucketgate/bucketgate/internal/authorizer"
	"github.com/bucketgate/bucketgate/internal/check"
	"github.com/bucketgate/bucketgate/internal/config"
	"github.com/bucketgate/bucketgate/internal/guard"
	"github.com/bucketgate/bucketgate/internal/identity"
	"github.com/bucketgate/bucketgate/internal/settings"
	"github.com/bucketgate/bucketgate/internal/telemetry"
	"github.com/bucketgate/bucketgate/internal/version"
)

// Function is one of bucketgate's Lambda functions.
type Function struct {
	// Name is the function's name: its directory under functions/, the Function
	// dimension of its metrics, the first word of its sample events' file names, and,
	// capitalized and followed by "Function", its logical id in template.yaml.
	Name string
	// handler builds the function's Lambda handler from what every function shares.
	handler func(p parts) (lambda.Handler, error)
}

// The functions.
var (
	// Authorizer is the API Gateway REQUEST authorizer (functions/authorizer).
	Authorizer = Function{Name: "authorizer", handler: newAuthorizer}
	// Check is the direct-invocation decision function (functions/check).
	Check = Function{Name: "check", handler: newCheck}
	// Functions are every function, by name.
	Functions = map[string]Function{Authorizer.Name: Authorizer, Check.Name: Check}
)

// parts are what every function is built from.
type parts struct {
	settings settings.Settings
	config   *config.Config
	registry authorizer.Registry // the check handler's Registry too
	guard    *guard.Guard
	metrics  *telemetry.Emitter
	log      *slog.Logger
}

// Build reads the settings through getenv (os.Getenv in Lambda), sends the function's
// logs to logOut and its metrics to metrics, and builds f's handler. Its error names
// the variable to set or fix; the configuration is checked before Redis is tried. It
// returns the logger even with an error, so that the error can be logged.
func Build(f Function, getenv func(string) string, metrics, logOut io.Writer) (lambda.Handler, *slog.Logger, error) {
	s, err := settings.Load(getenv)
	log := telemetry.NewLogger(logOut, s.LogLevel)
	if err != nil {
		return nil, log, fmt.Errorf("settings: %w", err)
	}
	cfg, err := LoadConfig(s)
	if err != nil {
		return nil, log, err
	}
	reg, err := NewRegistry(s, cfg, log)
	if err != nil {
		return nil, log, err
	}
	g, _, err := NewGuard(s, log)
	if err != nil {
		return nil, log, err
	}
	h, err := f.handler(parts{
		settings: s,
		config:   cfg,
		registry: reg,
		guard:    g,
		metrics:  telemetry.NewEmitter(metrics, s.Namespace, s.Stack, f.Name),
		log:      log,
	})
	return h, log, err
}

// Main is the main function of the Lambda function f: it builds f's handler from the
// process environment and serves the Lambda Runtime API with it. It never returns. A
// successful init logs one info line (MsgInit) with the function and its version. A
// failed init logs one error line that names the function, its version and what to
// set, and exits with status 1: the Lambda runtime reports the exit, the log says why.
func Main(f Function) {
	h, log, err := Build(f, os.Getenv, os.Stdout, os.Stderr)
	fn, v := slog.String(AttrFunction, f.Name), slog.String(AttrVersion, version.String())
	if err != nil {
		log.Error(MsgInitFailed, fn, v, slog.String(telemetry.AttrError, err.Error()))
		os.Exit(1)
	}
	log.Info(MsgInit, fn, v)
	lambda.Start(h)
}

// Messages and attributes of the lines Main logs at init.
const (
	// MsgInit is the message of the info line of a function that is ready to serve.
	MsgInit = "init"
	// MsgInitFailed is the message of the error line of a function whose init failed.
	MsgInitFailed = "init failed"
	// AttrFunction names the function.
	AttrFunction = "function"
	// AttrVersion is bucketgate's version (package version).
	AttrVersion = "version"
)

// LoadConfig loads the configuration document that s names: inline, from a file, or
// the built-in one. Its error names the variable.
func LoadConfig(s settings.Settings) (*config.Config, error) {
	switch {
	case s.ConfigInline != "":
		c, err := config.Parse([]byte(s.ConfigInline))
		if err != nil {
			return nil, fmt.Errorf("%s: %w", settings.EnvConfigInline, err)
		}
		return c, nil
	case s.ConfigFile != "":
		c, err := config.ReadFile(s.ConfigFile)
		if err != nil {
			return nil, fmt.Errorf("%s=%s: %w", settings.EnvConfigFile, s.ConfigFile, err)
		}
		return c, nil
	}
	return config.Default(), nil
}

func newAuthorizer(p parts) (lambda.Handler, error) {
	ids, err := identity.NewResolver(p.settings.APIKeyHeader, p.settings.IPv6Prefix)
	if err != nil { // settings bound the prefix length: the header is at fault
		return nil, fmt.Errorf("%s: %w", settings.EnvAPIKeyHeader, err)
	}
	h := &authorizer.Handler{Guard: p.guard, Plans: p.config, Registry: p.registry, Identities: ids, Metrics: p.metrics, Log: p.log, Now: time.Now}
	return h, nil
}

func newCheck(p parts) (lambda.Handler, error) {
	return &check.Handler{Guard: p.guard, Plans: p.config, Registry: p.registry, Metrics: p.metrics, Log: p.log, Now: time.Now,
		OperatorFunction: p.settings.OperatorFunction}, nil
}
