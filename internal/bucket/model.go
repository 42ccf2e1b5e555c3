package bucket

import (
	"maps"
	"math"
	"slices"
	"time"

	"github.com/bucketgate/bucketgate"
)

// Model is the reference model: the same math as bucket.lua in plain Go, with time
// passed in, keeping state in memory: buckets, quotas on the calendar, usage by day and
// each key's expiry, which removes the key once it is past. Tests hold the script to it.
// It is not safe for concurrent use. The zero Model is not ready; use NewModel.
type Model struct {
	keys map[string]*modelKey
	// UsageDays is how many UTC days of usage the model keeps, as the Usage option's
	// days: 0 counts none.
	UsageDays int
	// UsageOfAddresses is whether usage counts source addresses too, as the
	// UsageOfAddresses option's; NewModel sets it.
	UsageOfAddresses bool
	records          map[string]*modelRecord      // idempotent requests' records, by identity, 0 and name (see Hold)
	reservations     map[string]*modelReservation // by identity, 0 and the model's id
	nonces           int                          // the reserves without RequestID and the leases so far
	sets             map[string]*modelSet         // concurrency rules' sorted sets, by key (LeaseKey)
	leaseIDs         map[string]modelLeaseID      // by identity, 0 and the model's id
	reservedAt       time.Time                    // while a settle gives back: its reserve's time (quotas give back in its window only)
	skipped          []string                     // while a settle is decided: the shadow rules its reserve took nothing from
	admittedAt       int64                        // the expiry (Unix ms) the rules of the last admission needed, which a lease's denial undoing it keeps
	// resets is when each rule was last reset (Unix ms), by identity, 0 and rule name:
	// a settle gives nothing back to a rule reset at or after its reserve. The script's
	// live bucketgate.MaxTTL, past which a reset is older than any reserve a settle may
	// still settle: the model keeps them.
	resets map[string]int64
}

// ModelBucket is one bucket's state as the script stores it: Tokens (a double) as of
// Stamp (microseconds of Redis time); Limited once its first denial since it was last
// full was reported (the stamp's lua.MarkLimited).
type ModelBucket struct {
	Tokens  float64
	Stamp   int64
	Limited bool
}

// ModelQuota is one quota's state as the script stores it: Used tokens admitted in the
// window that ends at End (Unix seconds); Limited once its first denial in the window
// was reported, Reached the thresholds reported in the window (0; 1: 80%; 2: 80% and
// 100%), the marks of the end; Of the limit of the thresholds last reported (0 for
// none), which stays from window to window: Reached is of another limit than the
// rule's, changed since, counts as none.
type ModelQuota struct {
	Used    int64
	End     int64
	Limited bool
	Reached int
	Of      int64
}

// ModelUsage is an identity's usage of one UTC day as the script stores it.
type ModelUsage struct {
	Allowed, Cost, Limited int64
}

type modelKey struct {
	buckets map[string]ModelBucket
	quotas  map[string]ModelQuota
	usage   map[int64]ModelUsage // by UTC day, days since 1970-01-01
	expires int64                // the key's expiry, Unix milliseconds; 0 for none
}

func (k *modelKey) empty() bool { return len(k.buckets)+len(k.quotas)+len(k.usage) == 0 }

// quota returns the stored state of k's quota rule for an operation op: none for a
// reset, which reads nothing, or when k is nil.
func (k *modelKey) quota(rule string, op bucketgate.Op) (ModelQuota, bool) {
	if k == nil || op == bucketgate.OpReset {
		return ModelQuota{}, false
	}
	q, ok := k.quotas[rule]
	return q, ok
}

// NewModel returns an empty Model that counts no usage: every bucket starts full and
// every quota at 0.
func NewModel() *Model { return &Model{keys: map[string]*modelKey{}, UsageOfAddresses: true} }

// usageDays returns the days of identity's usage the model keeps (see usageDaysOf).
func (m *Model) usageDays(identity string) int {
	return usageDaysOf(m.UsageDays, m.UsageOfAddresses, identity)
}

