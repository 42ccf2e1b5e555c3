package template_test

// The rate-limit headers of allowed calls, by the paths API Gateway offers: the HTTP
// API's response parameter mapping, the REST API's HTTP integration request headers,
// and the sample backend's own code (a Lambda proxy integration). Each must give the
// headers package ratelimitheaders gives, from the context keys the real authorizer sets.

import (
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/alicebob/miniredis/v2"
	"github.com/aws/aws-lambda-go/events"

	"github.com/bucketgate/bucketgate/internal/app"
	"github.com/bucketgate/bucketgate/internal/settings"
	"github.com/bucketgate/bucketgate/internal/testkit"
	"github.com/bucketgate/bucketgate/internal/testkit/samples"
	"github.com/bucketgate/bucketgate/ratelimitheaders"
)

// headerMapping returns, for each header ratelimitheaders.Headers writes from ctx, the
// mapping expression of the context key it comes from: prefix followed by the key. A
// boolean key (degraded) counts as true, so that its header is mapped: API Gateway
// cannot leave a mapped header out, and sends its false too.
func headerMapping(t *testing.T, ctx map[string]any, prefix string) map[string]string {
	t.Helper()
	unique := map[string]any{} // every key of ctx with a value no other key has
	keyOf := map[string]string{}
	for i, k := range slices.Sorted(maps.Keys(ctx)) {
		v := any(fmt.Sprintf("v%d", i))
		switch n := ctx[k].(type) {
		case float64:
			v = float64(1000 + i)
			if n == 0 { // a zero stays zero: Retry-After is for denials only
				v = 0.0
			}
		case bool:
			v = true
		}
		unique[k], keyOf[fmt.Sprint(v)] = v, k
	}
	m := map[string]string{}
	for header, v := range ratelimitheaders.Headers(unique) {
		m[header] = prefix + keyOf[v]
	}
	if len(m) == 0 {
		t.Fatalf("no headers from context %v", ctx)
	}
	return m
}

// definitionBody returns the OpenAPI definition of the API resource id, with its
// intrinsic functions as the plain values they hold (a !If as its list).
func definitionBody(t *testing.T, tpl samTemplate, id string) map[string]any {
	t.Helper()
	var p struct {
		DefinitionBody map[string]any `yaml:"DefinitionBody"`
	}
	tpl.Resources[id].properties(t, &p)
	if p.DefinitionBody == nil {
		t.Fatalf("%s has no DefinitionBody", id)
	}
	return p.DefinitionBody
}

// integration returns the x-amazon-apigateway-integration of the ANY method of
// /{proxy+} in an OpenAPI definition.
func integration(t *testing.T, body map[string]any) any {
	t.Helper()
	paths, _ := body["paths"].(map[string]any)
	path, _ := paths["/{proxy+}"].(map[string]any)
	method, _ := path["x-amazon-apigateway-any-method"].(map[string]any)
	in, ok := method["x-amazon-apigateway-integration"]
	if !ok {
		t.Fatalf("no integration for ANY /{proxy+} in %v", body)
	}
	return in
}

// stringMap returns the string values of a YAML mapping, by key.
func stringMap(t *testing.T, v any) map[string]string {
	t.Helper()
	m, ok := v.(map[string]any)
	if !ok {
		t.Fatalf("%v is not a mapping", v)
	}
	out := map[string]string{}
	for k, v := range m {
		out[k] = fmt.Sprint(v)
	}
	return out
}

// checkHTTPAPIResponseHeaders: each HTTP API's integration maps the rate-limit headers
// of every status code it lists (200 among them) from exactly the context keys the real
// authorizer sets on an allowed call, as ratelimitheaders writes them.
func checkHTTPAPIResponseHeaders(t *testing.T, path string) {
	tpl := loadTemplate(t, path)
	allowed, _ := decidedContexts(t)
	want := map[string]string{}
	for h, src := range headerMapping(t, allowed, "$context.authorizer.") {
		want["overwrite:header."+h] = src
	}
	for key := range maps.Values(want) {
		if _, set := allowed[strings.TrimPrefix(key, "$context.authorizer.")]; !set {
			t.Errorf("%s: the authorizer does not set it on an allowed call", key)
		}
	}
	for id, r := range tpl.Resources {
		if r.Type != "AWS::Serverless::HttpApi" {
			continue
		}
		in, ok := integration(t, definitionBody(t, tpl, id)).(map[string]any)
		if !ok {
			t.Fatalf("%s: the integration is not a mapping", id)
		}
		byStatus, ok := in["responseParameters"].(map[string]any)
		if !ok || byStatus["200"] == nil {
			t.Fatalf("%s: responseParameters %v: want the status codes the backend answers, 200 among them", id, in["responseParameters"])
		}
		for status, params := range byStatus {
			if got := stringMap(t, params); !maps.Equal(got, want) {
				t.Errorf("%s: status %s: response parameters %v, want %v", id, status, got, want)
			}
		}
	}
}

