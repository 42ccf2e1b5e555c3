package authorizer

import (
	"github.com/bucketgate/bucketgate/internal/testkit/samples"

	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/aws/aws-lambda-go/events"

	"github.com/bucketgate/bucketgate"
	"github.com/bucketgate/bucketgate/internal/identity"
	"github.com/bucketgate/bucketgate/internal/settings"
)

// The files in events/ are real API Gateway event shapes: each decodes into its
// aws-lambda-go type with no field left over, and decodeEvent tells its kind.
func TestSampleEventsDecodeStrictly(t *testing.T) {
	tests := []struct {
		file   string
		target any
		kind   kind
	}{
		{restEvent, &events.APIGatewayCustomAuthorizerRequestTypeRequest{}, kindREST},
		{restProEvent, &events.APIGatewayCustomAuthorizerRequestTypeRequest{}, kindREST},
		{httpEvent, &events.APIGatewayV2CustomAuthorizerV2Request{}, kindHTTPV2},
	}
	for _, tc := range tests {
		t.Run(tc.file, func(t *testing.T) {
			raw := samples.Read(t, tc.file)
			dec := json.NewDecoder(bytes.NewReader(raw))
			dec.DisallowUnknownFields()
			if err := dec.Decode(tc.target); err != nil {
				t.Fatalf("strict decode: %v", err)
			}
			if dec.More() {
				t.Fatal("more than one JSON value")
			}
			ev, err := decodeEvent(raw, testResolver(t))
			if err != nil || ev.kind != tc.kind || ev.arn == "" {
				t.Fatalf("decodeEvent = %+v, %v", ev, err)
			}
		})
	}
}

// badEvents are events that must be refused, with a word the error must contain.
var badEvents = []struct {
	name, event, want string
}{
	{"not JSON", `{"type":`, "unexpected EOF"},
	{"empty payload", ``, "the payload is empty"},
	{"blank payload", " \n", "the payload is empty"},
	{"null", `null`, "want a JSON object, got null"},
	{"array", `[]`, "want a JSON object, got an array"},
	{"string", `"REQUEST"`, "want a JSON object, got a string"},
	{"two objects", `{"type":"REQUEST","methodArn":"a"} {}`, "data after the JSON object"},
	{"type given twice", `{"type":"TOKEN","type":"REQUEST","methodArn":"arn:aws:execute-api:us-east-1:1:a/b/GET/"}`, `duplicate object member name "type"`},
	{"methodArn given twice", `{"type":"REQUEST","methodArn":"arn:aws:execute-api:us-east-1:1:a/b/GET/","methodArn":"arn:aws:execute-api:us-east-1:1:a/b/GET/admin"}`, `duplicate object member name "methodArn"`},
	{"API key header given twice", `{"type":"REQUEST","methodArn":"a","headers":{"X-API-Key":"k1","X-API-Key":"k2"}}`, `headers: duplicate object member name "X-API-Key"`},
	{"source IP given twice", `{"type":"REQUEST","methodArn":"a","requestContext":{"identity":{"sourceIp":"192.0.2.1","sourceIp":"192.0.2.2"}}}`, `: requestContext.identity: duplicate object member name "sourceIp"`},
	{"path given twice in an HTTP API event", `{"version":"2.0","type":"REQUEST","routeArn":"a","requestContext":{"http":{"path":"/export","path":"/scores"}}}`, `: requestContext.http: duplicate object member name "path"`},
	{"invalid UTF-8", "{\"type\":\"REQUEST\",\"methodArn\":\"a\",\"headers\":{\"X-API-Key\":\"\xff\"}}", ": headers.X-API-Key: invalid UTF-8"},
	{"lone surrogate", `{"type":"REQUEST","methodArn":"a","requestContext":{"identity":{"userAgent":"\ud800"}}}`, ": requestContext.identity.userAgent: invalid UTF-8 in a string: a lone surrogate"},
	{"control character", "{\"type\":\"REQUEST\",\"methodArn\":\"a\",\"multiValueHeaders\":{\"Accept\":[\"a\tb\"]}}", ": multiValueHeaders.Accept: invalid control character"},
	{"syntax error in a member", `{"type":"REQUEST","methodArn":"a","stageVariables":{"x":tru}}`, ": stageVariables.x: invalid character '}' in literal true (expecting 'e')"},
	{"type given twice at the top", `{"type":"REQUEST","type":"REQUEST","methodArn":"a"}`, `not an API Gateway REQUEST authorizer event: duplicate object member name "type"`},
	{"type not a string", `{"type":["REQUEST"],"methodArn":"a"}`, "type: want a string, got an array"},
	{"TOKEN authorizer", `{"type":"TOKEN","authorizationToken":"x","methodArn":"arn:aws:execute-api:us-east-1:1:a/b/GET/"}`, "REQUEST authorizer"},
	{"no type", `{"methodArn":"arn:aws:execute-api:us-east-1:1:a/b/GET/"}`, `type ""`},
	{"unknown version", `{"version":"3.0","type":"REQUEST","routeArn":"x"}`, `version "3.0"`},
	{"version not a string", `{"version":2,"type":"REQUEST","routeArn":"x"}`, "version: want a string"},
	{"REST without methodArn", `{"type":"REQUEST","headers":{}}`, "methodArn is missing"},
	{"HTTP 2.0 without routeArn", `{"version":"2.0","type":"REQUEST"}`, "routeArn is missing"},
	{"HTTP 1.0 without methodArn", `{"version":"1.0","type":"REQUEST","routeArn":"x"}`, "methodArn is missing"},
	{"headers of the wrong type", `{"type":"REQUEST","methodArn":"a","headers":{"X-API-Key":["k"]}}`, "headers"},
	{"source IP of the wrong type", `{"version":"2.0","type":"REQUEST","routeArn":"a","requestContext":{"http":{"sourceIp":1}}}`, "sourceIp"},
}

