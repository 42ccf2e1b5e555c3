package main

import (
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/template"

	"github.com/bucketgate/bucketgate/internal/config"
	"github.com/bucketgate/bucketgate/internal/localgw"
	"github.com/bucketgate/bucketgate/ratelimitheaders"
)

// sampleBackendText describes the sample backend in the banner.
const sampleBackendText = `200 {"ok":true,"path":...} on any path (-backend URL, or make run BACKEND=URL, for your own service)`

// tryPath is the path the banner's curl commands request.
const tryPath = "/scores"

// banner is what the server says when it starts.
type banner struct {
	URL, Template, Redis, Registry, Backend, LogLevel string
	Responses                                         string // the template's statuses: statuses
	Headers                                           string // the answers with the rate-limit headers: headersOn
	BuiltIn                                           bool   // the built-in plans apply
	TryIt                                             string // how to try it: tryIt
}

var bannerText = template.Must(template.New("banner").Parse(`bucketgate local API Gateway on {{.URL}}
  authorizer  the Lambda handler, in-process, for every request (logs on stderr; {{.LogLevel}}=debug shows each decision)
  responses   {{.Responses}} gateway responses from {{.Template}}
  redis       {{.Redis}}
  registry    {{.Registry}}
  backend     {{.Backend}}
  headers     RateLimit, RateLimit-Policy, X-RateLimit-Limit, -Remaining, -Reset on {{.Headers}}
  check       the check function, in-process, at AWS_ENDPOINT_URL_LAMBDA={{.URL}} (any function name; bucketgate buckets, checkclient)
{{if .BuiltIn}}
Built-in plans: every caller without a registered key is on free (a burst of 10, then 1 request per second).{{end}}
{{.TryIt}} Ctrl-C stops.

`))

func printBanner(w io.Writer, b banner) error { return bannerText.Execute(w, b) }

// statuses lists the statuses of the gateway responses rs for a denial, a failure, a
// refused key and a backend that does not answer: "429 / 503 / 401 / 502" for
// template.yaml's.
func statuses(rs localgw.Responses) string {
	return fmt.Sprintf("%d / %d / %d / %d", rs.Lookup(localgw.AccessDenied).StatusCode, rs.Lookup(localgw.AuthorizerFailure).StatusCode,
		rs.Lookup(localgw.Unauthorized).StatusCode, rs.Lookup(localgw.IntegrationFailure).StatusCode)
}

// headersOn says which answers carry the rate-limit headers under the gateway responses
// rs: the backend's, and the denial's when rs maps them onto it; never a failure's or a
// refused key's, which have no decision to show: "the backend's answers and the 429s;
// none on the 503 / 401 / 502" for template.yaml's.
func headersOn(rs localgw.Responses) string {
	denied := rs.Lookup(localgw.AccessDenied)
	on, none := "the backend's answers", []string{strconv.Itoa(denied.StatusCode)}
	for name := range denied.ResponseParameters.Headers {
		if ratelimitheaders.Owned(name) {
			on, none = fmt.Sprintf("%s and the %ds", on, denied.StatusCode), nil
			break
		}
	}
	for _, kind := range []string{localgw.AuthorizerFailure, localgw.Unauthorized, localgw.IntegrationFailure} {
		none = append(none, strconv.Itoa(rs.Lookup(kind).StatusCode))
	}
	return on + "; none on the " + strings.Join(none, " / ")
}

// tryIt says how to try the gateway with curl under the loaded configuration cfg: with
// a made-up key in header when such keys are limited by IP, without one when they are
// refused, and how many requests in a row reach the denial on the default plan; the
// statuses are those of the gateway responses rs.
func tryIt(cfg *config.Config, url, header string, rs localgw.Responses) string {
	refuseKeys, refuseAnon := cfg.RefuseUnknownKeys(), cfg.RefuseAnonymous()
	denied, refused := rs.Lookup(localgw.AccessDenied), rs.Lookup(localgw.Unauthorized).StatusCode
	if refuseKeys && refuseAnon {
		return fmt.Sprintf("Every request without a registered API key is answered %d (unknownKeys: refuse, anonymous: refuse):\n"+
			"  curl -i %s%s\nRegister a key (bucketgate keys create, or the document's keys) and send it in %s.", refused, url, tryPath, header)
	}
	flag := fmt.Sprintf("-H '%s: k' ", header)
	var b strings.Builder
	limits := cfg.Limits(cfg.DefaultPlan(), "GET", tryPath)
	if n, ok := burst(limits); ok {
		retry := ""
		if _, ok := denied.ResponseParameters.Headers["Retry-After"]; ok {
			retry = " with Retry-After"
		}
		fmt.Fprintf(&b, "Try it: every answer shows what is left; the %s request in a row is answered %d%s.\n", ordinal(n+1), denied.StatusCode, retry)
		fmt.Fprintf(&b, "  curl -i %s%s%s\n", flagIf(!refuseKeys, flag), url, tryPath)
		fmt.Fprintf(&b, "  for i in $(seq %d); do curl -s -o /dev/null -w '%%{http_code} ' %s%s%s; done; echo\n", n+1, flagIf(!refuseKeys, flag), url, tryPath)
	} else {
		fmt.Fprintf(&b, "Try it: every rule of the default plan %s is shadow, so every request is allowed.\n", limits.Plan)
		fmt.Fprintf(&b, "  curl -i %s%s%s\n", flagIf(!refuseKeys, flag), url, tryPath)
	}
	switch {
	case refuseKeys:
		fmt.Fprintf(&b, "A key nobody registered is answered %d (unknownKeys: refuse); without the %s header, the caller is limited by its IP address.", refused, header)
	case refuseAnon:
		fmt.Fprintf(&b, "Without the %s header the caller is answered %d (anonymous: refuse); with a key nobody registered, it is limited by its IP address.", header, refused)
	default:
		b.WriteString("Without the header, or with a key nobody registered, the caller is limited by its IP address.")
	}
	return b.String()
}

// burst returns how many requests in a row the enforced rules of limits allow from
// full buckets, with nothing released: the fewest a rule admits, whole costs of a
// bucket's capacity or a quota's limit (the estimate of a route that reserves, else its
// cost), or a concurrency rule's leases, one a request. ok is false when every rule is
// shadow (nothing is ever denied).
func burst(limits config.Limits) (n int64, ok bool) {
	cost := limits.Cost
	if limits.Reserve > 0 {
		cost = limits.Reserve
	}
	for _, r := range limits.Rules {
		if r.Shadow {
			continue
		}
		k := r.Max() / cost
		if r.IsConcurrency() {
			k = r.Max()
		}
		if !ok || k < n {
			n, ok = k, true
		}
	}
	return n, ok
}

// ordinal returns n as an English ordinal: 1st, 2nd, 3rd, 4th, 11th, 21st.
func ordinal(n int64) string {
	suffix := "th"
	if n%100 < 11 || n%100 > 13 {
		switch n % 10 {
		case 1:
			suffix = "st"
		case 2:
			suffix = "nd"
		case 3:
			suffix = "rd"
		}
	}
	return fmt.Sprint(n) + suffix
}

// flagIf returns flag when use is true, else nothing.
func flagIf(use bool, flag string) string {
	if use {
		return flag
	}
	return ""
}