// key returns the state of Redis key name at nowUS, nil when there is none: a key past
// its expiry is removed, as Redis does.
func (m *Model) key(name string, nowUS int64) *modelKey {
	k := m.keys[name]
	if k != nil && k.expires > 0 && nowUS/1000 > k.expires {
		delete(m.keys, name)
		return nil
	}
	return k
}

// ruleState is one rule of a decision in the model: its level (a bucket's tokens, a
// quota's room) and, for a quota, its count, its window's end (Unix seconds) and the ms
// until then; and its marks (see ModelBucket, ModelQuota).
type ruleState struct {
	give    int64 // what a refund gives it: 0 for a rule reset since the reserve of the settle that refunds
	level   float64
	count   int64
	end     int64
	qend    float64
	limited bool
	reached int
	of      int64 // the limit reached is of (see ModelQuota)
}

// Decide does q at now exactly as the script would, and records the writes. q must
// be valid (see Request.Validate) and have no hold (see Hold).
func (m *Model) Decide(now time.Time, q bucketgate.Request) bucketgate.Decision {
	return m.decide(now, q, q.Op, q.Cost, false)
}

// decide does q at now as operation op of cost (a refund's tokens), a debit (a settle
// that takes more than its estimate, which never denies and owes at most a bucket's
// capacity, a quota's limit) or not.
func (m *Model) decide(now time.Time, q bucketgate.Request, op bucketgate.Op, qcost int64, debit bool) bucketgate.Decision {
	if leases(q.Rules) > 0 {
		return m.decideLeases(now, q, op, qcost, debit)
	}
	nowUS := timeToMicros(now)
	key := Key(q.Identity)
	k := m.key(key, nowUS)
	held := op != bucketgate.OpReset && k.holds(q.Rules)
	cost, give := float64(qcost), int64(0)
	if op == bucketgate.OpRefund {
		cost, give = 0, qcost
	}
	need := cost // what an enforced rule must hold: a peek, a refund and a debit never deny
	if cost == 0 || debit {
		need = math.Inf(-1)
	}
	states := make([]ruleState, len(q.Rules))
	allowed := true
	for i, r := range q.Rules {
		st := &states[i]
		st.give = give
		if at, ok := m.resets[q.Identity+"\x00"+r.Name]; ok && !m.reservedAt.IsZero() && at >= m.reservedAt.UnixMilli() {
			st.give = 0 // the reset refilled what the reserve took
		}
		if slices.Contains(m.skipped, r.Name) {
			st.give = 0 // its reserve was a shadow denial of it, which took nothing
		}
		if r.IsQuota() {
			// The stored count applies until its window's end; then the window that
			// holds now counts from 0.
			// A later end than a day's or a week's window can have (a day or a week and
			// an hour from now, a week's on a Monday) is another period's, stored before
			// the rule changed period: its count stands until this period's window ends,
			// unmarked.
			stored, ok := k.quota(r.Name, op)
			st.of = stored.Of
			if ok && stored.End*1_000_000 > nowUS {
				st.count, st.end, st.limited, st.reached = stored.Used, stored.End, stored.Limited, stored.Reached
				if _, end := r.Window(now); ofAnotherPeriod(r, st.end, nowUS) && end.Unix() < st.end {
					st.end, st.limited, st.reached = end.Unix(), false, 0
				}
			} else {
				_, end := r.Window(now)
				st.end = end.Unix()
			}
			st.qend = float64(ceilDiv(st.end*1_000_000-nowUS, 1000))
			// A settle gives back in its reserve's window: on its reserve's UTC day, the
			// window stored, which no midnight ended since, whatever window the rule
			// (its anchor or period edited since) puts the reserve in.
			if _, end := r.Window(m.reservedAt); m.reservedAt.IsZero() || end.Unix() == st.end || m.reservedAt.Truncate(24*time.Hour).Equal(now.Truncate(24*time.Hour)) {
				st.count = max(0, st.count-st.give)
			}
			st.level = float64(max(0, r.Limit-st.count))
		} else {
			st.level = float64(r.Capacity)
			if k != nil && op != bucketgate.OpReset {
				if b, ok := k.buckets[r.Name]; ok {
					st.level, st.limited = refill(b, r, nowUS, float64(st.give)), b.Limited
				}
			}
		}
		if !r.Shadow && st.level < need {
			allowed = false
		}
	}
	// wait is how long rule i waits for cost, full how long until it is full again.
	wait := func(i int) float64 {
		if q.Rules[i].IsQuota() {
			return states[i].qend
		}
		return waitMillis(cost-states[i].level, q.Rules[i])
	}
	full := func(i int) float64 {
		if q.Rules[i].IsQuota() {
			if states[i].count > 0 {
				return states[i].qend
			}
			return 0
		}
		return waitMillis(float64(q.Rules[i].Capacity)-states[i].level, q.Rules[i])
	}
	binding, waitRule := -1, -1
	var waited float64
	var limited, firstDenied, reached80, reached100 bucketgate.RuleSet
	figs := make([]int64, 2*len(q.Rules)) // the crossings' figures
	for i, r := range q.Rules {
		st := &states[i]
		switch {
		case r.Shadow && allowed && st.level < need:
			// A shadow denial takes nothing; a quota's mark, of its window, stays (as in
			// bucket.lua), a bucket's goes as its stamp is written.
			limited |= 1 << i
			st.limited = st.limited && r.IsQuota()
		case r.Shadow && allowed:
			if !slices.Contains(m.skipped, r.Name) { // a debit takes nothing where its reserve took nothing
				st.take(r, cost, debit)
			}
			st.limited = st.limited && r.IsQuota()
		case r.Shadow:
		case allowed:
			// A bucket's mark stays while it is not full; a quota's thresholds are
			// reported once in the window.
			st.limited = st.limited && (r.IsQuota() || st.level < float64(r.Capacity))
			was := st.count
			if !slices.Contains(m.skipped, r.Name) { // a debit takes nothing where its reserve took nothing
				st.take(r, cost, debit)
			}
			if r.IsQuota() && st.crossed(r, was) {
				figs[2*i], figs[2*i+1] = st.count, st.end
				reached := 1
				if st.count >= r.Limit {
					reached = 2
				}
				if st.of != 0 && st.of != r.Limit { // reported of another limit: none of this one
					st.reached = 0
				}
				if reached > st.reached {
					if st.reached < 1 {
						reached80 |= 1 << i
					}
					if reached == 2 {
						reached100 |= 1 << i
					}
					st.reached, st.of = reached, r.Limit
				} else {
					figs[2*i], figs[2*i+1] = 0, 0
				}
			}
			if binding < 0 || st.level < states[binding].level {
				binding = i
			}
			if st.level < need {
				if w := wait(i); w > waited {
					waited, waitRule = w, i
				}
			}
		case st.level < need:
			if w := wait(i); w > waited {
				waited, binding = w, i
			}
			if !st.limited { // its first denial in the window
				firstDenied |= 1 << i
				st.limited = true
				figs[2*i], figs[2*i+1] = st.count, st.end
				if !r.IsQuota() {
					figs[2*i], figs[2*i+1] = int64(math.Floor(st.level)), int64(full(i)) // a debt shows below 0
				}
			}
		}
	}
	// last: the longest time until a rule is full; lastBucket, a bucket's; windowEnd (ms),
	// the latest end of a quota's window left with a count: the key lives exactly the
	// margin past it, where a bucket's time rounds with now.
	fewest, reset, last, lastBucket, windowEnd := math.Inf(1), 0.0, 0.0, 0.0, int64(0)
	for i, r := range q.Rules {
		f := full(i)
		last = math.Max(last, f)
		if r.IsQuota() {
			if states[i].count > 0 {
				windowEnd = max(windowEnd, states[i].end*1000)
			}
		} else {
			lastBucket = math.Max(lastBucket, f)
		}
		if !r.Shadow {
			fewest = math.Min(fewest, states[i].level)
			reset = math.Max(reset, f)
		}
	}
	if binding < 0 || fewest < 0 { // every rule is shadow: nothing to describe; or a debt: none left
		fewest = 0
	}
	d := newDecision(q, allowed, binding, int64(math.Floor(fewest)), int64(waited), int64(reset), nowUS, waitRule, limited)
	d.Crossings = newCrossings(q, d.At, firstDenied, reached80, reached100, figs)
	if firstDenied != 0 {
		m.mark(key, q.Rules, states, firstDenied)
	}
	counted := m.usageDays(q.Identity) > 0 && op == bucketgate.OpCheck && qcost > 0 && !debit
	if held && m.reservedAt.IsZero() && (!allowed || op == bucketgate.OpRefund || qcost == 0) {
		// A call that admits nothing keeps a stored bucket until its rules (a denial's
		// shadow ones as they stand, which it takes nothing of) are full: another plan
		// than the last admission's may need longer. Not a settle: its rules are its
		// reserve's, whose admission set the expiry.
		k.extend(ceilDiv(nowUS, 1000) + int64(last) + int64(ExpiryMargin/time.Millisecond) - 1) // the margin less the rounding of the admission's expiry
	}
	switch {
	case op == bucketgate.OpReset:
		m.remove(key, q.Rules)
		if m.resets == nil {
			m.resets = map[string]int64{}
		}
		for _, r := range q.Rules {
			m.resets[q.Identity+"\x00"+r.Name] = floorDiv(nowUS, 1000)
		}
	case op == bucketgate.OpRefund:
		m.refund(key, q.Rules, states)
	case allowed && qcost > 0:
		k = m.write(key, q.Rules, states, nowUS)
		at := max(ceilDiv(nowUS, 1000)+int64(lastBucket), windowEnd) + int64(ExpiryMargin/time.Millisecond)
		m.admittedAt = at
		if counted {
			m.countUsage(q.Identity, k, nowUS, at, ModelUsage{Allowed: 1, Cost: qcost})
		} else {
			k.extend(at)
		}
	case counted: // a denial: its one write is the usage count
		m.countUsage(q.Identity, k, nowUS, 0, ModelUsage{Limited: 1})
	case qcost == 0: // a peek: every rule's state
		d.Rules = make([]bucketgate.RuleState, len(q.Rules))
		for i, r := range q.Rules {
			left := max(0, math.Floor(states[i].level))
			if r.IsQuota() {
				left = states[i].level
			}
			d.Rules[i] = bucketgate.RuleState{Remaining: int64(left), ResetAfter: millisToDuration(int64(full(i)))}
			if r.IsQuota() {
				d.Rules[i].ResetAfter = millisToDuration(int64(states[i].qend))
			}
		}
	}
	return d
}

