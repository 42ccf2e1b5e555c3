package config_test

import (
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/bucketgate/bucketgate/internal/config"
)

// configDoc is the configuration's reference, whose YAML examples load here.
const configDoc = "../../docs/configuration.md"

// firstPlan matches the first plan name under plans: in a YAML example.
var firstPlan = regexp.MustCompile(`(?m)^plans:\n +([A-Za-z0-9_.-]+):`)

// Every YAML example of docs/configuration.md is a document the functions load. An
// example that shows a part (plans and routes without defaultPlan; routes alone, under
// the plans of the example before it) is completed as the text says: its first plan is
// the default, and routes alone take the plans shown last.
func TestDocExamplesLoad(t *testing.T) {
	b, err := os.ReadFile(configDoc)
	if err != nil {
		t.Fatal(err)
	}
	var (
		block    []string
		indent   string
		start    int
		in       bool
		plans    string // the plans: part of the last example that had one
		examples int
	)
	for i, line := range strings.Split(string(b), "\n") {
		trimmed := strings.TrimSpace(line)
		switch {
		case !in && trimmed == "```yaml":
			in, block, start = true, nil, i+1
			indent = line[:len(line)-len(strings.TrimLeft(line, " "))]
		case in && trimmed == "```":
			in = false
			examples++
			doc := strings.Join(block, "\n") + "\n"
			if at := strings.Index(doc, "\nplans:\n"); at >= 0 || strings.HasPrefix(doc, "plans:\n") {
				part, _, _ := strings.Cut(doc[at+1:], "\nroutes:")
				plans = strings.TrimSuffix(part, "\n") + "\n"
			} else {
				doc = plans + doc
			}
			if !strings.Contains(doc, "defaultPlan:") {
				m := firstPlan.FindStringSubmatch(doc)
				if m == nil {
					t.Fatalf("%s:%d: an example without plans, and none before it", configDoc, start)
				}
				doc = "defaultPlan: " + m[1] + "\n" + doc
			}
			if _, err := config.Parse([]byte(doc)); err != nil {
				t.Errorf("%s:%d: the example does not load: %v\n%s", configDoc, start, err, doc)
			}
		case in:
			block = append(block, strings.TrimPrefix(line, indent))
		}
	}
	if examples < 5 {
		t.Fatalf("%d YAML examples in %s: is the parse right?", examples, configDoc)
	}
}
