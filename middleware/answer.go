package middleware

import (
	"bufio"
	"errors"
	"io"
	"net"
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

// writeUnavailable answers w as a limiter failing closed: 503 with Retry-After: 1.
func writeUnavailable(w http.ResponseWriter) {
	w.Header().Set(ratelimitheaders.HeaderRetryAfter, "1")
	writeJSON(w, http.StatusServiceUnavailable, unavailableBody)
}

// writeJSON answers w with status and the JSON body.
func writeJSON(w http.ResponseWriter, status int, body string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write([]byte(body))
}

// answerWriter is the next handler's ResponseWriter: as the answer's header is written
// (its status, its first byte, a flush, or the end of the handler), it puts the
// limiter's rate-limit headers in place of every one the handler set (its own, or an
// upstream's it proxies), as the gateway does with a backend's. http.ResponseController
// reaches the writer underneath through Unwrap; Flush, FlushError, Hijack and ReadFrom
// are passed on, with their errors, for handlers that assert them.
type answerWriter struct {
	http.ResponseWriter
	context map[string]any // the authorizer context whose headers the answer carries
	written bool           // the final header is written
}

// setHeaders puts the limiter's headers on the answer unless its final header is
// written already.
func (w *answerWriter) setHeaders() {
	if !w.written {
		ratelimitheaders.SetHeader(w.Header(), w.context)
	}
}

func (w *answerWriter) WriteHeader(code int) {
	w.setHeaders()
	if code >= 200 || code == http.StatusSwitchingProtocols { // 1xx but 101 precede the final header
		w.written = true
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *answerWriter) Write(b []byte) (int, error) {
	w.setHeaders()
	w.written = true
	return w.ResponseWriter.Write(b)
}

// ReadFrom copies src to the answer, after the header (with the limiter's headers) if
// it is not written yet, by the ReadFrom of the writer underneath when it has one:
// net/http's, which sends a file with sendfile (http.ServeContent, io.Copy). Without,
// src is copied with Write.
func (w *answerWriter) ReadFrom(src io.Reader) (int64, error) {
	rf, ok := w.ResponseWriter.(io.ReaderFrom)
	if !ok {
		return io.Copy(struct{ io.Writer }{w}, src) // Write alone: not this ReadFrom again
	}
	w.setHeaders()
	w.written = true
	return rf.ReadFrom(src)
}

// Flush writes the header, if it is not written yet, and what is buffered.
func (w *answerWriter) Flush() { _ = w.FlushError() }

// FlushError is Flush, with the error of the writer underneath, for
// http.ResponseController: a client gone, or http.ErrNotSupported from a writer that
// cannot flush, which wrote nothing.
func (w *answerWriter) FlushError() error {
	w.setHeaders()
	err := http.NewResponseController(w.ResponseWriter).Flush()
	if !errors.Is(err, http.ErrNotSupported) {
		w.written = true
	}
	return err
}

// Hijack hands over the connection, when the writer underneath can; when it cannot, the
// handler may still answer, with the limiter's headers.
func (w *answerWriter) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	conn, rw, err := http.NewResponseController(w.ResponseWriter).Hijack()
	if err == nil {
		w.written = true
	}
	return conn, rw, err
}

// Unwrap returns the writer underneath, for http.ResponseController.
func (w *answerWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }
