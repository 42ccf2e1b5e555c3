// Package dynalite runs dynalite, a DynamoDB-compatible server on Node.js from the npm
// registry, on free loopback ports, for tests and for the programs of tools/.
//
// NewServer starts a server with an empty, in-memory database and returns it with a
// Close method, in the style of net/http/httptest; Start does the same for a test and
// closes it when the test ends. dynalite is installed next to this file from its
// package.json and package-lock.json (dynalite 4.0.0, pinned) by `make test`, which runs
// `npm ci` there when the lock file is newer than node_modules. Where node or the
// installed package is missing, Start fails the test when the environment requires the
// real-server suites (CI set, or BUCKETGATE_REQUIRE_SERVERS=1) and otherwise skips it
// with a loud message that says how to install it.
package dynalite

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"testing"
	"time"

	awsconfig "github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/bucketgate/bucketgate/internal/registry"
	"github.com/bucketgate/bucketgate/internal/testkit"
	"github.com/bucketgate/bucketgate/internal/testkit/process"
)

// ErrNoDynalite is wrapped by the error of every start when node or the installed
// dynalite package is not there.
var ErrNoDynalite = errors.New("dynalite is not installed")

// Bounds of a start: how long the server may take to accept connections, and how many
// free ports it tries (another process may take one between the probe and the bind).
const (
	startTimeout  = 15 * time.Second
	startAttempts = 5
)

// cli is dynalite's command-line entry point, relative to Dir.
const cli = "node_modules/dynalite/cli.js"

// Server is one dynalite process on loopback, holding its tables in memory.
type Server struct {
	// Addr is the server's host:port on loopback.
	Addr string
	// URL is the server's endpoint, "http://" + Addr: the value of
	// AWS_ENDPOINT_URL_DYNAMODB for an AWS SDK client.
	URL string

	proc *process.Process
}

// Dir returns the directory of dynalite's package.json and of its node_modules: this
// package's own directory in the repository.
func Dir() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Dir(file)
}

// Command returns the node binary and dynalite's script, or an error wrapping
// ErrNoDynalite that says how to install what is missing.
func Command() (node, script string, err error) {
	node, err = exec.LookPath("node")
	if err != nil {
		return "", "", fmt.Errorf("%w: node is not on PATH (apt-get install nodejs npm): %w", ErrNoDynalite, err)
	}
	script = filepath.Join(Dir(), cli)
	if _, err := os.Stat(script); err != nil {
		return "", "", fmt.Errorf("%w: %s is missing: run make test, or npm ci --ignore-scripts --prefix %s", ErrNoDynalite, script, Dir())
	}
	return node, script, nil
}

// NewServer starts dynalite on a free loopback port with an empty in-memory database,
// tables active as soon as they are created. Close stops it.
func NewServer() (*Server, error) {
	node, script, err := Command()
	if err != nil {
		return nil, err
	}
	proc, err := process.Start(process.Spec{
		Name: "dynalite",
		Command: func(port int) *exec.Cmd {
			return exec.Command(node, script, "--host", "127.0.0.1", "--port", strconv.Itoa(port),
				"--createTableMs", "0", "--deleteTableMs", "0", "--updateTableMs", "0")
		},
		Timeout:  startTimeout,
		Attempts: startAttempts,
	})
	if err != nil {
		return nil, err
	}
	return &Server{Addr: proc.Addr, URL: "http://" + proc.Addr, proc: proc}, nil
}

// Env returns the variables that point an AWS SDK client at s, as the SDK reads them
// from the process environment: the endpoint, a region and made-up credentials
// (dynalite checks that a request is signed, not by whom), and no instance metadata.
func (s *Server) Env() map[string]string {
	return map[string]string{
		"AWS_ENDPOINT_URL_DYNAMODB":   s.URL,
		"AWS_REGION":                  "us-east-1",
		"AWS_ACCESS_KEY_ID":           "dynalite",
		"AWS_SECRET_ACCESS_KEY":       "dynalite",
		"AWS_EC2_METADATA_DISABLED":   "true",
		"AWS_CONFIG_FILE":             os.DevNull,
		"AWS_SHARED_CREDENTIALS_FILE": os.DevNull,
	}
}

// Setenv sets the variables of Env in the process environment for the rest of t.
func (s *Server) Setenv(t testing.TB) {
	t.Helper()
	for k, v := range s.Env() {
		t.Setenv(k, v)
	}
}

// Client sets the variables of Env for the rest of t (Setenv) and returns a DynamoDB
// client of s made from them, as the product makes its own.
func (s *Server) Client(t testing.TB) *dynamodb.Client {
	t.Helper()
	s.Setenv(t)
	cfg, err := awsconfig.LoadDefaultConfig(context.Background())
	if err != nil {
		t.Fatalf("dynalite: AWS configuration: %v", err)
	}
	return dynamodb.NewFromConfig(cfg)
}

// Close kills the server and waits for it. It is safe to call more than once.
func (s *Server) Close() { s.proc.Close() }

// Start runs NewServer for t and closes the server when t ends. A missing node or
// dynalite skips t, or fails it where the suites are required (testkit.Required).
func Start(t testing.TB) *Server {
	t.Helper()
	s, err := NewServer()
	testkit.Check(t, err, ErrNoDynalite)
	t.Cleanup(s.Close)
	return s
}

// Table runs Start for t and returns a client of the server (Client) with an empty
// registry table named name created, as `bucketgate keys init` creates it.
func Table(t testing.TB, name string) *dynamodb.Client {
	t.Helper()
	client := Start(t).Client(t)
	if err := registry.CreateTable(t.Context(), client, name); err != nil {
		t.Fatalf("dynalite: create table %s: %v", name, err)
	}
	return client
}
