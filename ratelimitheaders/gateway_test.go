package ratelimitheaders_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/bucketgate/bucketgate/ratelimitheaders"
)

// FromGateway accepts the secret and nothing else: not another value, not a prefix or
// an extension of it, not the value twice, not a missing header, and never an empty
// secret; the header's name in any case.
func TestFromGateway(t *testing.T) {
	const secret = "c2VjcmV0LWZyb20tc2VjcmV0cy1tYW5hZ2Vy"
	tests := []struct {
		name   string
		header http.Header
		secret string
		want   bool
	}{
		{"the secret", http.Header{"X-Bucketgate-Secret": {secret}}, secret, true},
		{"another value", http.Header{"X-Bucketgate-Secret": {"guess"}}, secret, false},
		{"a prefix", http.Header{"X-Bucketgate-Secret": {secret[:10]}}, secret, false},
		{"an extension", http.Header{"X-Bucketgate-Secret": {secret + "x"}}, secret, false},
		{"twice", http.Header{"X-Bucketgate-Secret": {secret, secret}}, secret, false},
		{"no header", http.Header{"Accept": {"*/*"}}, secret, false},
		{"an empty header against an empty secret", http.Header{"X-Bucketgate-Secret": {""}}, "", false},
		{"no secret configured", http.Header{"X-Bucketgate-Secret": {secret}}, "", false},
		{"a map set by hand, in lower case", http.Header{"x-bucketgate-secret": {secret}}, secret, true},
		{"in another case", http.Header{"X-BucketGate-Secret": {secret}}, secret, true},
		{"twice, in two spellings", http.Header{"X-Bucketgate-Secret": {secret}, "x-bucketgate-secret": {secret}}, secret, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := ratelimitheaders.FromGateway(tc.header, tc.secret); got != tc.want {
				t.Errorf("FromGateway = %v, want %v", got, tc.want)
			}
		})
	}
	// A header set the way a server receives it, canonicalized from any spelling.
	r, err := http.NewRequest(http.MethodGet, "https://api.example.com/scores", nil)
	if err != nil {
		t.Fatal(err)
	}
	r.Header.Set("x-bucketgate-secret", secret)
	if !ratelimitheaders.FromGateway(r.Header, secret) {
		t.Errorf("the header set as x-bucketgate-secret is not found")
	}
}

// A backend behind the template's REST API refuses calls that did not come through it:
// the secret (the stack's BackendSecretArn, read once at start) in one call.
func ExampleFromGateway() {
	secret := "value-of-the-backend-secret" // from Secrets Manager, once
	backend := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !ratelimitheaders.FromGateway(r.Header, secret) {
			http.Error(w, "forbidden", http.StatusForbidden)
			return
		}
		fmt.Fprintln(w, "ok")
	})

	for _, sent := range []string{secret, "a guess"} {
		r := httptest.NewRequest(http.MethodGet, "/scores", nil)
		r.Header.Set(ratelimitheaders.HeaderGatewaySecret, sent)
		w := httptest.NewRecorder()
		backend.ServeHTTP(w, r)
		fmt.Println(w.Code)
	}
	// Output:
	// 200
	// 403
}
