package template_test

// The alarms and the dashboard watch metrics the functions really write: the real
// telemetry code, with the settings the template's environment gives (METRICS_NAMESPACE,
// and STACK_NAME as the stack's name), writes EMF lines for every outcome, failure
// reason and registry lookup result; CloudWatch files each metric under each of its
// dimension sets, and an alarm or a widget selects one of them exactly.

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/bucketgate/bucketgate"
	"github.com/bucketgate/bucketgate/internal/app"
	"github.com/bucketgate/bucketgate/internal/guard"
	"github.com/bucketgate/bucketgate/internal/registry"
	"github.com/bucketgate/bucketgate/internal/settings"
	"github.com/bucketgate/bucketgate/internal/telemetry"
)

// metricKey names one CloudWatch metric: namespace, name and dimensions with their
// values, in order of name.
func metricKey(namespace, name string, dims map[string]string) string {
	var parts []string
	for _, d := range slices.Sorted(maps.Keys(dims)) {
		parts = append(parts, d+"="+dims[d])
	}
	return namespace + " " + name + " {" + strings.Join(parts, ", ") + "}"
}

// emfMetrics returns the metrics CloudWatch files from EMF lines: each metric of each
// directive, under each of its dimension sets with the values the line holds, and the
// sum of its values that are one number (a count's; a list of values adds nothing).
func emfMetrics(t *testing.T, lines []map[string]any) map[string]float64 {
	t.Helper()
	out := map[string]float64{}
	for _, line := range lines {
		var doc struct {
			AWS struct {
				CloudWatchMetrics []struct {
					Namespace  string
					Dimensions [][]string
					Metrics    []struct{ Name string }
				}
			} `json:"_aws"`
		}
		b, _ := json.Marshal(line)
		if err := json.Unmarshal(b, &doc); err != nil || len(doc.AWS.CloudWatchMetrics) == 0 {
			t.Fatalf("EMF line %s: %v", b, err)
		}
		for _, d := range doc.AWS.CloudWatchMetrics {
			for _, set := range d.Dimensions {
				dims := map[string]string{}
				for _, name := range set {
					v, ok := line[name].(string)
					if !ok {
						t.Fatalf("EMF line %s: dimension %s has no string value", b, name)
					}
					dims[name] = v
				}
				for _, m := range d.Metrics {
					n, _ := line[m.Name].(float64)
					out[metricKey(d.Namespace, m.Name, dims)] += n
				}
			}
		}
	}
	return out
}

