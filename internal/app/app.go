// Package app is where bucketgate's Lambda functions are put together. It reads the
// settings once, loads the rate-limit configuration, connects to Redis, builds the
// decision chain (engine, X-Ray subsegment, failure policy) and then each function's
// handler, handing every part its options as plain values: no other package reads the
// environment. Each function's main is app.Main with the function.
package app

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-lambda-go/lambda"
	"gopkg.in/yaml.v3"

	"github.com/bucketgate/bucketgate/internal/authorizer"
	"github.com/bucketgate/bucketgate/internal/check"
	"github.com/bucketgate/bucketgate/internal/config"
	"github.com/bucketgate/bucketgate/internal/eventbus"
	"github.com/bucketgate/bucketgate/internal/guard"
	"github.com/bucketgate/bucketgate/internal/identity"
	"github.com/bucketgate/bucketgate/internal/redisconn"
	"github.com/bucketgate/bucketgate/internal/registry"
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
	// errors are the outcomes of the decisions it answers with a function error, which
	// its errors alarm subtracts from Lambda's Errors: written at once
	// (telemetry.WriteAtOnce).
	errors []string
}

// The functions.
var (
	// Authorizer is the API Gateway REQUEST authorizer (functions/authorizer).
	Authorizer = Function{Name: "authorizer", handler: newAuthorizer, errors: []string{telemetry.OutcomeRefused, telemetry.OutcomeUnavailable}}
	// Check is the direct-invocation decision function (functions/check).
	Check = Function{Name: "check", handler: newCheck, errors: []string{telemetry.OutcomeRefused}}
	// Functions are every function, by name.
	Functions = map[string]Function{Authorizer.Name: Authorizer, Check.Name: Check}
)

// parts are what every function is built from.
type parts struct {
	settings settings.Settings
	config   *registry.Live // the configuration and the registry, which change together
	guard    *guard.Guard
	conn     *redisconn.Conn // the Redis connection behind guard
	metrics  *telemetry.Emitter
	events   *eventbus.Sender // nil without EVENT_BUS_NAME
	log      *slog.Logger
}

// Build reads the settings through getenv (os.Getenv in Lambda), sends the function's
// logs to logOut and its metrics to metrics, and builds f's handler. Its error names
// the variable to set or fix; the configuration's error comes before Redis's. It
// returns the logger even with an error, so that the error can be logged.
func Build(f Function, getenv func(string) string, metrics, logOut io.Writer) (lambda.Handler, *slog.Logger, error) {
	h, p, err := build(f, getenv, metrics, logOut)
	return h, p.log, err
}

// build is Build, returning the parts the handler was built from.
func build(f Function, getenv func(string) string, metrics, logOut io.Writer) (lambda.Handler, parts, error) {
	p, err := assemble(getenv, f.Name, metrics, logOut, telemetry.WriteAtOnce(f.errors...))
	if err != nil {
		return nil, p, err
	}
	h, err := f.handler(p)
	return h, p, err
}

// NewAuthorizer builds the authorizer's handler as Build does, for a caller that
// decides requests itself (package middleware), in a process that is not frozen between
// requests: metrics carry the Function dimension name, and what they gather is written
// every METRICS_FLUSH_MS even when no request comes. It returns a function that writes
// what waits and logs the failures of events and of registry reads not logged yet, at
// once, as often as it is called (a shutdown whose deadline comes before the close is
// done), and one that stops the timer, does the same, and closes the Redis connection.
func NewAuthorizer(name string, getenv func(string) string, metrics, logOut io.Writer) (h *authorizer.Handler, flush, close func(), err error) {
	p, err := assemble(getenv, name, metrics, logOut)
	if err != nil {
		return nil, nil, nil, err
	}
	if h, err = authorizerHandler(p); err != nil {
		p.conn.Close()
		return nil, nil, nil, err
	}
	stop := flushEvery(p.metrics, p.settings.MetricsFlush, p.log)
	flushMetrics := flusher(p.metrics, p.log)
	flush = func() {
		flushMetrics()
		p.sayUnlogged(context.Background())
	}
	close = func() {
		stop()
		p.sayUnlogged(context.Background())
		p.conn.Close()
	}
	return h, flush, close, nil
}

