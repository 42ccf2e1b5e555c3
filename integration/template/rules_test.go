package template_test

// One list of rules, and every template held to each: the limiter (template.yaml) and
// the examples of an API of your own attached to it. A rule about a part (a REST API,
// an HTTP API, an alarm) holds for each such part the template has.

import (
	"fmt"
	"iter"
	"maps"
	"os/exec"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/bucketgate/bucketgate/internal/testkit"
)

// templates are the repository's SAM templates, from its root.
var templates = []string{limiter, "examples/rest-api.yaml", "examples/http-api.yaml"}

// rules hold for every template.
var rules = []struct {
	name  string
	check func(t *testing.T, path string)
}{
	{"Lint", checkLint},
	{"NoRequiredParameter", checkDefaults},
	{"AuthorizersNeverCache", checkAuthorizersNeverCache},
	{"AuthorizerPermissions", checkAuthorizerPermissions},
	{"EveryPathRouted", checkEveryPathRouted},
	{"GatewayResponses", checkGatewayResponses},
	{"RESTIntegrationRequestHeaders", checkRESTIntegrationRequestHeaders},
	{"HTTPAPIResponseHeaders", checkHTTPAPIResponseHeaders},
	{"HTTPAPIRequestHeaders", checkHTTPAPIRequestHeaders},
	{"Metrics", checkMetrics},
	{"Imports", checkImports},
	{"AccessLogs", checkAccessLogs},
	{"StageThrottling", checkStageThrottling},
	{"RESTTLS", checkRESTTLS},
	{"LogGroups", checkLogGroups},
}

func TestTemplates(t *testing.T) {
	for _, path := range templates {
		for _, r := range rules {
			t.Run(path+"/"+r.name, func(t *testing.T) {
				t.Parallel() // the slow ones run cfn-lint or the SAM transform
				r.check(t, path)
			})
		}
	}
}

// checkLint: cfn-lint (with the SAM translator it bundles) passes the template with no
// error and no warning. cfn-lint comes from PyPI (pip install cfn-lint); this machine's
// image ships it and .ci/run finds it, so CI fails where it is missing, and a laptop
// without it skips loudly.
func checkLint(t *testing.T, path string) {
	cmd := exec.Command(testkit.LookPath(t, "cfn-lint"), path)
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil || len(out) > 0 {
		t.Fatalf("cfn-lint %s: %v\n%s", path, err, out)
	}
}

// checkDefaults: every parameter has a default, so that the template deploys with none
// given; combinations that cannot work are the Rules' to refuse.
func checkDefaults(t *testing.T, path string) {
	params := section(readTemplate(t, path), "Parameters")
	for name, p := range params {
		if _, ok := p.(map[string]any)["Default"]; !ok {
			t.Errorf("parameter %s has no Default: sam deploy would require it", name)
		}
	}
}

// checkAuthorizerPermissions: for every authorizer of every API, the deployed template
// (after the SAM transform) lets API Gateway invoke the authorizer's function, for that
// API's authorizers, whenever the API exists.
func checkAuthorizerPermissions(t *testing.T, path string) {
	resources := section(samTranslate(t, path), "Resources")
	for id, r := range apisOf(t, resources) {
		var authorizers []map[string]any
		find(r["Properties"], "x-amazon-apigateway-authorizer", &authorizers)
		if len(authorizers) == 0 {
			t.Errorf("%s has no authorizer", id)
		}
		for _, a := range authorizers {
			uri, _ := a["authorizerUri"].(map[string]any)
			sub, _ := uri["Fn::Sub"].([]any)
			if len(sub) != 2 {
				t.Fatalf("%s: authorizerUri %v: want SAM's Fn::Sub of the function's ARN", id, uri)
			}
			vars, _ := sub[1].(map[string]any)
			function, ok := vars["__FunctionArn__"]
			if !ok {
				t.Fatalf("%s: authorizerUri %v: want SAM's Fn::Sub of the function's ARN", id, uri)
			}
			if !slices.ContainsFunc(slices.Collect(maps.Values(resources)), func(p any) bool { return grants(p, function, id, r["Condition"]) }) {
				t.Errorf("%s: no lambda:InvokeFunction permission for apigateway.amazonaws.com on %v, for its authorizers", id, function)
			}
		}
	}
}

// apisOf yields the REST and HTTP APIs among resources (a template after the SAM
// transform), by logical id, and fails t when there is none.
func apisOf(t *testing.T, resources map[string]any) iter.Seq2[string, map[string]any] {
	t.Helper()
	apis := map[string]map[string]any{}
	for id, r := range resources {
		if r, _ := r.(map[string]any); r["Type"] == "AWS::ApiGateway::RestApi" || r["Type"] == "AWS::ApiGatewayV2::Api" {
			apis[id] = r
		}
	}
	if len(apis) == 0 {
		t.Fatal("no API after the SAM transform")
	}
	return maps.All(apis)
}

