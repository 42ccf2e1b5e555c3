package stress

import (
	"context"
	"io"
	"testing"
	"time"

	"github.com/bucketgate/bucketgate"
	"github.com/bucketgate/bucketgate/internal/testkit/redistest"
)

func TestChangeLedger(t *testing.T) {
	at := func(us int64) time.Time { return time.UnixMicro(us) }
	allowed := func(us int64) bucketgate.Decision { return bucketgate.Decision{Allowed: true, At: at(us)} }
	settled := func(us, actual int64) bucketgate.Decision {
		return bucketgate.Decision{Allowed: true, At: at(us), Settled: actual}
	}
	reserve := func(rules ...bucketgate.Rule) bucketgate.Request {
		return bucketgate.Request{Identity: "i", Rules: rules, Op: bucketgate.OpReserve, Cost: 60}
	}
	a, b, trial := changeA, changeB, changeTrial
	runLedgerCases(t, []ledgerCase{
		// The bucket's 60 tokens are reserved, all given back, taken again.
		{"a settle gives back to its reserve's rule", func(l changeLedger) {
			l.admitted("i", []bucketgate.Rule{a}, allowed(0), 60)
			l.settled(reserve(a), allowed(0), []bucketgate.Rule{a, trial}, settled(1, 0))
			l.admitted("i", []bucketgate.Rule{a}, allowed(2), 60)
		}, 0},
		// b was added after the reserve: what the settle gave back is not b's, and b
		// admitting its capacity twice in 2 us is 80 tokens too many.
		{"a rule added since gets nothing back", func(l changeLedger) {
			l.admitted("i", []bucketgate.Rule{b}, allowed(0), 80)
			l.settled(reserve(a), allowed(0), []bucketgate.Rule{a, b}, settled(1, 0))
			l.admitted("i", []bucketgate.Rule{b}, allowed(2), 80)
		}, 80},
		// The reserve was a shadow denial of trial (index 1): it took nothing from it.
		{"a shadow denial gets nothing back", func(l changeLedger) {
			d := allowed(0)
			d.ShadowLimited = 1 << 1
			l.admitted("i", []bucketgate.Rule{trial}, allowed(0), 30)
			l.admitted("i", []bucketgate.Rule{a, trial}, d, 60)
			l.settled(reserve(a, trial), d, []bucketgate.Rule{a, trial}, settled(1, 0))
			l.admitted("i", []bucketgate.Rule{trial}, allowed(2), 30)
		}, 30},
		// a made a quota is another rule: the bucket's refund is not the quota's.
		{"a rule of another kind gets nothing back", func(l changeLedger) {
			l.admitted("i", []bucketgate.Rule{changeAQuota}, allowed(0), changeAQuota.Limit)
			l.settled(reserve(a), allowed(0), []bucketgate.Rule{changeAQuota, b}, settled(1, 0))
			l.admitted("i", []bucketgate.Rule{changeAQuota}, allowed(2), 10)
		}, 10},
		// A settle above the estimate takes the rest: a at 0 of its widest capacity
		// (90) after it, 30 tokens refilled by the next reserve.
		{"a settle above the estimate", func(l changeLedger) {
			l.admitted("i", []bucketgate.Rule{a}, allowed(0), 60)
			l.settled(reserve(a), allowed(0), []bucketgate.Rule{a}, settled(1, 90))
			l.admitted("i", []bucketgate.Rule{a}, allowed(15_000), 60)
		}, 30},
		// b owes its capacity at most: at -80 after two settles far above their
		// estimates, full again 80 ms later, not before.
		{"settles above the estimate, once refilled from the floor", func(l changeLedger) {
			l.admitted("i", []bucketgate.Rule{b}, allowed(0), 60)
			l.settled(reserve(b), allowed(0), []bucketgate.Rule{b}, settled(1, 200))
			l.settled(reserve(b), allowed(0), []bucketgate.Rule{b}, settled(1, 200))
			l.admitted("i", []bucketgate.Rule{b}, allowed(80_001), 80)
		}, 0},
		{"settles above the estimate, too early after the floor", func(l changeLedger) {
			l.admitted("i", []bucketgate.Rule{b}, allowed(0), 60)
			l.settled(reserve(b), allowed(0), []bucketgate.Rule{b}, settled(1, 200))
			l.settled(reserve(b), allowed(0), []bucketgate.Rule{b}, settled(1, 200))
			l.admitted("i", []bucketgate.Rule{b}, allowed(60_001), 80)
		}, 40},
		// A settle above the estimate takes nothing from a rule its reserve did not.
		{"a settle above the estimate takes nothing from a rule added since", func(l changeLedger) {
			l.admitted("i", []bucketgate.Rule{b}, allowed(0), 80)
			l.settled(reserve(a), allowed(0), []bucketgate.Rule{a, b}, settled(1, 120))
			l.admitted("i", []bucketgate.Rule{b}, allowed(40_001), 80)
		}, 0},
		// A refund at the microsecond of a check goes first: the check may have had it.
		{"a refund at the microsecond of a check", func(l changeLedger) {
			l.admitted("i", []bucketgate.Rule{b}, allowed(0), 60) // the reserve
			l.admitted("i", []bucketgate.Rule{b}, allowed(0), 20)
			l.admitted("i", []bucketgate.Rule{b}, allowed(1), 50)
			l.settled(reserve(b), allowed(0), []bucketgate.Rule{b}, settled(1, 10))
		}, 0},
	})
}

