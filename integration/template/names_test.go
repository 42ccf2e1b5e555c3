package template_test

// The names the stack gives its resources, made from its own name or id, held to the
// rules AWS holds each to, for every stack name deploy.md says the template takes: a
// name out of its rules fails the deployment halfway, after the VPC and the functions,
// and rolls it back.

import (
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// nameRules are AWS's rules for a name, by resource type and property: at most max
// characters, matching pattern.
var nameRules = map[string]struct {
	max     int
	pattern *regexp.Regexp
}{
	// Lambda's resource schema: 64 characters.
	"AWS::Serverless::Function FunctionName": {64, regexp.MustCompile(`^[A-Za-z0-9_-]+$`)},
	// ElastiCache takes 40 characters, a letter first, neither two hyphens in a row nor
	// one at the end, and stores the name in lowercase: the functions sign their IAM
	// tokens for the name and the cache alarms read its metrics by it (clusterId), as
	// the template gives it, so it must be the lowercase one ElastiCache stores.
	"AWS::ElastiCache::ServerlessCache ServerlessCacheName": {40, regexp.MustCompile(`^[a-z](-?[a-z0-9])*$`)},
	// CloudWatch's PutInsightRule: 128 printable ASCII characters.
	"AWS::CloudWatch::InsightRule RuleName": {128, regexp.MustCompile(`^[\x20-\x7E]+$`)},
	// CloudWatch's PutDashboard: 255 letters, digits, hyphens and underscores.
	"AWS::CloudWatch::Dashboard DashboardName": {255, regexp.MustCompile(`^[A-Za-z0-9_-]+$`)},
	// SNS's CreateTopic: a display name of 100 characters.
	"AWS::SNS::Topic DisplayName": {100, regexp.MustCompile(`^[\x20-\x7E]+$`)},
}

// stackNameMax returns the longest stack name deploy.md says the template takes.
func stackNameMax(t *testing.T) int {
	t.Helper()
	m := regexp.MustCompile(`stack's name \(at most (\d+) characters`).FindStringSubmatch(readFile(t, "docs/deploy.md"))
	if m == nil {
		t.Fatal("docs/deploy.md says no longest stack name (\"the stack's name (at most N characters\")")
	}
	n, _ := strconv.Atoi(m[1])
	return n
}

// name is a name the stack gives a resource: where it is ("logical id property"), the
// key of its rule in nameRules, and the name.
type name struct{ where, rule, name string }

// breaks reports whether n breaks its rule, and which way.
func (n name) breaks() (string, bool) {
	r := nameRules[n.rule]
	if len(n.name) > r.max || !r.pattern.MatchString(n.name) {
		return fmt.Sprintf("%s %q (%d characters): want at most %d matching %s", n.where, n.name, len(n.name), r.max, r.pattern), true
	}
	return "", false
}

// named returns the names the default deployment gives its resources under nameRules,
// with the stack's name and id given.
func named(t *testing.T, stack string) []name {
	t.Helper()
	d := deploy(t, readTemplate(t, limiter))
	d.params["AWS::StackName"] = stack
	d.params["AWS::StackId"] = "arn:aws:cloudformation:" + testRegion + ":123456789012:stack/" + stack + "/5f0c1e2a-9b3d-11ef-8f4e-0a1b2c3d4e5f"
	var out []name
	for id, r := range d.resources(t) {
		for key := range nameRules {
			typ, prop, _ := strings.Cut(key, " ")
			v, ok := r.Properties[prop]
			if r.Type != typ || !ok {
				continue
			}
			s, err := d.substitute(v)
			if err != nil {
				t.Fatalf("%s %s: %v", id, prop, err)
			}
			out = append(out, name{id + " " + prop, key, s})
		}
	}
	return out
}

// substitute returns the string v resolves to: a string, or a Fn::Sub of parameters,
// pseudo parameters and its own variables; anything else (a resource's attribute) is an
// error.
func (d deployment) substitute(v any) (string, error) {
	if s, ok := v.(string); ok {
		return s, nil
	}
	m, _ := v.(map[string]any)
	text, vars := m["Fn::Sub"], map[string]any{}
	if l, ok := text.([]any); ok && len(l) == 2 {
		text = l[0]
		vars, _ = l[1].(map[string]any)
	}
	s, ok := text.(string)
	if !ok || len(m) != 1 {
		return "", fmt.Errorf("%v: want a string or a Fn::Sub", v)
	}
	var err error
	out := subRef.ReplaceAllStringFunc(s, func(ref string) string {
		key := subRef.FindStringSubmatch(ref)[1]
		for _, values := range []map[string]any{vars, d.params, pseudo} {
			if v, ok := values[key].(string); ok {
				return v
			}
		}
		err = fmt.Errorf("%s: ${%s} is not known before the deployment", s, key)
		return ref
	})
	return out, err
}

// Every name the stack makes of its name or id keeps AWS's rules for every stack name up
// to the longest deploy.md says it takes (a letter, then letters, digits and hyphens),
// whatever its letters' case and hyphens; and that longest is exact: one more character
// breaks a rule.
func TestTemplateNamesFitTheStackName(t *testing.T) {
	longest := stackNameMax(t)
	if longest > 128 {
		t.Fatalf("deploy.md takes stack names of %d characters; CloudFormation's are 128 at most", longest)
	}
	pad := func(s string) string { return s + strings.Repeat("x", longest-len(s)) }
	stacks := map[string]string{
		"lowercase":                    pad("bucketgate"),
		"capitals":                     pad("Payments-RateLimiter-"),
		"hyphens in a row, at the end": pad("edge--api-")[:longest-1] + "-",
		"the default":                  "bucketgate",
		"one letter":                   "B",
	}
	for desc, stack := range stacks {
		t.Run(desc, func(t *testing.T) {
			names := named(t, stack)
			if len(names) < len(nameRules) {
				t.Fatalf("%v: want a name of each kind of %v", names, nameRules)
			}
			for _, n := range names {
				if why, broken := n.breaks(); broken {
					t.Errorf("stack %q (%d characters): %s", stack, len(stack), why)
				}
			}
		})
	}
	if longest < 128 && !slices.ContainsFunc(named(t, pad("bucketgate")+"x"), func(n name) bool { _, b := n.breaks(); return b }) {
		t.Errorf("a stack name of %d characters keeps every rule: deploy.md's longest, %d, is too short", longest+1, longest)
	}
}
