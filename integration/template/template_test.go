// Package template_test holds the repository's SAM templates to their invariants:
// template.yaml (the limiter) and the examples of an API of your own attached to it
// (examples/*.yaml). One list of rules holds for every template (rules_test.go); the
// limiter's own parts (functions, registry, VPC, Rules, metrics, logs) have tests of
// their own. It is a package of tests only; it reads the templates from the repository
// root.
package template_test

import (
	"cmp"
	"encoding/json"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode"

	"github.com/alicebob/miniredis/v2"
	"github.com/aws/aws-lambda-go/events"
	"gopkg.in/yaml.v3"

	"github.com/bucketgate/bucketgate/internal/app"
	"github.com/bucketgate/bucketgate/internal/localgw"
	"github.com/bucketgate/bucketgate/internal/settings"
	"github.com/bucketgate/bucketgate/internal/testkit/samples"
	"github.com/bucketgate/bucketgate/ratelimitheaders"
)

// root is the repository root, from this package's directory.
const root = "../.."

// limiter is the limiter's template; the examples attach an API of your own to it.
const limiter = "template.yaml"

// repoPath returns the path of the repository file path (slash-separated, from the root).
func repoPath(path string) string { return filepath.Join(root, filepath.FromSlash(path)) }

// readFile returns the content of the repository file path.
func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(repoPath(path))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// decisionTimeout is REDIS_TIMEOUT_MS for the functions the tests build: a loaded
// machine must not turn a decision into a fail-closed one.
const decisionTimeout = "2000"

// What every Go function of the template must be.
const (
	goRuntime     = "provided.al2023"
	goHandler     = "bootstrap"
	goArch        = "arm64" // Architectures value; GOARCH arm64
	goBuildMethod = "makefile"
)

// samTemplate is the part of template.yaml the tests read. Intrinsic functions (!Ref,
// !If, ...) decode as the plain values they hold.
type samTemplate struct {
	Parameters map[string]struct {
		Type          string   `yaml:"Type"`
		Default       string   `yaml:"Default"`
		AllowedValues []string `yaml:"AllowedValues"`
		// AllowedPattern is a CloudFormation (Java) regular expression; the ones here
		// are also valid RE2.
		AllowedPattern string `yaml:"AllowedPattern"`
		// ConstraintDescription is what sam deploy says of a value that breaks them.
		ConstraintDescription string `yaml:"ConstraintDescription"`
		MinValue              *int64 `yaml:"MinValue"`
		MaxValue              *int64 `yaml:"MaxValue"`
		MaxLength             *int   `yaml:"MaxLength"`
	} `yaml:"Parameters"`
	Globals struct {
		Function samFunction `yaml:"Function"`
	} `yaml:"Globals"`
	Resources map[string]samResource `yaml:"Resources"`
}

type samResource struct {
	Type     string `yaml:"Type"`
	Metadata struct {
		BuildMethod string `yaml:"BuildMethod"`
	} `yaml:"Metadata"`
	Properties yaml.Node `yaml:"Properties"`
}

type samFunction struct {
	Runtime       string   `yaml:"Runtime"`
	Handler       string   `yaml:"Handler"`
	CodeURI       string   `yaml:"CodeUri"`
	Architectures []string `yaml:"Architectures"`
	Environment   struct {
		Variables map[string]any `yaml:"Variables"`
	} `yaml:"Environment"`
	LoggingConfig samLoggingConfig `yaml:"LoggingConfig"`
}

// samLoggingConfig is a function's LoggingConfig (Lambda's logging controls).
type samLoggingConfig struct {
	LogFormat           string `yaml:"LogFormat"`
	ApplicationLogLevel string `yaml:"ApplicationLogLevel"`
	SystemLogLevel      string `yaml:"SystemLogLevel"`
}

