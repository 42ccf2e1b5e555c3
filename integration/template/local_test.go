package template_test

// env.local.json is what sam local invoke (samconfig.toml's local_invoke env_vars) lays
// over each function's environment as the template declares it, with the template's
// defaults: the intrinsics sam local resolves (parameters, conditions) resolved, and
// the ones it cannot (a resource's Ref, Fn::GetAtt, Fn::Sub of a resource) blank, or the
// resource's logical id for a Ref. It only replaces variables the template declares.

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"testing"

	"github.com/bucketgate/bucketgate/internal/settings"
)

// localEnv is env.local.json: variables by function logical id.
const localEnv = "env.local.json"

// The functions load their settings under sam local invoke with env.local.json: the
// template's environment with the defaults, as sam local resolves it (whether it
// leaves a resource's Ref blank or gives its logical id), overlaid with the file's
// values; and the file sets only variables the template declares, which sam local
// would otherwise ignore. Every Go function the template deploys has its entry: without
// one, sam local invoke would give it the template's REDIS_ADDR, which it cannot
// resolve.
func TestTemplateLocalInvokeEnvironmentLoads(t *testing.T) {
	var local map[string]map[string]string
	if err := json.Unmarshal([]byte(readFile(t, localEnv)), &local); err != nil {
		t.Fatalf("%s: %v", localEnv, err)
	}
	for _, id := range slices.Sorted(maps.Keys(deployedGoFunctions(t))) {
		if _, ok := local[id]; !ok {
			t.Errorf("%s has no entry for %s: sam local invoke %s would not reach a local Redis", localEnv, id, id)
		}
	}
	d := deploy(t, readTemplate(t, limiter))
	globals, _ := section(d.doc, "Globals")["Function"].(map[string]any)
	for _, id := range slices.Sorted(maps.Keys(local)) {
		t.Run(id, func(t *testing.T) {
			r, ok := section(d.doc, "Resources")[id].(map[string]any)
			if !ok {
				t.Fatalf("%s names %s, which the template does not deploy", localEnv, id)
			}
			props, _ := r["Properties"].(map[string]any)
			declared := map[string]any{}
			for _, f := range []map[string]any{globals, props} {
				env, _ := f["Environment"].(map[string]any)
				vars, _ := env["Variables"].(map[string]any)
				maps.Copy(declared, vars)
			}
			for _, refAsID := range []bool{false, true} {
				env := map[string]string{}
				for name, v := range declared {
					switch v := d.resolve(t, v).(type) {
					case string:
						env[name] = v
					case map[string]any:
						if ref, ok := v["Ref"].(string); ok && refAsID {
							env[name] = ref
						} else {
							env[name] = "" // an intrinsic sam local cannot resolve
						}
					default:
						env[name] = fmt.Sprint(v)
					}
				}
				for name, v := range local[id] {
					if _, ok := declared[name]; !ok {
						t.Errorf("%s sets %s for %s, which the template does not declare: sam local ignores it", localEnv, name, id)
					}
					env[name] = v
				}
				if _, err := settings.Load(func(k string) string { return env[k] }); err != nil {
					t.Errorf("a resource's Ref as its logical id %v: the settings do not load: %v", refAsID, err)
				}
			}
		})
	}
}
