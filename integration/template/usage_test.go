package template_test

// Per-identity usage without per-identity metrics: the template's Contributor Insights
// rules read the decision log lines the functions really write, at the level Lambda's
// logging controls set, and no metric dimension holds an identity.

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"

	"github.com/bucketgate/bucketgate"
	"github.com/bucketgate/bucketgate/internal/app"
	"github.com/bucketgate/bucketgate/internal/settings"
	"github.com/bucketgate/bucketgate/internal/telemetry"
	"github.com/bucketgate/bucketgate/internal/testkit/logbytes"
	"github.com/bucketgate/bucketgate/internal/testkit/samples"
)

// insightRule is the part of a Contributor Insights rule body the tests read.
type insightRule struct {
	Schema struct {
		Name    string `json:"Name"`
		Version int    `json:"Version"`
	} `json:"Schema"`
	LogGroupNames []string `json:"LogGroupNames"`
	LogFormat     string   `json:"LogFormat"`
	Contribution  struct {
		Keys    []string `json:"Keys"`
		Filters []struct {
			Match string `json:"Match"`
			In    []any  `json:"In"`
		} `json:"Filters"`
	} `json:"Contribution"`
	AggregateOn string `json:"AggregateOn"`
}

// subRef matches a ${...} of a Fn::Sub string, keeping what is inside.
var subRef = regexp.MustCompile(`\$\{([^}]*)\}`)

// insightRules returns the template's Contributor Insights rules by logical id, with
// every ${X} of their Fn::Sub bodies replaced by X.
func insightRules(t *testing.T, tpl samTemplate) map[string]insightRule {
	t.Helper()
	rules := map[string]insightRule{}
	for id, r := range tpl.Resources {
		if r.Type != "AWS::CloudWatch::InsightRule" {
			continue
		}
		var p struct {
			RuleState string `yaml:"RuleState"`
			RuleBody  string `yaml:"RuleBody"`
		}
		r.properties(t, &p)
		var rule insightRule
		if err := json.Unmarshal([]byte(subRef.ReplaceAllString(p.RuleBody, "$1")), &rule); err != nil {
			t.Fatalf("%s: rule body: %v", id, err)
		}
		if p.RuleState != "ENABLED" || rule.Schema.Name != "CloudWatchLogRule" || rule.Schema.Version != 1 || rule.LogFormat != "JSON" || rule.AggregateOn != "Count" {
			t.Errorf("%s: state %s, %+v: want an enabled CloudWatchLogRule v1 over JSON logs, counting", id, p.RuleState, rule)
		}
		rules[id] = rule
	}
	return rules
}

// logGroups returns the logical ids of the log groups the functions of functions/ (the
// authorizer and the check function, whose decisions the rules count; not the operator
// function's peeks) write to: the group each one's LoggingConfig names.
func logGroups(t *testing.T, tpl samTemplate) []string {
	t.Helper()
	var ids []string
	for _, name := range goFunctions(t) {
		var p struct {
			LoggingConfig struct {
				LogGroup string `yaml:"LogGroup"` // !Ref X decodes as X
			} `yaml:"LoggingConfig"`
		}
		tpl.Resources[logicalID(name)].properties(t, &p)
		if g, ok := tpl.Resources[p.LoggingConfig.LogGroup]; !ok || g.Type != "AWS::Logs::LogGroup" {
			t.Fatalf("%s: LoggingConfig.LogGroup %q: want !Ref of a log group of the template", logicalID(name), p.LoggingConfig.LogGroup)
		}
		ids = append(ids, p.LoggingConfig.LogGroup)
	}
	return slices.Sorted(slices.Values(ids))
}

// decisionLogs runs the free plan's scenario through both functions as Lambda runs them
// with the template's stack name and the given log level (AWS_LAMBDA_LOG_LEVEL): eleven authorizer
// requests with one API key (the 11th limited), eleven more from one address, and three
// checks. It returns the JSON log lines and the EMF lines written, and the raw key.
func decisionLogs(t *testing.T, level string) (logs, metrics []map[string]any, rawKey string) {
	t.Helper()
	rawKey = "bg-insights-raw-key"
	m := miniredis.RunT(t)
	m.SetTime(time.Date(2025, 12, 11, 16, 15, 0, 0, time.UTC))
	// The key is registered (a key nobody registered would be limited as its source).
	doc := "defaultPlan: free\nplans: {free: [{name: burst, capacity: 10, refillPerSecond: 1}], pro: [{name: burst, capacity: 100, refillPerSecond: 50}]}\n" +
		"keys: {" + bucketgate.KeyDigest(rawKey) + ": free}"
	env := map[string]string{settings.EnvRedisAddr: m.Addr(), settings.EnvTimeoutMS: decisionTimeout, settings.EnvLambdaLogLevel: level, settings.EnvConfigInline: doc,
		settings.EnvStackName: testStack}
	var logOut, metricOut bytes.Buffer
	for _, f := range []app.Function{app.Authorizer, app.Check} {
		h, _, err := app.Build(f, func(k string) string { return env[k] }, &metricOut, &logOut)
		if err != nil {
			t.Fatal(err)
		}
		events := [][]byte{}
		if f.Name == app.Authorizer.Name {
			for range 11 {
				events = append(events, samples.WithAPIKey(t, samples.Read(t, "authorizer-rest.json"), rawKey))
			}
			for range 11 {
				events = append(events, samples.Read(t, "authorizer-rest.json"))
			}
		} else {
			events = append(events, []byte(`{"key":"`+rawKey+`","cost":1}`), []byte(`{"key":"`+rawKey+`","cost":1}`), samples.Read(t, "check-single.json"))
		}
		for _, ev := range events {
			if _, err := h.Invoke(context.Background(), ev); err != nil {
				t.Fatal(err)
			}
		}
	}
	return jsonLines(t, &logOut), jsonLines(t, &metricOut), rawKey
}