// emittedMetrics returns the namespace and every metric the functions write with the
// template's environment: each function's emitter, from the settings that environment
// loads (its flush interval too), writing every outcome, failure reason, registry
// lookup result and reason of events not sent, and the invalid items and documents.
func emittedMetrics(t *testing.T) (namespace string, metrics map[string]float64) {
	t.Helper()
	vars := loadTemplate(t, limiter).Globals.Function.Environment.Variables
	namespace, _ = vars[settings.EnvNamespace].(string)
	if namespace == "" || vars[settings.EnvStackName] != "AWS::StackName" {
		t.Fatalf("Globals set %s %v and %s %v: want a literal namespace and !Ref AWS::StackName", settings.EnvNamespace, vars[settings.EnvNamespace], settings.EnvStackName, vars[settings.EnvStackName])
	}
	s, err := settings.Load(func(k string) string {
		return map[string]string{settings.EnvNamespace: namespace, settings.EnvStackName: testStack}[k]
	})
	if err != nil {
		t.Fatal(err)
	}
	results := []guard.Result{
		{Decision: bucketgate.Decision{Allowed: true, Reason: bucketgate.ReasonOK}, Latency: time.Millisecond},
		{Decision: bucketgate.Decision{Reason: bucketgate.ReasonLimited}, Latency: time.Millisecond},
		{Decision: bucketgate.Decision{Reason: bucketgate.ReasonLimited}, CacheHit: true},
	}
	for _, f := range []guard.Failure{guard.FailureTimeout, guard.FailureRedisError, guard.FailureBadResponse, guard.FailureRegistryError} {
		results = append(results,
			guard.Result{Decision: bucketgate.Decision{Reason: bucketgate.ReasonUnavailable}, Failure: f, Latency: time.Millisecond},
			guard.Result{Decision: bucketgate.Decision{Allowed: true, Reason: bucketgate.ReasonDegraded}, Failure: f, Latency: time.Millisecond})
	}
	lookups := []registry.Result{registry.ResultHit, registry.ResultMiss, registry.ResultStale, registry.ResultError, registry.ResultAbandoned}
	// Each function's instance adds its invocations up and writes their sums a line per
	// outcome (METRICS_FLUSH_MS): the first at once, the rest together when flushed.
	var out bytes.Buffer
	for _, name := range slices.Sorted(maps.Keys(app.Functions)) {
		e := telemetry.NewEmitter(&out, s.Namespace, s.Stack, name, telemetry.FlushEvery(s.MetricsFlush))
		for i, r := range results {
			var inv telemetry.Invocation
			inv.Observe(r)
			inv.ObserveLookup(string(lookups[i%len(lookups)]), i == 0)
			inv.ObserveConfig("", i == 0) // a configuration document that does not load: ConfigInvalid
			if err := e.Emit(time.Unix(1_800_000_000, 0), &inv); err != nil {
				t.Fatal(err)
			}
		}
		for _, policy := range append(evictionPolicies, unnamedPolicy) { // found when a function connects
			if err := e.EmitEvictionPolicy(time.Unix(1_800_000_000, 0), policy); err != nil {
				t.Fatal(err)
			}
		}
		var refused telemetry.Invocation // a 401, or an operator's operation the check function refuses
		refused.ObserveRefused()
		refused.ObserveShadowLimited("trial") // an allowed request a shadow rule would have denied
		for _, reason := range []string{telemetry.EventsTimeout, telemetry.EventsError, telemetry.EventsRejected} {
			refused.ObserveEventsFailed(reason, 1) // an event not sent
		}
		if err := e.Emit(time.Unix(1_800_000_000, 0), &refused); err != nil {
			t.Fatal(err)
		}
		if err := e.Flush(); err != nil {
			t.Fatal(err)
		}
	}
	return s.Namespace, emfMetrics(t, jsonLines(t, &out))
}

// substitute returns the Fn::Sub string s with its variables (vars, resolved) replaced
// by their values, a value that is no string (a Ref of a resource) printed as an alarm's
// dimension prints it, the pseudo parameters by theirs, any ${!X} by the literal ${X} and
// any other ${X} by "sub:X".
func substitute(s string, vars map[string]any) string {
	return subRef.ReplaceAllStringFunc(s, func(ref string) string {
		name := subRef.FindStringSubmatch(ref)[1]
		if literal, ok := strings.CutPrefix(name, "!"); ok {
			return "${" + literal + "}"
		}
		if v, ok := vars[name]; ok {
			return fmt.Sprint(v)
		}
		if v, ok := pseudo[name].(string); ok {
			return v
		}
		return "sub:" + name
	})
}

// watched is a metric an alarm or a dashboard widget reads: where it is, its namespace,
// name and dimensions, a dimension of a SEARCH expression that fixes no value with the
// value anyValue.
type watched struct {
	where, namespace, name string
	dims                   map[string]string
}

// anyValue is the value of a dimension a SEARCH expression reads whatever its value.
const anyValue = "*"

// emits reports whether the functions write (emitted, by metricKey) the metric w
// reads, or with a dimension of anyValue, one of those it reads.
func emits(emitted map[string]float64, w watched) bool {
	pattern := strings.ReplaceAll(regexp.QuoteMeta(metricKey(w.namespace, w.name, w.dims)), "="+regexp.QuoteMeta(anyValue), "=[^,}]+")
	re := regexp.MustCompile("^" + pattern + "$")
	for k := range emitted {
		if re.MatchString(k) {
			return true
		}
	}
	return false
}

// searchExpr is a SEARCH expression of a dashboard that reads the metrics of one name and
// one dimension set: its metric schema (the namespace and the dimensions, which a metric
// has exactly), then exact designators only (MetricName and dimensions of the schema),
// the statistic and the period.
var searchExpr = regexp.MustCompile(`^SEARCH\('\{([^}]*)\}((?: [A-Za-z]+="[^"]*")+)', '[A-Za-z0-9.]+'(?:, [0-9]+)?\)$`)

// designator is one exact designator of a search term: Name="value".
var designator = regexp.MustCompile(`([A-Za-z]+)="([^"]*)"`)

