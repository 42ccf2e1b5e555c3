package docs_test

import (
	"os/exec"
	"regexp"
	"strings"
	"testing"
)

// envName matches an environment variable's name in a command's usage text.
var envName = regexp.MustCompile(`\b[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+\b`)

// Every environment variable the commands' usage texts name has a row in the table of
// docs/configuration.md, and the CLI's default operator function is the one the row of
// CHECK_FUNCTION gives: the table held only the functions' own variables to the code.
func TestCommandVariablesDocumented(t *testing.T) {
	const doc = "docs/configuration.md"
	table := tableNames(t, section(t, doc, "Environment variables"))
	helps := map[string]string{}
	for _, name := range []string{"bucketgate", "bucketgate-local"} {
		out, _ := exec.Command(command(t, name), "help").CombinedOutput() // the exit status says nothing here
		helps[name] = string(out)
		names := envName.FindAllString(string(out), -1)
		if len(names) < 3 {
			t.Fatalf("%s help names %d variables: is the pattern right?\n%s", name, len(names), out)
		}
		for _, v := range names {
			if _, ok := table[v]; !ok {
				t.Errorf("%s help names %s, which %s's table of environment variables lacks", name, v, doc)
			}
		}
	}
	def := inlineSpan.FindStringSubmatch(table["CHECK_FUNCTION"])
	if def == nil || !strings.Contains(helps["bucketgate"], "else "+def[1]+")") {
		t.Errorf("%s gives CHECK_FUNCTION the default %q; bucketgate help says:\n%s", doc, table["CHECK_FUNCTION"], helps["bucketgate"])
	}
}
