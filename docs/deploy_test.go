package docs_test

import (
	"encoding/json"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"
)

// section returns the text of the second-level section heading of doc, up to the next
// one.
func section(t *testing.T, doc, heading string) string {
	t.Helper()
	_, text, ok := strings.Cut(readFile(t, doc), "\n## "+heading+"\n")
	if !ok {
		t.Fatalf("%s has no section %q", doc, heading)
	}
	text, _, _ = strings.Cut(text, "\n## ")
	return text
}

// tableRow matches a row of a table whose first cell names things in code spans.
var tableRow = regexp.MustCompile("(?m)^\\| (`[^|]+) \\| ([^|]*) \\|")

// tableNames returns, for the first table of text whose first cells are code spans, every
// name of its first column (a cell may name several: `A`, `B`), with the row's second
// cell.
func tableNames(t *testing.T, text string) map[string]string {
	t.Helper()
	names := map[string]string{}
	for _, m := range tableRow.FindAllStringSubmatch(text, -1) {
		for _, n := range inlineSpan.FindAllStringSubmatch(m[1], -1) {
			if _, dup := names[n[1]]; dup {
				t.Errorf("the table names %s twice", n[1])
			}
			names[n[1]] = strings.TrimSpace(m[2])
		}
	}
	return names
}

// samTemplate is what these tests read of template.yaml.
type samTemplate struct {
	Parameters map[string]struct {
		Default yaml.Node `yaml:"Default"`
	} `yaml:"Parameters"`
	Outputs map[string]yaml.Node `yaml:"Outputs"`
}

func readTemplate(t *testing.T) samTemplate {
	t.Helper()
	var tpl samTemplate
	if err := yaml.Unmarshal([]byte(readFile(t, "template.yaml")), &tpl); err != nil {
		t.Fatal(err)
	}
	if len(tpl.Parameters) < 10 || len(tpl.Outputs) < 5 {
		t.Fatalf("template.yaml: %d parameters, %d outputs: is the parse right?", len(tpl.Parameters), len(tpl.Outputs))
	}
	return tpl
}

// sameNames reports each name that the template's list of what has and the table's
// lacks, and each the other way round.
func sameNames(t *testing.T, what string, template, doc []string) {
	t.Helper()
	for _, n := range template {
		if !slices.Contains(doc, n) {
			t.Errorf("docs/deploy.md: the %s table lacks %s, which template.yaml has", what, n)
		}
	}
	for _, n := range doc {
		if !slices.Contains(template, n) {
			t.Errorf("docs/deploy.md: the %s table names %s, which template.yaml lacks", what, n)
		}
	}
}

// The table of parameters in docs/deploy.md is template.yaml's Parameters: every one, no
// other, each with its default ("empty" for "").
func TestDeployParameters(t *testing.T) {
	params := readTemplate(t).Parameters
	table := tableNames(t, section(t, "docs/deploy.md", "Parameters"))
	sameNames(t, "Parameters", slices.Sorted(maps.Keys(params)), slices.Sorted(maps.Keys(table)))
	for name, p := range params {
		shown, ok := table[name]
		if !ok {
			continue
		}
		want := "empty"
		if p.Default.Value != "" {
			want = "`" + p.Default.Value + "`"
		}
		if shown != want {
			t.Errorf("docs/deploy.md: parameter %s: default %s, template.yaml's is %s", name, shown, want)
		}
	}
}

// The table of outputs in docs/deploy.md is template.yaml's Outputs: every one, no other.
func TestDeployOutputs(t *testing.T) {
	outputs := readTemplate(t).Outputs
	table := tableNames(t, section(t, "docs/deploy.md", "Outputs and exports"))
	sameNames(t, "Outputs", slices.Sorted(maps.Keys(outputs)), slices.Sorted(maps.Keys(table)))
}

