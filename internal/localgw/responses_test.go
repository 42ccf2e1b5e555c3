package localgw

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
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
