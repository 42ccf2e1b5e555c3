package authorizer

import (
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/bucketgate/bucketgate/internal/testkit/samples"
	"github.com/bucketgate/bucketgate/ratelimitheaders"
)

// withPath returns the event with its request path set to path, as API Gateway sends
// it: the REST (and HTTP API payload 1.0) event's path and the path part of its
// methodArn, or the HTTP API payload 2.0 event's rawPath, requestContext.http.path and
// the path part of its routeArn.
func withPath(t *testing.T, event []byte, path string) []byte {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(event, &m); err != nil {
		t.Fatal(err)
	}
	arnField := "methodArn"
	if _, ok := m["rawPath"]; ok {
		m["rawPath"] = path
		m["requestContext"].(map[string]any)["http"].(map[string]any)["path"] = path
		arnField = "routeArn"
	} else {
		m["path"] = path
	}
	// arn:aws:execute-api:<region>:<account>:<api>/<stage>/<method>/<path>
	parts := strings.SplitN(m[arnField].(string), "/", 4)
	if len(parts) < 3 {
		t.Fatalf("%s %q has no stage and method", arnField, m[arnField])
	}
	m[arnField] = strings.Join(parts[:3], "/") + path
	out, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// Every spelling of a path that a backend resolves to a route's resource spends the
// route's cost through the real handler, for REST and HTTP API events alike: the table of
// samples.PathVariants, sent as a route /export costing 5.
func TestRouteVariantsThroughTheHandler(t *testing.T) {
	cfg := mustParse(t, "defaultPlan: free\nplans: {free: [{name: burst, capacity: 10, refillPerSecond: 1}]}\nroutes: [{path: /export, cost: 5}]")
	for _, event := range []string{restEvent, httpEvent} {
		for _, v := range samples.PathVariants(t) {
			f := newFixture(t, options{config: cfg})
			a := f.mustInvoke(t, withPath(t, samples.Read(t, event), v.Path))
			want := int64(9)
			if v.Match {
				want = 5
			}
			if got := a.num(t, ratelimitheaders.KeyRemaining); got != want {
				t.Errorf("%s %q: remaining %d after one request, want %d (matches /export: %v)", event, v.Path, got, want, v.Match)
			}
		}
	}
}

// API Gateway takes a Resource of at most 512 characters in an authorizer's policy,
// whereas a method ARN, which names the request's path, may be up to 1600 bytes long: a
// longer path than that is answered with the ARN cut and a wildcard that still covers
// it (and the same method on the same stage only), Allow and Deny alike, never with a
// Resource API Gateway refuses.
func TestPolicyResourceOfALongPath(t *testing.T) {
	const maxResource = 512
	tests := []struct {
		name    string
		event   []byte
		arnLen  int    // the methodArn's length in bytes, with the path made of fill
		fill    string // what the path repeats
		limited bool   // the request is denied
	}{
		{"REST, an ARN of 512 bytes: as it is", samples.Read(t, restEvent), 512, "a", false},
		{"REST, an ARN of 513 bytes: cut", samples.Read(t, restEvent), 513, "a", false},
		{"REST, an ARN of 1600 bytes: cut", samples.Read(t, restEvent), 1600, "a", false},
		{"REST, limited, an ARN of 1600 bytes: cut", samples.Read(t, restEvent), 1600, "a", true},
		{"REST, a path of 2-byte characters: cut between characters", samples.Read(t, restEvent), 1001, "é", false},
		{"HTTP API payload 1.0, an ARN of 1600 bytes: cut", samples.ReadLambdaEvent(t, "apigw-v2-custom-authorizer-v1-request.json"), 1600, "a", false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var orig struct{ MethodArn string }
			if err := json.Unmarshal(withPath(t, tc.event, "/"), &orig); err != nil {
				t.Fatal(err)
			}
			prefix := strings.TrimSuffix(orig.MethodArn, "/") // ...:<api>/<stage>/<method>
			path := "/" + strings.Repeat(tc.fill, (tc.arnLen-len(prefix)-1)/len(tc.fill))
			arn := prefix + path
			ev := withPath(t, tc.event, path)
			f := newFixture(t, options{})
			a := f.mustInvoke(t, ev)
			for tc.limited && a.allowed(t) {
				a = f.mustInvoke(t, ev)
			}
			if a.allowed(t) == tc.limited {
				t.Fatalf("allowed %v, want %v: %s", a.allowed(t), !tc.limited, a.raw)
			}
			res := a.PolicyDocument.Statement[0].Resource
			if len(res) != 1 {
				t.Fatalf("resources %q, want one", res)
			}
			got := res[0]
			switch {
			case len(arn) <= maxResource:
				if got != arn {
					t.Errorf("resource %q, want the method ARN %q", got, arn)
				}
			case len(got) > maxResource || !utf8.ValidString(got):
				t.Errorf("resource of %d bytes (valid UTF-8: %v), want at most %d", len(got), utf8.ValidString(got), maxResource)
			case !strings.HasSuffix(got, "*") || !strings.HasPrefix(arn, strings.TrimSuffix(got, "*")):
				t.Errorf("resource %q does not cover the method ARN %q", got, arn)
			case !strings.HasPrefix(got, prefix+"/") || len(got) < maxResource-len(tc.fill):
				t.Errorf("resource %q is wider than it must be (a prefix of %d bytes of the method ARN)", got, maxResource-1)
			}
		})
	}
}

