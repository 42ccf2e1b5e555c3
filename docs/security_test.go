package docs_test

import (
	"slices"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"
)

// stackResources is what TestDeploySecurityTables reads of template.yaml: each
// resource's type and properties.
type stackResources struct {
	Resources map[string]struct {
		Type       string    `yaml:"Type"`
		Properties yaml.Node `yaml:"Properties"`
	} `yaml:"Resources"`
}

// samRoles are the roles the SAM transform adds, each for a property of a function:
// CodeDeploy's, for DeploymentPreference (gradual deployments).
var samRoles = map[string]string{"CodeDeployServiceRole": "DeploymentPreference"}

// firstColumn returns the names of the first column of each row of the table in text
// whose first cells are code spans: the spans before the cell's first " (" (what
// follows says when or how), an action without a service prefix taking the one before it
// (`ec2:CreateNetworkInterface`, `DeleteNetworkInterface`).
func firstColumn(text string) []string {
	var names []string
	for _, m := range tableRow.FindAllStringSubmatch(text, -1) {
		cell, _, _ := strings.Cut(m[1], " (")
		prefix := ""
		for _, s := range inlineSpan.FindAllStringSubmatch(cell, -1) {
			name := s[1]
			if p, _, ok := strings.Cut(name, ":"); ok {
				prefix = p
			} else if prefix != "" {
				name = prefix + ":" + name
			}
			names = append(names, name)
		}
	}
	return names
}

// actions appends to out every action that the policy elements under n name.
func actions(n *yaml.Node, out *[]string) {
	for i := 0; i < len(n.Content); i++ {
		c := n.Content[i]
		if n.Kind == yaml.MappingNode && i%2 == 0 && c.Value == "Action" && i+1 < len(n.Content) {
			v := n.Content[i+1]
			if v.Kind == yaml.ScalarNode {
				*out = append(*out, v.Value)
			}
			for _, e := range v.Content {
				*out = append(*out, e.Value)
			}
			i++
			continue
		}
		actions(c, out)
	}
}

// The tables a security engineer signs in docs/deploy.md are template.yaml's: the roles
// of the security review are the stack's roles, SAM's included, and the actions of the
// functions' IAM are those FunctionAccessPolicy grants, under any condition.
func TestDeploySecurityTables(t *testing.T) {
	var tpl stackResources
	if err := yaml.Unmarshal([]byte(readFile(t, "template.yaml")), &tpl); err != nil {
		t.Fatalf("template.yaml: %v", err)
	}
	var roles, granted []string
	for id, r := range tpl.Resources {
		if r.Type == "AWS::IAM::Role" {
			roles = append(roles, id)
		}
		if id == "FunctionAccessPolicy" {
			actions(&r.Properties, &granted)
		}
		for role, property := range samRoles {
			var props map[string]yaml.Node
			if r.Type == "AWS::Serverless::Function" && r.Properties.Decode(&props) == nil && props[property].Kind != 0 && !slices.Contains(roles, role) {
				roles = append(roles, role)
			}
		}
	}
	if len(granted) == 0 {
		t.Fatal("template.yaml: FunctionAccessPolicy grants nothing: is the parse right?")
	}
	sameNames(t, "docs/deploy.md", "template.yaml", "Security review's roles", slices.Sorted(slices.Values(roles)),
		slices.Sorted(slices.Values(firstColumn(section(t, "docs/deploy.md", "Security review")))))
	sameNames(t, "docs/deploy.md", "template.yaml (FunctionAccessPolicy)", "IAM of the functions", slices.Compact(slices.Sorted(slices.Values(granted))),
		slices.Sorted(slices.Values(firstColumn(section(t, "docs/deploy.md", "IAM of the functions")))))
}
