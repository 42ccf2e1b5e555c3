package stress

import (
	"cmp"
	"math"
	"slices"
	"time"

	"github.com/bucketgate/bucketgate"
)

// overTolerance is how far, in tokens, admissions may exceed a bound before they count
// as over-admission. The script keeps tokens as doubles and Redis stores them as text,
// so a bucket can be off by rounding (about 1e-12 of a token); a token too many is 1.
const overTolerance = 1e-6

// microsPerSecond converts Redis TIME microseconds to seconds.
const microsPerSecond = 1e6

// admission is one allowed request as one bucket saw it: its Redis time and cost.
type admission struct {
	at   int64 // microseconds of Redis time
	cost int64 // a settle below its estimate gives back: a negative cost
	// owes marks tokens taken whether or not the bucket held them (a settle's cost
	// beyond its estimate): the most the bucket may owe after them, its capacity then,
	// as the script takes them down to minus that at most (a bucket already deeper, its
	// capacity cut since, stays). No window ends at them. 0 for an admission.
	owes int64
}

// settlement is what a settle's first outcome, decided at Redis time at, did to a
// rule of capacity (a quota's limit) that its reserve took est from: gave back the
// estimate less the actual cost, or took the rest, owing that capacity at most.
func settlement(at time.Time, est, actual, capacity int64) admission {
	a := admission{at: at.UnixMicro(), cost: actual - est}
	if a.cost > 0 {
		a.owes = capacity
	}
	return a
}

// inOrder sorts adm by time; at one microsecond, what a settle gave back, then the
// admissions, then what a settle took: the bound is then the loosest the order of the
// calls allows.
func inOrder(adm []admission) {
	rank := func(a admission) int {
		switch {
		case a.cost < 0:
			return 0
		case a.owes > 0:
			return 2
		}
		return 1
	}
	slices.SortStableFunc(adm, func(x, y admission) int { return cmp.Or(cmp.Compare(x.at, y.at), cmp.Compare(rank(x), rank(y))) })
}

// excess is the most tokens that any admission of adm (sorted by time, see inOrder)
// took beyond what a bucket of capacity refilling at ratePerSecond, full at the first,
// could hold then; for admissions alone, the most any window of them admitted beyond
// capacity + ratePerSecond × the window's length (the Redis time from its first
// admission to its last). A settle's refund raises the bucket to its capacity at most;
// what a settle takes lowers it to minus its owes at most, and is no admission. A
// bucket that starts with at most capacity tokens can never exceed 0; every step is
// monotone in the level, so a level this overstates stays overstated. For no
// admissions it is -capacity.
func excess(adm []admission, capacity int64, ratePerSecond float64) float64 {
	best, c := -float64(capacity), float64(capacity)
	if len(adm) == 0 {
		return best
	}
	level, last := c, adm[0].at
	for _, a := range adm {
		level = min(c, level+float64(a.at-last)*ratePerSecond/microsPerSecond)
		last = a.at
		cost := float64(a.cost)
		switch {
		case a.cost < 0:
			level = min(c, level-cost)
		case a.owes > 0:
			level = max(level-cost, min(level, -float64(a.owes)))
		default:
			level -= cost
			best = max(best, -level)
		}
	}
	return best
}

// overTokens is the number of whole tokens an excess admitted too many: zero within
// overTolerance, else the excess rounded up.
func overTokens(excess float64) int64 {
	if excess <= overTolerance {
		return 0
	}
	return int64(math.Ceil(excess - overTolerance))
}

// idKey names one identity of a run: its scenario and index.
type idKey struct {
	scenario uint8
	identity uint32
}

// reset is a moment when some buckets lost their state. Every decision of the old
// state has a Redis time before at, every decision of the new one after: the Redis
// that decided them was dead in between.
type reset struct {
	// at is the moment, in microseconds of the host clock (Redis runs on the host).
	at int64
	// emptied reports a dataset that came back empty (a restart); otherwise it came
	// back as a promoted replica's copy, possibly missing the last writes.
	emptied bool
	// affects reports whether an identity's buckets were reset; nil means all.
	affects map[idKey]bool
}

