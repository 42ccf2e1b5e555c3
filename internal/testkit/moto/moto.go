// Package moto runs moto's server (moto_server, from the Python package moto, 5.2 in
// the machine's image) on free loopback ports, for tests: one process answers the APIs
// of many AWS services (CloudFormation, EventBridge, SQS, IAM, ...) from memory, the
// state of each service apart.
//
// NewServer starts a server and returns it with a Close method, in the style of
// net/http/httptest; Start does the same for a test and closes it when the test ends.
// A client of the AWS SDK reaches it through the endpoint variables of Env (one
// AWS_ENDPOINT_URL_<SERVICE> per service, so that other services can go to other
// servers, such as DynamoDB to dynalite), or through Config. Where moto_server is not on
// PATH, Start fails the test when the environment requires the real-server suites (CI
// set, or BUCKETGATE_REQUIRE_SERVERS=1) and otherwise skips it with a loud message that
// says how to install it.
package moto

import (
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"

	"github.com/bucketgate/bucketgate/internal/testkit"
	"github.com/bucketgate/bucketgate/internal/testkit/process"
)

// ErrNoMoto is wrapped by the error of every start when moto_server is not on PATH.
var ErrNoMoto = errors.New("moto_server is not installed")

// Program is the server's command name, looked up on PATH.
const Program = "moto_server"

// The account and region moto serves by default: the ARNs it makes carry them.
const (
	AccountID = "123456789012"
	Region    = "us-east-1"
)

// Bounds of a start: how long the server may take to answer (it imports moto's whole
// Python package first), and how many free ports it tries (another process may take
// one between the probe and the bind).
const (
	startTimeout  = 30 * time.Second
	startAttempts = 5
)

// readyPath is the page of moto's own API that answers once the server serves.
const readyPath = "/moto-api/"

// Server is one moto_server process on loopback.
type Server struct {
	// Addr is the server's host:port on loopback.
	Addr string
	// URL is the server's endpoint, "http://" + Addr: the value of
	// AWS_ENDPOINT_URL_<SERVICE> for every service it is to answer.
	URL string

	proc *process.Process
}

// NewServer starts moto_server on a free loopback port with no state. Close stops it.
func NewServer() (*Server, error) {
	path, err := exec.LookPath(Program)
	if err != nil {
		return nil, fmt.Errorf("%w: %s is not on PATH (pip install 'moto[server]'; the machine's image has it in ~/.pyenv/shims): %w", ErrNoMoto, Program, err)
	}
	proc, err := process.Start(process.Spec{
		Name: Program,
		// The pyenv shim execs Python in the same process: the kill reaches the server.
		Command:  func(port int) *exec.Cmd { return exec.Command(path, "-H", "127.0.0.1", "-p", strconv.Itoa(port)) },
		Ready:    answers,
		Timeout:  startTimeout,
		Attempts: startAttempts,
	})
	if err != nil {
		return nil, err
	}
	return &Server{Addr: proc.Addr, URL: "http://" + proc.Addr, proc: proc}, nil
}

// answers reports whether the server at addr answers its own API.
func answers(addr string) bool {
	resp, err := (&http.Client{Timeout: time.Second}).Get("http://" + addr + readyPath)
	if err != nil {
		return false
	}
	resp.Body.Close()
	return resp.StatusCode == http.StatusOK
}

// Env returns the variables that point the AWS SDK's clients of services at s, as the
// SDK reads them from the process environment: AWS_ENDPOINT_URL_<SERVICE> for each of
// services (the SDK's service ids, such as "CloudFormation", "EventBridge" or "SQS"; any
// case, spaces as underscores), Region, made-up credentials (moto does not check them),
// and no instance metadata or configuration files. Other services keep their endpoints.
func (s *Server) Env(services ...string) map[string]string {
	env := map[string]string{
		"AWS_REGION":                  Region,
		"AWS_ACCESS_KEY_ID":           "moto",
		"AWS_SECRET_ACCESS_KEY":       "moto",
		"AWS_EC2_METADATA_DISABLED":   "true",
		"AWS_CONFIG_FILE":             os.DevNull,
		"AWS_SHARED_CREDENTIALS_FILE": os.DevNull,
	}
	for _, service := range services {
		env[EndpointVariable(service)] = s.URL
	}
	return env
}

// EndpointVariable returns the variable of the AWS SDK that sets the endpoint of
// service (its service id, such as "CloudFormation"): AWS_ENDPOINT_URL_CLOUDFORMATION.
func EndpointVariable(service string) string {
	return "AWS_ENDPOINT_URL_" + strings.ToUpper(strings.ReplaceAll(service, " ", "_"))
}

// Setenv sets the variables of Env(services...) in the process environment for the
// rest of t.
func (s *Server) Setenv(t testing.TB, services ...string) {
	t.Helper()
	for k, v := range s.Env(services...) {
		t.Setenv(k, v)
	}
}

// Config returns an AWS SDK configuration whose clients, of any service, reach s: its
// BaseEndpoint, Region and made-up credentials. It reads nothing from the environment.
func (s *Server) Config() aws.Config {
	return aws.Config{
		Region:       Region,
		BaseEndpoint: aws.String(s.URL),
		Credentials:  credentials.NewStaticCredentialsProvider("moto", "moto", ""),
	}
}

// Close kills the server and waits for it. It is safe to call more than once.
func (s *Server) Close() { s.proc.Close() }

// Start runs NewServer for t and closes the server when t ends. A missing moto_server
// skips t, or fails it where the suites are required (testkit.Required).
func Start(t testing.TB) *Server {
	t.Helper()
	s, err := NewServer()
	testkit.Check(t, err, ErrNoMoto)
	t.Cleanup(s.Close)
	return s
}