func TestBadEvents(t *testing.T) {
	for _, tc := range badEvents {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := decodeEvent([]byte(tc.event), testResolver(t)); !errors.Is(err, ErrBadEvent) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("decodeEvent error %v, want ErrBadEvent mentioning %q", err, tc.want)
			}
			// Through the Lambda handler: the authorizer's own error, nothing decided,
			// and the refusal logged.
			f := newFixture(t, options{})
			if _, err := f.invoke(t, []byte(tc.event)); !errors.Is(err, ErrBadEvent) {
				t.Fatalf("the handler answered %v, want ErrBadEvent", err)
			}
			if f.metrics.Len() != 0 || len(f.mr.Keys()) != 0 {
				t.Errorf("a bad event was decided")
			}
			if !strings.Contains(f.logs.String(), `"level":"ERROR"`) || !strings.Contains(f.logs.String(), "authorizer event rejected") {
				t.Errorf("no error line in the log: %s", f.logs.String())
			}
		})
	}
}

// A key header given twice reaches an HTTP API's payload 2.0 event joined with a comma,
// and the other kinds' events in multiValueHeaders; a client or a proxy in front may
// also join the copies into one line (RFC 9110, section 5.3), which every kind's event
// carries as it came. Every kind reads the one key of equal copies, joined or not, as
// the middleware does, empty list elements ignored ("K," is K, RFC 9110, section 5.6.1);
// two different keys joined are read whole (an unknown key), and copies that differ,
// joined or not, are a conflict; X_API_Key is a copy, as CGI, WSGI and Rack read it.
func TestKeyHeaderGivenTwice(t *testing.T) {
	tests := []struct {
		name, event, want string
		conflict          bool
	}{
		{"HTTP API 2.0 joined", `{"version":"2.0","type":"REQUEST","routeArn":"a","headers":{"x-api-key":"K,K"}}`, "K", false},
		{"HTTP API 2.0 two keys read whole", `{"version":"2.0","type":"REQUEST","routeArn":"a","headers":{"x-api-key":"K,L"}}`, "K,L", false},
		{"REST multiValueHeaders", `{"type":"REQUEST","methodArn":"a","headers":{"X-API-Key":"K"},"multiValueHeaders":{"X-API-Key":["K","K"]}}`, "K", false},
		{"REST joined by the client", `{"type":"REQUEST","methodArn":"a","headers":{"X-API-Key":"K, K"},"multiValueHeaders":{"X-API-Key":["K, K"]}}`, "K", false},
		{"REST joined, headers alone", `{"type":"REQUEST","methodArn":"a","headers":{"X-API-Key":"K,K"}}`, "K", false},
		{"REST two keys joined read whole", `{"type":"REQUEST","methodArn":"a","headers":{"X-API-Key":"K, L"},"multiValueHeaders":{"X-API-Key":["K, L"]}}`, "K, L", false},
		{"REST joined and apart differ", `{"type":"REQUEST","methodArn":"a","headers":{"X-API-Key":"K, K"},"multiValueHeaders":{"X-API-Key":["K","K, K"]}}`, "", true},
		{"HTTP API 1.0 joined by the client", `{"version":"1.0","type":"REQUEST","methodArn":"a","headers":{"x-api-key":"K, K"},"multiValueHeaders":{"x-api-key":["K, K"]}}`, "K", false},
		{"REST with a trailing comma", `{"type":"REQUEST","methodArn":"a","headers":{"X-API-Key":"K,"},"multiValueHeaders":{"X-API-Key":["K,"]}}`, "K", false},
		{"REST with an empty element", `{"type":"REQUEST","methodArn":"a","headers":{"X-API-Key":"K, ,K"},"multiValueHeaders":{"X-API-Key":["K, ,K"]}}`, "K", false},
		{"REST with an empty copy apart", `{"type":"REQUEST","methodArn":"a","headers":{"X-API-Key":""},"multiValueHeaders":{"X-API-Key":["K",""]}}`, "K", false},
		{"HTTP API 1.0 with an empty copy apart", `{"version":"1.0","type":"REQUEST","methodArn":"a","headers":{"x-api-key":""},"multiValueHeaders":{"x-api-key":["K",""]}}`, "K", false},
		{"HTTP API 1.0 with a trailing comma", `{"version":"1.0","type":"REQUEST","methodArn":"a","headers":{"x-api-key":"K,"},"multiValueHeaders":{"x-api-key":["K,"]}}`, "K", false},
		{"HTTP API 2.0 with a trailing comma", `{"version":"2.0","type":"REQUEST","routeArn":"a","headers":{"x-api-key":"K,"}}`, "K", false},
		{"HTTP API 2.0 with an empty element", `{"version":"2.0","type":"REQUEST","routeArn":"a","headers":{"x-api-key":"K, ,K"}}`, "K", false},
		{"REST, spelled with underscores", `{"type":"REQUEST","methodArn":"a","headers":{"X_API_Key":"K"},"multiValueHeaders":{"X_API_Key":["K"]}}`, "K", false},
		{"REST, another key spelled with underscores", `{"type":"REQUEST","methodArn":"a","headers":{"X-API-Key":"K","X_API_Key":"L"},"multiValueHeaders":{"X-API-Key":["K"],"X_API_Key":["L"]}}`, "", true},
		{"HTTP API 2.0, spelled with underscores", `{"version":"2.0","type":"REQUEST","routeArn":"a","headers":{"x_api_key":"K"}}`, "K", false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ev, err := decodeEvent([]byte(tc.event), testResolver(t))
			if err != nil {
				t.Fatal(err)
			}
			got := testResolver(t).ResolveCopies(ev.call.Keys, "192.0.2.1")
			switch {
			case tc.conflict && (!got.Conflict || got.Key != bucketgate.Identity{}):
				t.Errorf("read %+v, want a conflict", got)
			case !tc.conflict && (got.Conflict || got.Key != bucketgate.KeyIdentity(tc.want)):
				t.Errorf("read %+v, want the key %q", got, tc.want)
			}
		})
	}
}

