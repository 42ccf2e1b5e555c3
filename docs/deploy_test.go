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
	tpl := readSAM(t, "template.yaml")
	if len(tpl.Parameters) < 10 || len(tpl.Outputs) < 5 {
		t.Fatalf("template.yaml: %d parameters, %d outputs: is the parse right?", len(tpl.Parameters), len(tpl.Outputs))
	}
	return tpl
}

// readSAM returns what these tests read of the SAM template at path.
func readSAM(t *testing.T, path string) samTemplate {
	t.Helper()
	var tpl samTemplate
	if err := yaml.Unmarshal([]byte(readFile(t, path)), &tpl); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return tpl
}

// sameNames reports each name that the template's list of what has and the table of
// doc lacks, and each the other way round.
func sameNames(t *testing.T, doc, template, what string, inTemplate, inDoc []string) {
	t.Helper()
	for _, n := range inTemplate {
		if !slices.Contains(inDoc, n) {
			t.Errorf("%s: the %s table lacks %s, which %s has", doc, what, n, template)
		}
	}
	for _, n := range inDoc {
		if !slices.Contains(inTemplate, n) {
			t.Errorf("%s: the %s table names %s, which %s lacks", doc, what, n, template)
		}
	}
}

// sameParameters reports where table, the parameter table of doc, is not the
// Parameters of template, tpl: every one, no other, each with its default ("empty" for
// "").
func sameParameters(t *testing.T, doc, template string, tpl samTemplate, table map[string]string) {
	t.Helper()
	sameNames(t, doc, template, "Parameters", slices.Sorted(maps.Keys(tpl.Parameters)), slices.Sorted(maps.Keys(table)))
	for name, p := range tpl.Parameters {
		shown, ok := table[name]
		if !ok {
			continue
		}
		want := "empty"
		if p.Default.Value != "" {
			want = "`" + p.Default.Value + "`"
		}
		if shown != want {
			t.Errorf("%s: parameter %s: default %s, %s's is %s", doc, name, shown, template, want)
		}
	}
}

// The table of parameters in docs/deploy.md is template.yaml's Parameters: every one, no
// other, each with its default.
func TestDeployParameters(t *testing.T) {
	sameParameters(t, "docs/deploy.md", "template.yaml", readTemplate(t), tableNames(t, section(t, "docs/deploy.md", "Parameters")))
}

// The table of outputs in docs/deploy.md is template.yaml's Outputs: every one, no other.
func TestDeployOutputs(t *testing.T) {
	outputs := readTemplate(t).Outputs
	table := tableNames(t, section(t, "docs/deploy.md", "Outputs and exports"))
	sameNames(t, "docs/deploy.md", "template.yaml", "Outputs", slices.Sorted(maps.Keys(outputs)), slices.Sorted(maps.Keys(table)))
}

// examples/README.md documents both example templates: its table of parameters is each
// one's Parameters, with their defaults, and its table of outputs names each one's
// Outputs and no other. It named no output, so that a user who deployed one had to look
// for the API's URL in the template.
func TestExamplesParametersAndOutputs(t *testing.T) {
	const doc = "examples/README.md"
	text := readFile(t, doc)
	params, outputs, ok := strings.Cut(text, "\n| output |")
	if !ok {
		t.Fatalf("%s has no table of outputs (a header row starting | output |)", doc)
	}
	paramTable, outputTable := tableNames(t, params), tableNames(t, outputs)
	var allOutputs []string
	for _, template := range []string{"examples/rest-api.yaml", "examples/http-api.yaml"} {
		tpl := readSAM(t, template)
		if len(tpl.Parameters) < 3 || len(tpl.Outputs) < 1 {
			t.Fatalf("%s: %d parameters, %d outputs: is the parse right?", template, len(tpl.Parameters), len(tpl.Outputs))
		}
		sameParameters(t, doc, template, tpl, paramTable)
		for name := range tpl.Outputs {
			if _, ok := outputTable[name]; !ok {
				t.Errorf("%s: the Outputs table lacks %s, which %s has", doc, name, template)
			}
			allOutputs = append(allOutputs, name)
		}
	}
	for name := range outputTable {
		if !slices.Contains(allOutputs, name) {
			t.Errorf("%s: the Outputs table names %s, which neither example template has", doc, name)
		}
	}
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
