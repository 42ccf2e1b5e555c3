package benchreport

import (
	"math"
	"testing"
)

// The configuration's ratio is the table-held document's case over the cached key's,
// and there is none without both.
func TestConfigRatio(t *testing.T) {
	bench := func(name string, ns float64) GoBench {
		return GoBench{Name: handlerOverheadPrefix + name, Metrics: map[string]float64{"ns/op": ns}}
	}
	r := Report{Authorizer: []GoBench{bench("rest", 900), bench("rest-key-table-cached", 1000), bench("rest-key-table-config", 1030)}}
	if got, ok := r.configRatio(); !ok || math.Abs(got-1.03) > 1e-9 {
		t.Fatalf("configRatio = %v, %v; want 1.03", got, ok)
	}
	r.Authorizer = r.Authorizer[:2]
	if _, ok := r.configRatio(); ok {
		t.Fatal("a ratio without the config case")
	}
}
