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
	"net"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"

	"github.com/bucketgate/bucketgate/internal/testkit"
	"github.com/bucketgate/bucketgate/internal/testkit/redistest"
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

	cmd    *exec.Cmd
	output string        // the file holding what the server wrote
	exited chan struct{} // closed when cmd has exited
	once   sync.Once
}

// NewServer starts moto_server on a free loopback port with no state. Close stops it.
func NewServer() (*Server, error) {
	path, err := exec.LookPath(Program)
	if err != nil {
		return nil, fmt.Errorf("%w: %s is not on PATH (pip install 'moto[server]'; the machine's image has it in ~/.pyenv/shims): %w", ErrNoMoto, Program, err)
	}
	var lastErr error
	for range startAttempts {
		port, err := redistest.FreePort()
		if err != nil {
			return nil, err
		}
		s, err := start(path, port)
		if err == nil {
			return s, nil
		}
		lastErr = err
	}
	return nil, fmt.Errorf("moto_server did not start: %w", lastErr)
}

// start runs the server on port and waits until it answers.
func start(path string, port int) (*Server, error) {
	out, err := os.CreateTemp("", "moto-*.txt")
	if err != nil {
		return nil, err
	}
	defer out.Close() // the process holds its own descriptor
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	s := &Server{Addr: addr, URL: "http://" + addr, output: out.Name(), exited: make(chan struct{})}
	s.cmd = exec.Command(path, "-H", "127.0.0.1", "-p", strconv.Itoa(port))
	s.cmd.Stdout, s.cmd.Stderr = out, out
	// The pyenv shim execs Python in the same process: the signal reaches the server.
	s.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := s.cmd.Start(); err != nil {
		_ = os.Remove(s.output)
		return nil, err
	}
	go func() { _ = s.cmd.Wait(); close(s.exited) }()
	if err := s.awaitReady(); err != nil {
		said, _ := os.ReadFile(s.output)
		s.Close()
		return nil, fmt.Errorf("%w: %s", err, said)
	}
	return s, nil
}

// awaitReady waits until the server answers its own API, exits, or startTimeout passes.
func (s *Server) awaitReady() error {
	client := &http.Client{Timeout: time.Second}
	deadline := time.Now().Add(startTimeout)
	for time.Now().Before(deadline) {
		select {
		case <-s.exited:
			return fmt.Errorf("moto_server on %s exited", s.Addr)
		default:
		}
		if resp, err := client.Get(s.URL + readyPath); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	return fmt.Errorf("moto_server on %s did not answer within %v", s.Addr, startTimeout)
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
func (s *Server) Close() {
	s.once.Do(func() {
		_ = s.cmd.Process.Kill()
		<-s.exited
		_ = os.Remove(s.output)
	})
}

// Start runs NewServer for t and closes the server when t ends. A missing moto_server
// skips t, or fails it where the suites are required (testkit.Required).
func Start(t testing.TB) *Server {
	t.Helper()
	s, err := NewServer()
	testkit.Check(t, err, ErrNoMoto)
	t.Cleanup(s.Close)
	return s
}
