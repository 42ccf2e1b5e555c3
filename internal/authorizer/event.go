package authorizer

import (
	"encoding/json"
	"errors"
	"fmt"

	"github.com/aws/aws-lambda-go/events"
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
// time); a field of the wrong JSON type, another "type" than REQUEST, or a missing ARN
// is an error naming it.
func decodeEvent(raw []byte) (event, error) {
	var top *eventKind
	if err := json.Unmarshal(raw, &top); err != nil {
		return event{}, fmt.Errorf("%w: %w", ErrBadEvent, err)
	}
	if top == nil {
		return event{}, fmt.Errorf("%w: want a JSON object, got null", ErrBadEvent)
	}
	version, err := stringField(fieldVersion, top.Version)
	if err != nil {
		return event{}, err
	}
	typ, err := stringField(fieldType, top.Type)
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
	if err := json.Unmarshal(raw, target); err != nil {
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

// eventKind holds the two fields that say which kind an event is, undecoded so that a
// value of the wrong JSON type gets an error naming the field. Decoding into it skips
// every other field without allocating for it.
type eventKind struct {
	Version json.RawMessage `json:"version"`
	Type    json.RawMessage `json:"type"`
}

// stringField decodes the field called name as a string; a missing field or null is "".
func stringField(name string, v json.RawMessage) (string, error) {
	var s string
	if len(v) > 0 {
		if err := json.Unmarshal(v, &s); err != nil {
			return "", fmt.Errorf("%w: %s: want a string: %w", ErrBadEvent, name, err)
		}
	}
	return s, nil
}
