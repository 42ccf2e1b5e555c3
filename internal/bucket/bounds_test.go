package bucket

import (
	"context"
	"math"
	"strings"
	"testing"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/rueidis"

	"github.com/bucketgate/bucketgate"
	"github.com/bucketgate/bucketgate/internal/lua"
	"github.com/bucketgate/bucketgate/internal/testkit/redistest"
)

// boundRules are rules at and just past every bound of a rule.
var boundRules = []bucketgate.Rule{
	{Name: "largest", Capacity: bucketgate.MaxCapacity, RefillPerSecond: bucketgate.MaxRefillPerSecond},
	{Name: "capacity-past", Capacity: bucketgate.MaxCapacity + 1, RefillPerSecond: bucketgate.MaxRefillPerSecond},
	{Name: "rate-past", Capacity: 1, RefillPerSecond: math.Nextafter(bucketgate.MaxRefillPerSecond, math.Inf(1))},
	{Name: "rate-1e19", Capacity: 10, RefillPerSecond: 1e19},
	{Name: "rate-1e-300", Capacity: 1000, RefillPerSecond: 1e-300},
	{Name: "smallest-rate", Capacity: 1, RefillPerSecond: 1 / bucketgate.MaxFillTime.Seconds()},
	{Name: "slowest-fill", Capacity: 1000, RefillPerSecond: 1000 / bucketgate.MaxFillTime.Seconds()},
	{Name: "fill-past", Capacity: 1000, RefillPerSecond: math.Nextafter(1000/bucketgate.MaxFillTime.Seconds(), 0)},
	{Name: "fill-past-by-a-second", Capacity: 1000, RefillPerSecond: 1000 / (bucketgate.MaxFillTime.Seconds() + 1)},
	{Name: "fastest-fill", Capacity: 1, RefillPerSecond: bucketgate.MaxRefillPerSecond},
}

// TestScriptBoundsAreValidates holds bucket.lua to Rule.Validate on every bound, on a
// real server and on miniredis: the script accepts a rule exactly when Validate does,
// enforced or shadow, so that a configuration that loads decides everywhere.
func TestScriptBoundsAreValidates(t *testing.T) {
	srv := redistest.Start(t)
	mr := miniredis.RunT(t)
	servers := map[string]rueidis.Client{"redis": redistest.Client(t, srv.Addr), "miniredis": redistest.Client(t, mr.Addr())}
	ok := 0
	for _, r := range boundRules {
		for _, shadow := range []bool{false, true} {
			r.Shadow = shadow
			valid := r.Validate() == nil
			if valid {
				ok++
			}
			q := bucketgate.Request{Identity: "bounds", Rules: []bucketgate.Rule{r}, Cost: 1}
			keys, args := scriptCall(q, 0, 0, hold{}, new(scriptArgs))
			for name, c := range servers {
				err := eval(context.Background(), c, keys, args).Error()
				if accepted := err == nil; accepted != valid {
					t.Errorf("%s, rule %+v: script error %v, Validate %v", name, r, err, r.Validate())
				} else if err != nil && !strings.Contains(err.Error(), lua.ErrorPrefix+" rule "+r.Name) {
					t.Errorf("%s, rule %+v: script error %v does not name the rule", name, r, err)
				}
			}
		}
	}
	if ok == 0 || ok == 2*len(boundRules) {
		t.Fatalf("%d of %d cases valid: the table tests one side only", ok, 2*len(boundRules))
	}
}
