package bucket_test

import (
	"context"
	"errors"
	"reflect"
	"strconv"
	"testing"
	"time"

	"github.com/bucketgate/bucketgate"
	"github.com/bucketgate/bucketgate/internal/bucket"
)

// TestFreePlanScenario is the free plan's example on miniredis with a controlled clock:
// 10 at once pass, the 11th is limited, 5 s later 5 pass and the 6th is limited.
func TestFreePlanScenario(t *testing.T) {
	m := newMini(t)
	l := bucket.New(m.client)
	q := bucketgate.Request{Identity: "tenant-1", Rules: free, Cost: 1}

	last := expectRun(t, l, q, 10, true)
	if rep, ok := last.Repeat(); last.Remaining != 0 || last.Limit != 10 || last.Rule != "burst" || last.Reason != bucketgate.ReasonOK ||
		!ok || rep.RetryAfter != time.Second || rep.Rule != "burst" {
		t.Errorf("10th: %+v, whose repeat is %+v", last, rep)
	}
	d := expectRun(t, l, q, 1, false)
	want := bucketgate.Decision{Reason: bucketgate.ReasonLimited, Rule: "burst", Limit: 10, Remaining: 0,
		RetryAfter: time.Second, ResetAfter: 10 * time.Second, Crossings: []bucketgate.Crossing{{Kind: bucketgate.CrossingLimited,
			Rule: "burst", Limit: 10, Usage: 10, WindowStart: epoch, WindowEnd: epoch.Add(10 * time.Second)}}}
	if !d.At.Equal(epoch) {
		t.Errorf("11th: At %v, want the Redis time %v", d.At, epoch)
	}
	if d.At = (time.Time{}); !reflect.DeepEqual(d, want) {
		t.Errorf("11th:\n got %+v\nwant %+v", d, want)
	}
	m.advance(5 * time.Second)
	expectRun(t, l, q, 5, true)
	expectRun(t, l, q, 1, false)
}

func TestDecisions(t *testing.T) {
	daily := bucketgate.Rule{Name: "daily", Capacity: 1000, RefillPerSecond: 1000.0 / 86400}
	half := bucketgate.Rule{Name: "slow", Capacity: 2, RefillPerSecond: 0.5}
	fast := bucketgate.Rule{Name: "fast", Capacity: 4, RefillPerSecond: 8}
	slowest := bucketgate.Rule{Name: "slowest", Capacity: 8, RefillPerSecond: 1.0 / 64}
	bindingSteps := []step{
		{0, 4, true, 0, 0, "fast"},                                                  // fast 0, slowest 4
		{500 * time.Millisecond, 4, true, 0, 0, "fast"},                             // fast 0, slowest 1/128
		{250 * time.Millisecond, 3, false, 0, 191250 * time.Millisecond, "slowest"}, // fast 2 (125 ms to 3), slowest 3/256 (191.25 s to 3)
	}
	tests := []struct {
		name  string
		rules []bucketgate.Rule
		// steps: advance, then cost; want allowed, remaining, retry, rule
		steps []step
	}{
		{"fractional refill accumulates sub-tokens", []bucketgate.Rule{half}, []step{
			{0, 2, true, 0, 0, "slow"},
			{time.Second, 1, false, 0, time.Second, "slow"}, // 0.5 tokens: 1 s to go
			{999 * time.Millisecond, 1, false, 0, time.Millisecond, "slow"},
			{time.Millisecond, 1, true, 0, 0, "slow"},
		}},
		{"peek writes nothing", []bucketgate.Rule{half}, []step{
			{0, 0, true, 2, 0, "slow"},
			{0, 0, true, 2, 0, "slow"},
			{0, 2, true, 0, 0, "slow"},
			{0, 0, true, 0, 0, "slow"},
		}},
		{"denial drains nothing", []bucketgate.Rule{half}, []step{
			{0, 1, true, 1, 0, "slow"},
			{0, 2, false, 1, 2 * time.Second, "slow"},
			{0, 1, true, 0, 0, "slow"},
		}},
		{"chained: daily quota binds when burst is full", append([]bucketgate.Rule{free[0]}, bucketgate.Rule{Name: "daily", Capacity: 3, RefillPerSecond: 3.0 / 86400}), []step{
			{0, 3, true, 0, 0, "daily"},
			{time.Hour, 1, false, 0, 7 * time.Hour, "daily"}, // 1/8 token back: 7/8 * 8 h to go
		}},
		{"chained: all or nothing", []bucketgate.Rule{free[0], daily}, []step{
			{0, 10, true, 0, 0, "burst"},
			{0, 1, false, 0, time.Second, "burst"},
			{time.Second, 1, true, 0, 0, "burst"},
		}},
		// Two rules that both deny: the one with the longer wait binds, wherever it
		// stands; allowed, the one with the fewer tokens left binds.
		{"two denials: the longer wait binds, fast rule first", []bucketgate.Rule{fast, slowest}, bindingSteps},
		{"two denials: the longer wait binds, slow rule first", []bucketgate.Rule{slowest, fast}, bindingSteps},
		{"cost equal to capacity", []bucketgate.Rule{daily}, []step{
			{0, 1000, true, 0, 0, "daily"},
			{0, 1000, false, 0, 86400 * time.Second, "daily"},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := newMini(t)
			l := bucket.New(m.client)
			for i, s := range tt.steps {
				m.advance(s.advance)
				d := decide(t, l, bucketgate.Request{Identity: "id", Rules: tt.rules, Cost: s.cost})
				if d.Allowed != s.allowed || d.Remaining != s.remaining || d.RetryAfter != s.retry || d.Rule != s.rule {
					t.Errorf("step %d: got allowed %v remaining %d retry %v rule %s, want %+v", i, d.Allowed, d.Remaining, d.RetryAfter, d.Rule, s)
				}
			}
		})
	}
}

