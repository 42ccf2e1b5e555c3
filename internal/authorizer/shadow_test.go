package authorizer

import (
	"strings"
	"testing"

	"github.com/bucketgate/bucketgate"
	"github.com/bucketgate/bucketgate/internal/config"
	"github.com/bucketgate/bucketgate/internal/telemetry"
	"github.com/bucketgate/bucketgate/internal/testkit/samples"
	"github.com/bucketgate/bucketgate/ratelimitheaders"
)

// TestShadowRules: a shadow rule never denies, and the answer describes the enforced
// rules only (context, RateLimit and RateLimit-Policy); its would-be denials are the
// ShadowLimited metric by rule and an info line with the identity; with shadow rules
// alone (a shadow plan) the request is allowed and describes no rule.
func TestShadowRules(t *testing.T) {
	cfg, err := config.Parse([]byte(`
defaultPlan: free
plans:
  free:
    - {name: burst, capacity: 10, refillPerSecond: 1}
    - {name: trial, capacity: 2, refill: 1, per: hour, shadow: true}
  trial: {shadow: true, rules: [{name: trial, capacity: 2, refill: 1, per: hour}]}
keys:
  ` + bucketgate.KeyDigest(sampleProKey) + `: trial
`))
	if err != nil {
		t.Fatal(err)
	}
	f := newFixture(t, options{config: cfg})
	event := samples.Read(t, restEvent)
	for i := range 3 {
		f.metrics.Reset()
		a := f.mustInvoke(t, event)
		if !a.allowed(t) || a.str(t, ratelimitheaders.KeyRule) != "burst" || a.num(t, ratelimitheaders.KeyLimit) != 10 ||
			a.num(t, ratelimitheaders.KeyRemaining) != int64(9-i) || a.str(t, ratelimitheaders.KeyRateLimitPolicy) != `"burst";q=10;w=10` ||
			!strings.HasPrefix(a.str(t, ratelimitheaders.KeyRateLimit), `"burst";`) {
			t.Fatalf("request %d: %s, want allowed, describing burst alone", i+1, a.raw)
		}
		shadowLine := strings.Contains(f.metrics.String(), `"Rule":"trial","ShadowLimited":1`)
		if shadowLine != (i == 2) {
			t.Fatalf("request %d: ShadowLimited line %v, want it on the third only:\n%s", i+1, shadowLine, &f.metrics)
		}
	}
	logs := f.logs.String()
	if strings.Count(logs, telemetry.MsgShadowLimited) != 1 || !strings.Contains(logs, `"msg":"`+telemetry.MsgShadowLimited+`","identity":"ip:`) {
		t.Fatalf("want one info line naming the identity:\n%s", logs)
	}

	// The sample key is on the trial plan: shadow rules alone.
	a := f.mustInvoke(t, samples.Read(t, restProEvent))
	if !a.allowed(t) || a.str(t, ratelimitheaders.KeyRule) != "" || a.num(t, ratelimitheaders.KeyLimit) != 0 ||
		a.num(t, ratelimitheaders.KeyRemaining) != 0 || a.str(t, ratelimitheaders.KeyRateLimit) != "" ||
		a.str(t, ratelimitheaders.KeyRateLimitPolicy) != "" || a.str(t, ratelimitheaders.KeyPlan) != "trial" {
		t.Fatalf("shadow rules alone: %s, want allowed, no rule described", a.raw)
	}
}