// searchMetrics returns what a dashboard's SEARCH expression reads: the metrics of its
// schema's namespace and dimension set with its MetricName, a dimension the search term
// gives no value anyValue.
func searchMetrics(t *testing.T, id, expr string) watched {
	t.Helper()
	m := searchExpr.FindStringSubmatch(expr)
	if m == nil {
		t.Fatalf("%s: expression %q: want SEARCH('{namespace,dimension,...} MetricName=\"name\" dimension=\"value\"...', 'statistic', period)", id, expr)
	}
	schema := strings.Split(m[1], ",")
	w := watched{where: id, namespace: strings.TrimSpace(schema[0]), dims: map[string]string{}}
	for _, d := range schema[1:] {
		w.dims[strings.TrimSpace(d)] = anyValue
	}
	for _, d := range designator.FindAllStringSubmatch(m[2], -1) {
		switch _, inSchema := w.dims[d[1]]; {
		case d[1] == "MetricName":
			w.name = d[2]
		case inSchema:
			w.dims[d[1]] = d[2]
		default:
			t.Fatalf("%s: expression %q: %s is no dimension of its schema {%s}", id, expr, d[1], m[1])
		}
	}
	if w.name == "" {
		t.Fatalf("%s: expression %q: no MetricName=\"name\": it would read every metric of its schema", id, expr)
	}
	return w
}

// alarmMetrics returns the metrics an alarm (resolved properties) reads: its one
// metric, or those of its metric math.
func alarmMetrics(t *testing.T, id string, p map[string]any) []watched {
	t.Helper()
	var out []watched
	add := func(m map[string]any) {
		ns, _ := m["Namespace"].(string)
		name, _ := m["MetricName"].(string)
		dims := map[string]string{}
		list, _ := m["Dimensions"].([]any)
		for _, d := range list {
			d, _ := d.(map[string]any)
			n, _ := d["Name"].(string)
			dims[n] = fmt.Sprint(d["Value"])
		}
		out = append(out, watched{id, ns, name, dims})
	}
	if _, ok := p["MetricName"]; ok {
		add(p)
	}
	list, _ := p["Metrics"].([]any)
	for _, m := range list {
		m, _ := m.(map[string]any)
		if stat, ok := m["MetricStat"].(map[string]any); ok {
			metric, _ := stat["Metric"].(map[string]any)
			add(metric)
		}
	}
	if len(out) == 0 {
		t.Fatalf("%s reads no metric: is it read right?", id)
	}
	return out
}

// widgetRow is one row of the metrics of a dashboard's widget: a metric (with its id
// and visibility when it gives them) or an expression.
type widgetRow struct {
	id, label, expr string
	hidden          bool
	metric          *watched // nil for an expression
}

// widget is a dashboard's widget: its title and its metrics.
type widget struct {
	title string
	rows  []widgetRow
}

// dashboardWidgets returns the widgets of a dashboard body (resolved: a Fn::Sub of
// CloudWatch dashboard JSON, a string and its variables), each metric's "..." expanded.
func dashboardWidgets(t *testing.T, id string, body any) []widget {
	t.Helper()
	sub, _ := body.(map[string]any)
	args, _ := sub["Fn::Sub"].([]any)
	var text string
	var vars map[string]any
	if len(args) == 2 {
		text, _ = args[0].(string)
		vars, _ = args[1].(map[string]any)
	}
	if text == "" || vars == nil {
		t.Fatalf("%s: DashboardBody %v: want a Fn::Sub of a string and its variables", id, body)
	}
	var dash struct {
		Widgets []struct {
			Properties struct {
				Title   string  `json:"title"`
				Metrics [][]any `json:"metrics"`
			} `json:"properties"`
		} `json:"widgets"`
	}
	if err := json.Unmarshal([]byte(substitute(text, vars)), &dash); err != nil {
		t.Fatalf("%s: dashboard body: %v", id, err)
	}
	var out []widget
	for _, w := range dash.Widgets {
		out = append(out, widget{title: w.Properties.Title})
		rows := &out[len(out)-1].rows
		var prev []string
		for _, m := range w.Properties.Metrics {
			var parts []string // the strings: namespace, name, dimension names and values
			var row widgetRow
			for _, p := range m {
				switch p := p.(type) {
				case string:
					parts = append(parts, p)
				case map[string]any: // an expression, or a metric's options
					row.id, _ = p["id"].(string)
					row.label, _ = p["label"].(string)
					row.expr, _ = p["expression"].(string)
					row.hidden = p["visible"] == false
				}
			}
			if row.expr != "" {
				*rows = append(*rows, row)
				continue
			}
			if len(parts) > 0 && parts[0] == "..." && len(parts)-1 <= len(prev) {
				// "..." is the previous metric with its last parts replaced by the ones given.
				parts = append(slices.Clone(prev[:len(prev)-(len(parts)-1)]), parts[1:]...)
			}
			prev = parts
			if len(parts) < 2 {
				continue
			}
			dims := map[string]string{}
			for i := 2; i+1 < len(parts); i += 2 {
				dims[parts[i]] = parts[i+1]
			}
			row.metric = &watched{id, parts[0], parts[1], dims}
			*rows = append(*rows, row)
		}
	}
	return out
}

