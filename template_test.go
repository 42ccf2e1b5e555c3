package bucketgate_test

// The invariants of template.yaml: it deploys the functions this repository builds, the
// way the Makefile builds them, never caches an authorizer decision, maps only context
// keys the authorizer really sets, sets only environment variables the code reads, and
// watches metrics the code really emits.

import (
	"cmp"
	"encoding/json"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
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
	"github.com/bucketgate/bucketgate/internal/guard"
	"github.com/bucketgate/bucketgate/internal/localgw"
	"github.com/bucketgate/bucketgate/internal/registry"
	"github.com/bucketgate/bucketgate/internal/settings"
	"github.com/bucketgate/bucketgate/internal/telemetry"
	"github.com/bucketgate/bucketgate/internal/testkit"
	"github.com/bucketgate/bucketgate/internal/testkit/samples"
)

// templateFile is the SAM template, from the repository root (this package's directory).
const templateFile = "template.yaml"

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
		MinValue       *int64 `yaml:"MinValue"`
		MaxValue       *int64 `yaml:"MaxValue"`
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

func loadTemplate(t *testing.T) samTemplate {
	t.Helper()
	b, err := os.ReadFile(templateFile)
	if err != nil {
		t.Fatal(err)
	}
	var tpl samTemplate
	if err := yaml.Unmarshal(b, &tpl); err != nil {
		t.Fatalf("%s: %v", templateFile, err)
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
	entries, err := os.ReadDir("functions")
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

// Each Go function is deployed as a provided.al2023 arm64 bootstrap built by its
// Makefile target, and the target builds that function's main package the way Lambda
// needs it; no other function is built by the Makefile.
func TestTemplateGoFunctions(t *testing.T) {
	tpl := loadTemplate(t)
	names := goFunctions(t)
	for _, name := range names {
		id := logicalID(name)
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
			out, err := exec.Command("make", "--no-print-directory", "-n", "build-"+id, "ARTIFACTS_DIR=/artifacts").CombinedOutput()
			if err != nil {
				t.Fatalf("make -n build-%s: %v\n%s", id, err, out)
			}
			recipe := string(out)
			for _, want := range []string{"CGO_ENABLED=0", "GOOS=linux", "GOARCH=" + goArch, " build ", "-tags lambda.norpc", "-trimpath", "-ldflags='-s -w'", "-o /artifacts/bootstrap ./functions/" + name + "\n"} {
				if !strings.Contains(recipe, want) {
					t.Errorf("build-%s recipe lacks %q:\n%s", id, want, recipe)
				}
			}
		})
	}
	for id, r := range tpl.Resources {
		if r.Metadata.BuildMethod == goBuildMethod && !slices.ContainsFunc(names, func(n string) bool { return logicalID(n) == id }) {
			t.Errorf("%s is built by the Makefile but is no directory under functions/", id)
		}
	}
}

