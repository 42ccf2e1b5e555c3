package template_test

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/bucketgate/bucketgate/internal/testkit"
)

// translateScript runs the SAM transform on the template on stdin and writes the
// CloudFormation template to the file argv[1], as CloudFormation would deploy it. A
// function's local CodeUri (sam build uploads it) becomes an S3 location.
const translateScript = `
import json, sys
from samtranslator.translator.transform import transform
from samtranslator.yaml_helper import yaml_parse
doc = yaml_parse(sys.stdin.read())
for r in doc.get("Resources", {}).values():
    p = r.get("Properties") or {}
    if r.get("Type") == "AWS::Serverless::Function" and isinstance(p.get("CodeUri"), str):
        p["CodeUri"] = "s3://bucket/code.zip"
class Policies:
    def load(self):
        return {}
out = transform(doc, {"AWS::Region": "us-east-1"}, Policies())
with open(sys.argv[1], "w") as f:
    json.dump(out, f)
`

// translations are the transformed templates, by path: each is made once per run.
var translations sync.Map // path -> func() (map[string]any, error)

// samTranslate returns the template at path after the SAM transform, in plain form
// (every intrinsic in its long form), from the SAM translator that cfn-lint bundles:
// the Python that runs cfn-lint has it, so where cfn-lint runs, so does this.
func samTranslate(t *testing.T, path string) map[string]any {
	t.Helper()
	python, text := samPython(t), readFile(t, path)
	once, _ := translations.LoadOrStore(path, sync.OnceValues(func() (map[string]any, error) {
		dir, err := os.MkdirTemp("", "bucketgate-sam-") // a directory of this run's own: runs at once share /tmp
		if err != nil {
			return nil, err
		}
		defer os.RemoveAll(dir)
		out := filepath.Join(dir, "template.json")
		cmd := exec.Command(python, "-c", translateScript, out)
		cmd.Stdin = strings.NewReader(text)
		cmd.Env = append(os.Environ(), "AWS_DEFAULT_REGION="+testRegion)
		if msg, err := cmd.CombinedOutput(); err != nil {
			return nil, fmt.Errorf("the SAM transform of %s: %w\n%s", path, err, msg)
		}
		b, err := os.ReadFile(out)
		if err != nil {
			return nil, err
		}
		var doc map[string]any
		return doc, json.Unmarshal(b, &doc)
	}))
	doc, err := once.(func() (map[string]any, error))()
	if err != nil {
		t.Fatal(err)
	}
	return doc
}

// samPython returns the Python interpreter that runs cfn-lint: the one its first line
// names, or the python3 beside it (a pyenv shim is a shell script beside python3's).
func samPython(t *testing.T) string {
	t.Helper()
	cfnLint := testkit.LookPath(t, "cfn-lint")
	b, err := os.ReadFile(cfnLint)
	if err != nil {
		t.Fatal(err)
	}
	first, _, _ := strings.Cut(string(b), "\n")
	if words := strings.Fields(strings.TrimPrefix(first, "#!")); strings.HasPrefix(first, "#!") && len(words) > 0 && strings.Contains(first, "python") {
		if filepath.Base(words[0]) == "env" && len(words) > 1 {
			return testkit.LookPath(t, words[1])
		}
		return words[0]
	}
	return filepath.Join(filepath.Dir(cfnLint), "python3")
}
