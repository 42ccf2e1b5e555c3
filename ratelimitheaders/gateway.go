package ratelimitheaders

import (
	"crypto/sha256"
	"crypto/subtle"
	"net/http"
)

// HeaderGatewaySecret is the request header that the template's REST API sends to an
// HTTP backend (HttpBackendUrl) with every call it lets through: the value of the
// stack's BackendSecret, a Secrets Manager secret. A backend that checks it with
// FromGateway knows the call came through the limiter, not around it.
const HeaderGatewaySecret = "X-Bucketgate-Secret"

// FromGateway reports whether h, a request's headers, carries secret in
// HeaderGatewaySecret exactly once, the header's name in any letter case (as
// Reservation reads its header): the call came through the API in front of the
// limiter. The comparison takes the same time whatever the header holds (SHA-256 of
// both, compared in constant time), so that a caller cannot learn the secret from it.
// An empty secret never matches: a backend that failed to read its secret refuses.
//
//	secret := readFromSecretsManager(os.Getenv("BACKEND_SECRET_ARN")) // once, at start
//	if !ratelimitheaders.FromGateway(r.Header, secret) {
//		http.Error(w, "forbidden", http.StatusForbidden)
//		return
//	}
func FromGateway(h http.Header, secret string) bool {
	vs := values(h, HeaderGatewaySecret)
	if secret == "" || len(vs) != 1 {
		return false
	}
	got, want := sha256.Sum256([]byte(vs[0])), sha256.Sum256([]byte(secret))
	return subtle.ConstantTimeCompare(got[:], want[:]) == 1
}