// hits reports whether r reset id's buckets.
func (r reset) hits(id idKey) bool { return r.affects == nil || r.affects[id] }

// lifetime is the number of resets of id at or before at: buckets are accounted per
// lifetime, since a reset legitimately refills them.
func lifetime(resets []reset, id idKey, at int64) int {
	n := 0
	for _, r := range resets {
		if r.at <= at && r.hits(id) {
			n++
		}
	}
	return n
}

// seriesKey names one bucket during one lifetime, or one quota during one lifetime and
// one of its calendar windows.
type seriesKey struct {
	id   idKey
	rule string
	life int
	// window is the start of a quota's window, in microseconds; 0 for a bucket.
	window int64
}

// limitExcess is the most tokens adm (sorted by time) admitted beyond rule's bound: a
// bucket's capacity and refill over every window of admissions (excess), or a quota's
// limit, adm being one calendar window's admissions.
func limitExcess(adm []admission, rule bucketgate.Rule) float64 {
	if rule.Period == bucketgate.PeriodNone {
		return excess(adm, rule.Capacity, rule.RefillPerSecond)
	}
	sum := 0.0
	for _, a := range adm {
		sum += float64(a.cost)
	}
	return sum - float64(rule.Limit)
}

// limitBound is the most a series of rule may admit from its first admission at first
// to its last at last (microseconds).
func limitBound(rule bucketgate.Rule, first, last int64) float64 {
	if rule.Period == bucketgate.PeriodNone {
		return float64(rule.Capacity) + float64(last-first)*rule.RefillPerSecond/microsPerSecond
	}
	return float64(rule.Limit)
}

// Accounting is the over-admission outcome of one run.
type Accounting struct {
	// Series is the number of bucket lifetimes that admitted something.
	Series int
	// OverAdmitted is the tokens admitted beyond capacity + rate × window, summed over
	// every bucket lifetime's worst window.
	OverAdmitted int64
	// Worst is the largest excess of any series, in tokens (negative: every window
	// stayed below its bound by at least that much).
	Worst float64
	// Admitted and Bound total, per scenario, the tokens admitted and capacity + rate ×
	// (last - first admission) over each series that was denied at some point: how
	// close the limiter comes to its bound when it limits.
	Admitted, Bound map[string]float64
}

// account measures over-admission over recs (one run's records) for the scenarios they
// index, per bucket and lifetime.
func account(scenarios []Scenario, recs []Record, resets []reset) Accounting {
	rules := make([]map[string]bucketgate.Rule, len(scenarios))
	for i, s := range scenarios {
		rules[i], _ = s.rules() // validated with the plan
	}
	series := map[seriesKey][]admission{}
	limited := map[idKey]bool{}
	for _, r := range recs {
		id := idKey{r.Scenario, r.Identity}
		if Outcome(r.Outcome) == OutcomeLimited {
			limited[id] = true
		}
		if !r.Allowed() || !r.Decided() || r.Cost == 0 {
			continue
		}
		life := lifetime(resets, id, r.At)
		for _, rule := range scenarios[r.Scenario].Shapes[r.Shape] {
			k := seriesKey{id: id, rule: rule.Name, life: life}
			if rule.Period != bucketgate.PeriodNone {
				start, _ := rule.Window(time.UnixMicro(r.At))
				k.window = start.UnixMicro()
			}
			series[k] = append(series[k], admission{at: r.At, cost: int64(r.Cost)})
		}
	}
	acc := Accounting{Series: len(series), Worst: math.Inf(-1), Admitted: map[string]float64{}, Bound: map[string]float64{}}
	for k, adm := range series {
		s, rule := scenarios[k.id.scenario], rules[k.id.scenario][k.rule]
		slices.SortFunc(adm, func(a, b admission) int { return cmp.Compare(a.at, b.at) })
		e := limitExcess(adm, rule)
		acc.Worst = max(acc.Worst, e)
		acc.OverAdmitted += overTokens(e)
		if limited[k.id] {
			var sum float64
			for _, a := range adm {
				sum += float64(a.cost)
			}
			acc.Admitted[s.Name] += sum
			acc.Bound[s.Name] += limitBound(rule, adm[0].at, adm[len(adm)-1].at)
		}
	}
	return acc
}