// crossed reports whether an admission moved quota r's count from was across 80% or
// 100% of its limit.
func (st *ruleState) crossed(r bucketgate.Rule, was int64) bool {
	return 5*st.count >= 4*r.Limit && 5*was < 4*r.Limit || st.count >= r.Limit && was < r.Limit
}

// mark records the first denial of rules in denied, whose state is stored; a quota's
// window is its state's (states), the stored one's but for a quota that changed period.
func (m *Model) mark(key string, rules []bucketgate.Rule, states []ruleState, denied bucketgate.RuleSet) {
	k := m.keys[key]
	for i, r := range rules {
		if !denied.Has(i) {
			continue
		}
		if r.IsQuota() {
			q := k.quotas[r.Name]
			q.End, q.Limited, q.Reached = states[i].end, true, states[i].reached
			k.quotas[r.Name] = q
		} else {
			b := k.buckets[r.Name]
			b.Limited = true
			k.buckets[r.Name] = b
		}
	}
}

// take takes cost from rule r's state, for an admission; a debit owes at most a
// bucket's capacity, a quota's limit beyond it, and never gives back to a rule that owes
// more already (its capacity or limit cut by a plan since).
func (st *ruleState) take(r bucketgate.Rule, cost float64, debit bool) {
	level, count := st.level, st.count
	st.level -= cost
	if r.IsQuota() {
		st.count += int64(cost)
		if debit {
			if st.count > 2*r.Limit {
				st.count = max(count, 2*r.Limit)
			}
			st.level = float64(r.Limit - st.count)
		}
	} else if debit && st.level < -float64(r.Capacity) {
		st.level = min(level, -float64(r.Capacity))
	}
}

