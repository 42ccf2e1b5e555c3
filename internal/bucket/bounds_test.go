package bucket

import (
	"context"
	"math"
	"strings"
	"testing"
	"time"

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
	{Name: "fill-rounded-past", Capacity: 1000, RefillPerSecond: math.Nextafter(1000/bucketgate.MaxFillTime.Seconds(), 0)},
	{Name: "fill-past-by-2us", Capacity: 1000, RefillPerSecond: 1000 / (bucketgate.MaxFillTime.Seconds() + 2e-6)},
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

// TestFillsInExactly366Days: a bucket written as refill tokens per period that fills in
// exactly MaxFillTime is valid, for Rule.Validate and for the script on a real server
// and on miniredis, although capacity / (refill / period) rounds a little above it.
func TestFillsInExactly366Days(t *testing.T) {
	srv := redistest.Start(t)
	mr := miniredis.RunT(t)
	servers := map[string]rueidis.Client{"redis": redistest.Client(t, srv.Addr), "miniredis": redistest.Client(t, mr.Addr())}
	for _, tc := range []struct {
		name     string
		capacity int64
		refill   float64 // tokens per period
		period   float64 // seconds
	}{
		{"11 per day", 4026, 11, 86400},
		{"29 per day", 10614, 29, 86400},
		{"49 per hour", 430416, 49, 3600},
		{"11 per minute", 5797440, 11, 60},
		{"1 per second", 31622400, 1, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := bucketgate.Rule{Name: "yearly", Capacity: tc.capacity, RefillPerSecond: tc.refill / tc.period}
			if got := time.Duration(float64(tc.capacity) / tc.refill * tc.period * float64(time.Second)); got != bucketgate.MaxFillTime {
				t.Fatalf("the case fills in %v, not %v", got, bucketgate.MaxFillTime)
			}
			if err := r.Validate(); err != nil {
				t.Errorf("Validate: %v", err)
			}
			q := bucketgate.Request{Identity: "yearly", Rules: []bucketgate.Rule{r}, Cost: 1}
			keys, args := scriptCall(q, 0, 0, hold{}, new(scriptArgs))
			for name, c := range servers {
				if err := eval(context.Background(), c, keys, args).Error(); err != nil {
					t.Errorf("%s: %v", name, err)
				}
			}
		})
	}
}