// backendSecret is the logical id of the secret whose value a REST API sends to its HTTP
// backend as ratelimitheaders.HeaderGatewaySecret.
const backendSecret = "BackendSecret"

// heldHeaders returns the request headers that carry what an allowed request holds for
// the backend to settle or release, by the context key each comes from, checking that
// the real authorizer sets each key on allowed, an allowed call's context.
func heldHeaders(t *testing.T, allowed map[string]any) map[string]string {
	t.Helper()
	held := map[string]string{ratelimitheaders.HeaderReservation: ratelimitheaders.KeyReservation, ratelimitheaders.HeaderLease: ratelimitheaders.KeyLease}
	for _, key := range held {
		if _, set := allowed[key].(string); !set {
			t.Errorf("context %s: the authorizer does not set it on an allowed call: %v", key, allowed)
		}
	}
	return held
}

// checkHTTPAPIRequestHeaders: each HTTP integration (http_proxy) of an HTTP API sends
// the request's reservation and lease as request headers (HeaderReservation,
// HeaderLease), overwriting any a client sent, from exactly the context keys the real
// authorizer sets; a Lambda integration reads them from its event's context instead
// (ratelimitheaders.ContextReservation), and has no request parameters.
func checkHTTPAPIRequestHeaders(t *testing.T, path string) {
	tpl := loadTemplate(t, path)
	allowed, _ := decidedContexts(t)
	want := map[string]string{}
	for h, key := range heldHeaders(t, allowed) {
		want["overwrite:header."+h] = "$context.authorizer." + key
	}
	for id, r := range tpl.Resources {
		if r.Type != "AWS::Serverless::HttpApi" {
			continue
		}
		in, _ := integration(t, definitionBody(t, tpl, id)).(map[string]any)
		switch in["type"] {
		case "http_proxy":
			if got := stringMap(t, in["requestParameters"]); !maps.Equal(got, want) {
				t.Errorf("%s: request parameters %v, want %v", id, got, want)
			}
		case "aws_proxy":
			if in["requestParameters"] != nil {
				t.Errorf("%s: a Lambda integration with request parameters %v", id, in["requestParameters"])
			}
		default:
			t.Errorf("%s: integration type %v: want http_proxy or aws_proxy", id, in["type"])
		}
	}
}

// checkRESTIntegrationRequestHeaders: each HTTP integration of a REST API (template.yaml:
// with HttpBackendUrl set; an !If whose other branch is the sample backend) sends the
// rate-limit values as request headers named like the response headers, from exactly the
// context keys the real authorizer sets on an allowed call, the request's reservation and
// lease (HeaderReservation, HeaderLease), and the header
// ratelimitheaders.FromGateway checks: a static value (quoted) that CloudFormation
// resolves from the template's own generated secret, of letters and digits alone (a
// quote would end the value).
func checkRESTIntegrationRequestHeaders(t *testing.T, path string) {
	tpl := loadTemplate(t, path)
	allowed, _ := decidedContexts(t)
	want := map[string]string{
		"integration.request.path.proxy":                                     "method.request.path.proxy",
		"integration.request.header." + ratelimitheaders.HeaderGatewaySecret: "'{{resolve:secretsmanager:${" + backendSecret + "}}}'",
	}
	for h, src := range headerMapping(t, allowed, "context.authorizer.") {
		want["integration.request.header."+h] = src
	}
	for h, key := range heldHeaders(t, allowed) {
		want["integration.request.header."+h] = "context.authorizer." + key
	}
	if secret, ok := tpl.Resources[backendSecret]; slices.ContainsFunc(slices.Collect(maps.Values(tpl.Resources)), func(r samResource) bool { return r.Type == "AWS::Serverless::Api" }) {
		var p struct {
			GenerateSecretString map[string]any `yaml:"GenerateSecretString"`
		}
		if ok {
			secret.properties(t, &p)
		}
		g := p.GenerateSecretString
		if !ok || secret.Type != "AWS::SecretsManager::Secret" || g["ExcludePunctuation"] != true || g["IncludeSpace"] != false || g["PasswordLength"].(int) < 32 {
			t.Errorf("%s: %v %+v: want a generated secret of 32 letters and digits or more", backendSecret, secret.Type, g)
		}
	}
	for id, r := range tpl.Resources {
		if r.Type != "AWS::Serverless::Api" {
			continue
		}
		in := integration(t, definitionBody(t, tpl, id))
		httpProxy, ok := in.(map[string]any)
		if choice, isIf := in.([]any); isIf {
			if len(choice) != 3 || choice[0] != "HasHttpBackend" {
				t.Fatalf("%s: the integration is %v, want !If [HasHttpBackend, HTTP proxy, sample backend]", id, choice)
			}
			httpProxy, ok = choice[1].(map[string]any)
			if lambdaProxy, _ := choice[2].(map[string]any); lambdaProxy["type"] != "aws_proxy" {
				t.Fatalf("%s: without HttpBackendUrl, integration %v: want the sample backend (aws_proxy)", id, lambdaProxy)
			}
		}
		if !ok || httpProxy["type"] != "http_proxy" {
			t.Fatalf("%s: integration %v: want an http_proxy", id, httpProxy)
		}
		if got := stringMap(t, httpProxy["requestParameters"]); !maps.Equal(got, want) {
			t.Errorf("%s: request parameters %v, want %v", id, got, want)
		}
	}
}

