package localgw

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestTemplateResponses renders the gateway responses of the repository's template.yaml
// with a denial's context: the statuses, headers and JSON bodies clients will get.
func TestTemplateResponses(t *testing.T) {
	rs, err := LoadResponses("../../template.yaml")
	if err != nil {
		t.Fatal(err)
	}
	denial := map[string]any{
		"retryAfter": float64(1), "limit": float64(10), "remaining": float64(0), "resetAt": "2026-11-22T12:00:10Z",
		"rule": "burst", "plan": "free", "rateLimit": `"burst";r=0;t=1`, "rateLimitPolicy": `"burst";q=10;w=10`,
	}
	tests := []struct {
		kind    string
		context map[string]any
		status  int
		headers map[string]string
		body    map[string]any
	}{
		{AccessDenied, denial, http.StatusTooManyRequests,
			map[string]string{"Retry-After": "1", "RateLimit": `"burst";r=0;t=1`, "RateLimit-Policy": `"burst";q=10;w=10`},
			map[string]any{"error": "Rate limit exceeded", "limit": float64(10), "remaining": float64(0), "retryAfter": float64(1), "resetAt": "2026-11-22T12:00:10Z"}},
		{AuthorizerFailure, nil, http.StatusServiceUnavailable, map[string]string{"Retry-After": "1"}, map[string]any{"retryAfter": float64(1)}},
		{AuthorizerConfigErr, nil, http.StatusServiceUnavailable, map[string]string{"Retry-After": "1"}, map[string]any{"retryAfter": float64(1)}},
		{Unauthorized, nil, http.StatusUnauthorized, nil, map[string]any{"error": "Unauthorized"}},
	}
	for _, tt := range tests {
		t.Run(tt.kind, func(t *testing.T) {
			w := httptest.NewRecorder()
			rs.Lookup(tt.kind).Write(w, httptest.NewRequest("GET", "/scores", nil), tt.context)
			if w.Code != tt.status {
				t.Errorf("status %d, want %d", w.Code, tt.status)
			}
			for name, want := range tt.headers { // spelled as in the template, as API Gateway sends them
				if got := w.Header()[name]; len(got) != 1 || got[0] != want {
					t.Errorf("%s: %q, want %q", name, got, want)
				}
			}
			var body map[string]any
			if err := json.Unmarshal(w.Body.Bytes(), &body); err != nil {
				t.Fatalf("body is not JSON: %v\n%s", err, w.Body)
			}
			for k, want := range tt.body {
				if body[k] != want {
					t.Errorf("body %s = %v, want %v", k, body[k], want)
				}
			}
		})
	}
}

// ownTemplate declares gateway responses as API Gateway lets a template leave them: a
// type without StatusCode or body, and the DEFAULT_4XX and DEFAULT_5XX fallbacks of
// the types it leaves out (CORS headers on every 4XX, a body of its own on every 5XX).
const ownTemplate = `Resources:
  Api:
    Type: AWS::Serverless::Api
    Properties:
      GatewayResponses:
        UNAUTHORIZED:
          ResponseParameters:
            Headers:
              WWW-Authenticate: "'ApiKey'"
        DEFAULT_4XX:
          ResponseParameters:
            Headers:
              Access-Control-Allow-Origin: "'*'"
        DEFAULT_5XX:
          StatusCode: 503
          ResponseTemplates:
            application/json: '{"error": "down"}'
`

// TestTemplateOwnResponses renders a template's gateway responses as API Gateway
// does: a type declared without StatusCode or body keeps its default ones (it was
// written with status 0: a panic), and a type left out takes the DEFAULT_4XX or
// DEFAULT_5XX the template declares, over API Gateway's default.
func TestTemplateOwnResponses(t *testing.T) {
	path := filepath.Join(t.TempDir(), "template.yaml")
	if err := os.WriteFile(path, []byte(ownTemplate), 0o600); err != nil {
		t.Fatal(err)
	}
	rs, err := LoadResponses(path)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		kind    string
		status  int
		headers map[string]string
		body    string
	}{
		{Unauthorized, http.StatusUnauthorized, map[string]string{"WWW-Authenticate": "ApiKey"}, `{"message":"Unauthorized"}`},
		{AccessDenied, http.StatusForbidden, map[string]string{"Access-Control-Allow-Origin": "*"}, `{"Message":"User is not authorized to access this resource with an explicit deny"}`},
		{AuthorizerFailure, http.StatusServiceUnavailable, nil, `{"error": "down"}`},
		{IntegrationFailure, http.StatusServiceUnavailable, nil, `{"error": "down"}`},
	}
	for _, tt := range tests {
		t.Run(tt.kind, func(t *testing.T) {
			w := httptest.NewRecorder()
			rs.Lookup(tt.kind).Write(w, httptest.NewRequest("GET", "/scores", nil), nil)
			if w.Code != tt.status || w.Body.String() != tt.body {
				t.Errorf("%d %s, want %d %s", w.Code, w.Body, tt.status, tt.body)
			}
			for name, want := range tt.headers {
				if got := w.Header()[name]; len(got) != 1 || got[0] != want {
					t.Errorf("%s: %q, want %q", name, got, want)
				}
			}
		})
	}
}

