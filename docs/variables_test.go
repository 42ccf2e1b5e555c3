package docs_test

import (
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// envName matches an environment variable's name in a command's usage text.
var envName = regexp.MustCompile(`\b[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+\b`)

// helpGroup matches a group's name in bucketgate help: a line's first word, before the
// column of what it is.
var helpGroup = regexp.MustCompile(`(?m)^([a-z]+)  +\S`)

// Every environment variable the commands' usage texts name (bucketgate help, and help
// GROUP of every group it lists) has a row in the table of docs/configuration.md, and
// the CLI's default operator function is the one the row of CHECK_FUNCTION gives: the
// table held only the functions' own variables to the code.
func TestCommandVariablesDocumented(t *testing.T) {
	const doc = "docs/configuration.md"
	table := tableNames(t, section(t, doc, "Environment variables"))
	helps := map[string]string{}
	for _, name := range []string{"bucketgate", "bucketgate-local"} {
		out, _ := exec.Command(command(t, name), "help").CombinedOutput() // the exit status says nothing here
		if name == "bucketgate" {
			groups := helpGroup.FindAllStringSubmatch(string(out), -1)
			if len(groups) < 5 {
				t.Fatalf("bucketgate help lists %d groups: is the pattern right?\n%s", len(groups), out)
			}
			for _, g := range groups {
				more, _ := exec.Command(command(t, name), "help", g[1]).CombinedOutput()
				out = append(out, more...)
			}
		}
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

// Every variable of docs/configuration.md's table is read: a Go file of the module
// (not a test's) names it, or it is an endpoint variable the AWS SDK reads itself. The
// other tests hold the table to what the code reads; this one the code to the table,
// so that a variable no longer read leaves it.
func TestDocumentedVariablesAreRead(t *testing.T) {
	var code strings.Builder
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		switch {
		case err != nil:
			return err
		case d.IsDir() && (d.Name() == "node_modules" || d.Name() == "tools" || strings.HasPrefix(d.Name(), ".") && path != root):
			return filepath.SkipDir
		case d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go"):
			return nil
		}
		b, err := os.ReadFile(path)
		code.Write(b)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	table := tableNames(t, section(t, "docs/configuration.md", "Environment variables"))
	if len(table) < 20 {
		t.Fatalf("docs/configuration.md's table names %d variables: is the pattern right?", len(table))
	}
	for name := range table {
		if !strings.Contains(code.String(), `"`+name+`"`) && !strings.HasPrefix(name, "AWS_ENDPOINT_URL_") {
			t.Errorf("docs/configuration.md documents %s, which no Go file of the module reads", name)
		}
	}
}