// Every API has the authorizer as its default and never caches its answer: a cached
// decision would skip the limiter. Identity sources are none, so that API Gateway
// calls the authorizer for requests without an API key too (they are limited by IP).
func TestTemplateAuthorizersNeverCache(t *testing.T) {
	tpl := loadTemplate(t)
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

// Every gateway response maps only context keys the authorizer sets when it limits
// (ACCESS_DENIED; the other responses have no authorizer context), and the responses
// are those of the design: 429 with Retry-After and the RateLimit headers, 503 with
// Retry-After: 1, 401, and 502 when the backend does not answer.
func TestTemplateGatewayResponses(t *testing.T) {
	responses, err := localgw.LoadResponses(templateFile)
	if err != nil {
		t.Fatal(err)
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
		{localgw.AccessDenied, ctx, http.StatusTooManyRequests, headerMapping(t, ctx, "context.authorizer.")},
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
	tpl := loadTemplate(t)
	for _, name := range goFunctions(t) {
		id := logicalID(name)
		t.Run(id, func(t *testing.T) {
			read := envRead(t, app.Functions[name])
			vars := tpl.function(t, tpl.Resources[id]).Environment.Variables
			if len(vars) == 0 {
				t.Fatal("no environment variables: is the template read right?")
			}
			for _, v := range slices.Sorted(maps.Keys(vars)) {
				if !read[v] {
					t.Errorf("the template sets %s, which %s never reads (it reads %v)", v, name, slices.Sorted(maps.Keys(read)))
				}
			}
		})
	}
}

// metricAlarm is the part of an AWS::CloudWatch::Alarm the metrics test reads: one
// metric, or metric math over several.
type metricAlarm struct {
	Namespace  string         `yaml:"Namespace"`
	MetricName string         `yaml:"MetricName"`
	Dimensions []metricDimRef `yaml:"Dimensions"`
	Metrics    []struct {
		MetricStat struct {
			Metric struct {
				Namespace  string         `yaml:"Namespace"`
				MetricName string         `yaml:"MetricName"`
				Dimensions []metricDimRef `yaml:"Dimensions"`
			} `yaml:"Metric"`
		} `yaml:"MetricStat"`
	} `yaml:"Metrics"`
}

type metricDimRef struct {
	Name  string `yaml:"Name"`
	Value string `yaml:"Value"`
}

// emitted are the metrics the functions write and, per dimension, the values it takes.
var emitted = struct {
	metrics []string
	dims    map[string][]string
}{
	metrics: []string{telemetry.MetricDecisions, telemetry.MetricFailClosed, telemetry.MetricRedisLatency, telemetry.MetricDenyCacheHits,
		telemetry.MetricRegistryLookups, telemetry.MetricRegistryInvalid},
	dims: map[string][]string{
		telemetry.DimOutcome:  {telemetry.OutcomeAllowed, telemetry.OutcomeLimited, telemetry.OutcomeUnavailable, telemetry.OutcomeDegraded},
		telemetry.DimReason:   {string(guard.FailureTimeout), string(guard.FailureRedisError), string(guard.FailureBadResponse), string(guard.FailureRegistryError)},
		telemetry.DimFunction: slices.Sorted(maps.Keys(app.Functions)),
		telemetry.DimResult:   {string(registry.ResultHit), string(registry.ResultMiss), string(registry.ResultStale), string(registry.ResultError)},
	},
}

// checkMetric reports a metric of the functions' namespace that they never emit.
func checkMetric(t *testing.T, where, name string, dims map[string]string) {
	t.Helper()
	if !slices.Contains(emitted.metrics, name) {
		t.Errorf("%s: metric %q is not emitted (want one of %v)", where, name, emitted.metrics)
	}
	for d, v := range dims {
		if values, ok := emitted.dims[d]; !ok || !slices.Contains(values, v) {
			t.Errorf("%s: dimension %s=%q is not emitted", where, d, v)
		}
	}
}

// The alarms and the dashboard watch metrics the functions emit, in their namespace,
// by dimensions and values that exist: a typo there would watch nothing, silently.
func TestTemplateMetrics(t *testing.T) {
	tpl := loadTemplate(t)
	namespace, _ := tpl.Globals.Function.Environment.Variables[settings.EnvNamespace].(string)
	if namespace == "" {
		t.Fatalf("Globals set no literal %s", settings.EnvNamespace)
	}
	checked := 0
	for id, r := range tpl.Resources {
		switch r.Type {
		case "AWS::CloudWatch::Alarm":
			var a metricAlarm
			r.properties(t, &a)
			type stat struct {
				ns, name string
				dims     []metricDimRef
			}
			stats := []stat{{a.Namespace, a.MetricName, a.Dimensions}}
			for _, m := range a.Metrics {
				stats = append(stats, stat{m.MetricStat.Metric.Namespace, m.MetricStat.Metric.MetricName, m.MetricStat.Metric.Dimensions})
			}
			for _, s := range stats {
				if s.ns != namespace {
					continue
				}
				dims := map[string]string{}
				for _, d := range s.dims {
					dims[d.Name] = d.Value
				}
				checkMetric(t, id, s.name, dims)
				checked++
			}
		case "AWS::CloudWatch::Dashboard":
			var d struct {
				DashboardBody string `yaml:"DashboardBody"`
			}
			r.properties(t, &d)
			checked += checkDashboard(t, id, namespace, d.DashboardBody)
		}
	}
	if checked == 0 {
		t.Fatalf("no alarm or dashboard metric in namespace %s", namespace)
	}
}

// substitution matches the ${...} of a Fn::Sub string.
var substitution = regexp.MustCompile(`\$\{[^}]*\}`)

// checkDashboard checks every metric of namespace in a dashboard body (a Fn::Sub
// string of CloudWatch dashboard JSON) and returns how many there were.
func checkDashboard(t *testing.T, id, namespace, body string) int {
	t.Helper()
	var dash struct {
		Widgets []struct {
			Properties struct {
				Metrics [][]any `json:"metrics"`
			} `json:"properties"`
		} `json:"widgets"`
	}
	if err := json.Unmarshal([]byte(substitution.ReplaceAllString(body, "sub")), &dash); err != nil {
		t.Fatalf("%s: dashboard body: %v", id, err)
	}
	n := 0
	for _, w := range dash.Widgets {
		var prev []string
		for _, m := range w.Properties.Metrics {
			var parts []string // the strings: namespace, name, dimension names and values
			for _, p := range m {
				if p, ok := p.(string); ok {
					parts = append(parts, p)
				}
			}
			if len(parts) > 0 && parts[0] == "..." && len(parts)-1 <= len(prev) {
				// "..." is the previous metric with its last parts replaced by the ones given.
				parts = append(slices.Clone(prev[:len(prev)-(len(parts)-1)]), parts[1:]...)
			}
			prev = parts
			if len(parts) < 2 || parts[0] != namespace {
				continue
			}
			dims := map[string]string{}
			for i := 2; i+1 < len(parts); i += 2 {
				dims[parts[i]] = parts[i+1]
			}
			checkMetric(t, id, parts[1], dims)
			n++
		}
	}
	return n
}

// cfn-lint (with the SAM translator it bundles) accepts the template. cfn-lint comes
// from PyPI (pip install cfn-lint); this machine's image ships it and .ci/run finds it,
// so CI fails where it is missing, and a laptop without it skips loudly.
func TestTemplateLint(t *testing.T) {
	cfnLint := testkit.LookPath(t, "cfn-lint")
	if out, err := exec.Command(cfnLint, templateFile).CombinedOutput(); err != nil {
		t.Fatalf("cfn-lint %s: %v\n%s", templateFile, err, out)
	}
}