// checkEveryPathRouted: every API, as deployed (after the SAM transform), routes the
// root path too. API Gateway's greedy /{proxy+} matches every path but / (a REST API
// answers / with 403 "Missing Authentication Token", an HTTP API with 404), so each API
// declares ANY / beside ANY /{proxy+}, with the same authorizer and the same integration,
// less the proxy path variable.
func checkEveryPathRouted(t *testing.T, path string) {
	for id, r := range apisOf(t, section(samTranslate(t, path), "Resources")) {
		props, _ := r["Properties"].(map[string]any)
		body, _ := props["Body"].(map[string]any)
		paths, _ := body["paths"].(map[string]any)
		anyMethod := func(p string) map[string]any {
			route, _ := paths[p].(map[string]any)
			m, _ := route["x-amazon-apigateway-any-method"].(map[string]any)
			return m
		}
		root, proxy := anyMethod("/"), anyMethod("/{proxy+}")
		if root == nil || proxy == nil {
			t.Errorf("%s routes %v: want ANY / and ANY /{proxy+}, so that a request for / reaches the authorizer and the backend", id, slices.Sorted(maps.Keys(paths)))
			continue
		}
		if root["security"] == nil || !reflect.DeepEqual(root["security"], proxy["security"]) {
			t.Errorf("%s: ANY / has the authorizers %v, ANY /{proxy+} %v: want the same", id, root["security"], proxy["security"])
		}
		if got, want := root["x-amazon-apigateway-integration"], withoutProxyVariable(proxy["x-amazon-apigateway-integration"]); !reflect.DeepEqual(got, want) {
			t.Errorf("%s: ANY / integrates\n%v\nwant ANY /{proxy+}'s for /:\n%v", id, got, want)
		}
	}
}

// withoutProxyVariable returns v, an integration of /{proxy+}, as the integration of /
// would be: no request parameter for the proxy path variable, and /{proxy} in a URI
// (or a Fn::Sub of one) as /.
func withoutProxyVariable(v any) any {
	switch v := v.(type) {
	case map[string]any:
		out := map[string]any{}
		for k, e := range v {
			if k != "integration.request.path.proxy" {
				out[k] = withoutProxyVariable(e)
			}
		}
		return out
	case []any:
		out := make([]any, len(v))
		for i, e := range v {
			out[i] = withoutProxyVariable(e)
		}
		return out
	case string:
		return strings.ReplaceAll(v, "/{proxy}", "/")
	}
	return v
}

// grants reports whether the resource r (transformed) lets API Gateway invoke function
// as an authorizer of the API api, under the API's condition.
func grants(r any, function any, api string, condition any) bool {
	m, _ := r.(map[string]any)
	p, _ := m["Properties"].(map[string]any)
	source := fmt.Sprint(p["SourceArn"])
	return m["Type"] == "AWS::Lambda::Permission" && m["Condition"] == condition &&
		p["Action"] == "lambda:InvokeFunction" && p["Principal"] == "apigateway.amazonaws.com" &&
		fmt.Sprint(p["FunctionName"]) == fmt.Sprint(function) &&
		strings.Contains(source, "/authorizers/*") && strings.Contains(source, fmt.Sprint(map[string]any{"Ref": api}))
}

// find appends every value of key found in v, at any depth, that is a mapping.
func find(v any, key string, out *[]map[string]any) {
	switch v := v.(type) {
	case map[string]any:
		for k, e := range v {
			if m, ok := e.(map[string]any); ok && k == key {
				*out = append(*out, m)
				continue
			}
			find(e, key, out)
		}
	case []any:
		for _, e := range v {
			find(e, key, out)
		}
	}
}

// checkImports: every Fn::ImportValue names, with the template's defaults, an export of
// the stack that samconfig.toml deploys template.yaml as: a template attached to the
// limiter finds it as deployed.
func checkImports(t *testing.T, path string) {
	doc := readTemplate(t, path)
	var imports []map[string]any
	find(doc, "Fn::ImportValue", &imports)
	if len(imports) == 0 {
		return
	}
	d := deploy(t, doc)
	exports := limiterExports(t)
	for _, imp := range imports {
		text, ok := imp["Fn::Sub"].(string)
		if !ok {
			t.Fatalf("Fn::ImportValue %v: want a Fn::Sub of the limiter stack's name", imp)
		}
		name := subRef.ReplaceAllStringFunc(text, func(ref string) string {
			return fmt.Sprint(d.params[subRef.FindStringSubmatch(ref)[1]])
		})
		if !exports[name] {
			t.Errorf("imports %s, which the limiter stack does not export (it exports %v)", name, slices.Sorted(maps.Keys(exports)))
		}
	}
}

// limiterExports returns the names template.yaml exports when deployed as the stack that
// samconfig.toml names.
func limiterExports(t *testing.T) map[string]bool {
	t.Helper()
	stack := regexp.MustCompile(`(?m)^stack_name = "([^"]+)"$`).FindStringSubmatch(readFile(t, "samconfig.toml"))
	if stack == nil {
		t.Fatal("samconfig.toml names no stack_name")
	}
	exports := map[string]bool{}
	for name, o := range deploy(t, readTemplate(t, limiter)).outputs(t) {
		export, _ := o["Export"].(map[string]any)
		sub, _ := export["Name"].(map[string]any)
		text, _ := sub["Fn::Sub"].(string)
		if text != "${AWS::StackName}-"+name {
			t.Fatalf("%s: output %s: export %v, want !Sub ${AWS::StackName}-%s", limiter, name, export, name)
		}
		exports[stack[1]+"-"+name] = true
	}
	return exports
}
