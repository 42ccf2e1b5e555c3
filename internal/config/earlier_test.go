package config_test

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/bucketgate/bucketgate"
	"github.com/bucketgate/bucketgate/internal/config"
)

// Each document of testdata/earlier loaded in bucketgate 0.2 (c09f703, checked by
// running its loader once), and each meets a rule tightened since, which the comment at
// its top names. A function given one, or a cold start over a registry table whose
// every copy is one, loads it or fails: it loads as 0.2 read it, with a Caveat naming
// the field, where that reading is safe and unambiguous, and otherwise the error names
// the field and what to write instead (docs/configuration.md's upgrade notes list
// each).
func TestDocumentsOfAnEarlierReleaseLoadOrSayWhatToChange(t *testing.T) {
	type earlier struct {
		file   string
		legacy string            // what Legacy (and Caveats) names, when it loads
		err    []string          // what the error says: the field, then the remedy
		rules  []bucketgate.Rule // of POST /upload, when it loads
	}
	cases := []earlier{
		{file: "zero-beside-a-rate.yaml", legacy: "plans.free[0].refillPerSecond (line 4, column 53): 0 beside the rule's other numbers"},
		{file: "rate-rounds-to-zero.yaml", legacy: `plans.free[0].refillPerSecond (line 4, column 53): "1e-400", which rounds to 0, beside the rule's other numbers`,
			rules: []bucketgate.Rule{{Name: "rps", Capacity: 10, RefillPerSecond: 5}}},
		{file: "refill-rounds-to-zero.yaml", legacy: `plans.free.rules[0].refill (line 5, column 67): "1e-400", which rounds to 0, beside the rule's other numbers`,
			rules: []bucketgate.Rule{{Name: "rps", Capacity: 10, RefillPerSecond: 5}}},
		{file: "route-rule-twice.yaml", legacy: "routes[0].rules[1] (line 7, column 57): rule u appears twice in the route (first at routes[0].rules[0]), which an earlier bucketgate read as one rule, enforced unless every copy is shadow",
			rules: []bucketgate.Rule{{Name: "rps", Capacity: 10, RefillPerSecond: 5}, {Name: "u", Capacity: 2, RefillPerSecond: 1}}},
		{file: "made-key-plan.yaml", err: []string{"plans (line 5, column 51): plan name: an API key bucketgate made", "give the plan another name"}},
		{file: "made-key-rule.yaml", err: []string{"plans.free[0] (line 4, column 10): name: an API key bucketgate made", "give the rule another name"}},
		{file: "route-never-matches.yaml", err: []string{"routes[1] (line 7, column 5): never matches", "list the more specific one first"}},
		{file: "route-rule-differs.yaml", err: []string{"routes[0].rules[0] (line 8, column 13): rule rps", "give the route's rule another name"}},
		{file: "shadow-bool-tag.yaml", err: []string{"plans.free[0].shadow (line 4, column 64): \"on\"", "write true or false (an earlier bucketgate read it as false: enforced)"}},
	}
	for _, tc := range cases {
		t.Run(tc.file, func(t *testing.T) {
			c, err := config.ReadFile(filepath.Join("testdata", "earlier", tc.file))
			if tc.err != nil {
				if err == nil {
					t.Fatalf("loaded, caveats %q; want an error saying %q", c.Caveats(), tc.err)
				}
				for _, want := range tc.err {
					if !strings.Contains(err.Error(), want) {
						t.Errorf("error %q, want it to say %q", err, want)
					}
				}
				return
			}
			if err != nil {
				t.Fatalf("ReadFile: %v; want it loaded as before", err)
			}
			if legacy := c.Legacy(); len(legacy) != 1 || !strings.HasPrefix(legacy[0], tc.legacy) || !slices.Equal(legacy, c.Caveats()) {
				t.Fatalf("Legacy() = %q (Caveats %q), want one starting %q", legacy, c.Caveats(), tc.legacy)
			}
			if tc.rules != nil {
				if got := c.Limits(c.DefaultPlan(), "POST", "/upload").Rules; !slices.Equal(got, tc.rules) {
					t.Errorf("rules of POST /upload %+v, want %+v", got, tc.rules)
				}
			}
		})
	}
	t.Run("every file has a case", func(t *testing.T) {
		files, err := os.ReadDir(filepath.Join("testdata", "earlier"))
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range files {
			if !slices.ContainsFunc(cases, func(tc earlier) bool { return tc.file == f.Name() }) {
				t.Errorf("testdata/earlier/%s has no case: give it one", f.Name())
			}
		}
	})
}