// flushEvery writes what has waited in e an interval (Emitter.FlushDue) every interval
// until the function it returns is called, which flushes e once more; interval 0 (a
// line per invocation) needs no timer.
func flushEvery(e *telemetry.Emitter, interval time.Duration, log *slog.Logger) (stop func()) {
	flush := flusher(e, log)
	if interval == 0 {
		return flush
	}
	done, exited := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(exited)
		t := time.NewTicker(interval)
		defer t.Stop()
		for {
			select {
			case at := <-t.C:
				logUnwritten(log, e.FlushDue(at))
			case <-done:
				return
			}
		}
	}()
	var once sync.Once
	return func() {
		once.Do(func() {
			close(done)
			<-exited
			flush()
		})
	}
}

// flusher returns a function that writes what waits in e, logging a failure to log.
func flusher(e *telemetry.Emitter, log *slog.Logger) func() {
	return func() { logUnwritten(log, e.Flush()) }
}

// logUnwritten logs err, metrics not written, to log at warn; nil logs nothing.
func logUnwritten(log *slog.Logger, err error) {
	if err != nil {
		log.Warn("metrics not written", slog.String(telemetry.AttrError, err.Error()))
	}
}

// assemble reads the settings through getenv and builds what every function shares:
// the configuration, the registry, the decision chain over Redis, the metrics (of the
// function called name, written every METRICS_FLUSH_MS and as opts say) and the logger,
// which it returns even with an error.
func assemble(getenv func(string) string, name string, metrics, logOut io.Writer, opts ...telemetry.EmitterOption) (parts, error) {
	s, err := settings.Load(getenv)
	p := parts{settings: s, log: telemetry.NewLogger(logOut, s.LogLevel)}
	if err != nil {
		return p, fmt.Errorf("settings: %w", err)
	}
	env, err := LoadConfig(s)
	if err != nil {
		return p, err
	}
	// The registry table is read while Redis connects: two round trips of a cold start
	// at once. Its error still comes first.
	var configErr error
	configured := make(chan struct{})
	go func() {
		defer close(configured)
		p.config, configErr = NewConfiguration(s, env, p.log)
	}()
	p.metrics = telemetry.NewEmitter(metrics, s.Namespace, s.Stack, name, append(opts, telemetry.FlushEvery(s.MetricsFlush))...)
	if p.events, err = NewEvents(s, p.log); err == nil {
		p.guard, p.conn, err = NewGuard(s, p.log, p.metrics)
	}
	<-configured
	if configErr != nil {
		if p.conn != nil {
			p.conn.Close()
		}
		return p, configErr
	}
	return p, err
}

// Main is the main function of the Lambda function f: it builds f's handler from the
// process environment and serves the Lambda Runtime API with it. It never returns. A
// successful init logs one info line (MsgInit) with the function and its version. A
// failed init logs one error line that names the function, its version and what to
// set, and exits with status 1: the Lambda runtime reports the exit, the log says why.
// The runtime registers an internal extension (lambda.WithEnableSIGTERM), so that
// Lambda sends SIGTERM before it ends the instance, and at SIGTERM the function waits
// for an invocation that still runs (see atShutdown), writes the metrics that wait, logs
// the failures of events and of registry reads not logged yet, and exits; an invocation
// that panics writes the metrics too, since the runtime then ends the process.
func Main(f Function) {
	h, p, err := build(f, os.Getenv, os.Stdout, os.Stderr)
	fn, v := slog.String(AttrFunction, f.Name), slog.String(AttrVersion, version.String())
	if err != nil {
		p.log.Error(MsgInitFailed, fn, v, slog.String(telemetry.AttrError, err.Error()))
		os.Exit(1)
	}
	p.log.Info(MsgInit, fn, v)
	running := new(invocations)
	lambda.StartWithOptions(counted{flushOnPanic{h, flusher(p.metrics, p.log)}, running, p.log},
		lambda.WithEnableSIGTERM(p.shutdown(running, os.Exit)))
}