// TestChangeLedgerAcrossMidnight: a quota gives back only in its reserve's window
// (docs/check.md): settled (or cancelled) after the window's end, the estimate goes back
// to no count; what a settle above its estimate takes goes to its own window's.
func TestChangeLedgerAcrossMidnight(t *testing.T) {
	midnight := time.Date(2026, 11, 28, 0, 0, 0, 0, time.UTC).UnixMicro()
	at := func(us int64) bucketgate.Decision {
		return bucketgate.Decision{Allowed: true, At: time.UnixMicro(midnight + us)}
	}
	settled := func(us, actual int64) bucketgate.Decision {
		d := at(us)
		d.Settled = actual
		return d
	}
	quota, limit := []bucketgate.Rule{changeAQuota}, changeAQuota.Limit
	reserve := bucketgate.Request{Identity: "i", Rules: quota, Op: bucketgate.OpReserve, Cost: 100}
	runLedgerCases(t, []ledgerCase{
		// The day's limit used up after midnight, then a cancel of the last reserve of
		// the day before: the new day's count never held its 100 and gets none of them.
		{"a cancel after midnight gives the new day nothing", func(l changeLedger) {
			l.admitted("i", quota, at(-1), 100)
			l.admitted("i", quota, at(1), limit)
			l.settled(reserve, at(-1), quota, settled(2, 0))
			l.admitted("i", quota, at(3), 100)
		}, 100},
		{"a settle below its estimate after midnight gives the new day nothing", func(l changeLedger) {
			l.admitted("i", quota, at(-1), 100)
			l.admitted("i", quota, at(1), limit)
			l.settled(reserve, at(-1), quota, settled(2, 40))
			l.admitted("i", quota, at(3), 60)
		}, 60},
		// Within its day, the give-back is there.
		{"a cancel before midnight gives back to its day", func(l changeLedger) {
			l.admitted("i", quota, at(-3), 100)
			l.admitted("i", quota, at(-2), limit-100)
			l.settled(reserve, at(-3), quota, settled(-1, 0))
			l.admitted("i", quota, at(-1), 100)
		}, 0},
		// Taking the rest after midnight takes from the new day's count.
		{"a settle above its estimate after midnight takes from the new day", func(l changeLedger) {
			l.admitted("i", quota, at(-1), 100)
			l.settled(reserve, at(-1), quota, settled(2, 150))
			l.admitted("i", quota, at(3), limit-50)
			l.admitted("i", quota, at(4), 1)
		}, 1},
	})
}

// ledgerCase is a named case of a changeLedger: what feed gives it, and the tokens it
// must find over-admitted.
type ledgerCase struct {
	name string
	feed func(l changeLedger)
	want int64
}

// runLedgerCases runs each of tests on a changeLedger of its own.
func runLedgerCases(t *testing.T, tests []ledgerCase) {
	t.Helper()
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			l := changeLedger{}
			tc.feed(l)
			if got := l.overAdmitted(); got != tc.want {
				t.Fatalf("over-admitted %d, want %d", got, tc.want)
			}
		})
	}
}

func TestShares(t *testing.T) {
	for _, tc := range []struct {
		name            string
		reserved, rules []bucketgate.Rule
		want            bool
	}{
		{"a shadow rule added", []bucketgate.Rule{changeA}, []bucketgate.Rule{changeA, changeTrial}, true},
		{"a capacity edited", []bucketgate.Rule{changeA}, []bucketgate.Rule{changeAWider}, true},
		{"made a quota", []bucketgate.Rule{changeA}, []bucketgate.Rule{changeAQuota}, false},
		{"no rule shared", []bucketgate.Rule{changeA, changeB}, []bucketgate.Rule{changeSolo}, false},
		{"a concurrency rule shared", []bucketgate.Rule{changeLeases, changeA}, []bucketgate.Rule{changeB, changeLeases}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := shares(tc.reserved, tc.rules); got != tc.want {
				t.Fatalf("shares = %v, want %v", got, tc.want)
			}
		})
	}
}

// TestRuleChangeRun: a short rule-change run against a real server fails none of its
// checks (its replay through the reference model too), and decides reserves, settles
// and leases.
func TestRuleChangeRun(t *testing.T) {
	srv := redistest.Start(t)
	r := &runner{opts: Options{Log: io.Discard, Seed: 1}, sum: &Summary{}}
	if err := r.ruleChange(context.Background(), srv, 1500*time.Millisecond, 8); err != nil {
		t.Fatal(err)
	}
	res := r.sum.RuleChange
	if f := r.sum.Failures(); len(f) > 0 {
		t.Fatalf("failures: %v", f)
	}
	if res.Allowed == 0 || res.Settles == 0 || res.Leases == 0 || res.Replay.Verified == 0 {
		t.Fatalf("%+v: want reserves allowed, settled, leases, and decisions the model reached too", res)
	}
}