// samAuth is the Auth property of an AWS::Serverless::Api or HttpApi.
type samAuth struct {
	Auth struct {
		DefaultAuthorizer string `yaml:"DefaultAuthorizer"`
		Authorizers       map[string]struct {
			FunctionPayloadType string         `yaml:"FunctionPayloadType"`
			Identity            map[string]any `yaml:"Identity"`
		} `yaml:"Authorizers"`
	} `yaml:"Auth"`
}

// allowedPattern returns the AllowedPattern of the limiter template's parameter name,
// compiled; it fails the test when the parameter has none, or one that does not compile.
func allowedPattern(t *testing.T, name string) *regexp.Regexp {
	t.Helper()
	p := loadTemplate(t, limiter).Parameters[name]
	pattern, err := regexp.Compile(p.AllowedPattern)
	if p.AllowedPattern == "" || err != nil {
		t.Fatalf("%s: AllowedPattern %q (%v): want the values the functions accept", name, p.AllowedPattern, err)
	}
	return pattern
}

// settingsWith loads the functions' settings with the one variable name set to value,
// as a parameter of the template sets it, and every other variable unset.
func settingsWith(name, value string) (settings.Settings, error) {
	return settings.Load(func(k string) string {
		if k == name {
			return value
		}
		return ""
	})
}

// loadTemplate returns the template at path (from the repository root).
func loadTemplate(t *testing.T, path string) samTemplate {
	t.Helper()
	var tpl samTemplate
	if err := yaml.Unmarshal([]byte(readFile(t, path)), &tpl); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return tpl
}

// properties decodes the resource's properties into v.
func (r samResource) properties(t *testing.T, v any) {
	t.Helper()
	if err := r.Properties.Decode(v); err != nil {
		t.Fatalf("properties: %v", err)
	}
}

// function returns the function resource's properties with Globals applied as SAM
// applies them: a scalar of the function replaces the global one, lists are appended
// to the global list, environment maps are merged.
func (tpl samTemplate) function(t *testing.T, r samResource) samFunction {
	t.Helper()
	var own samFunction
	r.properties(t, &own)
	g := tpl.Globals.Function
	f := samFunction{
		Runtime:       cmp.Or(own.Runtime, g.Runtime),
		Handler:       cmp.Or(own.Handler, g.Handler),
		CodeURI:       cmp.Or(own.CodeURI, g.CodeURI),
		Architectures: slices.Concat(g.Architectures, own.Architectures),
		LoggingConfig: cmp.Or(own.LoggingConfig, g.LoggingConfig),
	}
	f.Environment.Variables = maps.Clone(g.Environment.Variables)
	if f.Environment.Variables == nil {
		f.Environment.Variables = map[string]any{}
	}
	maps.Copy(f.Environment.Variables, own.Environment.Variables)
	return f
}

// logicalID is the template's logical id of the function called name.
func logicalID(name string) string {
	r := []rune(name)
	return string(unicode.ToUpper(r[0])) + string(r[1:]) + "Function"
}

// goFunctions returns the function names: the directories under functions/, which
// must be the functions app.Functions lists.
func goFunctions(t *testing.T) []string {
	t.Helper()
	entries, err := os.ReadDir(repoPath("functions"))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		if e.IsDir() {
			names = append(names, e.Name())
		}
	}
	if want := slices.Sorted(maps.Keys(app.Functions)); !slices.Equal(names, want) {
		t.Fatalf("functions/ holds %v, app.Functions lists %v", names, want)
	}
	return names
}

// operatorFunction is the logical id of the operator function: the check function's
// code, deployed a second time with every operation enabled.
const operatorFunction = "OperatorFunction"

// deployedGoFunctions returns the Go functions the template deploys, by logical id,
// each with the function whose code it runs: one per directory under functions/, and
// the operator function.
func deployedGoFunctions(t *testing.T) map[string]app.Function {
	t.Helper()
	out := map[string]app.Function{operatorFunction: app.Check}
	for _, name := range goFunctions(t) {
		out[logicalID(name)] = app.Functions[name]
	}
	return out
}