// An HTTP API event's routes match the path the backend is handed: its rawPath, never
// requestContext.http.path where the two differ (a decoded '#' there would end the path
// before the "/.." that takes the backend to /export), without the stage when the path
// has it in front (the execute-api endpoint's named stage) and with a first segment
// named like the stage when the path is the one the ARN names (a custom domain, whose
// path carries no stage). The routes /export cost 3 and /v1/export 5, of a burst of 10.
func TestHTTPAPIPathAsTheBackendGetsIt(t *testing.T) {
	cfg := mustParse(t, "defaultPlan: free\nplans: {free: [{name: burst, capacity: 10, refillPerSecond: 1}]}\nroutes: [{path: /export, cost: 3}, {path: /v1/export, cost: 5}]")
	const arnPrefix = "arn:aws:execute-api:us-east-1:123456789012:f6g7h8i9j0/"
	tests := []struct {
		name                      string
		event                     string
		stage, path, ctxPath, arn string // ctxPath: requestContext.http.path (payload 2.0)
		want                      int64  // remaining after one request
	}{
		{"2.0: rawPath as sent, http.path decoded", httpEvent, "$default", "/x%23/../export", "/x#/../export", "$default/GET/x%23/../export", 7},
		{"2.0: execute-api, named stage", httpEvent, "v1", "/v1/export", "/v1/export", "v1/GET/export", 7},
		{"2.0: execute-api, named stage before a segment of its name", httpEvent, "v1", "/v1/v1/export", "/v1/v1/export", "v1/GET/v1/export", 5},
		{"2.0: custom domain, a first segment named like the stage", httpEvent, "v1", "/v1/export", "/v1/export", "v1/GET/v1/export", 5},
		{"1.0: execute-api, named stage", "1.0", "v1", "/v1/export", "", "v1/GET/export", 7},
		{"1.0: custom domain, a first segment named like the stage", "1.0", "v1", "/v1/export", "", "v1/GET/v1/export", 5},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var raw []byte
			if tc.event == "1.0" {
				raw = samples.ReadLambdaEvent(t, "apigw-v2-custom-authorizer-v1-request.json")
			} else {
				raw = samples.Read(t, tc.event)
			}
			var m map[string]any
			if err := json.Unmarshal(raw, &m); err != nil {
				t.Fatal(err)
			}
			rc := m["requestContext"].(map[string]any)
			rc["stage"] = tc.stage
			if tc.event == "1.0" {
				m["path"], m["methodArn"] = tc.path, arnPrefix+tc.arn
			} else {
				m["rawPath"], m["routeArn"] = tc.path, arnPrefix+tc.arn
				rc["http"].(map[string]any)["path"] = tc.ctxPath
			}
			ev, err := json.Marshal(m)
			if err != nil {
				t.Fatal(err)
			}
			a := newFixture(t, options{config: cfg}).mustInvoke(t, ev)
			if got := a.num(t, ratelimitheaders.KeyRemaining); got != tc.want {
				t.Errorf("remaining %d after one request, want %d", got, tc.want)
			}
		})
	}
}