// countUsage adds add to the usage of identity's key k for the day of nowUS, as the
// script does: an admission ({1, cost, 0}), a denial ({0, 0, 1}) or a settle's
// correction of the cost ({0, actual - estimate, 0}). The day's first write moves the
// usage of earlier days from k to the archive (UsageKey), removes the archive's days
// past keeping and makes both keys live as long as the usage in them is kept; another
// write leaves the expiry unless the rules need more than the day's end (at, 0 for
// none): the first may have kept fewer days than keep.
func (m *Model) countUsage(identity string, k *modelKey, nowUS, at int64, add ModelUsage) {
	day, keep := floorDiv(nowUS, 86_400_000_000), int64(m.usageDays(identity))
	if k.usage == nil {
		k.usage = map[int64]ModelUsage{}
	}
	u := k.usage[day]
	newDay := u.Allowed == 0 && (add.Limited == 0 || u.Limited == 0)
	u.Allowed, u.Cost, u.Limited = u.Allowed+add.Allowed, u.Cost+add.Cost, u.Limited+add.Limited
	k.usage[day] = u
	margin := int64(ExpiryMargin / time.Millisecond)
	kept := (day+keep)*86_400_000 + margin
	if !newDay {
		if at > (day+1)*86_400_000+margin { // past the day's end: the day's first write kept it maybe fewer days
			k.extend(at)
		}
		return
	}
	last, moved := int64(0), false
	archiveKey := UsageKey(identity)
	archive := m.key(archiveKey, nowUS)
	for d, old := range k.usage {
		if d == day {
			continue
		}
		delete(k.usage, d)
		if !moved || d > last {
			last, moved = d, true
		}
		if d <= day-keep {
			continue
		}
		if archive == nil {
			archive = &modelKey{usage: map[int64]ModelUsage{}}
			m.keys[archiveKey] = archive
		}
		sum := archive.usage[d]
		archive.usage[d] = ModelUsage{Allowed: sum.Allowed + old.Allowed, Cost: sum.Cost + old.Cost, Limited: sum.Limited + old.Limited}
	}
	switch {
	case !moved:
	case last <= day-keep:
		delete(m.keys, archiveKey)
	case archive != nil:
		for d := last - keep + 1; d <= day-keep; d++ {
			delete(archive.usage, d)
		}
		if int64(len(archive.usage)) >= keep { // kept under more days, before they were lowered
			for d := range archive.usage {
				if d <= day-keep {
					delete(archive.usage, d)
				}
			}
		}
		if len(archive.usage) == 0 {
			delete(m.keys, archiveKey)
		} else {
			archive.extend((last+keep)*86_400_000 + margin)
		}
	}
	k.extend(max(at, kept))
}