type step struct {
	advance   time.Duration
	cost      int64
	allowed   bool
	remaining int64
	retry     time.Duration
	rule      string
}

// TestSameRuleSharesBucket: one rule name is one bucket per identity, whatever travels
// with it; another identity has its own.
func TestSameRuleSharesBucket(t *testing.T) {
	m := newMini(t)
	l := bucket.New(m.client)
	other := bucketgate.Rule{Name: "other", Capacity: 100, RefillPerSecond: 1}
	expectRun(t, l, bucketgate.Request{Identity: "a", Rules: free, Cost: 6}, 1, true)
	d := expectRun(t, l, bucketgate.Request{Identity: "a", Rules: []bucketgate.Rule{other, free[0]}, Cost: 4}, 1, true)
	if d.Rule != "burst" || d.Remaining != 0 {
		t.Errorf("shared bucket: %+v", d)
	}
	expectRun(t, l, bucketgate.Request{Identity: "a", Rules: free, Cost: 1}, 1, false)
	expectRun(t, l, bucketgate.Request{Identity: "b", Rules: free, Cost: 10}, 1, true)
}

// TestExpiryInvisible: once a key expires its bucket is full, exactly as if it had
// stayed and refilled.
func TestExpiryInvisible(t *testing.T) {
	m := newMini(t)
	l := bucket.New(m.client)
	q := bucketgate.Request{Identity: "x", Rules: free, Cost: 10}
	expectRun(t, l, q, 1, true)
	m.advance(10*time.Second - time.Millisecond)
	if !m.Exists(bucket.Key("x")) {
		t.Fatal("key expired before its bucket was full")
	}
	expectRun(t, l, q, 1, false)
	m.advance(time.Millisecond + bucket.ExpiryMargin)
	if m.Exists(bucket.Key("x")) {
		t.Fatal("key still there after full + margin")
	}
	expectRun(t, l, q, 1, true)
}

func TestInvalidWritesNothing(t *testing.T) {
	m := newMini(t)
	l := bucket.New(m.client)
	bad := []bucketgate.Request{
		{Identity: "x", Rules: free, Cost: 11},
		{Identity: "x", Rules: free, Cost: -1},
		{Identity: "", Rules: free, Cost: 1},
		{Identity: "x", Cost: 1},
		{Identity: "x", Rules: []bucketgate.Rule{free[0], free[0]}, Cost: 1},
	}
	for _, q := range bad {
		if _, err := l.Decide(context.Background(), q); !errors.Is(err, bucketgate.ErrInvalid) {
			t.Errorf("Decide(%+v) = %v, want ErrInvalid", q, err)
		}
	}
	if keys := m.Keys(); len(keys) != 0 {
		t.Errorf("keys written: %v", keys)
	}
}

