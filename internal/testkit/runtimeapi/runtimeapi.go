// Package runtimeapi is a minimal AWS Lambda Runtime API (version 2018-06-01) on
// loopback, so that tests can run a real bootstrap binary as Lambda would: the binary
// polls for the next event, posts a response or an error, or reports an init error. It
// serves the Extensions API's register and event/next too, so that a runtime can
// register an internal extension, and Shutdown ends the process as Lambda ends an
// instance: with SIGTERM when an extension has registered.
package runtimeapi

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"
)

// apiPrefix starts every Runtime API path.
const apiPrefix = "/2018-06-01/runtime/"

// DefaultDeadline is how long an invocation may run, as announced to the function.
const DefaultDeadline = 10 * time.Second

// FunctionError is a function's error, as posted to the error endpoint.
type FunctionError struct {
	// Message is errorMessage: what API Gateway compares with "Unauthorized".
	Message string `json:"errorMessage"`
	// Type is errorType, for example "errorString".
	Type string `json:"errorType"`
}

func (e *FunctionError) Error() string { return e.Message }

// Server is one Runtime API endpoint. Its zero value is not usable; use New.
type Server struct {
	// Addr is the host:port to give the function as AWS_LAMBDA_RUNTIME_API.
	Addr string
	// FunctionARN is announced with every invocation.
	FunctionARN string

	srv     *http.Server
	queue   chan *invocation
	mu      sync.Mutex
	pending map[string]*invocation
	nextID  int
	initErr chan *FunctionError
	polled  chan time.Time
	poll    sync.Once
	// extensions are the names of the extensions registered, in order, and
	// extensionIDs the identifiers they were given.
	extensions   []string
	extensionIDs map[string]bool
}

type invocation struct {
	id      string
	payload []byte
	done    chan result
}

type result struct {
	body []byte
	err  error
}

// New starts a Runtime API on a free loopback port. Close stops it.
func New() (*Server, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("runtime api: %w", err)
	}
	s := &Server{
		Addr:         l.Addr().String(),
		FunctionARN:  "arn:aws:lambda:us-east-1:123456789012:function:local",
		queue:        make(chan *invocation),
		pending:      map[string]*invocation{},
		initErr:      make(chan *FunctionError, 1),
		polled:       make(chan time.Time, 1),
		extensionIDs: map[string]bool{},
	}
	s.srv = &http.Server{Handler: http.HandlerFunc(s.serve), ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = s.srv.Serve(l) }()
	return s, nil
}

// Close stops the server.
func (s *Server) Close() error { return s.srv.Close() }

// InitError delivers the error a function reports when its init fails.
func (s *Server) InitError() <-chan *FunctionError { return s.initErr }

// Polled delivers the time the function first asked for an invocation: when its init
// was over and it was ready for the first one.
func (s *Server) Polled() <-chan time.Time { return s.polled }

// Invoke hands payload to the function and waits for its response. A function error
// comes back as *FunctionError.
func (s *Server) Invoke(ctx context.Context, payload []byte) ([]byte, error) {
	s.mu.Lock()
	s.nextID++
	inv := &invocation{id: "req-" + strconv.Itoa(s.nextID), payload: payload, done: make(chan result, 1)}
	s.pending[inv.id] = inv
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		delete(s.pending, inv.id)
		s.mu.Unlock()
	}()
	select {
	case s.queue <- inv:
	case <-ctx.Done():
		return nil, fmt.Errorf("runtime api: no function polled for the event: %w", ctx.Err())
	}
	select {
	case r := <-inv.done:
		return r.body, r.err
	case <-ctx.Done():
		return nil, fmt.Errorf("runtime api: no response: %w", ctx.Err())
	}
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	if path, ok := strings.CutPrefix(r.URL.Path, extensionPrefix); ok {
		s.serveExtension(w, r, path)
		return
	}
	path := strings.TrimPrefix(r.URL.Path, apiPrefix)
	switch {
	case r.Method == http.MethodGet && path == "invocation/next":
		s.next(w, r)
	case r.Method == http.MethodPost && path == "init/error":
		select {
		case s.initErr <- decodeError(r.Body):
		default: // one init error is all a function gets to report
		}
		w.WriteHeader(http.StatusAccepted)
	case r.Method == http.MethodPost && strings.HasPrefix(path, "invocation/"):
		id, kind, _ := strings.Cut(strings.TrimPrefix(path, "invocation/"), "/")
		if kind != "response" && kind != "error" {
			http.NotFound(w, r)
			return
		}
		s.mu.Lock()
		inv := s.pending[id]
		delete(s.pending, id) // answered once: a second answer is refused
		s.mu.Unlock()
		if inv == nil {
			http.Error(w, "unknown or already answered invocation "+id, http.StatusBadRequest)
			return
		}
		if kind == "error" {
			inv.done <- result{err: decodeError(r.Body)}
		} else {
			body, err := io.ReadAll(r.Body)
			inv.done <- result{body: body, err: err}
		}
		w.WriteHeader(http.StatusAccepted)
	default:
		http.NotFound(w, r)
	}
}

func (s *Server) next(w http.ResponseWriter, r *http.Request) {
	s.poll.Do(func() { s.polled <- time.Now() })
	select {
	case inv := <-s.queue:
		h := w.Header()
		h.Set("Lambda-Runtime-Aws-Request-Id", inv.id)
		h.Set("Lambda-Runtime-Deadline-Ms", strconv.FormatInt(time.Now().Add(DefaultDeadline).UnixMilli(), 10))
		h.Set("Lambda-Runtime-Invoked-Function-Arn", s.FunctionARN)
		h.Set("Content-Type", "application/json")
		_, _ = w.Write(inv.payload)
	case <-r.Context().Done():
	}
}

func decodeError(body io.Reader) *FunctionError {
	var fe FunctionError
	b, err := io.ReadAll(io.LimitReader(body, 1<<20))
	if err != nil || json.Unmarshal(b, &fe) != nil || fe.Message == "" {
		return &FunctionError{Message: strings.TrimSpace(string(b)), Type: "Unparsed"}
	}
	return &fe
}
