package authorizer

import (
	"cmp"
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/bucketgate/bucketgate/internal/identity"
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
// .path; all: requestContext.requestId and .stage).
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

// scanners are reusable scanners for decodeEvent.
var scanners = sync.Pool{New: func() any { return new(scanner) }}

// decodeEvent reads raw, one API Gateway REQUEST authorizer event, in one pass: "version"
// "2.0" is an HTTP API payload 2.0 event, "1.0" an HTTP API payload 1.0 event, none a
// REST API event. Of the API key header (ids's, in any case) it keeps every copy.
// Members it does not read are checked as JSON and skipped (API Gateway adds fields over
// time); an empty payload, anything but one JSON object, a name given twice in any
// object, invalid UTF-8, a member it reads of the wrong JSON type (null is an absent
// member), another "type" than REQUEST, an unknown version, or a missing ARN is an error
// naming it. Names match exactly, escapes decoded (encoding/json would also take a name
// in another case, the last of them winning).
func decodeEvent(raw []byte, ids identity.Resolver) (event, error) {
	s := scanners.Get().(*scanner)
	defer scanners.Put(s)
	s.data, s.pos, s.depth, s.path = string(raw), 0, 0, s.path[:0]
	defer func() { s.data = "" }()
	var f fields
	if err := f.read(s, ids); err != nil {
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
		ev.call.Path = stripStage(cmp.Or(f.httpPath, f.rawPath), f.stage)
	case versionHTTPV1, "":
		ev.kind, ev.arn = kindREST, f.methodArn
		ev.call.SourceIP, ev.call.Method = f.identitySourceIP, cmp.Or(f.httpMethod, f.contextMethod)
		ev.call.Path = cmp.Or(f.path, f.resource)
		ev.call.Keys.Merge(f.multiKeys)
		if f.version == versionHTTPV1 {
			ev.kind, ev.call.Path = kindHTTPV1, stripStage(ev.call.Path, f.stage)
		}
	default:
		return event{}, fmt.Errorf("%w: %s %q: want none (REST), %q or %q (HTTP API)", ErrBadEvent, fieldVersion, f.version, versionHTTPV1, versionHTTPV2)
	}
	if ev.arn == "" {
		field := "methodArn"
		if ev.kind == kindHTTPV2 {
			field = "routeArn"
		}
		return event{}, fmt.Errorf("%w: %s is missing", ErrBadEvent, field)
	}
	return ev, nil
}

// read reads the event's text into f: one object and nothing after it.
func (f *fields) read(s *scanner, ids identity.Resolver) error {
	c, err := s.peek()
	switch {
	case err == errEOF && strings.TrimSpace(s.data) == "":
		return errors.New("the payload is empty: want a JSON object")
	case err != nil:
		return err
	case c != '{':
		if err := s.skip(); err != nil {
			return err
		}
		return fmt.Errorf("want a JSON object, got %s", kindOf(c))
	}
	err = s.object(func(name string) error {
		switch name {
		case fieldVersion:
			return s.stringField(name, &f.version)
		case fieldType:
			return s.stringField(name, &f.typ)
		case "methodArn":
			return s.stringField(name, &f.methodArn)
		case "routeArn":
			return s.stringField(name, &f.routeArn)
		case "httpMethod":
			return s.stringField(name, &f.httpMethod)
		case "path":
			return s.stringField(name, &f.path)
		case "resource":
			return s.stringField(name, &f.resource)
		case "rawPath":
			return s.stringField(name, &f.rawPath)
		case "headers":
			return s.headers(name, ids, &f.keys, false)
		case "multiValueHeaders":
			return s.headers(name, ids, &f.multiKeys, true)
		case "requestContext":
			return f.requestContext(s)
		}
		return s.skip()
	})
	if err != nil {
		return err
	}
	if s.ws(); s.pos < len(s.data) {
		return errors.New("data after the JSON object")
	}
	return nil
}

// requestContext reads the event's requestContext.
func (f *fields) requestContext(s *scanner) error {
	return s.objectField("requestContext", func(name string) error {
		switch name {
		case "requestId":
			return s.stringField("requestContext.requestId", &f.requestID)
		case "stage":
			return s.stringField("requestContext.stage", &f.stage)
		case "httpMethod":
			return s.stringField("requestContext.httpMethod", &f.contextMethod)
		case "identity":
			return s.objectField("requestContext.identity", func(name string) error {
				if name == "sourceIp" {
					return s.stringField("requestContext.identity.sourceIp", &f.identitySourceIP)
				}
				return s.skip()
			})
		case "http":
			return s.objectField("requestContext.http", func(name string) error {
				switch name {
				case "sourceIp":
					return s.stringField("requestContext.http.sourceIp", &f.httpSourceIP)
				case "method":
					return s.stringField("requestContext.http.method", &f.httpMethodV2)
				case "path":
					return s.stringField("requestContext.http.path", &f.httpPath)
				}
				return s.skip()
			})
		}
		return s.skip()
	})
}

// stringField reads the member field, a string or null, into dst.
func (s *scanner) stringField(field string, dst *string) error {
	v, got, err := s.optString()
	if err == nil && got != 0 {
		err = fmt.Errorf("%s: want a string, got %s", field, kindOf(got))
	}
	*dst = v
	return err
}

// optString reads a string or null (""); anything else it skips, and returns its first
// byte as got.
func (s *scanner) optString() (v string, got byte, err error) {
	c, err := s.peek()
	switch {
	case err != nil:
		return "", 0, err
	case c == '"':
		v, err = s.str()
		return v, 0, err
	case c == 'n':
		_, err := s.null()
		return "", 0, err
	}
	if err := s.skip(); err != nil {
		return "", 0, err
	}
	return "", c, nil
}

// objectField reads the member field, an object or null, calling member for each of
// its members.
func (s *scanner) objectField(field string, member func(name string) error) error {
	return s.optContainer(field, "", '{', "an object", func() error { return s.object(member) })
}

// optContainer reads null, or with read an object or array starting with open; anything
// else it skips, and refuses as the member field (of name, when set): want says what it
// should have been.
func (s *scanner) optContainer(field, name string, open byte, want string, read func() error) error {
	c, err := s.peek()
	switch {
	case err != nil:
		return err
	case c == open:
		return read()
	case c == 'n':
		_, err := s.null()
		return err
	}
	if err := s.skip(); err != nil {
		return err
	}
	if name != "" {
		return fmt.Errorf("%s: %s: want %s, got %s", field, name, want, kindOf(c))
	}
	return fmt.Errorf("%s: want %s, got %s", field, want, kindOf(c))
}

// headers reads the member field, headers by name (each a string, or with multi an
// array of strings; null is none), adding every copy of the API key header to keys.
func (s *scanner) headers(field string, ids identity.Resolver, keys *identity.KeyCopies, multi bool) error {
	return s.objectField(field, func(name string) error {
		isKey := ids.IsKeyHeader(name)
		value := func() error {
			v, got, err := s.optString()
			if err == nil && got != 0 {
				err = fmt.Errorf("%s: %s: want a string, got %s", field, name, kindOf(got))
			}
			if err == nil && isKey {
				keys.Add(v)
			}
			return err
		}
		if !multi {
			return value()
		}
		return s.optContainer(field, name, '[', "an array of strings", func() error { return s.array(value) })
	})
}