// mathID is an id a metric math expression reads (functions are upper case).
var mathID = regexp.MustCompile(`\b[a-z][A-Za-z0-9_]*\b`)

// dashboardMetrics returns the metrics of a dashboard body (a Fn::Sub string of
// CloudWatch dashboard JSON), "..." expanded, those of its SEARCH expressions too; its
// other expressions are metric math of their widget's metrics and expressions, by id.
func dashboardMetrics(t *testing.T, id string, body any) []watched {
	t.Helper()
	var out []watched
	for _, w := range dashboardWidgets(t, id, body) {
		ids := map[string]bool{}
		for _, r := range w.rows {
			ids[r.id] = r.id != ""
		}
		for _, r := range w.rows {
			switch {
			case r.metric != nil:
				out = append(out, *r.metric)
			case strings.HasPrefix(r.expr, "SEARCH("):
				out = append(out, searchMetrics(t, id, r.expr))
			default:
				if _, err := parseMath(r.expr); err != nil {
					t.Errorf("%s: widget %q: %s: %v", id, w.title, r.id, err)
				}
				for _, read := range mathID.FindAllString(r.expr, -1) {
					if !ids[read] {
						t.Errorf("%s: widget %q: %s reads %s, which no metric or expression of the widget is", id, w.title, r.id, read)
					}
				}
			}
		}
	}
	return out
}

// evictionPolicies are Redis's eviction policies but noeviction, which the functions
// count in RedisEvictionPolicy by Policy.
var evictionPolicies = []string{"volatile-lru", "allkeys-lru", "volatile-lfu", "allkeys-lfu", "volatile-random", "allkeys-random", "volatile-ttl"}

// unnamedPolicy is an eviction policy the functions do not name (a newer Redis's or
// Valkey's), which they count in RedisEvictionPolicy under a Policy of their own.
const unnamedPolicy = "allkeys-of-a-newer-redis"

// awsMetrics are the metrics of AWS's namespaces that the template may watch, by
// namespace and the kind of resource their one dimension names: a Go function of the
// stack (AWS/Lambda, FunctionName), a REST API by its name (AWS/ApiGateway, ApiName), an
// HTTP API by its id (ApiId), a serverless cache by its name (AWS/ElastiCache,
// clusterId: serverless caches publish under that dimension alone, not CacheClusterId)
// and the registry table by its name (AWS/DynamoDB, TableName; with an Operation too,
// awsOperationMetrics).
var awsMetrics = map[string]map[string][]string{ // namespace -> dimension -> metric names
	"AWS/Lambda":      {"FunctionName": {"Errors", "Invocations", "Throttles", "Duration", "ConcurrentExecutions"}},
	"AWS/ApiGateway":  {"ApiName": {"5XXError", "4XXError", "Count", "Latency", "IntegrationLatency"}, "ApiId": {"5xx", "4xx", "Count", "Latency", "IntegrationLatency"}},
	"AWS/ElastiCache": {"clusterId": {"ThrottledCmds", "Evictions", "ElastiCacheProcessingUnits", "BytesUsedForCache", "SuccessfulWriteRequestLatency", "CurrConnections"}},
	"AWS/DynamoDB": {"TableName": {"ThrottledRequests", "ReadKeyRangeThroughputThrottleEvents", "ReadMaxOnDemandThroughputThrottleEvents",
		"ReadAccountLimitThrottleEvents", "ReadProvisionedThroughputThrottleEvents"}},
}