// shutdown returns what the function made of p does at SIGTERM (atShutdown), waiting
// for the invocations running counts and exiting through exit.
func (p parts) shutdown(running *invocations, exit func(code int)) func() {
	return atShutdown(running, shutdownWait, p.metrics, p.sayUnlogged, p.log, exit)
}

// sayUnlogged logs what p's once-a-minute lines left unsaid, which nothing would say
// once the function ends: the events not sent (eventbus.Sender.Flush) and the failed
// reads of the registry table (registry.Live.Flush) counted since their last lines.
func (p parts) sayUnlogged(ctx context.Context) {
	if p.events != nil {
		p.events.Flush(ctx)
	}
	if p.config != nil {
		p.config.Flush(ctx)
	}
}

// flushOnPanic is a Lambda handler that writes the metrics that wait (flush) when an
// invocation of Handler does not return, before its panic goes on unchanged:
// aws-lambda-go reports a panic as the invocation's error and ends the process, which
// would lose METRICS_FLUSH_MS's sums and the panicking invocation's own metrics.
type flushOnPanic struct {
	lambda.Handler
	flush func()
}

// Invoke is Handler's Invoke, flushing when it panics.
func (h flushOnPanic) Invoke(ctx context.Context, payload []byte) ([]byte, error) {
	returned := false
	defer func() {
		if !returned {
			h.flush()
		}
	}()
	out, err := h.Handler.Invoke(ctx, payload)
	returned = true
	return out, err
}

// Messages and attributes of the lines Main logs at init.
const (
	// MsgInit is the message of the info line of a function that is ready to serve.
	MsgInit = "init"
	// MsgInitFailed is the message of the error line of a function whose init failed.
	MsgInitFailed = "init failed"
	// MsgShutdownWaits is the message of the info line of a function that, at SIGTERM,
	// waits for the invocations that still run (AttrInvocations) before it writes the
	// metrics and exits.
	MsgShutdownWaits = "shutdown waits for invocations"
	// MsgShutdownLeft is the message of the warn line of a function that exits at
	// SIGTERM while invocations still run (AttrInvocations): their metrics are lost.
	MsgShutdownLeft = "shutdown left invocations running"
	// MsgShutdownRefused is the message of the warn line of a function that the runtime
	// handed an invocation once SIGTERM had come: it decides nothing (its answer would
	// come after the exit, and its metrics after they were written).
	MsgShutdownRefused = "shutdown refused an invocation"
	// AttrFunction names the function.
	AttrFunction = "function"
	// AttrVersion is bucketgate's version (package version).
	AttrVersion = "version"
	// AttrInvocations is how many invocations a shutdown waits for, or left running.
	AttrInvocations = "invocations"
)

// ErrNoRegion is wrapped by the error of an AWS client that has neither a region nor
// an endpoint of its own (AWS_ENDPOINT_URL_<SERVICE>), which could reach nothing: the
// SDK's own error, "Missing Region", would come at the first request and name no
// setting.
var ErrNoRegion = errors.New("no AWS region: set AWS_REGION (or the profile's region)")

// NewEvents returns the sender of the events of s's bus (EVENT_BUS_NAME, within
// EVENTS_TIMEOUT_MS), logging its failures to log; nil without a bus. Making its client
// sends no request; a client without an AWS region (ErrNoRegion) is an error.
func NewEvents(s settings.Settings, log *slog.Logger) (*eventbus.Sender, error) {
	if s.EventBusName == "" {
		return nil, nil
	}
	client, err := eventbus.NewClient(context.Background())
	if err != nil {
		return nil, fmt.Errorf("%s=%s: %w", settings.EnvEventBusName, s.EventBusName, err)
	}
	if o := client.Options(); o.Region == "" && o.BaseEndpoint == nil { // every event would fail
		return nil, fmt.Errorf("%s=%s: %w to the bus's", settings.EnvEventBusName, s.EventBusName, ErrNoRegion)
	}
	return eventbus.NewSender(client, eventbus.Options{Bus: s.EventBusName, Timeout: s.EventsTimeout, Margin: guard.DefaultMargin, Stack: s.Stack, Log: log}), nil
}

