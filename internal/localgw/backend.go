package localgw

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httputil"
	"net/url"
	"strings"
)

// SampleBackend is the local twin of template.yaml's SampleBackendFunction: it answers
// 200 on any path with the JSON {"ok": true, "path": "<path>"}.
func SampleBackend() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := json.Marshal(struct { // a bool and a string: cannot fail
			OK   bool   `json:"ok"`
			Path string `json:"path"`
		}{true, r.URL.Path})
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(body)
	})
}

// ProxyBackend returns a backend that forwards every request to the service at base,
// as an HTTP proxy integration does: the same method, base's path followed by the
// request's path, the query, the headers (with X-Forwarded-For, -Host and -Proto added)
// and the body; the service's answer goes back as it is. When the service cannot be
// reached the client gets failure (the template's INTEGRATION_FAILURE gateway response)
// with only the headers it maps, as API Gateway sends it, and the reason goes to errs.
// base must be an absolute http or https URL without credentials (user:password@),
// which the proxy would not send: the error names them, the password hidden (and what
// precedes the last "@" of a URL that does not parse or parses otherwise).
func ProxyBackend(base string, failure Response, errs io.Writer) (http.Handler, error) {
	u, err := url.Parse(base)
	if err == nil && u.User != nil {
		return nil, fmt.Errorf("backend %q: a URL with credentials, which the gateway would not send: give it without them, and have your service check X-Bucketgate-Secret (BUCKETGATE_BACKEND_SECRET) if it needs to know the gateway", u.Redacted())
	}
	if err != nil || u.Scheme != "http" && u.Scheme != "https" || u.Host == "" || u.RawQuery != "" || u.Fragment != "" {
		return nil, fmt.Errorf("backend %q: want an absolute http:// or https:// URL without query, like http://127.0.0.1:3000", hideUserinfo(base))
	}
	return &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.SetURL(u)
			pr.SetXForwarded()
		},
		ErrorHandler: func(w http.ResponseWriter, r *http.Request, err error) {
			fmt.Fprintf(errs, "backend: %v\n", err)
			if hw, ok := w.(*headerWriter); ok { // a gateway response, not the service's answer: none of its rate-limit headers
				w = hw.ResponseWriter
			}
			failure.Write(w, r, nil)
		},
	}, nil
}

// hideUserinfo returns base, which url.Parse refused or read as something other than
// credentials, with what precedes its last "@" (and follows its scheme's "://"),
// where a password may be, replaced by xxxxx, as url.URL.Redacted does a password.
func hideUserinfo(base string) string {
	at := strings.LastIndex(base, "@")
	if at < 0 {
		return base
	}
	if scheme, _, ok := strings.Cut(base[:at], "://"); ok {
		return scheme + "://xxxxx" + base[at:]
	}
	return "xxxxx" + base[at:]
}
