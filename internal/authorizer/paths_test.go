package authorizer

import (
	"encoding/json"
	"testing"

	"github.com/bucketgate/bucketgate/internal/testkit/samples"
	"github.com/bucketgate/bucketgate/ratelimitheaders"
)

// withPath returns the event with its request path set to path: the REST event's path,
// or the HTTP API event's rawPath and requestContext.http.path.
func withPath(t *testing.T, event []byte, path string) []byte {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(event, &m); err != nil {
		t.Fatal(err)
	}
	if _, ok := m["rawPath"]; ok {
		m["rawPath"] = path
		m["requestContext"].(map[string]any)["http"].(map[string]any)["path"] = path
	} else {
		m["path"] = path
	}
	out, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// Every spelling of a path that a backend resolves to a route's resource spends the
// route's cost through the real handler, for REST and HTTP API events alike: the table of
// samples.PathVariants, sent as a route /export costing 5.
func TestRouteVariantsThroughTheHandler(t *testing.T) {
	cfg := mustParse(t, "defaultPlan: free\nplans: {free: [{name: burst, capacity: 10, refillPerSecond: 1}]}\nroutes: [{path: /export, cost: 5}]")
	for _, event := range []string{restEvent, httpEvent} {
		for _, v := range samples.PathVariants(t) {
			f := newFixture(t, options{config: cfg})
			a := f.mustInvoke(t, withPath(t, samples.Read(t, event), v.Path))
			want := int64(9)
			if v.Match {
				want = 5
			}
			if got := a.num(t, ratelimitheaders.KeyRemaining); got != want {
				t.Errorf("%s %q: remaining %d after one request, want %d (matches /export: %v)", event, v.Path, got, want, v.Match)
			}
		}
	}
}