// correctUsage adds delta, a settle's actual cost less its reservation's estimate, to
// the cost of identity's usage of the day of nowUS, as the script does (see countUsage);
// the key is made when it has expired.
func (m *Model) correctUsage(identity string, nowUS, delta int64) {
	key := Key(identity)
	k := m.key(key, nowUS)
	if k == nil {
		k = &modelKey{}
		m.keys[key] = k
	}
	m.countUsage(identity, k, nowUS, 0, ModelUsage{Cost: delta})
}

// holds reports whether k, which may be nil, has the state of a bucket among rules.
func (k *modelKey) holds(rules []bucketgate.Rule) bool {
	if k == nil {
		return false
	}
	for _, r := range rules {
		if _, ok := k.buckets[r.Name]; ok && !r.IsQuota() && !r.IsConcurrency() {
			return true
		}
	}
	return false
}

// extend lets k live until at (Unix milliseconds) at least.
func (k *modelKey) extend(at int64) { k.expires = max(k.expires, at) }

// waitMillis is how long bucket r takes to refill tokens, in whole milliseconds rounded up.
func waitMillis(tokens float64, r bucketgate.Rule) float64 {
	return math.Ceil(tokens * 1000 / r.RefillPerSecond)
}

// refill returns b's tokens at nowUS with give tokens added, at most r's capacity; a
// stamp in the future counts as now.
func refill(b ModelBucket, r bucketgate.Rule, nowUS int64, give float64) float64 {
	elapsed := float64(max(nowUS-b.Stamp, 0))
	level := b.Tokens + float64(elapsed*r.RefillPerSecond)/1e6
	return math.Min(level+give, float64(r.Capacity))
}

