// Package lambdatest serves the AWS Lambda Invoke API on loopback for tests, so that the
// real aws-sdk-go-v2 Lambda client invokes in-process handlers the way the Lambda
// service invokes a deployed function: POST /2015-03-31/functions/{name}/invocations,
// the handler's answer as the payload, and a function error as the runtime reports
// it (header X-Amz-Function-Error, payload {"errorMessage", "errorType"}).
package lambdatest

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/aws/aws-lambda-go/lambda"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	awslambda "github.com/aws/aws-sdk-go-v2/service/lambda"

	"github.com/bucketgate/bucketgate/internal/localgw"
)

// The fixed parts of the Invoke API that Server speaks.
const (
	// HeaderErrorType names the service error of a failed Invoke call.
	HeaderErrorType = "X-Amzn-ErrorType"
	// Region is the region Client signs for.
	Region = "us-east-1"
	// signaturePrefix starts the Authorization header of every SigV4-signed call.
	signaturePrefix = "AWS4-HMAC-SHA256 "
)

// Server is a loopback Lambda service holding a fixed set of functions, invoked by name
// or by ARN.
type Server struct {
	// URL is the endpoint to point an SDK client at (see Client).
	URL string

	srv         *httptest.Server
	functions   map[string]lambda.Handler
	mu          sync.Mutex
	invocations map[string]int
}

// Start serves functions (by name) until t ends.
func Start(t testing.TB, functions map[string]lambda.Handler) *Server {
	t.Helper()
	s := &Server{functions: functions, invocations: map[string]int{}}
	mux := http.NewServeMux()
	mux.HandleFunc(localgw.InvokePath, s.invoke)
	s.srv = httptest.NewServer(mux)
	s.URL = s.srv.URL
	t.Cleanup(s.srv.Close)
	return s
}

// Client returns a real SDK Lambda client pointed at s: static credentials, Region,
// and no retries, so that every call reaches a handler exactly once.
func (s *Server) Client() *awslambda.Client {
	return awslambda.New(awslambda.Options{
		BaseEndpoint:     aws.String(s.URL),
		Region:           Region,
		Credentials:      credentials.NewStaticCredentialsProvider("AKIDLAMBDATEST", "lambdatest-secret", ""),
		HTTPClient:       s.srv.Client(),
		RetryMaxAttempts: 1,
	})
}

// Invocations returns how many times the function called name ran.
func (s *Server) Invocations(name string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.invocations[name]
}

func (s *Server) invoke(w http.ResponseWriter, r *http.Request) {
	name := FunctionName(r.PathValue("name"))
	h, ok := s.functions[name]
	switch {
	case !strings.HasPrefix(r.Header.Get("Authorization"), signaturePrefix):
		ServiceError(w, http.StatusForbidden, "MissingAuthenticationTokenException", "Missing Authentication Token")
		return
	case !ok:
		ServiceError(w, http.StatusNotFound, "ResourceNotFoundException", "Function not found: "+name)
		return
	case r.Header.Get("X-Amz-Invocation-Type") != "" && r.Header.Get("X-Amz-Invocation-Type") != "RequestResponse":
		ServiceError(w, http.StatusBadRequest, "InvalidParameterValueException", "lambdatest serves RequestResponse invocations only")
		return
	}
	s.mu.Lock()
	s.invocations[name]++
	s.mu.Unlock()
	localgw.Invoke(w, r, h)
}

// FunctionName returns the name that a function's name or ARN (as Invoke takes them)
// stands for: arn:aws:lambda:us-east-1:123456789012:function:NAME[:QUALIFIER] is
// NAME[:QUALIFIER], as the Lambda service reads it; a name is itself.
func FunctionName(nameOrARN string) string {
	if _, name, ok := strings.Cut(nameOrARN, ":function:"); ok && strings.HasPrefix(nameOrARN, "arn:") {
		return name
	}
	return nameOrARN
}

// ServiceError answers an Invoke call as the Lambda service does when it fails the
// call itself (status, the error's type in HeaderErrorType, and message), not the
// function: a test server uses it to stand in for throttles and service failures.
func ServiceError(w http.ResponseWriter, status int, errorType, message string) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set(HeaderErrorType, errorType)
	w.WriteHeader(status)
	body, _ := json.Marshal(map[string]string{"Type": "User", "message": message}) // strings only
	_, _ = w.Write(body)
}
