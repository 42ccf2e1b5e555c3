package template_test

// The rules of every API stage (rules_test.go applies them to every template): an access
// log line per request, throttling before the authorizer, TLS 1.2 and above on a REST
// API's own endpoint, and log groups that outlive a deletion but not their retention.

import (
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// accessLogVariables are the $context variables every access log line must hold, by
// the type of API: the request, its status and the gateway response's type, and what
// the authorizer did (a REST API names its status, latency and error; an HTTP API its
// error alone), with the decision's reason from the authorizer's context.
var accessLogVariables = map[string][]string{
	"AWS::Serverless::Api": {"requestId", "status", "error.responseType", "error.messageString",
		"authorizer.status", "authorizer.latency", "authorizer.error", "authorizer.principalId", "authorizer.reason", "identity.sourceIp"},
	"AWS::Serverless::HttpApi": {"requestId", "status", "error.responseType", "error.messageString", "authorizer.error", "authorizer.reason", "identity.sourceIp"},
}

// accessLogProperty is where each type of API takes its access log setting.
var accessLogProperty = map[string]string{"AWS::Serverless::Api": "AccessLogSetting", "AWS::Serverless::HttpApi": "AccessLogSettings"}

// contextVariable matches a $context variable of an access log format.
var contextVariable = regexp.MustCompile(`\$context\.([A-Za-z.]+)`)

// checkAccessLogs: with the template's defaults, every API writes one JSON line per
// request, holding accessLogVariables, to a log group of the template.
func checkAccessLogs(t *testing.T, path string) {
	d := deploy(t, readTemplate(t, path))
	rs := d.resources(t)
	for id, r := range rs {
		prop, ok := accessLogProperty[r.Type]
		if !ok {
			continue
		}
		setting, _ := r.Properties[prop].(map[string]any)
		format, _ := setting["Format"].(string)
		if format == "" {
			t.Errorf("%s: %s %v: want a Format", id, prop, setting)
			continue
		}
		// An unquoted variable is one that writes JSON itself (messageString); the rest
		// are quoted, so that API Gateway's "-" for a missing value stays JSON.
		line := strings.ReplaceAll(format, "$context.error.messageString", `"x"`)
		line = contextVariable.ReplaceAllString(line, "x")
		var fields map[string]any
		if err := json.Unmarshal([]byte(line), &fields); err != nil {
			t.Errorf("%s: the access log line is not JSON: %v\n%s", id, err, line)
		}
		var used []string
		for _, m := range contextVariable.FindAllStringSubmatch(format, -1) {
			used = append(used, m[1])
		}
		for _, v := range accessLogVariables[r.Type] {
			if !slices.Contains(used, v) {
				t.Errorf("%s: the access log line lacks $context.%s", id, v)
			}
		}
		found := false
		for _, g := range collectGetAtts(setting["DestinationArn"]) {
			found = found || rs[g].Type == "AWS::Logs::LogGroup"
		}
		if !found {
			t.Errorf("%s: access logs to %v: want a log group of the template", id, setting["DestinationArn"])
		}
	}
}

// collectGetAtts returns the resources whose Arn the value reads, at any depth.
func collectGetAtts(v any) []string {
	var out []string
	switch v := v.(type) {
	case map[string]any:
		if args, ok := v["Fn::GetAtt"].([]any); ok && len(args) == 2 && args[1] == "Arn" {
			out = append(out, fmt.Sprint(args[0]))
		}
		for _, e := range v {
			out = append(out, collectGetAtts(e)...)
		}
	case []any:
		for _, e := range v {
			out = append(out, collectGetAtts(e)...)
		}
	}
	return out
}

// checkStageThrottling: with the template's defaults, every API's stage throttles every
// route before the authorizer is invoked (a REST API's MethodSettings for /* and every
// method, an HTTP API's DefaultRouteSettings), a steady rate and a burst of at least one.
func checkStageThrottling(t *testing.T, path string) {
	for id, r := range deploy(t, readTemplate(t, path)).resources(t) {
		var settings map[string]any
		switch r.Type {
		case "AWS::Serverless::Api":
			list, _ := r.Properties["MethodSettings"].([]any)
			for _, m := range list {
				if m, _ := m.(map[string]any); m["ResourcePath"] == "/*" && m["HttpMethod"] == "*" {
					settings = m
				}
			}
		case "AWS::Serverless::HttpApi":
			settings, _ = r.Properties["DefaultRouteSettings"].(map[string]any)
		default:
			continue
		}
		for _, k := range []string{"ThrottlingRateLimit", "ThrottlingBurstLimit"} {
			var n float64
			if _, err := fmt.Sscan(fmt.Sprint(settings[k]), &n); err != nil || n < 1 {
				t.Errorf("%s: %s %v: want a limit for every route", id, k, settings[k])
			}
		}
	}
}

// restSecurityPolicies are the security policies of a Regional REST API that refuse
// TLS 1.0 and 1.1 (API Gateway's default for one is TLS_1_0); those named
// SecurityPolicy_* need an endpoint access mode too.
var restSecurityPolicies = []string{"TLS_1_2", "SecurityPolicy_TLS13_1_2_2021_06", "SecurityPolicy_TLS13_1_2_PQ_2025_09", "SecurityPolicy_TLS13_1_2_PFS_PQ_2025_09",
	"SecurityPolicy_TLS13_1_2_FIPS_PQ_2025_09", "SecurityPolicy_TLS13_1_2_FIPS_PFS_PQ_2025_09", "SecurityPolicy_TLS13_1_3_2025_09", "SecurityPolicy_TLS13_1_3_FIPS_2025_09"}

// checkRESTTLS: every REST API is Regional with a security policy of TLS 1.2 and above on
// its own execute-api endpoint (a SecurityPolicy of the API itself: a custom domain's
// would not cover that endpoint), and a STRICT endpoint access mode with an enhanced
// policy. HTTP APIs take TLS 1.2 and above only, with nothing to set.
func checkRESTTLS(t *testing.T, path string) {
	for id, r := range deploy(t, readTemplate(t, path)).resources(t) {
		if r.Type != "AWS::Serverless::Api" {
			continue
		}
		p := r.Properties
		policy, _ := p["SecurityPolicy"].(string)
		endpoint, _ := p["EndpointConfiguration"].(map[string]any)
		if endpoint["Type"] != "REGIONAL" || !slices.Contains(restSecurityPolicies, policy) ||
			strings.HasPrefix(policy, "SecurityPolicy_") && p["EndpointAccessMode"] != "STRICT" {
			t.Errorf("%s: endpoint %v, SecurityPolicy %q, EndpointAccessMode %v: want REGIONAL, one of %v, STRICT", id, endpoint, policy, p["EndpointAccessMode"], restSecurityPolicies)
		}
	}
}

// checkLogGroups: every log group of the template has a retention and outlives the stack
// and a replacement (DeletionPolicy and UpdateReplacePolicy Retain), and no fixed name,
// so that a stack deployed again under the same name never meets the group it kept.
func checkLogGroups(t *testing.T, path string) {
	doc := readTemplate(t, path)
	n := 0
	for id, r := range section(doc, "Resources") {
		r, _ := r.(map[string]any)
		if r["Type"] != "AWS::Logs::LogGroup" {
			continue
		}
		n++
		p, _ := r["Properties"].(map[string]any)
		if r["DeletionPolicy"] != "Retain" || r["UpdateReplacePolicy"] != "Retain" || p["RetentionInDays"] == nil || p["LogGroupName"] != nil {
			t.Errorf("%s: %v: want DeletionPolicy and UpdateReplacePolicy Retain, RetentionInDays, no LogGroupName", id, r)
		}
	}
	if n == 0 {
		t.Errorf("no log group: every API's access logs and every function's logs have one")
	}
}