// awsOperationMetrics are the metrics of awsMetrics that AWS publishes by an Operation
// too, with the operations the template may name: DynamoDB's ThrottledRequests by
// TableName and Operation, of GetItem, the functions' only read of the registry table.
var awsOperationMetrics = map[string][]string{"ThrottledRequests": {"GetItem"}}

// awsResources returns, for each dimension of awsMetrics, the values that name a
// resource of the deployment, as the alarms' resolved dimensions print them.
func awsResources(t *testing.T, d deployment) map[string]map[string]bool {
	t.Helper()
	out := map[string]map[string]bool{"FunctionName": {}, "ApiName": {}, "ApiId": {}, "clusterId": {}, "TableName": {}}
	for id := range deployedGoFunctions(t) {
		out["FunctionName"][fmt.Sprint(ref(id))], out["FunctionName"]["sub:"+id] = true, true
	}
	for id, r := range d.resources(t) {
		switch r.Type {
		case "AWS::Serverless::Api":
			body, _ := r.Properties["DefinitionBody"].(map[string]any)
			info, _ := body["info"].(map[string]any)
			out["ApiName"][fmt.Sprint(info["title"])] = true
		case "AWS::Serverless::HttpApi":
			out["ApiId"][fmt.Sprint(ref(id))] = true
		case "AWS::ElastiCache::ServerlessCache":
			out["clusterId"][fmt.Sprint(ref(id))] = true
		case "AWS::DynamoDB::Table":
			out["TableName"][fmt.Sprint(ref(id))] = true
		}
	}
	return out
}

// checkMetrics: the alarms and the dashboard of the template (each with the defaults) watch
// metrics the functions write, exactly: in the functions' namespace, a metric and
// dimension set (Stack with the stack's name among them) that the real telemetry code
// writes; in AWS's namespaces, a metric AWS publishes there, by the one dimension that
// names a resource of the stack (awsMetrics). A typo, a dimension too many or the other
// stack's name would watch nothing, silently.
func checkMetrics(t *testing.T, path string) {
	d := deploy(t, readTemplate(t, path))
	var all []watched
	// Every alarm and dashboard, whatever its Condition (an alarm of a Redis of yours
	// too), its properties resolved with the defaults.
	for id, r := range section(d.doc, "Resources") {
		r, _ := r.(map[string]any)
		props, _ := d.resolve(t, r["Properties"]).(map[string]any)
		switch r["Type"] {
		case "AWS::CloudWatch::Alarm":
			all = append(all, alarmMetrics(t, id, props)...)
		case "AWS::CloudWatch::Dashboard":
			all = append(all, dashboardMetrics(t, id, props["DashboardBody"])...)
		}
	}
	if len(all) == 0 {
		return // no alarm or dashboard (the examples)
	}
	namespace, emitted := emittedMetrics(t)
	resources := awsResources(t, d)
	own := 0
	for _, w := range all {
		if w.namespace == namespace {
			own++
			if w.dims[telemetry.DimStack] == anyValue {
				t.Errorf("%s watches %s of every stack: want its search term to give Stack the stack's name", w.where, metricKey(w.namespace, w.name, w.dims))
			} else if !emits(emitted, w) {
				t.Errorf("%s watches %s, which the functions never write; they write %v", w.where, metricKey(w.namespace, w.name, w.dims), slices.Sorted(maps.Keys(emitted)))
			}
			continue
		}
		byDim, ok := awsMetrics[w.namespace]
		if !ok {
			t.Errorf("%s watches %s %s: a namespace of no resource of the stack", w.where, w.namespace, w.name)
			continue
		}
		dims := w.dims
		if ops, ok := awsOperationMetrics[w.name]; ok {
			if !slices.Contains(ops, dims["Operation"]) {
				t.Errorf("%s watches %s %s %v: want the Operation %v", w.where, w.namespace, w.name, w.dims, ops)
				continue
			}
			dims = maps.Clone(dims)
			delete(dims, "Operation")
		}
		matched := false
		for dim, names := range byDim {
			matched = matched || len(dims) == 1 && resources[dim][dims[dim]] && slices.Contains(names, w.name)
		}
		if !matched {
			t.Errorf("%s watches %s %s %v: want one of %v by one dimension naming a resource of the stack (%v)", w.where, w.namespace, w.name, w.dims, byDim, resources)
		}
	}
	if own == 0 {
		t.Fatalf("no alarm or widget watches the namespace %s", namespace)
	}
}

