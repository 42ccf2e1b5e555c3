package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/bucketgate/bucketgate/internal/app"
	"github.com/bucketgate/bucketgate/internal/localgw"
	"github.com/bucketgate/bucketgate/internal/settings"
)

// methodARNPrefix starts the method ARN of every local request: a made-up account and
// API id, stage "local".
const methodARNPrefix = "arn:aws:execute-api:us-east-1:123456789012:bucketgate/local"

// Bounds of the local server: how long a client may take to send its headers, and how
// long in-flight requests get to finish at shutdown (Ctrl-C) before their connections
// are closed.
const (
	readHeaderTimeout = 10 * time.Second
	shutdownTimeout   = 5 * time.Second
)

// serveOptions are the flags of serve.
type serveOptions struct {
	template string // the SAM template whose gateway responses apply
	backend  string // the URL allowed requests are proxied to; "": the sample backend
}

// serve runs the local API Gateway on l until ctx is done: every request goes through
// the real authorizer handler (built from getenv as in Lambda, on the embedded Redis
// unless REDIS_ADDR is set), denials and failures get the gateway responses of the SAM
// template at o.template, and allowed requests reach the backend (the sample backend,
// or the service at o.backend) with the rate-limit headers. The same address serves the
// Lambda Invoke API for the check function, on the same Redis, under any function name
// (AWS_ENDPOINT_URL_LAMBDA for checkclient and bucketgate buckets). It prints how to try
// it and then one line per request to stdout; the functions log to stderr.
func serve(ctx context.Context, l net.Listener, o serveOptions, getenv func(string) string, stdout, stderr io.Writer) error {
	defer l.Close()
	responses, err := localgw.LoadResponses(o.template)
	if err != nil {
		return err
	}
	backend, backendText := localgw.SampleBackend(), sampleBackendText
	if o.backend != "" {
		if backend, err = localgw.ProxyBackend(o.backend, responses.Lookup(localgw.IntegrationFailure), stderr); err != nil {
			return fmt.Errorf("%w: -backend: %w", errUsage, err)
		}
		backendText = "your service at " + o.backend + " (method, path, query, headers and body as sent)"
	}
	secret, err := backendSecret(getenv)
	if err != nil {
		return err
	}
	getenv, where, stop, err := withRedis(getenv)
	if err != nil {
		return err
	}
	defer stop()
	h, _, err := app.Build(app.Authorizer, getenv, io.Discard, stderr)
	if err != nil {
		return fmt.Errorf("authorizer init: %w", err)
	}
	check, _, err := app.Build(app.Check, getenv, io.Discard, stderr)
	if err != nil {
		return fmt.Errorf("check init: %w", err)
	}
	srv := &http.Server{Handler: accessLog(stdout, routes(
		func(w http.ResponseWriter, r *http.Request) { localgw.Invoke(w, r, check) },
		&localgw.Gateway{Authorizer: h, Backend: backend, Responses: responses, MethodARNPrefix: methodARNPrefix, Secret: secret},
	)), ReadHeaderTimeout: readHeaderTimeout}
	s, err := settings.Load(getenv)
	if err != nil {
		return err
	}
	env, err := app.LoadConfig(s) // app.Build loaded it already: it cannot fail here
	if err != nil {
		return err
	}
	live, err := app.NewConfiguration(s, env, slog.New(slog.DiscardHandler)) // the table's document, if it holds one
	if err != nil {
		return err
	}
	cfg, version := env, int64(0)
	if v, _ := live.Current(ctx); v.Config != nil {
		cfg, version = v.Config, v.Version
	}
	if !onLoopback(l.Addr()) {
		fmt.Fprintf(stderr, "serve: warning: %s is reachable from other machines, and nothing there checks who calls: "+
			"anyone who reaches it may invoke the check function (reset any identity's buckets, read its usage) "+
			"and send requests as the source address they connect from; -addr 127.0.0.1:PORT keeps it to this machine\n", l.Addr())
	}
	url := "http://" + l.Addr().String()
	if err := printBanner(stdout, banner{
		URL:       url,
		Template:  o.template,
		Responses: statuses(responses),
		Headers:   headersOn(responses),
		Redis:     where,
		Backend:   backendText,
		Registry:  registryWhere(getenv),
		BuiltIn:   s.ConfigInline == "" && s.ConfigFile == "" && version == 0,
		LogLevel:  settings.EnvLogLevel,
		TryIt:     tryIt(cfg, url, s.APIKeyHeader, responses),
	}); err != nil {
		return err
	}
	done := make(chan error, 1)
	go func() { done <- srv.Serve(l) }()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
	}
	fmt.Fprintf(stderr, "serve: stopping: the requests in flight have %s to finish (Ctrl-C again stops at once)\n", shutdownTimeout)
	shutdown, cancel := context.WithTimeout(context.Background(), shutdownTimeout)
	defer cancel()
	err = srv.Shutdown(shutdown)
	if errors.Is(err, context.DeadlineExceeded) { // a stream, or a client that holds on: Ctrl-C still stops
		fmt.Fprintf(stderr, "serve: stopping: closed the connections still open after %s\n", shutdownTimeout)
		_ = srv.Close() // Shutdown closed the listener: only its connections are left
		err = nil
	}
	if serveErr := <-done; !errors.Is(serveErr, http.ErrServerClosed) {
		err = errors.Join(err, serveErr)
	}
	return err
}

