package authorizer

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/bucketgate/bucketgate"
	"github.com/bucketgate/bucketgate/internal/config"
	"github.com/bucketgate/bucketgate/internal/registry"
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
			a.str(t, ratelimitheaders.KeyRateLimit) != fmt.Sprintf(`"burst";r=%d;t=%d`, 9-i, i+1) ||
			a.num(t, ratelimitheaders.KeyReset) != t0.Add(time.Duration(i+1)*time.Second).Unix() {
			t.Fatalf("request %d: %s, want allowed, describing burst alone (full again in %d s, not trial's hours)", i+1, a.raw, i+1)
		}
		shadowLine := strings.Contains(f.metrics.String(), `"Rule":"trial","ShadowLimited":1`)
		if shadowLine != (i == 2) {
			t.Fatalf("request %d: ShadowLimited line %v, want it on the third only:\n%s", i+1, shadowLine, &f.metrics)
		}
	}
	logs := f.logs.String()
	// Denied by burst: the retry-after and the reset are burst's, whatever trial's.
	for range 7 {
		f.mustInvoke(t, event)
	}
	if a := f.mustInvoke(t, event); a.allowed(t) || a.str(t, ratelimitheaders.KeyRule) != "burst" || a.num(t, ratelimitheaders.KeyRetryAfter) != 1 ||
		a.str(t, ratelimitheaders.KeyRateLimit) != `"burst";r=0;t=1` || a.num(t, ratelimitheaders.KeyReset) != t0.Add(10*time.Second).Unix() {
		t.Fatalf("11th request: %s, want denied by burst, full again in 10 s", a.raw)
	}
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

// TestShadowPromotedKeepsItsBucket: rolling a limit out. A shadow rule promoted to
// enforced (a new document, the rule's name and numbers kept) is the same bucket: an
// identity whose shadow bucket ran short is denied at once by it, with the wait its
// tokens give, and one that never spent it starts full; demoted again, it denies
// nothing, and no denial cached under the enforced rule answers for the shadow one.
func TestShadowPromotedKeepsItsBucket(t *testing.T) {
	doc := func(trial string) *config.Config {
		cfg, err := config.Parse([]byte(`
defaultPlan: free
plans:
  free:
    - {name: burst, capacity: 10, refillPerSecond: 1}
    - {name: trial, capacity: 2, refill: 1, per: hour` + trial + `}
keys:
  ` + bucketgate.KeyDigest(sampleProKey) + `: free
`))
		if err != nil {
			t.Fatal(err)
		}
		return cfg
	}
	shadow, enforced := doc(", shadow: true"), doc("")
	f := newFixture(t, options{config: shadow})
	ip, key := samples.Read(t, restEvent), samples.Read(t, restProEvent)
	for range 3 { // the third is the shadow rule's denial: its bucket is empty
		if a := f.mustInvoke(t, ip); !a.allowed(t) {
			t.Fatalf("under the shadow rule: %s, want allowed", a.raw)
		}
	}
	steps := []struct {
		name      string
		cfg       *config.Config
		event     []byte
		allowed   bool
		rule      string
		remaining int64
		shadow    bool // a ShadowLimited line
	}{
		{"promoted: the shadow's empty bucket denies", enforced, ip, false, "trial", 0, false},
		{"promoted: an identity that never spent it starts full", enforced, key, true, "trial", 1, false},
		{"demoted: allowed, a shadow denial", shadow, ip, true, "burst", 6, true},
	}
	for _, s := range steps {
		t.Run(s.name, func(t *testing.T) {
			f.h.Config = registry.NewStatic(s.cfg, nil)
			f.metrics.Reset()
			a := f.mustInvoke(t, s.event)
			if a.allowed(t) != s.allowed || a.str(t, ratelimitheaders.KeyRule) != s.rule || a.num(t, ratelimitheaders.KeyRemaining) != s.remaining {
				t.Fatalf("%s, want allowed %v by %s with %d left", a.raw, s.allowed, s.rule, s.remaining)
			}
			if !s.allowed && a.num(t, ratelimitheaders.KeyRetryAfter) != 3600 {
				t.Fatalf("%s, want the hour the empty trial bucket needs for a token", a.raw)
			}
			if got := strings.Contains(f.metrics.String(), `"Rule":"trial","ShadowLimited":1`); got != s.shadow {
				t.Fatalf("ShadowLimited line %v, want %v:\n%s", got, s.shadow, &f.metrics)
			}
		})
	}
}