// write stores every rule's state after an admission at nowUS: a bucket's tokens as of
// nowUS, a quota's count in its window. It returns the key.
func (m *Model) write(key string, rules []bucketgate.Rule, states []ruleState, nowUS int64) *modelKey {
	k := m.keys[key]
	if k == nil {
		k = &modelKey{}
		m.keys[key] = k
	}
	for i, r := range rules {
		if r.IsQuota() {
			if k.quotas == nil {
				k.quotas = map[string]ModelQuota{}
			}
			k.quotas[r.Name] = ModelQuota{Used: states[i].count, End: states[i].end, Limited: states[i].limited, Reached: states[i].reached, Of: states[i].of}
			continue
		}
		if k.buckets == nil {
			k.buckets = map[string]ModelBucket{}
		}
		k.buckets[r.Name] = ModelBucket{Tokens: states[i].level, Stamp: nowUS, Limited: states[i].limited}
	}
	return k
}

// refund adds each rule's give tokens (states) to the stored count of every bucket with
// state, at its stamp, capped at the rule's capacity unless the count holds more
// already: a refund never lowers a bucket, whatever capacity and rate its rules give. A
// quota's count in the current window (states) goes down by its give, to 0 at least.
// Stamps, windows and expiry stand.
func (m *Model) refund(key string, rules []bucketgate.Rule, states []ruleState) {
	k := m.keys[key]
	if k == nil {
		return
	}
	for i, r := range rules {
		if r.IsQuota() {
			if q, ok := k.quotas[r.Name]; ok && q.End == states[i].end && states[i].count < q.Used {
				q.Used = states[i].count
				k.quotas[r.Name] = q
			}
			continue
		}
		b, ok := k.buckets[r.Name]
		if !ok {
			continue
		}
		if raised := math.Min(b.Tokens+float64(states[i].give), float64(r.Capacity)); raised > b.Tokens {
			b.Tokens = raised
			k.buckets[r.Name] = b
		}
	}
}

// remove deletes the state of rules, and the key with its last field.
func (m *Model) remove(key string, rules []bucketgate.Rule) {
	k := m.keys[key]
	if k == nil {
		return
	}
	for _, r := range rules {
		if r.IsQuota() {
			delete(k.quotas, r.Name)
		} else {
			delete(k.buckets, r.Name)
		}
	}
	if k.empty() {
		delete(m.keys, key)
	}
}

// Bucket returns the stored state of identity's bucket rule, and false when none was
// written.
func (m *Model) Bucket(identity, rule string) (ModelBucket, bool) {
	k := m.keys[Key(identity)]
	if k == nil {
		return ModelBucket{}, false
	}
	b, ok := k.buckets[rule]
	return b, ok
}

// Quota returns the stored state of identity's quota rule, and false when none was
// written.
func (m *Model) Quota(identity, rule string) (ModelQuota, bool) {
	k := m.keys[Key(identity)]
	if k == nil {
		return ModelQuota{}, false
	}
	q, ok := k.quotas[rule]
	return q, ok
}

// Usage returns identity's usage of every UTC day from first's to last's at now, as
// Limiter.Usage reads it: the state hash's and the archive's of each day, added.
func (m *Model) Usage(identity string, first, last, now time.Time) []bucketgate.DayUsage {
	st := m.State(identity, now)
	var days []bucketgate.DayUsage
	for d := dayNumber(first); d <= dayNumber(last); d++ {
		u, a := st.Usage[d], st.Archive[d]
		days = append(days, bucketgate.DayUsage{Day: time.Unix(d*86400, 0).UTC(),
			Allowed: u.Allowed + a.Allowed, Cost: u.Cost + a.Cost, Limited: u.Limited + a.Limited})
	}
	return days
}