// degradedContext returns the authorizer context of a request the real authorizer let
// through undecided: failing open, Redis unreachable.
func degradedContext(t *testing.T) map[string]any {
	t.Helper()
	m := miniredis.RunT(t)
	addr := m.Addr()
	m.Close()
	env := map[string]string{settings.EnvRedisAddr: addr, settings.EnvTimeoutMS: "50", settings.EnvFailMode: settings.FailOpen}
	h, _, err := app.Build(app.Authorizer, func(k string) string { return env[k] }, io.Discard, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	out, err := h.Invoke(t.Context(), samples.Read(t, "authorizer-rest.json"))
	if err != nil {
		t.Fatal(err)
	}
	var a events.APIGatewayCustomAuthorizerResponse
	if err := json.Unmarshal(out, &a); err != nil {
		t.Fatal(err)
	}
	if a.PolicyDocument.Statement[0].Effect != "Allow" || a.Context[ratelimitheaders.KeyDegraded] != true {
		t.Fatalf("answer %s: want an Allow, degraded", out)
	}
	return a.Context
}

// The sample backend's inline code (run with node, where it is installed; required in
// CI) answers a REST API event and an HTTP API event, each with the real authorizer's
// context (of an allowed call, and of one let through undecided as the limiter fails
// open) added to aws-lambda-go's sample event as API Gateway adds it, with the headers
// ratelimitheaders sets.
func TestTemplateSampleBackendHeaders(t *testing.T) {
	node := testkit.LookPath(t, "node")
	var fn struct {
		InlineCode string `yaml:"InlineCode"`
	}
	loadTemplate(t, limiter).Resources["SampleBackendFunction"].properties(t, &fn)
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "index.js"), []byte(fn.InlineCode), 0o600); err != nil {
		t.Fatal(err)
	}
	allowed, _ := decidedContexts(t)
	for decision, ctx := range map[string]map[string]any{"allowed": allowed, "degraded": degradedContext(t)} {
		var rest events.APIGatewayProxyRequest // REST APIs pass the context as strings
		if err := json.Unmarshal(samples.ReadLambdaEvent(t, "apigw-request.json"), &rest); err != nil {
			t.Fatal(err)
		}
		for k, v := range ctx {
			switch n := v.(type) {
			case float64:
				v = strconv.FormatFloat(n, 'f', -1, 64)
			case bool:
				v = strconv.FormatBool(n)
			}
			rest.RequestContext.Authorizer[k] = v
		}
		var wantREST events.APIGatewayProxyResponse
		ratelimitheaders.SetProxyResponse(&wantREST, &rest)

		var http events.APIGatewayV2HTTPRequest // HTTP APIs nest it under "lambda"
		if err := json.Unmarshal(samples.ReadLambdaEvent(t, "apigw-v2-request-lambda-authorizer.json"), &http); err != nil {
			t.Fatal(err)
		}
		maps.Copy(http.RequestContext.Authorizer.Lambda, ctx)
		var wantHTTP events.APIGatewayV2HTTPResponse
		ratelimitheaders.SetV2HTTPResponse(&wantHTTP, &http)

		for name, tc := range map[string]struct {
			event any
			want  map[string]string
		}{"REST": {rest, wantREST.Headers}, "HTTP API": {http, wantHTTP.Headers}} {
			event, err := json.Marshal(tc.event)
			if err != nil {
				t.Fatal(err)
			}
			script := `require("./index.js").handler(JSON.parse(require("fs").readFileSync(0, "utf8"))).then(r => process.stdout.write(JSON.stringify(r)))`
			cmd := exec.Command(node, "-e", script)
			cmd.Dir, cmd.Stdin = dir, strings.NewReader(string(event))
			out, err := cmd.Output()
			if err != nil {
				t.Fatalf("%s, %s: node: %v", decision, name, err)
			}
			var resp struct {
				StatusCode int               `json:"statusCode"`
				Headers    map[string]string `json:"headers"`
			}
			if err := json.Unmarshal(out, &resp); err != nil {
				t.Fatalf("%s, %s: answer %s: %v", decision, name, out, err)
			}
			delete(resp.Headers, "content-type")
			if resp.StatusCode != 200 || len(tc.want) == 0 || !maps.Equal(resp.Headers, tc.want) {
				t.Errorf("%s, %s: %d %v, want 200 %v", decision, name, resp.StatusCode, resp.Headers, tc.want)
			}
		}
	}
}
