package stress

import (
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/bucketgate/bucketgate"
)

const second = int64(microsPerSecond)

func TestExcess(t *testing.T) {
	tests := []struct {
		name     string
		adm      []admission
		capacity int64
		rate     float64
		want     float64
	}{
		{"nothing admitted", nil, 10, 1, -10},
		{"one token of ten", []admission{{0, 1, 0}}, 10, 1, -9},
		{"the whole burst at once", []admission{{0, 4, 0}, {0, 3, 0}, {0, 3, 0}}, 10, 1, 0},
		{"one more than the burst at once", []admission{{0, 5, 0}, {0, 6, 0}}, 10, 1, 1},
		{"refill makes room", []admission{{0, 1, 0}, {second, 1, 0}}, 1, 1, 0},
		{"half a token too early", []admission{{0, 1, 0}, {second / 2, 1, 0}}, 1, 1, 0.5},
		{"fractional rate", []admission{{0, 1, 0}, {2 * second, 1, 0}}, 1, 0.5, 0},
		// The run as a whole stays under its bound; the window at 10 s does not.
		{"a late burst over capacity", []admission{{0, 1, 0}, {10 * second, 1, 0}, {10 * second, 1, 0}, {10 * second, 1, 0}}, 2, 1, 1},
		// Every window from the first admission or to the last stays under its bound;
		// the one at 50 s alone does not.
		{"a window in the middle", []admission{{0, 1, 0}, {50 * second, 2, 0}, {50 * second, 1, 0}, {100 * second, 1, 0}}, 2, 0.1, 1},
		// Tokens taken beyond the bucket (a settle's overrun) end no window; the
		// admission that follows them too soon does.
		{"tokens taken beyond the bucket", []admission{{0, 1, 0}, {0, 2, 1}}, 1, 1, 0},
		{"an admission too soon after tokens taken", []admission{{0, 1, 0}, {0, 2, 2}, {second, 1, 0}}, 1, 1, 2},
		// The script takes the rest down to minus the capacity at most: the bucket at -1,
		// one token of refill, and an admission too many.
		{"tokens taken down to the floor", []admission{{0, 1, 0}, {0, 2, 1}, {second, 1, 0}}, 1, 1, 1},
		{"tokens taken at the floor", []admission{{0, 1, 0}, {0, 2, 1}, {0, 2, 1}, {2 * second, 1, 0}}, 1, 1, 0},
		// A bucket already deeper than its floor (a capacity cut since) stays there.
		{"tokens taken below the floor", []admission{{0, 4, 0}, {0, 4, 4}, {0, 1, 1}, {4 * second, 1, 0}}, 4, 1, 1},
		// A refund raises a bucket to its capacity at most.
		{"a refund to a full bucket", []admission{{0, -3, 0}, {0, 2, 0}, {0, 1, 0}}, 2, 1, 1},
		{"a refund", []admission{{0, 2, 0}, {0, -1, 0}, {0, 1, 0}}, 2, 1, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := excess(tc.adm, tc.capacity, tc.rate); math.Abs(got-tc.want) > 1e-9 {
				t.Fatalf("excess = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestOverTokens(t *testing.T) {
	tests := []struct {
		excess float64
		want   int64
	}{
		{-5, 0}, {0, 0}, {1e-9, 0}, {overTolerance, 0}, {0.3, 1}, {1, 1}, {1.0000001, 1}, {2.5, 3},
	}
	for _, tc := range tests {
		if got := overTokens(tc.excess); got != tc.want {
			t.Errorf("overTokens(%v) = %d, want %d", tc.excess, got, tc.want)
		}
	}
}

// testScenarios are two scenarios: one rule, and two rules in two shapes sharing one.
var testScenarios = []Scenario{
	{Name: "one", Weight: 1, Identities: 2, Shapes: [][]bucketgate.Rule{{{Name: "r", Capacity: 2, RefillPerSecond: 1}}}, MaxCost: 2},
	{Name: "chained", Weight: 1, Identities: 1, Shapes: [][]bucketgate.Rule{
		{{Name: "burst", Capacity: 3, RefillPerSecond: 1}},
		{{Name: "burst", Capacity: 3, RefillPerSecond: 1}, {Name: "quota", Capacity: 4, RefillPerSecond: 0.001}},
	}, MaxCost: 1},
}

// allowed is the Record of an allowed decision by Redis at at.
func allowed(scenario, shape uint8, identity uint32, cost uint8, at int64) Record {
	return Record{Scenario: scenario, Shape: shape, Identity: identity, Cost: cost, At: at, Start: at, End: at, Outcome: uint8(OutcomeOK), Flags: flagAllowed}
}

func TestAccount(t *testing.T) {
	tests := []struct {
		name   string
		recs   []Record
		resets []reset
		want   int64
	}{
		{"within capacity", []Record{allowed(0, 0, 0, 2, 0), allowed(0, 0, 1, 2, 0)}, nil, 0},
		{"identities are separate buckets", []Record{allowed(0, 0, 0, 2, 0), allowed(0, 0, 1, 1, 0), allowed(0, 0, 1, 1, 1)}, nil, 0},
		{"over capacity", []Record{allowed(0, 0, 0, 2, 0), allowed(0, 0, 0, 1, 1)}, nil, 1},
		{"peeks, denials and cache hits take nothing", []Record{
			allowed(0, 0, 0, 2, 0),
			allowed(0, 0, 0, 0, 1),
			{Scenario: 0, Identity: 0, Cost: 1, At: 2, Outcome: uint8(OutcomeLimited), RetryAfter: 1},
			{Scenario: 0, Identity: 0, Cost: 1, Outcome: uint8(OutcomeLimited), RetryAfter: 1, Flags: flagCacheHit},
			{Scenario: 0, Identity: 0, Cost: 1, Outcome: uint8(OutcomeUnavailable), Failure: 1, RetryAfter: 1000},
		}, nil, 0},
		{"a restart starts a new lifetime", []Record{allowed(0, 0, 0, 2, 0), allowed(0, 0, 0, 2, 10)}, []reset{{at: 5, emptied: true}}, 0},
		{"a reset of other identities does not", []Record{allowed(0, 0, 0, 2, 0), allowed(0, 0, 0, 2, 10)}, []reset{{at: 5, affects: map[idKey]bool{{0, 1}: true}}}, 2},
		{"chained shapes share the burst", []Record{allowed(1, 0, 0, 1, 0), allowed(1, 1, 0, 1, 0), allowed(1, 1, 0, 1, 0), allowed(1, 0, 0, 1, 0)}, nil, 1},
		{"the quota counts only its own shape", []Record{allowed(1, 1, 0, 1, 0), allowed(1, 1, 0, 1, 3*second), allowed(1, 1, 0, 1, 6*second), allowed(1, 1, 0, 1, 9*second), allowed(1, 1, 0, 1, 12*second), allowed(1, 0, 0, 1, 12*second)}, nil, 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := account(testScenarios, tc.recs, tc.resets).OverAdmitted; got != tc.want {
				t.Fatalf("over-admitted %d, want %d", got, tc.want)
			}
		})
	}
}

// TestAccountCalendarQuota: a quota admits at most its limit in each calendar window,
// whatever the time between admissions, and its window's end starts the count again.
func TestAccountCalendarQuota(t *testing.T) {
	day := 86400 * second
	monday := time.Date(2026, 11, 23, 0, 0, 0, 0, time.UTC).UnixMicro()
	daily := bucketgate.Rule{Name: "daily", Limit: 3, Period: bucketgate.PeriodDay}
	scenarios := []Scenario{{Name: "quota", Weight: 1, Identities: 2, Shapes: [][]bucketgate.Rule{{daily}, {{Name: "burst", Capacity: 10, RefillPerSecond: 10}, daily}}, MaxCost: 3}}
	tests := []struct {
		name string
		recs []Record
		want int64
	}{
		{"the limit in one day", []Record{allowed(0, 0, 0, 1, monday), allowed(0, 1, 0, 2, monday+day-1)}, 0},
		{"the limit, then the next day's", []Record{allowed(0, 0, 0, 3, monday+day-1), allowed(0, 0, 0, 3, monday+day)}, 0},
		{"one more in the same day, hours later", []Record{allowed(0, 0, 0, 3, monday), allowed(0, 1, 0, 1, monday+day/2)}, 1},
		{"identities count apart", []Record{allowed(0, 0, 0, 3, monday), allowed(0, 0, 1, 3, monday)}, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := account(scenarios, tc.recs, nil).OverAdmitted; got != tc.want {
				t.Fatalf("over-admitted %d, want %d", got, tc.want)
			}
		})
	}
	// A request with a quota costs up to the quota's limit, not a peek for want of a
	// capacity.
	rng := rand.New(rand.NewPCG(1, 2))
	for range 100 {
		if c := cost(rng, &scenarios[0], scenarios[0].Shapes[0]); c < 1 || c > 3 {
			t.Fatalf("cost %d of a quota of 3, want 1 to 3", c)
		}
	}
}