// ModelState is all an identity's keys hold in the model: its buckets and quotas by
// rule name and the usage of its current day in its state hash, and the usage of past
// days in its archive, by UTC day (days since 1970-01-01). An empty map is nil.
type ModelState struct {
	Buckets map[string]ModelBucket
	Quotas  map[string]ModelQuota
	Usage   map[int64]ModelUsage
	Archive map[int64]ModelUsage
}

// State returns all identity's keys hold at now (nothing of a key once it has expired).
func (m *Model) State(identity string, now time.Time) ModelState {
	var st ModelState
	if k := m.key(Key(identity), timeToMicros(now)); k != nil {
		st.Buckets, st.Quotas, st.Usage = maps.Clone(nonEmpty(k.buckets)), maps.Clone(nonEmpty(k.quotas)), maps.Clone(nonEmpty(k.usage))
	}
	if a := m.key(UsageKey(identity), timeToMicros(now)); a != nil {
		st.Archive = maps.Clone(nonEmpty(a.usage))
	}
	return st
}

// UsageExpiresAt returns when identity's usage archive expires, and false when it has
// none.
func (m *Model) UsageExpiresAt(identity string) (time.Time, bool) {
	a := m.keys[UsageKey(identity)]
	if a == nil {
		return time.Time{}, false
	}
	return time.UnixMilli(a.expires), true
}

// nonEmpty returns m, or nil when it is empty.
func nonEmpty[K comparable, V any](m map[K]V) map[K]V {
	if len(m) == 0 {
		return nil
	}
	return m
}

// SetQuota overwrites the stored state of identity's quota rule, as a test does to
// Redis to end a window.
func (m *Model) SetQuota(identity, rule string, q ModelQuota) {
	key := Key(identity)
	if m.keys[key] == nil {
		m.keys[key] = &modelKey{}
	}
	if m.keys[key].quotas == nil {
		m.keys[key].quotas = map[string]ModelQuota{}
	}
	m.keys[key].quotas[rule] = q
}

// SetBucket overwrites the stored state of identity's rule, as a test does to Redis to
// simulate state written under another clock.
func (m *Model) SetBucket(identity, rule string, b ModelBucket) {
	key := Key(identity)
	if m.keys[key] == nil {
		m.keys[key] = &modelKey{}
	}
	if m.keys[key].buckets == nil {
		m.keys[key].buckets = map[string]ModelBucket{}
	}
	m.keys[key].buckets[rule] = b
}

// ExpiresAt returns when identity's key expires (the latest moment at which every rule
// of a write was full again, or its day's usage no longer kept, plus ExpiryMargin; or
// every rule of a call that admitted nothing, as its rules have them, plus ExpiryMargin
// less a millisecond), and false when nothing was written for it.
func (m *Model) ExpiresAt(identity string) (time.Time, bool) {
	k := m.keys[Key(identity)]
	if k == nil {
		return time.Time{}, false
	}
	return time.UnixMilli(k.expires), true
}

// ofAnotherPeriod reports whether end, the end (Unix seconds) of the window stored
// with quota r's count, is one no window of r's period ends on at nowUS, a minute
// allowed for a clock ahead: more than a day (a week) and a minute away for a daily
// (weekly) quota, or not a Monday for a weekly one. A monthly quota's never is.
func ofAnotherPeriod(r bucketgate.Rule, end, nowUS int64) bool {
	switch r.Period {
	case bucketgate.PeriodDay:
		return end*1_000_000-nowUS > (86400+60)*1_000_000
	case bucketgate.PeriodWeek:
		return end*1_000_000-nowUS > (7*86400+60)*1_000_000 || end%86400 != 0 || (end/86400+3)%7 != 0
	}
	return false
}

// ceilDiv is a / b rounded up, for b > 0.
func ceilDiv(a, b int64) int64 { return -floorDiv(-a, b) }

// floorDiv is a / b rounded down, for b > 0.
func floorDiv(a, b int64) int64 {
	q := a / b
	if a%b != 0 && a < 0 {
		q--
	}
	return q
}