// LoadConfig loads the configuration document that s names: inline, from a file, or
// the built-in one. Without a registry table the document is the whole registry, and
// what changes nothing then is an error too (config.Config.CheckAlone). Its error names
// the variable.
func LoadConfig(s settings.Settings) (*config.Config, error) {
	var (
		c     *config.Config
		err   error
		where string
	)
	switch {
	case s.ConfigInline != "":
		c, err = config.Parse([]byte(s.ConfigInline))
		where = settings.EnvConfigInline
		if err != nil && looksLikePath(s.ConfigInline) {
			err = fmt.Errorf("%w (a file's path? %s holds the document itself; %s names its file)", err, settings.EnvConfigInline, settings.EnvConfigFile)
		}
	case s.ConfigFile != "":
		c, err = config.ReadFile(s.ConfigFile)
		where = settings.EnvConfigFile + "=" + s.ConfigFile
	default:
		return config.Default(), nil
	}
	if err == nil && s.RegistryTable == "" {
		if err = c.CheckAlone(); err != nil {
			err = fmt.Errorf("%w (%s is not set: the document is the registry)", err, settings.EnvRegistryTable)
		}
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %w", where, err)
	}
	return c, nil
}

// looksLikePath reports whether doc, the text of RATE_LIMIT_CONFIG, is one YAML scalar
// that looks like a file's path (one ending in .yaml, .yml or .json, or with a slash):
// a file's name given for the document, which is no mapping.
func looksLikePath(doc string) bool {
	var scalar yaml.Node
	if yaml.Unmarshal([]byte(doc), &scalar) != nil || len(scalar.Content) != 1 || scalar.Content[0].Kind != yaml.ScalarNode {
		return false
	}
	v := scalar.Content[0].Value
	return strings.Contains(v, "/") || strings.HasSuffix(v, ".yaml") || strings.HasSuffix(v, ".yml") || strings.HasSuffix(v, ".json")
}

func newAuthorizer(p parts) (lambda.Handler, error) {
	h, err := authorizerHandler(p)
	if err != nil {
		return nil, err
	}
	return h, nil
}

// authorizerHandler is the authorizer's handler over p.
func authorizerHandler(p parts) (*authorizer.Handler, error) {
	ids, err := identity.NewResolver(p.settings.APIKeyHeader, p.settings.IPv6Prefix)
	if err != nil { // settings bound the prefix length: the header is at fault
		return nil, fmt.Errorf("%s: %w", settings.EnvAPIKeyHeader, err)
	}
	h := &authorizer.Handler{Guard: p.guard, Config: p.config, Identities: ids, Metrics: p.metrics, Log: p.log, Now: time.Now}
	if p.events != nil { // a nil *eventbus.Sender is no nil interface
		h.Events = p.events
	}
	return h, nil
}

func newCheck(p parts) (lambda.Handler, error) {
	ids, err := identity.NewResolver(p.settings.APIKeyHeader, p.settings.IPv6Prefix)
	if err != nil { // settings bound the prefix length: the header is at fault
		return nil, fmt.Errorf("%s: %w", settings.EnvAPIKeyHeader, err)
	}
	h := &check.Handler{Guard: p.guard, Config: p.config, Identities: ids, Metrics: p.metrics, Log: p.log, Now: time.Now,
		OperatorFunction: p.settings.OperatorFunction, UsageDays: p.settings.UsageDays, NoAddressUsage: !p.settings.UsageOfAddresses}
	if p.events != nil { // a nil *eventbus.Sender is no nil interface
		h.Events = p.events
	}
	return h, nil
}
