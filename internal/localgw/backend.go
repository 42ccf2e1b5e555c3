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
// which the proxy would not send: the error names them, the password hidden; and
// without query or fragment: the error quotes base with them hidden, and what precedes
// its last "@" (hideSecrets).
func ProxyBackend(base string, failure Response, errs io.Writer) (http.Handler, error) {
	u, err := url.Parse(base)
	if err == nil && u.User != nil {
		return nil, fmt.Errorf("backend %q: a URL with credentials, which the gateway would not send: give it without them, and have your service check X-Bucketgate-Secret (BUCKETGATE_BACKEND_SECRET) if it needs to know the gateway", u.Redacted())
	}
	if err != nil || u.Scheme != "http" && u.Scheme != "https" || u.Host == "" || u.RawQuery != "" || u.Fragment != "" {
		return nil, fmt.Errorf("backend %q: want an absolute http:// or https:// URL without query or fragment, like http://127.0.0.1:3000", hideSecrets(base))
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

// hideSecrets returns base, which url.Parse refused or read as no URL the gateway
// takes, with what may hold a secret replaced by xxxxx, as url.URL.Redacted does a
// password: what precedes its last "@" (and follows its scheme's "://"), where a
// password may be, and what follows its first "?" or "#", a query or a fragment, where a
// token may be. When the first "?" or "#" comes before the last "@" (in a password, or
// the "@" in a query), it is not known which is which: all after the scheme is hidden.
func hideSecrets(base string) string {
	scheme, rest := "", base
	if i := strings.Index(base, "://"); i >= 0 && !strings.ContainsAny(base[:i], "@?#/") {
		scheme, rest = base[:i+3], base[i+3:]
	}
	at, query := strings.LastIndex(rest, "@"), strings.IndexAny(rest, "?#")
	switch {
	case query >= 0 && query < at:
		return scheme + "xxxxx"
	case query >= 0:
		rest = rest[:query+1] + "xxxxx"
	}
	if at >= 0 {
		rest = "xxxxx" + rest[at:]
	}
	return scheme + rest
}