func TestWildcardMatch(t *testing.T) {
	arn := "arn:aws:execute-api:us-east-1:123456789012:api/v1/GET/scores"
	tests := []struct {
		pattern string
		want    bool
	}{
		{arn, true},
		{"arn:aws:execute-api:us-east-1:123456789012:api/v1/*", true},
		{"arn:aws:execute-api:*:*:api/*/GET/*", true},
		{"arn:aws:execute-api:us-east-1:123456789012:api/v1/POST/*", false},
		{"*", true},
		{"arn:aws:execute-api:us-east-1:123456789012:api/v1/GET/score", false},
	}
	for _, tt := range tests {
		if got := wildcardMatch(tt.pattern, arn); got != tt.want {
			t.Errorf("wildcardMatch(%q) = %v, want %v", tt.pattern, got, tt.want)
		}
	}
}

// TestTemplateStatusCodes reads a gateway response's StatusCode as CloudFormation takes
// it: a string of three digits, 100 to 599 (the property's type and pattern), or the
// number YAML reads from 429 unquoted. '429', as a JSON template writes it, was refused;
// 42 was taken, and then every denial's WriteHeader(42) panicked in the server, which
// dropped the connection without an answer.
func TestTemplateStatusCodes(t *testing.T) {
	tests := []struct {
		name, code string
		want       int    // the status ACCESS_DENIED answers
		err        string // else: what the error says
	}{
		{"a number", "429", 429, ""},
		{"a string", "'429'", 429, ""},
		{"a JSON string", `"503"`, 503, ""},
		{"below 100", "42", 0, `StatusCode "42": want`},
		{"above 599", "'600'", 0, `StatusCode "600": want`},
		{"not digits", "'4xx'", 0, `StatusCode "4xx": want`},
		{"a list", "[429]", 0, "StatusCode: want"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "template.yaml")
			doc := "Resources:\n  Api:\n    Type: AWS::Serverless::Api\n    Properties:\n      GatewayResponses:\n        ACCESS_DENIED:\n          StatusCode: " + tc.code + "\n"
			if err := os.WriteFile(path, []byte(doc), 0o600); err != nil {
				t.Fatal(err)
			}
			rs, err := LoadResponses(path)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) || !strings.Contains(err.Error(), "line 7") {
					t.Fatalf("LoadResponses() = %v, want an error naming line 7 and saying %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := rs.Lookup(AccessDenied).StatusCode; got != tc.want {
				t.Errorf("ACCESS_DENIED answers %d, want %d", got, tc.want)
			}
		})
	}
}

// TestTemplateSyntaxErrorLine names the line of a template that is not YAML counted from
// 1, as an editor counts (yaml.v3 named the line before it).
func TestTemplateSyntaxErrorLine(t *testing.T) {
	tests := []struct {
		name, doc, want string
	}{
		{"a flow mapping left open on line 6",
			"Resources:\n  Api:\n    Type: AWS::Serverless::Api\n    Properties:\n      GatewayResponses:\n        ACCESS_DENIED: {StatusCode: 429, ResponseTemplates: {application/json: x}\n        UNAUTHORIZED:\n          StatusCode: 401\n",
			"line 6: did not find expected ',' or '}'"},
		{"a list left open on line 1, the last", "Resources: [", "line 1: did not find expected node content"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "template.yaml")
			if err := os.WriteFile(path, []byte(tc.doc), 0o600); err != nil {
				t.Fatal(err)
			}
			if _, err := LoadResponses(path); err == nil || !strings.HasSuffix(err.Error(), tc.want) {
				t.Fatalf("LoadResponses() = %v, want an error ending %q", err, tc.want)
			}
		})
	}
}