// FuzzDecodeEvent: any input is refused with ErrBadEvent or decoded into a kind that
// carries its ARN; nothing panics; nothing is accepted that encoding/json does not take
// for JSON, or that is not UTF-8. The seeds (run by plain go test) are the
// sample events, aws-lambda-go's authorizer samples and the bad events above.
func FuzzDecodeEvent(f *testing.F) {
	for _, name := range []string{restEvent, restProEvent, httpEvent} {
		f.Add(samples.Read(f, name))
	}
	for _, name := range []string{"apigw-custom-auth-request-type-request.json", "apigw-v2-custom-authorizer-v1-request.json", "apigw-v2-custom-authorizer-v2-request.json", "apigw-custom-auth-request.json"} {
		f.Add(samples.ReadLambdaEvent(f, name))
	}
	for _, tc := range badEvents {
		f.Add([]byte(tc.event))
	}
	ids := testResolver(f)
	f.Fuzz(func(t *testing.T, raw []byte) {
		ev, err := decodeEvent(raw, ids)
		if err != nil {
			if !errors.Is(err, ErrBadEvent) {
				t.Fatalf("error %v does not wrap ErrBadEvent", err)
			}
			return
		}
		if ev.kind > kindHTTPV2 || ev.arn == "" {
			t.Fatalf("decoded kind %d, ARN %q", ev.kind, ev.arn)
		}
		if !json.Valid(raw) || !utf8.Valid(raw) {
			t.Fatalf("accepted text that is not valid JSON in UTF-8: %q", raw)
		}
	})
}

// testResolver reads the default API key header.
func testResolver(t testing.TB) identity.Resolver {
	r, err := identity.NewResolver(settings.DefaultAPIKeyHeader, settings.DefaultIPv6Prefix)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func TestStripStage(t *testing.T) {
	const api = "arn:aws:execute-api:us-east-1:123456789012:f6g7h8i9j0/"
	tests := []struct{ name, path, stage, arn, want string }{
		{"default stage", "/orders/42", "$default", api + "$default/GET/orders/42", "/orders/42"},
		{"no stage", "/orders/42", "", api + "/GET/orders/42", "/orders/42"},
		{"named stage", "/prod/orders/42", "prod", api + "prod/GET/orders/42", "/orders/42"},
		{"stage root", "/prod", "prod", api + "prod/GET/", "/"},
		{"stage root, an ARN without a path", "/prod", "prod", api + "prod/GET", "/"},
		{"stage is only a prefix of the segment", "/production/orders", "prod", api + "prod/GET/production/orders", "/production/orders"},
		{"path without the stage", "/orders", "prod", api + "prod/GET/orders", "/orders"},
		{"a first segment named like the stage, the path the ARN names", "/prod/orders", "prod", api + "prod/GET/prod/orders", "/prod/orders"},
		{"the stage before a segment of its name", "/prod/prod/orders", "prod", api + "prod/GET/prod/orders", "/prod/orders"},
		{"an ARN spelling the path otherwise", "/prod/a%2Fb", "prod", api + "prod/GET/a/b", "/a%2Fb"},
		{"an ARN without a stage and method", "/prod/orders", "prod", "arn", "/orders"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := stripStage(tc.path, tc.stage, tc.arn); got != tc.want {
				t.Fatalf("stripStage(%q, %q, %q) = %q, want %q", tc.path, tc.stage, tc.arn, got, tc.want)
			}
		})
	}
}