// The CLI's IAM policy shown in docs/deploy.md is cmd/bucketgate/iam-policy.json, the
// policy the CLI's tests hold to the calls it makes.
func TestDeployCLIPolicy(t *testing.T) {
	shown := fenced(t, section(t, "docs/deploy.md", "IAM of the CLI"), "json")
	file := readFile(t, "cmd/bucketgate/iam-policy.json")
	if strings.TrimSpace(shown) != strings.TrimSpace(file) {
		t.Errorf("docs/deploy.md shows the CLI's policy:\n%s\ncmd/bucketgate/iam-policy.json is:\n%s", shown, file)
	}
	if !json.Valid([]byte(file)) {
		t.Error("cmd/bucketgate/iam-policy.json is not JSON")
	}
}

// The deploy quick start is the README's: docs/deploy.md shows the same commands, which
// the README's section says in a line and deploy.md explains.
func TestDeployQuickStartIsTheREADMEs(t *testing.T) {
	readme := fenced(t, section(t, "README.md", "Quick start: AWS"), "sh")
	deploy := fenced(t, section(t, "docs/deploy.md", "Quick start"), "sh")
	if readme != deploy {
		t.Errorf("README.md's AWS quick start:\n%s\ndocs/deploy.md's:\n%s", readme, deploy)
	}
	lines := strings.Split(strings.TrimSpace(deploy), "\n")
	if len(lines) > 10 || !strings.Contains(deploy, "bucketgate --stack ") {
		t.Errorf("the deploy quick start has %d commands, want at most 10, one of them bucketgate --stack:\n%s", len(lines), deploy)
	}
}

// alarmMetricsRow matches the Costs table's row of alarms: the alarm metrics at the
// defaults, then with RedisEndpoint.
var alarmMetricsRow = regexp.MustCompile("(?m)^\\| CloudWatch alarms \\| [0-9.]+ \\| ([0-9]+) alarm metrics .*with `RedisEndpoint`, ([0-9]+) \\(no cache alarms; the eviction policy alarm reads ([0-9]+)\\)")

// The alarm metrics docs/deploy.md prices are template.yaml's: each metric an alarm
// reads (an alarm of one metric counts one), at the defaults and with RedisEndpoint
// (which creates no cache, and so none of its alarms, and adds the eviction policy
// alarm).
func TestDeployAlarmMetrics(t *testing.T) {
	var tpl struct {
		Resources map[string]struct {
			Type       string `yaml:"Type"`
			Condition  string `yaml:"Condition"`
			Properties struct {
				Metrics []struct {
					MetricStat any `yaml:"MetricStat"`
				} `yaml:"Metrics"`
			} `yaml:"Properties"`
		} `yaml:"Resources"`
	}
	if err := yaml.Unmarshal([]byte(readFile(t, "template.yaml")), &tpl); err != nil {
		t.Fatal(err)
	}
	var defaults, existingRedis, evictionPolicy int
	for id, r := range tpl.Resources {
		if r.Type != "AWS::CloudWatch::Alarm" {
			continue
		}
		n := 0
		for _, m := range r.Properties.Metrics {
			if m.MetricStat != nil {
				n++
			}
		}
		if len(r.Properties.Metrics) == 0 {
			n = 1
		}
		switch r.Condition {
		case "", "ExampleApi":
			defaults, existingRedis = defaults+n, existingRedis+n
		case "CreateCache":
			defaults += n
		case "ExistingRedis":
			existingRedis += n
			if id == "RedisEvictionPolicyAlarm" {
				evictionPolicy = n
			}
		default:
			t.Fatalf("alarm %s has the condition %s: say in this test when it is deployed", id, r.Condition)
		}
	}
	m := alarmMetricsRow.FindStringSubmatch(section(t, "docs/deploy.md", "Costs"))
	if m == nil {
		t.Fatal("docs/deploy.md's Costs have no row of the alarms' metrics")
	}
	if got := fmt.Sprint(defaults, " ", existingRedis, " ", evictionPolicy); got != strings.Join(m[1:], " ") {
		t.Errorf("docs/deploy.md prices %s alarm metrics, %s with RedisEndpoint (the eviction policy alarm's %s); template.yaml has %d, %d (%d)",
			m[1], m[2], m[3], defaults, existingRedis, evictionPolicy)
	}
}
