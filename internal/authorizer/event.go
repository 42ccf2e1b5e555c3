package authorizer

import (
	"bytes"
	"cmp"
	"errors"
	"fmt"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/bucketgate/bucketgate/internal/identity"
	"github.com/bucketgate/bucketgate/internal/strictjson"
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

// BadEventError is the function error of an event the authorizer cannot answer; Err
// wraps ErrBadEvent and says why. Lambda reports an error's Go type name as its
// errorType (aws-lambda-go's runtime does), so this one reads "BadEventError" there,
// not the name of fmt's wrapping type.
type BadEventError struct {
	// Err says what is wrong with the event, wrapping ErrBadEvent.
	Err error
}

// Error returns Err's text.
func (e *BadEventError) Error() string { return e.Err.Error() }

// Unwrap returns Err.
func (e *BadEventError) Unwrap() error { return e.Err }

// kind is the format of an authorizer event, and of its answer.
type kind uint8

const (
	kindREST   kind = iota // a REST API event: answered with an IAM policy
	kindHTTPV1             // an HTTP API event in payload format 1.0: answered with an IAM policy
	kindHTTPV2             // an HTTP API event in payload format 2.0: answered with a simple response
)

// event is what the authorizer reads of one event: its kind, the ARN its answer names,
// and the call it asks.
type event struct {
	kind kind
	arn  string
	call Call
}

// fields are the members of an event that any kind reads, as the event spells them
// (REST and HTTP API payload 1.0: methodArn, httpMethod, path, resource, headers,
// multiValueHeaders, requestContext.identity.sourceIp, requestContext.httpMethod; HTTP
// API payload 2.0: routeArn, rawPath, headers, requestContext.http.sourceIp, .method and
// .path; all: requestContext.requestId and .stage). Of payload 2.0's two paths, routes
// match rawPath, the one a Lambda backend is handed and reads (web adapters build the
// request's URL from it); requestContext.http.path only when rawPath is missing: where
// the two differ (a '%23' or '%3F' decoded in one alone), a '#' or '?' that ends the
// path for the routes would let a request pay another route's cost than the one its
// backend serves.
type fields struct {
	version, typ                         string
	methodArn, routeArn                  string
	httpMethod, path, resource           string
	rawPath                              string
	keys, multiKeys                      identity.KeyCopies // the API key header's copies in headers and multiValueHeaders
	stage, requestID                     string
	identitySourceIP, contextMethod      string
	httpSourceIP, httpMethodV2, httpPath string
}

// decodeEvent reads raw, one API Gateway REQUEST authorizer event, in one pass: "version"
// "2.0" is an HTTP API payload 2.0 event, "1.0" an HTTP API payload 1.0 event, none a
// REST API event. Of the API key header (ids's, in any case) it keeps every copy, and
// reads copies joined with commas (KeyCopies.Unjoin) in every kind: payload 2.0 joins a
// header given twice, and a client or a proxy in front may join it for any kind, as the
// middleware reads it.
// Members it does not read are checked as JSON and skipped (API Gateway adds fields over
// time); an empty payload, anything but one strict JSON object (see package
// strictjson), a member it reads of the wrong JSON type (null is an absent member),
// another "type" than REQUEST, an unknown version, or a missing ARN is an error naming
// it. Names match exactly, escapes decoded (encoding/json would also take a name in
// another case, the last of them winning).
func decodeEvent(raw []byte, ids identity.Resolver) (event, error) {
	d := strictjson.New(raw)
	defer d.Release()
	var f fields
	if err := f.read(d, raw, ids); err != nil {
		var se *strictjson.Error
		if errors.As(err, &se) {
			if path := se.Path(false); path != "" {
				return event{}, fmt.Errorf("%w: %s: %s", ErrBadEvent, path, se.Describe())
			}
			return event{}, fmt.Errorf("%w: %s", ErrBadEvent, se.Describe())
		}
		return event{}, fmt.Errorf("%w: %w", ErrBadEvent, err)
	}
	if f.typ != typeRequest {
		return event{}, fmt.Errorf("%w: type %q: configure a REQUEST authorizer (a TOKEN authorizer sees no headers or source IP)", ErrBadEvent, f.typ)
	}
	ev := event{call: Call{RequestID: f.requestID, Keys: f.keys}}
	switch f.version {
	case versionHTTPV2:
		ev.kind, ev.arn = kindHTTPV2, f.routeArn
		ev.call.SourceIP, ev.call.Method = f.httpSourceIP, f.httpMethodV2
		ev.call.Path = stripStage(cmp.Or(f.rawPath, f.httpPath), f.stage, f.routeArn)
	case versionHTTPV1, "":
		ev.kind, ev.arn = kindREST, f.methodArn
		ev.call.SourceIP, ev.call.Method = f.identitySourceIP, cmp.Or(f.httpMethod, f.contextMethod)
		ev.call.Path = cmp.Or(f.path, f.resource)
		ev.call.Keys.Merge(f.multiKeys)
		if f.version == versionHTTPV1 {
			ev.kind, ev.call.Path = kindHTTPV1, stripStage(ev.call.Path, f.stage, f.methodArn)
		}
	default:
		return event{}, fmt.Errorf("%w: %s %q: want none (REST), %q or %q (HTTP API)", ErrBadEvent, fieldVersion, f.version, versionHTTPV1, versionHTTPV2)
	}
	ev.call.Keys.Unjoin()
	if ev.arn == "" {
		field := "methodArn"
		if ev.kind == kindHTTPV2 {
			field = "routeArn"
		}
		return event{}, fmt.Errorf("%w: %s is missing", ErrBadEvent, field)
	}
	return ev, nil
}

// read reads the event's text, raw, into f: one object and nothing after it.
func (f *fields) read(d *strictjson.Decoder, raw []byte, ids identity.Resolver) error {
	switch k := d.Kind(); {
	case len(bytes.TrimSpace(raw)) == 0:
		return errors.New("the payload is empty: want a JSON object")
	case k != '{':
		if err := d.Skip(); err != nil {
			return err
		}
		return fmt.Errorf("want a JSON object, got %s", strictjson.KindArticle(k))
	}
	err := d.Object(func(name string) error {
		switch name {
		case fieldVersion:
			return stringField(d, name, &f.version)
		case fieldType:
			return stringField(d, name, &f.typ)
		case "methodArn":
			return stringField(d, name, &f.methodArn)
		case "routeArn":
			return stringField(d, name, &f.routeArn)
		case "httpMethod":
			return stringField(d, name, &f.httpMethod)
		case "path":
			return stringField(d, name, &f.path)
		case "resource":
			return stringField(d, name, &f.resource)
		case "rawPath":
			return stringField(d, name, &f.rawPath)
		case "headers":
			return headers(d, name, ids, &f.keys, false)
		case "multiValueHeaders":
			return headers(d, name, ids, &f.multiKeys, true)
		case "requestContext":
			return f.requestContext(d)
		}
		return d.Skip()
	})
	if err != nil {
		return err
	}
	if d.End() != nil {
		return errors.New("data after the JSON object")
	}
	return nil
}

// requestContext reads the event's requestContext.
func (f *fields) requestContext(d *strictjson.Decoder) error {
	return objectField(d, "requestContext", func(name string) error {
		switch name {
		case "requestId":
			return stringField(d, "requestContext.requestId", &f.requestID)
		case "stage":
			return stringField(d, "requestContext.stage", &f.stage)
		case "httpMethod":
			return stringField(d, "requestContext.httpMethod", &f.contextMethod)
		case "identity":
			return objectField(d, "requestContext.identity", func(name string) error {
				if name == "sourceIp" {
					return stringField(d, "requestContext.identity.sourceIp", &f.identitySourceIP)
				}
				return d.Skip()
			})
		case "http":
			return objectField(d, "requestContext.http", func(name string) error {
				switch name {
				case "sourceIp":
					return stringField(d, "requestContext.http.sourceIp", &f.httpSourceIP)
				case "method":
					return stringField(d, "requestContext.http.method", &f.httpMethodV2)
				case "path":
					return stringField(d, "requestContext.http.path", &f.httpPath)
				}
				return d.Skip()
			})
		}
		return d.Skip()
	})
}

// stringField reads the member field, a string or null, into dst.
func stringField(d *strictjson.Decoder, field string, dst *string) error {
	v, got, err := optString(d)
	if err == nil && got != 0 {
		err = fmt.Errorf("%s: want a string, got %s", field, strictjson.KindArticle(got))
	}
	*dst = v
	return err
}

// optString reads a string or null (""); anything else it skips, and returns its kind
// as got.
func optString(d *strictjson.Decoder) (v string, got jsontext.Kind, err error) {
	switch k := d.Kind(); k {
	case '"':
		v, err = d.String()
		return v, 0, err
	case 'n':
		return "", 0, d.Skip()
	default:
		return "", k, d.Skip()
	}
}

// objectField reads the member field, an object or null, calling member for each of
// its members.
func objectField(d *strictjson.Decoder, field string, member func(name string) error) error {
	return optContainer(d, field, "", '{', "an object", func() error { return d.Object(member) })
}

// optContainer reads null, or with read an object or array starting with open; anything
// else it skips, and refuses as the member field (of name, when set): want says what it
// should have been.
func optContainer(d *strictjson.Decoder, field, name string, open jsontext.Kind, want string, read func() error) error {
	switch k := d.Kind(); k {
	case open:
		return read()
	case 'n':
		return d.Skip()
	default:
		if err := d.Skip(); err != nil {
			return err
		}
		if name != "" {
			return fmt.Errorf("%s: %s: want %s, got %s", field, name, want, strictjson.KindArticle(k))
		}
		return fmt.Errorf("%s: want %s, got %s", field, want, strictjson.KindArticle(k))
	}
}

// headers reads the member field, headers by name (each a string, or with multi an
// array of strings; null is none), adding every copy of the API key header to keys.
func headers(d *strictjson.Decoder, field string, ids identity.Resolver, keys *identity.KeyCopies, multi bool) error {
	return objectField(d, field, func(name string) error {
		isKey := ids.IsKeyHeader(name)
		value := func() error {
			v, got, err := optString(d)
			if err == nil && got != 0 {
				err = fmt.Errorf("%s: %s: want a string, got %s", field, name, strictjson.KindArticle(got))
			}
			if err == nil && isKey {
				keys.Add(v)
			}
			return err
		}
		if !multi {
			return value()
		}
		return optContainer(d, field, name, '[', "an array of strings", func() error { return d.Array(value) })
	})
}
