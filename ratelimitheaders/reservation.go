package ratelimitheaders

import (
	"errors"
	"net/http"
	"strings"
)

// maxID is the longest id a reservation (or lease) header carries, in bytes: the
// limiter's ids are shorter.
const maxID = 512

// ErrNoReservation is the error of settling the reservation of a request that carries
// none (Reservation is empty): its route reserves nothing, or the limiter failed open
// (degraded) and decided nothing. There is nothing to settle.
var ErrNoReservation = errors.New("the request carries no reservation (" + HeaderReservation + ")")

// Reservation returns the reservation id that r, a request the limiter let through,
// carries in HeaderReservation: what the backend settles at the actual cost, once,
// with checkclient's SettleRequest (or SettleReservation). It returns "" when r holds
// none (its route reserves nothing, or the limiter failed open and decided nothing:
// there is nothing to settle), or holds the header more than once, or a value that is
// no id (longer than an id, or with bytes outside printable ASCII). The templates' HTTP
// integrations set the header from the authorizer context over any the client sent,
// and so does package middleware; an id the limiter did not make is refused when
// settled. A Lambda proxy integration sets no header: behind one (an http.Handler
// served through an adapter from the proxy event) r's header is the client's, never the
// limiter's, and the id is in the event's context: ContextReservation. The header spelled
// with '_' for '-' (X_RateLimit_Reservation) is never the limiter's, which API Gateway
// writes under the exact name beside it: it is not read, neither in its place nor as a
// second copy (a request read as holding none would go unsettled, charged at its
// estimate whatever its work cost, at the client's choice).
func Reservation(r *http.Request) string { return held(r, HeaderReservation) }

// ErrNoLease is the error of releasing the lease of a request that carries none (Lease
// is empty): its rules have no concurrency rule, or the limiter failed open (degraded)
// and decided nothing. There is nothing to release.
var ErrNoLease = errors.New("the request carries no lease (" + HeaderLease + ")")

// Lease returns the lease id that r, a request the limiter let through, carries in
// HeaderLease: what the backend releases when its work is done, with checkclient's
// ReleaseRequest (or ReleaseLease); "" as Reservation says. Behind a Lambda proxy
// integration the header is the client's, as Reservation says: read ContextLease.
func Lease(r *http.Request) string { return held(r, HeaderLease) }

// held returns the one id that r carries in header, in any letter case of its name (a
// map set by hand may not be canonical), and no other spelling; "" as Reservation says.
func held(r *http.Request, header string) string {
	return single(values(r.Header, header))
}

// values returns the values of every header of h called name, in any letter case (a map
// set by hand may not be canonical, and the package sets its own as the constants spell
// them).
func values(h http.Header, name string) []string {
	var vs []string
	for k, v := range h {
		if strings.EqualFold(k, name) {
			vs = append(vs, v...)
		}
	}
	return vs
}

// ContextReservation returns the reservation id in an authorizer context as a Lambda
// proxy backend receives it (requestContext.authorizer, an HTTP API's nested under
// "lambda"): KeyReservation, or "" as Reservation says. It is where a Lambda proxy
// backend reads the id, an http.Handler behind an adapter included (from the event's
// request context the adapter hands it), since API Gateway maps no header into a proxy
// event: pass it to checkclient's SettleReservation or CancelReservation.
func ContextReservation(authorizer map[string]any) string {
	return contextID(authorizer, KeyReservation)
}

// ContextLease returns the lease id in an authorizer context as a Lambda proxy backend
// receives it: KeyLease, or "" as ContextReservation says.
func ContextLease(authorizer map[string]any) string { return contextID(authorizer, KeyLease) }

// contextID returns the id under key in an authorizer context (an HTTP API's nested
// under "lambda"), or "".
func contextID(authorizer map[string]any, key string) string {
	if lambda, ok := authorizer["lambda"].(map[string]any); ok {
		authorizer = lambda
	}
	id, _ := authorizer[key].(string)
	return single([]string{id})
}

// SetHeldHeaders sets on h, the headers of a request on its way to the backend, what
// the request holds for the backend to settle or release, from an authorizer context:
// HeaderReservation (KeyReservation) and HeaderLease (KeyLease), each when the context
// holds one; any copy of those headers the client sent, in any spelling a backend reads
// as theirs (see SameName), is removed first, whatever the context, so that only the
// limiter's reaches the backend. The headers set are spelled as the constants are, as
// API Gateway sends them and SetHeader sets the rate-limit headers, not in
// http.Header's canonical form: h[HeaderReservation] finds them, h.Get does not
// (Reservation and Lease read any letter case). It is what the templates' integrations
// map, for a gateway or middleware in front of an HTTP service. h must not be nil, as
// for SetHeader.
func SetHeldHeaders(h http.Header, authorizer map[string]any) {
	for header, key := range map[string]string{HeaderReservation: KeyReservation, HeaderLease: KeyLease} {
		for name := range h {
			if SameName(name, header) {
				delete(h, name)
			}
		}
		if id, ok := text(authorizer[key]); ok && id != "" {
			h[header] = []string{id}
		}
	}
}

// single returns the one value of values when it can be an id; else "".
func single(values []string) string {
	if len(values) != 1 || len(values[0]) > maxID {
		return ""
	}
	for i := 0; i < len(values[0]); i++ {
		if c := values[0][i]; c <= ' ' || c >= 0x7f {
			return ""
		}
	}
	return values[0]
}
