package middleware

import (
	"net/http"
	"strconv"

	"github.com/bucketgate/bucketgate/internal/jsonout"
	"github.com/bucketgate/bucketgate/ratelimitheaders"
)

// The bodies of the limiter's own answers: template.yaml's gateway responses
// (UNAUTHORIZED, AUTHORIZER_FAILURE, ACCESS_DENIED), which a test holds them to.
const (
	unauthorizedBody = `{"error": "Unauthorized", "message": "Unknown or missing API key."}`
	unavailableBody  = `{"error": "Rate limiter unavailable", "message": "Please retry after 1 second.", "retryAfter": 1}`
)

// limitedBody is the 429's body for the authorizer context c (see
// authorizer.Handler.Context): the ACCESS_DENIED gateway response's template, filled.
func limitedBody(c map[string]any) string {
	retry := number(c[ratelimitheaders.KeyRetryAfter])
	b := make([]byte, 0, 320)
	b = append(b, `{"error": "Rate limit exceeded", "message": "Too many requests. A retry after `...)
	b = append(b, text(c[ratelimitheaders.KeyRetryAfterText])...)
	b = append(b, ` (plus a random jitter) will be accepted.", "limit": `...)
	b = append(b, number(c[ratelimitheaders.KeyLimit])...)
	b = append(b, `, "remaining": `...)
	b = append(b, number(c[ratelimitheaders.KeyRemaining])...)
	b = append(b, `, "retryAfter": `...)
	b = append(b, retry...)
	b = append(b, `, "resetAt": `...)
	b = jsonout.String(b, text(c[ratelimitheaders.KeyResetAt]))
	b = append(b, `, "rule": `...)
	b = jsonout.String(b, text(c[ratelimitheaders.KeyRule]))
	b = append(b, `, "plan": `...)
	b = jsonout.String(b, text(c[ratelimitheaders.KeyPlan]))
	return string(append(b, '}'))
}

// number is a context number in decimal.
func number(v any) string {
	n, _ := v.(int64)
	return strconv.FormatInt(n, 10)
}

// text is a context string.
func text(v any) string {
	s, _ := v.(string)
	return s
}

// writeJSON answers w with status and the JSON body.
func writeJSON(w http.ResponseWriter, status int, body string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write([]byte(body))
}
