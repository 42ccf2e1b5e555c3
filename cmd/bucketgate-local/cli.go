package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"strconv"
	"syscall"
)

// Exit statuses of run.
const (
	exitOK    = 0
	exitError = 1
	exitUsage = 2
)

// Defaults of the flags.
const (
	defaultAddr     = "127.0.0.1:8080"
	defaultTemplate = "template.yaml"
)

const usage = `usage:
  bucketgate-local serve [-addr 127.0.0.1:8080] [-template template.yaml] [-backend URL]
  bucketgate-local invoke [-function authorizer|check] EVENT.json

serve answers allowed requests with its sample backend, or proxies them to the service
at -backend (make run BACKEND=http://127.0.0.1:3000) with the rate-limit headers, and
with BUCKETGATE_BACKEND_SECRET in X-Bucketgate-Secret when that is set; at
the same address it serves the check function to the Lambda Invoke API
(AWS_ENDPOINT_URL_LAMBDA=http://127.0.0.1:8080 for checkclient and bucketgate buckets).
Both run on an embedded Redis (miniredis) unless REDIS_ADDR names a real one, and read
the functions' other variables (RATE_LIMIT_CONFIG, RATE_LIMIT_CONFIG_FILE, FAIL_MODE,
REDIS_TIMEOUT_MS, API_KEY_HEADER, LOG_LEVEL, ...) as in Lambda.
`

// errUsage is wrapped by every error about the command line.
var errUsage = errors.New("usage")

// run runs the command line args with the environment read through getenv and returns
// the exit status.
func run(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) int {
	err := dispatch(ctx, args, getenv, stdout, stderr)
	switch {
	case err == nil:
		return exitOK
	case errors.Is(err, flag.ErrHelp):
		fmt.Fprint(stdout, usage)
		return exitOK
	case errors.Is(err, errUsage):
		fmt.Fprintf(stderr, "bucketgate-local: %v\n%s", err, usage)
		return exitUsage
	}
	fmt.Fprintf(stderr, "bucketgate-local: %v\n", err)
	return exitError
}

// dispatch runs the subcommand named by args[0].
func dispatch(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		return fmt.Errorf("%w: name a subcommand, serve or invoke", errUsage)
	}
	fs := flag.NewFlagSet(args[0], flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	switch args[0] {
	case "serve":
		addr := fs.String("addr", defaultAddr, "host:port to listen on")
		var o serveOptions
		fs.StringVar(&o.template, "template", defaultTemplate, "SAM template whose gateway responses apply")
		fs.StringVar(&o.backend, "backend", "", "URL of your service to proxy allowed requests to; empty: the sample backend")
		if err := parse(fs, args[1:], 0); err != nil {
			return err
		}
		l, err := net.Listen("tcp", *addr)
		if errors.Is(err, syscall.EADDRINUSE) {
			return fmt.Errorf("-addr %s: the port is in use: stop what listens there, or pick another port (make run PORT=%d)", *addr, otherPort(*addr))
		}
		if err != nil {
			return fmt.Errorf("-addr %s: %w", *addr, err)
		}
		return serve(ctx, l, o, getenv, stdout, stderr)
	case "invoke":
		function := fs.String("function", "", "authorizer or check; default: the event file name's first word")
		if err := parse(fs, args[1:], 1); err != nil {
			return err
		}
		return invoke(ctx, *function, fs.Arg(0), getenv, stdout, stderr)
	case "-h", "-help", "--help", "help":
		return flag.ErrHelp
	}
	return fmt.Errorf("%w: unknown subcommand %q: want serve or invoke", errUsage, args[0])
}

// otherPort is a port to suggest instead of addr's, which is in use: the next one
// (8081 for 8080).
func otherPort(addr string) int {
	_, port, _ := net.SplitHostPort(addr) // addr was listened on: it has a port
	p, _ := strconv.Atoi(port)            // a number: a service name is not in use
	return p%65535 + 1
}

// parse parses args into fs and wants exactly n arguments after the flags.
func parse(fs *flag.FlagSet, args []string, n int) error {
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return err
		}
		return fmt.Errorf("%w: %s: %w", errUsage, fs.Name(), err)
	}
	if fs.NArg() != n {
		return fmt.Errorf("%w: %s: want %d argument(s) after the flags, got %q", errUsage, fs.Name(), n, fs.Args())
	}
	return nil
}