// Each Go function is deployed as a provided.al2023 arm64 bootstrap built by its
// Makefile target, and the target builds the main package of the function whose code
// it runs, the way Lambda needs it; no other function is built by the Makefile.
func TestTemplateGoFunctions(t *testing.T) {
	tpl := loadTemplate(t, limiter)
	deployed := deployedGoFunctions(t)
	for _, id := range slices.Sorted(maps.Keys(deployed)) {
		name := deployed[id].Name
		t.Run(id, func(t *testing.T) {
			r, ok := tpl.Resources[id]
			if !ok || r.Type != "AWS::Serverless::Function" {
				t.Fatalf("no AWS::Serverless::Function %s for functions/%s", id, name)
			}
			f := tpl.function(t, r)
			if f.Runtime != goRuntime || f.Handler != goHandler || !slices.Equal(f.Architectures, []string{goArch}) || f.CodeURI != "." {
				t.Errorf("Runtime %q Handler %q Architectures %v CodeUri %q; want %s, %s, [%s], .", f.Runtime, f.Handler, f.Architectures, f.CodeURI, goRuntime, goHandler, goArch)
			}
			if r.Metadata.BuildMethod != goBuildMethod {
				t.Errorf("Metadata.BuildMethod %q, want %s", r.Metadata.BuildMethod, goBuildMethod)
			}
			cmd := exec.Command("make", "--no-print-directory", "-n", "build-"+id, "ARTIFACTS_DIR=/artifacts", "VERSION=v0.0.0-recipe")
			cmd.Dir = root
			out, err := cmd.CombinedOutput()
			if err != nil {
				t.Fatalf("make -n build-%s: %v\n%s", id, err, out)
			}
			recipe := string(out)
			for _, want := range []string{"CGO_ENABLED=0", "GOOS=linux", "GOARCH=" + goArch, " build ", "-tags lambda.norpc", "-trimpath",
				"-ldflags='-s -w -X github.com/bucketgate/bucketgate/internal/version.stamp=v0.0.0-recipe'", "-o /artifacts/bootstrap ./functions/" + name + "\n"} {
				if !strings.Contains(recipe, want) {
					t.Errorf("build-%s recipe lacks %q:\n%s", id, want, recipe)
				}
			}
		})
	}
	for id, r := range tpl.Resources {
		if _, ok := deployed[id]; r.Metadata.BuildMethod == goBuildMethod && !ok {
			t.Errorf("%s is built by the Makefile but is none of the Go functions %v", id, slices.Sorted(maps.Keys(deployed)))
		}
	}
}

// checkAuthorizersNeverCache: every API has the authorizer as its default and never
// caches its answer: a cached decision would skip the limiter. Identity sources are none,
// so that API Gateway calls the authorizer for requests without an API key too (they
// are limited by IP).
func checkAuthorizersNeverCache(t *testing.T, path string) {
	tpl := loadTemplate(t, path)
	apis := 0
	for id, r := range tpl.Resources {
		if r.Type != "AWS::Serverless::Api" && r.Type != "AWS::Serverless::HttpApi" {
			continue
		}
		apis++
		var p samAuth
		r.properties(t, &p)
		if _, ok := p.Auth.Authorizers[p.Auth.DefaultAuthorizer]; !ok {
			t.Errorf("%s: DefaultAuthorizer %q is none of its authorizers", id, p.Auth.DefaultAuthorizer)
		}
		for name, a := range p.Auth.Authorizers {
			if r.Type == "AWS::Serverless::Api" && a.FunctionPayloadType != "REQUEST" {
				t.Errorf("%s.%s: FunctionPayloadType %q, want REQUEST (a TOKEN authorizer sees no source IP)", id, name, a.FunctionPayloadType)
			}
			if every, ok := a.Identity["ReauthorizeEvery"].(int); !ok || every != 0 || len(a.Identity) != 1 {
				t.Errorf("%s.%s: Identity %v, want exactly ReauthorizeEvery: 0", id, name, a.Identity)
			}
		}
	}
	if apis == 0 {
		t.Fatal("no API in the template")
	}
}

