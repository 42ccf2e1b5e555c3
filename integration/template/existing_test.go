package template_test

import (
	"cmp"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/bucketgate/bucketgate/internal/testkit"
)

// existingAPIDoc shows, under existingAPISection, the CloudFormation that attaches the
// limiter to a REST API and to an HTTP API made some other way than the examples.
const (
	existingAPIDoc     = "examples/README.md"
	existingAPISection = "## An API you made otherwise"
)

// The templates examples/README.md shows for an API made otherwise (the console,
// CloudFormation, Terraform), whose authorizers API Gateway caches for 300 s unless told
// (the docs named SAM's ReauthorizeEvery: 0 alone), deploy what the examples deploy: each passes cfn-lint; its authorizer is
// the example's after the SAM transform (a REQUEST authorizer, result caching off and
// said so, no identity source; payload 2.0 and simple responses for an HTTP API), of the
// same export; the permission lets API Gateway invoke it for that API's authorizer
// alone; and a REST API gets the example's gateway responses, every one, as they are.
func TestExistingAPITemplates(t *testing.T) {
	blocks := yamlBlocks(t, existingAPIDoc, existingAPISection)
	tests := []struct {
		name, example, authorizerType, apiParam string
	}{
		{"REST", "examples/rest-api.yaml", "AWS::ApiGateway::Authorizer", "RestApiId"},
		{"HTTP", "examples/http-api.yaml", "AWS::ApiGatewayV2::Authorizer", "ApiId"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var doc map[string]any
			var text string
			for _, b := range blocks {
				d := parseTemplate(t, existingAPIDoc, b)
				if len(resourcesOf(d, tc.authorizerType)) > 0 {
					doc, text = d, b
				}
			}
			if doc == nil {
				t.Fatalf("%s %q shows no template with an %s", existingAPIDoc, existingAPISection, tc.authorizerType)
			}
			lintText(t, text)

			authorizers := resourcesOf(doc, tc.authorizerType)
			if len(authorizers) != 1 {
				t.Fatalf("%d resources %s, want 1", len(authorizers), tc.authorizerType)
			}
			id := slices.Collect(maps.Keys(authorizers))[0]
			props := authorizers[id]
			want := exampleAuthorizer(t, tc.example)
			got := map[string]any{
				"type":                         strings.ToLower(fmt.Sprint(cmp.Or(props["Type"], props["AuthorizerType"]))),
				"authorizerResultTtlInSeconds": props["AuthorizerResultTtlInSeconds"],
				"identitySource":               props["IdentitySource"],
			}
			if tc.name == "HTTP" {
				got["authorizerPayloadFormatVersion"] = props["AuthorizerPayloadFormatVersion"]
				got["enableSimpleResponses"] = props["EnableSimpleResponses"]
			}
			if fmt.Sprint(got) != fmt.Sprint(want) { // a YAML 0 is an int, a JSON 0 a float64
				t.Errorf("%s: %v, want %s's %v", id, got, tc.example, want)
			}
			if ttl, ok := got["authorizerResultTtlInSeconds"].(int); !ok || ttl != 0 {
				t.Errorf("%s: AuthorizerResultTtlInSeconds %v: want 0 written out (API Gateway caches for 300 s when it is left out)", id, got["authorizerResultTtlInSeconds"])
			}
			authorizer := imports(doc)
			if want := imports(readTemplate(t, tc.example)); len(authorizer) != 1 || !reflect.DeepEqual(authorizer, want) {
				t.Fatalf("imports %v, want %s's %v", authorizer, tc.example, want)
			}
			scope := fmt.Sprintf("${%s}/authorizers/${%s}", param(props[tc.apiParam]), id)
			permitted := false
			for _, p := range resourcesOf(doc, "AWS::Lambda::Permission") {
				source, _ := p["SourceArn"].(map[string]any)
				sub, _ := source["Fn::Sub"].(string)
				permitted = permitted || p["Action"] == "lambda:InvokeFunction" && p["Principal"] == "apigateway.amazonaws.com" &&
					reflect.DeepEqual(p["FunctionName"], map[string]any{"Fn::ImportValue": authorizer[0]}) && strings.HasSuffix(sub, ":"+scope)
			}
			if !permitted {
				t.Errorf("no lambda:InvokeFunction permission for apigateway.amazonaws.com on the imported authorizer with a SourceArn ending in %s (the authorizer %s of the API %s)", scope, id, param(props[tc.apiParam]))
			}

			responses := map[string]any{}
			for _, r := range resourcesOf(doc, "AWS::ApiGateway::GatewayResponse") {
				responses[fmt.Sprint(r["ResponseType"])] = map[string]any{
					"statusCode":         r["StatusCode"],
					"responseParameters": cmp.Or(r["ResponseParameters"], any(map[string]any{})),
					"responseTemplates":  r["ResponseTemplates"],
				}
			}
			if want := exampleGatewayResponses(t, tc.example); !reflect.DeepEqual(responses, want) {
				t.Errorf("gateway responses\n%v\nwant %s's\n%v", responses, tc.example, want)
			}
		})
	}
}

