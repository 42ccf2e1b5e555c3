package authorizer

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"sync"

	"github.com/aws/aws-lambda-go/events"
	jsonv2 "github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
)

// Fields of an authorizer event that tell its kind apart, and their values.
const (
	fieldVersion  = "version"
	fieldType     = "type"
	versionHTTPV1 = "1.0"
	versionHTTPV2 = "2.0"
	typeRequest   = "REQUEST"
)

// ErrBadEvent is wrapped by every error about an event this authorizer cannot answer.
var ErrBadEvent = errors.New("not an API Gateway REQUEST authorizer event")

// event is one decoded authorizer event: exactly one field is set.
type event struct {
	rest   *events.APIGatewayCustomAuthorizerRequestTypeRequest
	httpV1 *HTTPV1Request
	httpV2 *events.APIGatewayV2CustomAuthorizerV2Request
}

// decodeEvent decodes raw into the aws-lambda-go type of its kind: "version" "2.0" is
// an HTTP API payload 2.0 event, "1.0" an HTTP API payload 1.0 event, none a REST API
// event. Fields the types do not model are ignored (API Gateway adds fields over
// time); an empty payload, anything but one JSON object, a name given twice in any
// object, invalid UTF-8, a field of the wrong JSON type, another "type" than REQUEST,
// or a missing ARN is an error naming it.
//
// It reads raw twice: once as JSON text (scanKind: syntax, repeated names, UTF-8, and
// the two fields that tell the kind apart), once into the kind's type, matching names
// exactly (encoding/json would also fill a field from a name in another case, the last
// of them winning).
func decodeEvent(raw []byte) (event, error) {
	version, typ, err := scanKind(raw)
	if err != nil {
		return event{}, err
	}
	if typ != typeRequest {
		return event{}, fmt.Errorf("%w: type %q: configure a REQUEST authorizer (a TOKEN authorizer sees no headers or source IP)", ErrBadEvent, typ)
	}
	var (
		ev     event
		target any
	)
	switch version {
	case versionHTTPV2:
		ev.httpV2 = new(events.APIGatewayV2CustomAuthorizerV2Request)
		target = ev.httpV2
	case versionHTTPV1:
		ev.httpV1 = new(HTTPV1Request)
		target = ev.httpV1
	case "":
		ev.rest = new(events.APIGatewayCustomAuthorizerRequestTypeRequest)
		target = ev.rest
	default:
		return event{}, fmt.Errorf("%w: %s %q: want none (REST), %q or %q (HTTP API)", ErrBadEvent, fieldVersion, version, versionHTTPV1, versionHTTPV2)
	}
	if err := jsonv2.Unmarshal(raw, target); err != nil { // exact names, each once
		return event{}, fmt.Errorf("%w: %w", ErrBadEvent, err)
	}
	if arn, field := ev.arn(); arn == "" {
		return event{}, fmt.Errorf("%w: %s is missing", ErrBadEvent, field)
	}
	return ev, nil
}

// arn returns the ARN the response must name, and the event field holding it.
func (ev event) arn() (value, field string) {
	switch {
	case ev.rest != nil:
		return ev.rest.MethodArn, "methodArn"
	case ev.httpV1 != nil:
		return ev.httpV1.MethodArn, "methodArn"
	}
	return ev.httpV2.RouteArn, "routeArn"
}

// scanners are reusable JSON text decoders for scanKind.
var scanners = sync.Pool{New: func() any { return new(scanner) }}

type scanner struct {
	r   bytes.Reader
	dec jsontext.Decoder
}

// scanKind reads raw as JSON text, all of it: one object, no name twice in any object
// (encoding/json would keep the last of them: the event must not mean two things), valid
// UTF-8, nothing after the object. It returns the top-level "version" and "type"
// strings ("" when absent or null).
func scanKind(raw []byte) (version, typ string, err error) {
	if len(bytes.TrimSpace(raw)) == 0 {
		return "", "", fmt.Errorf("%w: the payload is empty: want a JSON object", ErrBadEvent)
	}
	s := scanners.Get().(*scanner)
	defer scanners.Put(s)
	s.r.Reset(raw)
	defer s.r.Reset(nil)
	s.dec.Reset(&s.r) // the defaults refuse repeated names and invalid UTF-8
	tok, err := s.dec.ReadToken()
	if err != nil {
		return "", "", fmt.Errorf("%w: %w", ErrBadEvent, err)
	}
	if tok.Kind() != jsontext.KindBeginObject {
		return "", "", fmt.Errorf("%w: want a JSON object, got %s", ErrBadEvent, kindName(tok.Kind()))
	}
	for s.dec.PeekKind() != jsontext.KindEndObject {
		name, err := s.dec.ReadValue() // the quoted name, without allocating for it
		if err != nil {
			return "", "", fmt.Errorf("%w: %w", ErrBadEvent, err)
		}
		var (
			field string
			dst   *string
		)
		switch {
		case isName(name, fieldVersion):
			field, dst = fieldVersion, &version
		case isName(name, fieldType):
			field, dst = fieldType, &typ
		default:
			if err := s.dec.SkipValue(); err != nil {
				return "", "", fmt.Errorf("%w: %w", ErrBadEvent, err)
			}
			continue
		}
		v, err := s.dec.ReadToken()
		switch {
		case err != nil:
			return "", "", fmt.Errorf("%w: %w", ErrBadEvent, err)
		case v.Kind() == jsontext.KindString:
			*dst = v.String()
		case v.Kind() != jsontext.KindNull:
			return "", "", fmt.Errorf("%w: %s: want a string, got %s", ErrBadEvent, field, kindName(v.Kind()))
		}
	}
	if _, err := s.dec.ReadToken(); err != nil { // the closing '}', or an error in the text before it
		return "", "", fmt.Errorf("%w: %w", ErrBadEvent, err)
	}
	if _, err := s.dec.ReadToken(); !errors.Is(err, io.EOF) {
		return "", "", fmt.Errorf("%w: data after the JSON object", ErrBadEvent)
	}
	return version, typ, nil
}

// isName reports whether the quoted JSON string name is want. A name written with
// escapes never is: the kind's type is decoded with exact names (decodeEvent).
func isName(name jsontext.Value, want string) bool {
	return len(name) == len(want)+2 && string(name[1:len(name)-1]) == want
}

// kindName names a JSON kind for an error.
func kindName(k jsontext.Kind) string {
	switch k {
	case jsontext.KindBeginObject:
		return "an object"
	case jsontext.KindBeginArray:
		return "an array"
	case jsontext.KindString:
		return "a string"
	case jsontext.KindNumber:
		return "a number"
	case jsontext.KindNull:
		return "null"
	}
	return "a boolean"
}
