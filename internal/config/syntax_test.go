package config_test

import (
	"strings"
	"testing"

	"github.com/bucketgate/bucketgate/internal/config"
)

// A document that is not YAML (or JSON) at all is an error naming the line the parser
// stopped on, counted from 1 as an editor counts: yaml.v3 counts its parser's lines
// from 0 (and names none on the first), so that a missing comma on line 3 of a
// RATE_LIMIT_CONFIG_FILE was reported on line 2. Its scanner's lines are right already.
func TestSyntaxErrorsNameTheirLine(t *testing.T) {
	tests := []struct {
		name, doc, want string
	}{
		{"a missing comma in a JSON object on line 3",
			"{\n  \"defaultPlan\": \"free\",\n  \"plans\": {\"free\": [{\"name\": \"burst\", \"capacity\": 10 \"refillPerSecond\": 1}]}\n}\n",
			"line 3: did not find expected ',' or '}'"},
		{"a missing comma at the end of line 2: the line of the key after it",
			"{\n  \"defaultPlan\": \"free\"\n  \"plans\": {\"free\": [{\"name\": \"burst\", \"capacity\": 10, \"refillPerSecond\": 1}]}\n}\n",
			"line 3: did not find expected ',' or '}'"},
		{"a missing comma on the first line",
			`{"defaultPlan": "free" "plans": {"free": [{"name": "burst", "capacity": 10, "refillPerSecond": 1}]}}`,
			"line 1: did not find expected ',' or '}'"},
		{"a flow sequence left open on line 3",
			"defaultPlan: free\nplans:\n  free: [{name: burst, capacity: 10, refillPerSecond: 1}\nroutes: []\n",
			"line 3: did not find expected ',' or ']'"},
		{"a key indented out of its mapping: the line the mapping starts on",
			"defaultPlan: free\nplans:\n  free:\n    - name: burst\n   capacity: 10\n",
			"line 3: did not find expected key"},
		{"a list left open at the end: the last line",
			"defaultPlan: free\nplans:\n  free: [\n", "line 3: did not find expected node content"},
		{"a list left open at the end of a last line without a line break",
			"defaultPlan: free\nplans:\n  free: [", "line 3: did not find expected node content"},
		{"a scanner's error, on line 5",
			"defaultPlan: free\nplans:\n  free:\n  - name: burst\n     capacity: 10\n",
			"line 5: mapping values are not allowed in this context"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := config.Parse([]byte(tc.doc))
			if err == nil || !strings.HasSuffix(err.Error(), tc.want) {
				t.Fatalf("Parse() = %v, want an error ending %q", err, tc.want)
			}
		})
	}
}
