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
	cost int64
	// taken marks tokens taken whether or not the bucket held them (a settle's cost
	// beyond its estimate): they count in every window that holds them, but no window
	// ends at them.
	taken bool
}

// excess is the most tokens that any window of adm (sorted by time) admitted beyond
// capacity + ratePerSecond × the window's length, the window's length being the Redis
// time from its first admission to its last (a window ends at an admission that needed
// its tokens, not at tokens taken). A bucket that starts with at most capacity tokens
// and refills at ratePerSecond can never exceed 0. For no admissions it is -capacity.
//
// For a window from i to j: admitted - bound = (P[j] - r·t[j]) - (P[i-1] - r·t[i]) - C,
// where P is the running sum of costs; a running minimum of the second term over i ≤ j
// makes this one pass.
func excess(adm []admission, capacity int64, ratePerSecond float64) float64 {
	best := -float64(capacity)
	if len(adm) == 0 {
		return best
	}
	t0 := adm[0].at
	minStart, sum := math.Inf(1), 0.0
	for _, a := range adm {
		refill := float64(a.at-t0) * ratePerSecond / microsPerSecond
		minStart = min(minStart, sum-refill) // the window that starts at a
		sum += float64(a.cost)
		if !a.taken {
			best = max(best, sum-refill-minStart-float64(capacity))
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