// TestShadowRules spells out what a shadow rule's bucket does, on the script (miniredis,
// a controlled clock) and the model alike: it gives cost tokens when the enforced rules
// allow and it holds them; it gives nothing, and is a shadow denial, when it alone lacks
// them; nothing is written when the enforced rules deny, even when it lacks them too;
// with shadow rules alone every check is allowed; a refund and a reset reach it too.
func TestShadowRules(t *testing.T) {
	burst := bucketgate.Rule{Name: "burst", Capacity: 10, RefillPerSecond: 1}
	strict := bucketgate.Rule{Name: "strict", Capacity: 8, RefillPerSecond: 0.1, Shadow: true}
	both, alone := []bucketgate.Rule{strict, burst}, []bucketgate.Rule{strict}
	m := newMini(t)
	l := bucket.New(m.client)
	model := bucket.NewModel()
	steps := []struct {
		name          string
		advance       time.Duration
		q             bucketgate.Request
		allowed       bool
		rule          string // the binding rule: enforced, or none
		remaining     int64
		shadowLimited bucketgate.RuleSet
		burst, strict float64 // the stored tokens after the step
	}{
		{"both have tokens: both give", 0, bucketgate.Request{Rules: both, Cost: 2}, true, "burst", 8, 0, 8, 6},
		{"the shadow rule is tighter, not binding", 0, bucketgate.Request{Rules: both, Cost: 5}, true, "burst", 3, 0, 3, 1},
		{"the shadow rule alone lacks: it gives nothing", 0, bucketgate.Request{Rules: both, Cost: 2}, true, "burst", 1, 1 << 0, 1, 1},
		{"the enforced rule denies: nothing written, no shadow denial", 0, bucketgate.Request{Rules: both, Cost: 7}, false, "burst", 1, 0, 1, 1},
		{"10 s later: both refilled, both give", 10 * time.Second, bucketgate.Request{Rules: both, Cost: 2}, true, "burst", 8, 0, 8, 0},
		{"shadow rules alone: allowed, nothing enforced", 0, bucketgate.Request{Rules: alone, Cost: 1}, true, "", 0, 1 << 0, 8, 0},
		{"a peek is never a shadow denial", 0, bucketgate.Request{Rules: both}, true, "burst", 8, 0, 8, 0},
		{"a refund reaches the shadow rule", 0, bucketgate.Request{Rules: both, Cost: 3, Op: bucketgate.OpRefund}, true, "burst", 10, 0, 10, 3},
	}
	for _, s := range steps {
		m.advance(s.advance)
		s.q.Identity = "shadow"
		got := decide(t, l, s.q)
		want := model.Decide(m.now, s.q)
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("%s: script %+v, model %+v", s.name, got, want)
		}
		if got.Allowed != s.allowed || got.Rule != s.rule || got.Remaining != s.remaining || got.ShadowLimited != s.shadowLimited {
			t.Fatalf("%s: %+v, want allowed %v, rule %q, %d left, shadow denials %b", s.name, got, s.allowed, s.rule, s.remaining, s.shadowLimited)
		}
		for rule, tokens := range map[string]float64{"burst": s.burst, "strict": s.strict} {
			b, _ := model.Bucket("shadow", rule)
			stored := m.HGet(bucket.Key("shadow"), rule+":tokens")
			if b.Tokens != tokens || stored != strconv.FormatFloat(tokens, 'g', -1, 64) {
				t.Fatalf("%s: %s holds %v in the model, %q in Redis, want %v", s.name, rule, b.Tokens, stored, tokens)
			}
		}
	}
	d := decide(t, l, bucketgate.Request{Identity: "shadow", Rules: both, Op: bucketgate.OpReset})
	if d.Remaining != 10 || m.Exists(bucket.Key("shadow")) {
		t.Fatalf("reset: %+v, key left %v", d, m.Exists(bucket.Key("shadow")))
	}
}