// envBackendSecret names the value serve sends the backend as X-Bucketgate-Secret, as
// the deployed REST API sends the stack's BackendSecret; unset, it sends none.
const envBackendSecret = "BUCKETGATE_BACKEND_SECRET"

// backendSecret returns the value of envBackendSecret, or an error naming the variable
// (never the value, a secret) when no HTTP header can carry it as it is: a byte that is
// not printable ASCII, or a blank at either end (which HTTP drops).
func backendSecret(getenv func(string) string) (string, error) {
	secret := getenv(envBackendSecret)
	if secret == "" {
		return "", nil
	}
	for i := 0; i < len(secret); i++ {
		if c := secret[i]; (c < ' ' || c > '~') && c != '\t' {
			return "", fmt.Errorf("%s: byte %d is not printable ASCII, which the header X-Bucketgate-Secret cannot carry", envBackendSecret, i+1)
		}
	}
	if strings.TrimSpace(secret) != secret {
		return "", fmt.Errorf("%s: starts or ends with a blank, which the header X-Bucketgate-Secret loses on its way", envBackendSecret)
	}
	return secret, nil
}

// routes sends the Lambda Invoke calls (a POST to localgw.InvokePath) to invoke and
// every other request to gateway, with its path as sent: a ServeMux in front of the
// gateway would answer a path such as "//scores" or "/a/../scores" with a redirect to
// its cleaned form, which no authorizer decided, where API Gateway runs the authorizer.
func routes(invoke http.HandlerFunc, gateway http.Handler) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc(localgw.InvokePath, invoke)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if _, pattern := mux.Handler(r); pattern == localgw.InvokePath {
			mux.ServeHTTP(w, r)
			return
		}
		gateway.ServeHTTP(w, r)
	})
}

// onLoopback reports whether addr is a loopback address, which only this machine can
// reach.
func onLoopback(addr net.Addr) bool {
	tcp, ok := addr.(*net.TCPAddr)
	return ok && tcp.IP.IsLoopback()
}

// registryWhere says where the authorizer finds API keys: the DynamoDB table of
// REGISTRY_TABLE (at the endpoint the AWS SDK is pointed at, if any), which may hold
// the plans too, or the configuration document.
func registryWhere(getenv func(string) string) string {
	table := getenv(settings.EnvRegistryTable)
	if table == "" {
		return "the configuration document's keys; set " + settings.EnvRegistryTable + " for a DynamoDB table (make dynalite, then bucketgate keys ...)"
	}
	where := "AWS"
	if endpoint := getenv(envDynamoDBEndpoint); endpoint != "" {
		where = endpoint
	}
	return fmt.Sprintf("DynamoDB table %s at %s, cached %s ms (%s); plans from the table's configuration document when it holds one (bucketgate config)", table, where,
		cmp.Or(getenv(settings.EnvRegistryCacheMS), fmt.Sprint(settings.DefaultRegistryCacheTTL.Milliseconds())), settings.EnvRegistryCacheMS)
}

// envDynamoDBEndpoint is the AWS SDK's own variable for a DynamoDB endpoint of its own.
const envDynamoDBEndpoint = "AWS_ENDPOINT_URL_DYNAMODB"

// accessLog writes one line per request to w: method, path (as sent: a percent-encoded
// line break stays encoded, so a client writes no line of its own) and the answer's
// status, with Retry-After when there is one.
func accessLog(w io.Writer, next http.Handler) http.Handler {
	return http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		rec := &statusRecorder{ResponseWriter: rw, status: http.StatusOK}
		next.ServeHTTP(rec, r)
		line := fmt.Sprintf("%s %s %s -> %d", time.Now().Format(time.TimeOnly), r.Method, r.URL.EscapedPath(), rec.status)
		if ra := rec.Header().Get("Retry-After"); ra != "" {
			line += " Retry-After: " + ra
		}
		fmt.Fprintln(w, line)
	})
}

// statusRecorder remembers the status written through it.
type statusRecorder struct {
	http.ResponseWriter
	status int
}

func (s *statusRecorder) WriteHeader(code int) {
	s.status = code
	s.ResponseWriter.WriteHeader(code)
}

// Unwrap returns the writer underneath, for http.ResponseController: a backend's
// streamed answer is flushed through.
func (s *statusRecorder) Unwrap() http.ResponseWriter { return s.ResponseWriter }