// The alarm on the eviction policy of a Redis of yours reads RedisEvictionPolicy under
// every Policy the functions write for it (each one evicts: they write none for
// noeviction), a policy they do not name too: a node counted under a Policy the alarm
// does not read would never fire it.
func TestTemplateEvictionPolicyAlarmReadsEveryPolicy(t *testing.T) {
	const alarm = "RedisEvictionPolicyAlarm"
	d := deploy(t, readTemplate(t, limiter), "VpcId", "vpc-1", "SubnetIds", "subnet-1", "RouteTableIds", "rtb-1", "RedisEndpoint", "redis.internal:6379")
	r, ok := d.resources(t)[alarm]
	if !ok {
		t.Fatalf("no %s with a RedisEndpoint", alarm)
	}
	read := map[string]bool{}
	for _, w := range alarmMetrics(t, alarm, r.Properties) {
		if w.name == telemetry.MetricRedisEvictionPolicy && w.dims[telemetry.DimStack] == testStack && len(w.dims) == 2 {
			read[w.dims[telemetry.DimPolicy]] = true
		}
	}
	namespace, emitted := emittedMetrics(t)
	written := map[string]bool{}
	for k := range emitted {
		for _, p := range slices.Concat([]string{"noeviction", unnamedPolicy, "other"}, evictionPolicies) {
			dims := map[string]string{telemetry.DimStack: testStack, telemetry.DimPolicy: p}
			if k == metricKey(namespace, telemetry.MetricRedisEvictionPolicy, dims) {
				written[p] = true
			}
		}
	}
	if len(written) <= len(evictionPolicies) {
		t.Fatalf("the functions write RedisEvictionPolicy by Stack and Policy under %v: want each policy of %v, and one for %s", slices.Sorted(maps.Keys(written)), evictionPolicies, unnamedPolicy)
	}
	for _, p := range slices.Sorted(maps.Keys(written)) {
		if !read[p] {
			t.Errorf("%s does not read RedisEvictionPolicy with Policy %s, which the functions write (it reads %v): it would never fire for such a node", alarm, p, slices.Sorted(maps.Keys(read)))
		}
	}
}

// metricRow is a row of the metric table of docs/operations.md: the metric and the
// dimensions of its first column, their values (in parentheses) left out.
var metricRow = regexp.MustCompile("(?m)^\\| `([A-Za-z]+)` \\| [A-Za-z]+ \\| ([^|]+) \\|")

// The metric table of docs/operations.md lists every metric the functions write, under
// the dimension sets they write it by, and no other.
func TestOperationsMetricTable(t *testing.T) {
	namespace, emitted := emittedMetrics(t)
	written := map[string]map[string]bool{} // metric -> its dimension sets, names sorted
	for k := range emitted {
		rest, ok := strings.CutPrefix(k, namespace+" ")
		name, dims, _ := strings.Cut(rest, " {")
		if !ok {
			t.Fatalf("%s: not in %s", k, namespace)
		}
		var set []string
		for _, d := range strings.Split(strings.TrimSuffix(dims, "}"), ", ") {
			n, _, _ := strings.Cut(d, "=")
			set = append(set, n)
		}
		if written[name] == nil {
			written[name] = map[string]bool{}
		}
		written[name][strings.Join(set, ", ")] = true
	}
	const doc = "docs/operations.md"
	listed := map[string]map[string]bool{}
	for _, m := range metricRow.FindAllStringSubmatch(readFile(t, doc), -1) {
		listed[m[1]] = map[string]bool{}
		for _, set := range strings.Split(regexp.MustCompile(`\([^)]*\)`).ReplaceAllString(m[2], ""), ";") {
			var names []string
			for _, n := range regexp.MustCompile("`([A-Za-z]+)`").FindAllStringSubmatch(set, -1) {
				names = append(names, n[1])
			}
			slices.Sort(names)
			listed[m[1]][strings.Join(names, ", ")] = true
		}
	}
	for _, name := range slices.Sorted(maps.Keys(written)) {
		if got, want := slices.Sorted(maps.Keys(listed[name])), slices.Sorted(maps.Keys(written[name])); !slices.Equal(got, want) {
			t.Errorf("%s: %s by %q, want by %q as the functions write it", doc, name, got, want)
		}
	}
	for name := range listed {
		if written[name] == nil {
			t.Errorf("%s lists %s, which the functions never write", doc, name)
		}
	}
}