// jsonLines decodes the JSON objects of b, one a line.
func jsonLines(t *testing.T, b *bytes.Buffer) (lines []map[string]any) {
	t.Helper()
	for dec := json.NewDecoder(b); dec.More(); {
		var m map[string]any
		if err := dec.Decode(&m); err != nil {
			t.Fatalf("JSON lines: %v", err)
		}
		lines = append(lines, m)
	}
	return lines
}

// contributions applies rule to log lines as Contributor Insights does: the lines every
// filter matches, counted by the value of the rule's key.
func contributions(t *testing.T, rule insightRule, lines []map[string]any) map[string]int {
	t.Helper()
	if len(rule.Contribution.Keys) != 1 {
		t.Fatalf("keys %v: want one", rule.Contribution.Keys)
	}
	checkPath := func(path string) {
		if !strings.HasPrefix(path, "$.") || strings.Count(path, ".") != 1 {
			t.Fatalf("path %q: want $.field (the decision line is flat)", path)
		}
	}
	counts := map[string]int{}
lines:
	for _, line := range lines {
		for _, f := range rule.Contribution.Filters {
			checkPath(f.Match)
			if !slices.Contains(f.In, line[strings.TrimPrefix(f.Match, "$.")]) {
				continue lines
			}
		}
		key := rule.Contribution.Keys[0]
		checkPath(key)
		v, ok := line[strings.TrimPrefix(key, "$.")].(string)
		if !ok || v == "" {
			t.Fatalf("a line the rule counts has no %s: %v", key, line)
		}
		counts[v]++
	}
	return counts
}

// The rules count identities from the decision lines the functions write at the
// template's default log level: the one rule, the top identities by limited requests,
// counts the limited ones, by digest, never the raw key, and the dashboard shows it. No
// rule reads lines the default level does not write (it would show nothing): requests
// by identity are usage, counted by Redis.
func TestTemplateContributorInsights(t *testing.T) {
	tpl := loadTemplate(t, limiter)
	rules := insightRules(t, tpl)
	groups := logGroups(t, tpl)
	logs, _, rawKey := decisionLogs(t, tpl.Parameters["LogLevel"].Default)
	keyIdentity := "key:" + bucketgate.KeyDigest(rawKey)
	want := map[string]int{keyIdentity: 1, "ip:203.0.113.10": 1} // the limited requests
	shown := dashboardInsightRules(t, tpl)
	if len(rules) == 0 {
		t.Fatal("no Contributor Insights rule")
	}
	for id, rule := range rules {
		if !slices.Equal(slices.Sorted(slices.Values(rule.LogGroupNames)), groups) {
			t.Errorf("%s: log groups %v, want both functions' %v", id, rule.LogGroupNames, groups)
		}
		if !slices.Equal(rule.Contribution.Keys, []string{"$." + telemetry.AttrIdentity}) {
			t.Errorf("%s: keys %v, want the decision line's identity", id, rule.Contribution.Keys)
		}
		if got := contributions(t, rule, logs); !maps.Equal(got, want) {
			t.Errorf("%s counts %v at the default log level, want the limited requests %v", id, got, want)
		}
		if !slices.Contains(shown, id+".RuleName") {
			t.Errorf("the dashboard does not show %s; it shows %v", id, shown)
		}
	}
	for _, l := range logs {
		if strings.Contains(fmt.Sprint(l), rawKey) {
			t.Errorf("a log line holds the raw key: %v", l)
		}
	}
}

