package authorizer

import (
	"slices"
	"strings"
	"testing"

	"github.com/bucketgate/bucketgate/internal/bucket"
	"github.com/bucketgate/bucketgate/internal/config"
	"github.com/bucketgate/bucketgate/internal/telemetry"
	"github.com/bucketgate/bucketgate/internal/testkit/samples"
)

// shadowPlans is the built-in configuration with rules put in front of every route's:
// shadow rules, as a configuration marks them.
type shadowPlans struct {
	*config.Config
	rules []bucket.Rule // replace the plan's rules when only is set
	only  bool
}

func (p shadowPlans) Limits(plan *config.Plan, method, path string) config.Limits {
	l := p.Config.Limits(plan, method, path)
	if p.only {
		l.Rules = p.rules
	} else {
		l.Rules = append(slices.Clone(p.rules), l.Rules...)
	}
	return l
}

// TestShadowRules: a shadow rule never denies, and the answer describes the enforced
// rules only (context, RateLimit and RateLimit-Policy); its would-be denials are the
// ShadowLimited metric by rule and an info line with the identity; with shadow rules
// alone the request is allowed and describes no rule.
func TestShadowRules(t *testing.T) {
	trial := bucket.Rule{Name: "trial", Capacity: 2, RefillPerSecond: 0.001, Shadow: true}
	f := newFixture(t, options{})
	f.h.Plans = shadowPlans{Config: config.Default(), rules: []bucket.Rule{trial}}
	event := samples.Read(t, restEvent)
	for i := range 3 {
		f.metrics.Reset()
		a := f.mustInvoke(t, event)
		if !a.allowed(t) || a.str(t, KeyRule) != "burst" || a.num(t, KeyLimit) != 10 || a.num(t, KeyRemaining) != int64(9-i) ||
			a.str(t, KeyRateLimitPolicy) != `"burst";q=10;w=10` || !strings.HasPrefix(a.str(t, KeyRateLimit), `"burst";`) {
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

	f.h.Plans = shadowPlans{Config: config.Default(), rules: []bucket.Rule{trial}, only: true}
	a := f.mustInvoke(t, event)
	if !a.allowed(t) || a.str(t, KeyRule) != "" || a.num(t, KeyLimit) != 0 || a.num(t, KeyRemaining) != 0 ||
		a.str(t, KeyRateLimit) != "" || a.str(t, KeyRateLimitPolicy) != "" {
		t.Fatalf("shadow rules alone: %s, want allowed, no rule described", a.raw)
	}
}
