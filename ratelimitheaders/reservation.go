package ratelimitheaders

import (
	"net/http"
	"net/textproto"
)

// maxID is the longest id a reservation (or lease) header carries, in bytes: the
// limiter's ids are shorter.
const maxID = 512

// Reservation returns the reservation id that r, a request the limiter let through,
// carries in HeaderReservation: what the backend settles at the actual cost, once,
// with checkclient's SettleRequest (or SettleReservation). It returns "" when r holds
// none (its route reserves nothing, or the limiter failed open and decided nothing:
// there is nothing to settle), or holds the header more than once, or a value that is
// no id (longer than an id, or with bytes outside printable ASCII). The templates set
// the header from the authorizer context over any the client sent, and so does package
// middleware; an id the limiter did not make is refused when settled.
func Reservation(r *http.Request) string {
	return single(r.Header[textproto.CanonicalMIMEHeaderKey(HeaderReservation)])
}

// ContextReservation returns the reservation id in an authorizer context as a Lambda
// proxy backend receives it (requestContext.authorizer, an HTTP API's nested under
// "lambda"): KeyReservation, or "" as Reservation says.
func ContextReservation(authorizer map[string]any) string {
	if lambda, ok := authorizer["lambda"].(map[string]any); ok {
		authorizer = lambda
	}
	id, _ := authorizer[KeyReservation].(string)
	return single([]string{id})
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