// dashboardInsightRules returns the rule names the dashboard's widgets show, with
// ${X} as X.
func dashboardInsightRules(t *testing.T, tpl samTemplate) []string {
	t.Helper()
	var names []string
	for id, r := range tpl.Resources {
		if r.Type != "AWS::CloudWatch::Dashboard" {
			continue
		}
		var d struct {
			DashboardBody []any `yaml:"DashboardBody"` // Fn::Sub: the text, its variables
		}
		r.properties(t, &d)
		text, _ := d.DashboardBody[0].(string)
		var dash struct {
			Widgets []struct {
				Properties struct {
					InsightRule *struct {
						RuleName string `json:"ruleName"`
					} `json:"insightRule"`
				} `json:"properties"`
			} `json:"widgets"`
		}
		if err := json.Unmarshal([]byte(subRef.ReplaceAllString(text, "$1")), &dash); err != nil {
			t.Fatalf("%s: %v", id, err)
		}
		for _, w := range dash.Widgets {
			if w.Properties.InsightRule != nil {
				names = append(names, w.Properties.InsightRule.RuleName)
			}
		}
	}
	return names
}

// No metric dimension holds an identity: every metric of the scenario, run as Lambda
// runs the functions with the template's STACK_NAME, is one of those the alarms and
// dashboards may select (emittedMetrics: the stack's name, the functions, outcomes,
// reasons and results, nothing else), and no identity appears in an EMF line.
func TestMetricsHoldNoIdentity(t *testing.T) {
	logs, metrics, rawKey := decisionLogs(t, "DEBUG")
	identities := map[string]bool{}
	for _, l := range logs {
		if id, ok := l[telemetry.AttrIdentity].(string); ok {
			identities[id] = true
		}
	}
	if len(identities) < 3 {
		t.Fatalf("identities %v: want the scenario's", identities)
	}
	_, emitted := emittedMetrics(t)
	for k := range emfMetrics(t, metrics) {
		if _, ok := emitted[k]; !ok {
			t.Errorf("metric %s is none of %v", k, slices.Sorted(maps.Keys(emitted)))
		}
	}
	for _, m := range metrics {
		line, _ := json.Marshal(m)
		for id := range identities {
			if strings.Contains(string(line), strings.SplitN(id, ":", 2)[1]) {
				t.Errorf("EMF line holds identity %s: %s", id, line)
			}
		}
		if strings.Contains(string(line), rawKey) {
			t.Errorf("EMF line holds the raw key: %s", line)
		}
	}
}

// Both functions follow Lambda's logging controls: the template sets LoggingConfig with
// JSON logs, an application log level the code reads from AWS_LAMBDA_LOG_LEVEL, never
// above INFO (Lambda files the EMF lines, which have no level, as INFO: WARN would drop
// every metric), and Lambda's own level; the defaults are those the cost of logs is
// measured at (logbytes.Defaults); at the default a line is written per limited
// decision and none per allowed one; and the template no longer sets LOG_LEVEL, which
// Lambda's level overrides.
func TestTemplateLoggingConfig(t *testing.T) {
	tpl := loadTemplate(t, limiter)
	for _, name := range goFunctions(t) {
		lc := tpl.function(t, tpl.Resources[logicalID(name)]).LoggingConfig
		if lc.LogFormat != "JSON" || lc.ApplicationLogLevel != "LogLevel" || lc.SystemLogLevel != "SystemLogLevel" {
			t.Fatalf("%s: LoggingConfig %+v: want JSON, !Ref LogLevel and !Ref SystemLogLevel", name, lc)
		}
	}
	if _, set := tpl.Globals.Function.Environment.Variables[settings.EnvLogLevel]; set {
		t.Errorf("the template sets %s, which %s overrides", settings.EnvLogLevel, settings.EnvLambdaLogLevel)
	}
	param, ok := tpl.Parameters["LogLevel"]
	if !ok || len(param.AllowedValues) == 0 {
		t.Fatalf("parameter LogLevel %+v: want its allowed values", param)
	}
	for _, level := range param.AllowedValues {
		s, err := settingsWith(settings.EnvLambdaLogLevel, level)
		if err != nil || s.LogLevel > settings.DefaultLogLevel {
			t.Errorf("LogLevel %s: level %v, %v: want one the code reads, at most INFO", level, s.LogLevel, err)
		}
	}
	system := tpl.Parameters["SystemLogLevel"]
	if got := (logbytes.Levels{Application: param.Default, System: system.Default}); got != logbytes.Defaults {
		t.Errorf("the template's levels %v; the cost of logs is measured at %v (internal/testkit/logbytes)", got, logbytes.Defaults)
	}
	for _, level := range system.AllowedValues {
		if _, err := logbytes.PlatformBytes(level); err != nil {
			t.Errorf("SystemLogLevel %s: %v", level, err)
		}
	}
	logs, _, _ := decisionLogs(t, param.Default)
	decisions := map[any]int{}
	for _, l := range logs {
		if l["msg"] == telemetry.MsgDecision {
			decisions[l["reason"]]++
		}
	}
	if want := map[any]int{"limited": 2}; !maps.Equal(decisions, want) {
		t.Errorf("decision lines by reason %v at the default log level %s, want one per limited decision %v", decisions, param.Default, want)
	}
}