// decidedContexts returns the authorizer contexts of an allowed and a rate-limited
// answer, from the real handler: the free plan's first and 11th request.
func decidedContexts(t *testing.T) (allowed, limited map[string]any) {
	t.Helper()
	m := miniredis.RunT(t)
	m.SetTime(time.Date(2025, 12, 11, 16, 15, 0, 0, time.UTC))
	env := map[string]string{settings.EnvRedisAddr: m.Addr(), settings.EnvTimeoutMS: decisionTimeout}
	h, _, err := app.Build(app.Authorizer, func(k string) string { return env[k] }, io.Discard, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	ev := samples.Read(t, "authorizer-rest.json")
	for i := range 11 {
		out, err := h.Invoke(t.Context(), ev)
		if err != nil {
			t.Fatal(err)
		}
		var a events.APIGatewayCustomAuthorizerResponse
		if err := json.Unmarshal(out, &a); err != nil {
			t.Fatal(err)
		}
		switch i {
		case 0:
			if a.PolicyDocument.Statement[0].Effect != "Allow" {
				t.Fatalf("first answer %+v, want an Allow", a)
			}
			allowed = a.Context
		case 10:
			if a.PolicyDocument.Statement[0].Effect != "Deny" {
				t.Fatalf("11th answer %+v, want a Deny", a)
			}
			limited = a.Context
		}
	}
	return allowed, limited
}

var (
	headerRef = regexp.MustCompile(`^context\.authorizer\.(.+)$`)
	bodyRef   = regexp.MustCompile(`\$context\.authorizer\.([A-Za-z0-9_]+)`)
)

// checkGatewayResponses: the REST API's gateway responses (a template without one has
// none to check) are template.yaml's, and map only context keys the authorizer sets when
// it limits (ACCESS_DENIED; the other responses have no authorizer context); they are
// those of the design: 429 with Retry-After and the RateLimit headers, 429 with
// Retry-After: 1 when the stage's throttle turns a request away, 503 with Retry-After:
// 1, 401, and 502 when the backend does not answer.
func checkGatewayResponses(t *testing.T, path string) {
	if !slices.ContainsFunc(slices.Collect(maps.Values(loadTemplate(t, path).Resources)), func(r samResource) bool { return r.Type == "AWS::Serverless::Api" }) {
		return
	}
	responses, err := localgw.LoadResponses(repoPath(path))
	if err != nil {
		t.Fatal(err)
	}
	limiterResponses, err := localgw.LoadResponses(repoPath(limiter))
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(responses, limiterResponses) {
		t.Errorf("gateway responses %v, want %s's %v", responses, limiter, limiterResponses)
	}
	_, ctx := decidedContexts(t)
	for kind, r := range responses {
		var refs []string
		for _, source := range r.ResponseParameters.Headers {
			if m := headerRef.FindStringSubmatch(source); m != nil {
				refs = append(refs, m[1])
			}
		}
		for _, body := range r.ResponseTemplates {
			for _, m := range bodyRef.FindAllStringSubmatch(body, -1) {
				refs = append(refs, m[1])
			}
		}
		for _, key := range refs {
			if _, set := ctx[key]; kind != localgw.AccessDenied || !set {
				t.Errorf("%s maps context.authorizer.%s, which the authorizer does not set there (limited context: %v)", kind, key, slices.Sorted(maps.Keys(ctx)))
			}
		}
	}

	tests := []struct {
		kind    string
		context map[string]any
		status  int
		headers map[string]string // mapping expressions in the template
	}{
		{localgw.AccessDenied, ctx, http.StatusTooManyRequests, denialHeaders(t, ctx)},
		// The stage's throttle answers 429 before the authorizer runs: its client must be
		// told when to come back as the limiter's 429 tells it, in the header and the body.
		{localgw.Throttled, nil, http.StatusTooManyRequests, map[string]string{"Retry-After": "'1'"}},
		{localgw.AuthorizerFailure, nil, http.StatusServiceUnavailable, map[string]string{"Retry-After": "'1'"}},
		{localgw.AuthorizerConfigErr, nil, http.StatusServiceUnavailable, map[string]string{"Retry-After": "'1'"}},
		{localgw.Unauthorized, nil, http.StatusUnauthorized, nil},
		{localgw.IntegrationFailure, nil, http.StatusBadGateway, nil},
	}
	for _, tc := range tests {
		t.Run(tc.kind, func(t *testing.T) {
			r, ok := responses[tc.kind]
			if !ok {
				t.Fatalf("no %s gateway response", tc.kind)
			}
			if r.StatusCode != tc.status || !maps.Equal(r.ResponseParameters.Headers, tc.headers) {
				t.Errorf("status %d headers %v, want %d %v", r.StatusCode, r.ResponseParameters.Headers, tc.status, tc.headers)
			}
			w := httptest.NewRecorder()
			r.Write(w, httptest.NewRequest(http.MethodGet, "/scores", nil), tc.context)
			var body map[string]any
			if err := json.Unmarshal(w.Body.Bytes(), &body); err != nil {
				t.Fatalf("body is not JSON: %v\n%s", err, w.Body)
			}
			if _, ok := body["error"].(string); !ok {
				t.Errorf("body %v: want an error member, as every gateway response has", body)
			}
			if tc.status == http.StatusUnauthorized || tc.status == http.StatusBadGateway {
				return
			}
			// The body always carries the retry-after, as the header says it.
			if ra := w.Header()["Retry-After"]; len(ra) != 1 || body["retryAfter"] == nil || ra[0] != jsonText(t, body["retryAfter"]) {
				t.Errorf("Retry-After %v, body retryAfter %v: want both, equal", ra, body["retryAfter"])
			}
			// The 429's message tells the client that waiting that long (and a jitter) works,
			// in words: the limited context's retry-after is 1, "1 second", not "1 seconds".
			if msg, _ := body["message"].(string); tc.kind == localgw.AccessDenied && (!strings.Contains(msg, "retry after "+jsonText(t, body["retryAfter"])+" second ") || !strings.Contains(msg, "will be accepted")) {
				t.Errorf("message %q: want it to say a retry after Retry-After (1 second) will be accepted", msg)
			}
		})
	}
}

// denialHeaders returns the mapping of the 429's headers: those of the limited context,
// but X-RateLimit-Degraded (a denial is never degraded).
func denialHeaders(t *testing.T, ctx map[string]any) map[string]string {
	t.Helper()
	m := headerMapping(t, ctx, "context.authorizer.")
	delete(m, ratelimitheaders.HeaderDegraded)
	return m
}

// jsonText returns v as JSON.
func jsonText(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// envRead returns the names of the environment variables that are read when f is
// built, as app.Main does in Lambda (LOG_LEVEL included).
func envRead(t *testing.T, f app.Function) map[string]bool {
	t.Helper()
	addr := miniredis.RunT(t).Addr()
	var mu sync.Mutex
	read := map[string]bool{}
	getenv := func(k string) string {
		mu.Lock()
		defer mu.Unlock()
		read[k] = true
		if k == settings.EnvRedisAddr {
			return addr
		}
		return ""
	}
	if _, _, err := app.Build(f, getenv, io.Discard, io.Discard); err != nil {
		t.Fatal(err)
	}
	return read
}

// Every environment variable the template gives a Go function is one that function's
// code reads.
func TestTemplateEnvironmentIsRead(t *testing.T) {
	tpl := loadTemplate(t, limiter)
	for id, f := range deployedGoFunctions(t) {
		t.Run(id, func(t *testing.T) {
			read := envRead(t, f)
			vars := tpl.function(t, tpl.Resources[id]).Environment.Variables
			if len(vars) == 0 {
				t.Fatal("no environment variables: is the template read right?")
			}
			for _, v := range slices.Sorted(maps.Keys(vars)) {
				if !read[v] {
					t.Errorf("the template sets %s, which %s never reads (it reads %v)", v, f.Name, slices.Sorted(maps.Keys(read)))
				}
			}
		})
	}
}