// yamlBlocks returns the text of every yaml code block of the section heading of the
// repository document doc, and fails t when there is none.
func yamlBlocks(t *testing.T, doc, heading string) []string {
	t.Helper()
	_, text, ok := strings.Cut(readFile(t, doc), "\n"+heading+"\n")
	if !ok {
		t.Fatalf("%s has no section %q", doc, heading)
	}
	if i := strings.Index(text, "\n## "); i >= 0 {
		text = text[:i]
	}
	var blocks []string
	for {
		var block string
		if _, text, ok = strings.Cut(text, "```yaml\n"); !ok {
			break
		}
		block, text, _ = strings.Cut(text, "```\n")
		blocks = append(blocks, block)
	}
	if len(blocks) == 0 {
		t.Fatalf("%s %q shows no yaml block", doc, heading)
	}
	return blocks
}

// lintText runs cfn-lint on the template text, which must pass with no error and no
// warning.
func lintText(t *testing.T, text string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "template.yaml")
	if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(testkit.LookPath(t, "cfn-lint"), path).CombinedOutput(); err != nil || len(out) > 0 {
		t.Fatalf("cfn-lint: %v\n%s\n%s", err, out, text)
	}
}

// resourcesOf returns the properties of doc's resources of type typ, by logical id.
func resourcesOf(doc map[string]any, typ string) map[string]map[string]any {
	out := map[string]map[string]any{}
	for id, r := range section(doc, "Resources") {
		if r, _ := r.(map[string]any); r["Type"] == typ {
			props, _ := r["Properties"].(map[string]any)
			out[id] = props
		}
	}
	return out
}

// imports returns every Fn::ImportValue of doc, in a stable order.
func imports(doc map[string]any) []map[string]any {
	var out []map[string]any
	find(doc, "Fn::ImportValue", &out)
	slices.SortFunc(out, func(a, b map[string]any) int { return strings.Compare(fmt.Sprint(a), fmt.Sprint(b)) })
	return slices.CompactFunc(out, func(a, b map[string]any) bool { return reflect.DeepEqual(a, b) })
}

// param returns the name of the parameter that v, a {"Ref": name}, refers to.
func param(v any) string {
	m, _ := v.(map[string]any)
	return fmt.Sprint(m["Ref"])
}

// exampleAuthorizer returns the x-amazon-apigateway-authorizer of the one API of the
// example after the SAM transform, less its authorizerUri.
func exampleAuthorizer(t *testing.T, example string) map[string]any {
	t.Helper()
	var authorizers []map[string]any
	find(section(samTranslate(t, example), "Resources"), "x-amazon-apigateway-authorizer", &authorizers)
	if len(authorizers) != 1 {
		t.Fatalf("%s: %d authorizers after the SAM transform, want 1", example, len(authorizers))
	}
	a := maps.Clone(authorizers[0])
	delete(a, "authorizerUri")
	if s, ok := a["identitySource"].([]any); ok && len(s) == 0 {
		a["identitySource"] = nil // none
	}
	if _, ok := a["identitySource"]; !ok {
		a["identitySource"] = nil
	}
	return a
}

// exampleGatewayResponses returns the gateway responses of the example's API after the
// SAM transform, by type: none for an HTTP API.
func exampleGatewayResponses(t *testing.T, example string) map[string]any {
	t.Helper()
	var found []map[string]any
	find(section(samTranslate(t, example), "Resources"), "x-amazon-apigateway-gateway-responses", &found)
	if len(found) == 0 {
		return map[string]any{}
	}
	return found[0]
}
