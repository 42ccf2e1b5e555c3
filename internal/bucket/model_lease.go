package bucket

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/bucketgate/bucketgate"
	"github.com/bucketgate/bucketgate/internal/lua"
)

// modelLeaseID is a lease the model made: what its id carries (its rules' prints,
// rulePrint) and its member in the sets: the Limiter's own for a request with a
// RequestID (requestNonce), else the model's ("n1", "n2", ...), where the Limiter's is
// random.
type modelLeaseID struct {
	prints []string
	nonce  string
}

// modelSet is a concurrency rule's sorted set in the model: each lease's expiry (Unix
// ms) by its member, and the set's own expiry (Unix ms), which is also the score of its
// mark (lua.LeaseSetMark): a set lives, with no lease left too, until it expires.
type modelSet struct {
	leases  map[string]int64
	expires int64
}

// set returns the sorted set name at nowMS, nil when there is none: a set past its
// expiry is removed, as Redis does.
func (m *Model) set(name string, nowMS int64) *modelSet {
	z := m.sets[name]
	if z != nil && nowMS > z.expires {
		delete(m.sets, name)
		return nil
	}
	return z
}

// sweep removes the leases of set name that expired at nowMS, lua.LeaseSweepMax at most
// and the earliest first, as the script does (ZREMRANGEBYRANK over its ZCOUNT); with
// them the set when its mark goes too (at its expiry's very millisecond, every lease
// expired and swept); it returns the set, nil when there is none. Two leases of the same
// expiry go in their members' order, as Redis ranks them: the model's members are
// Redis's for leases of a RequestID (modelLeaseID), so a tie among those at the
// LeaseSweepMax-th removal leaves the ones Redis leaves; a lease without one has a
// random member in Redis, whose rank no model can know.
func (m *Model) sweep(name string, nowMS int64) *modelSet {
	z := m.set(name, nowMS)
	if z == nil {
		return nil
	}
	var expired []string
	for nonce, exp := range z.leases {
		if exp <= nowMS {
			expired = append(expired, nonce)
		}
	}
	if z.expires <= nowMS && len(expired) < lua.LeaseSweepMax { // the mark, which scores highest, goes too
		delete(m.sets, name)
		return nil
	}
	if len(expired) > lua.LeaseSweepMax {
		slices.SortFunc(expired, func(a, b string) int { return cmp.Or(cmp.Compare(z.leases[a], z.leases[b]), strings.Compare(a, b)) })
		expired = expired[:lua.LeaseSweepMax]
	}
	for _, nonce := range expired {
		delete(z.leases, nonce)
	}
	return z
}

// inFlight is how many of z's leases have not expired at nowMS.
func (z *modelSet) inFlight(nowMS int64) int {
	n := 0
	for _, exp := range z.leases {
		if exp > nowMS {
			n++
		}
	}
	return n
}

// setExpiry is when a set whose latest lease expires at exp (Unix ms, after 1970)
// expires: the first whole minute at least ExpiryMargin later, as the script scores the
// set's mark.
func setExpiry(exp int64) int64 {
	x := exp + ExpiryMargin.Milliseconds()
	return x + (lua.LeaseSetMinute-x%lua.LeaseSetMinute)%lua.LeaseSetMinute
}

// decideLeases does q, with concurrency rules, at now as operation op of cost, a debit
// or not, as the script and the Limiter would: an acquire (a check of a cost) decides
// the other rules first and takes a lease of every concurrency rule only if they allow
// it, or denies it for the first concurrency rule that has no lease left once its
// expired leases are swept, which only a full set is (nothing taken, the denial counted
// in usage); a peek adds every concurrency rule's state; a
// reset removes the leases; a refund and a settle leave them.
func (m *Model) decideLeases(now time.Time, q bucketgate.Request, op bucketgate.Op, qcost int64, debit bool) bucketgate.Decision {
	return inOrder(m.decideByKind(now, q, op, qcost, debit), q)
}

// decideByKind is decideLeases with the decision's ShadowLimited in byKind's order.
func (m *Model) decideByKind(now time.Time, q bucketgate.Request, op bucketgate.Op, qcost int64, debit bool) bucketgate.Decision {
	qs := q
	qs.Rules = byKind(q.Rules)
	qo := withoutLeases(qs)
	nowUS := timeToMicros(now)
	nowMS := floorDiv(nowUS, 1000)
	plain := bucketgate.Decision{Allowed: true, Reason: bucketgate.ReasonOK, At: microsToTime(nowUS)}
	switch {
	case op == bucketgate.OpReset:
		d := plain
		if len(qo.Rules) > 0 {
			d = m.decide(now, qo, op, qcost, debit)
		}
		for _, r := range q.Rules {
			if r.IsConcurrency() {
				delete(m.sets, LeaseKey(q.Identity, r.Name))
			}
		}
		return d
	case op == bucketgate.OpCheck && qcost == 0: // a peek
		d := plain
		if len(qo.Rules) > 0 {
			d = m.decide(now, qo, op, qcost, debit)
		}
		states, o := make([]bucketgate.RuleState, 0, len(q.Rules)), 0
		for _, r := range q.Rules {
			if !r.IsConcurrency() {
				states, o = append(states, d.Rules[o]), o+1
				continue
			}
			var held, last int64
			if z := m.set(LeaseKey(q.Identity, r.Name), nowMS); z != nil {
				for _, exp := range z.leases {
					if exp > nowMS {
						held, last = held+1, max(last, exp-nowMS)
					}
				}
			}
			states = append(states, bucketgate.RuleState{Remaining: max(0, int64(r.Concurrency)-held), ResetAfter: millisToDuration(last)})
		}
		return peekBinding(d, q, states)
	case op != bucketgate.OpCheck || debit:
		return m.decide(now, qo, op, qcost, debit)
	}
	key := Key(q.Identity)
	undo := m.snapshot(key, UsageKey(q.Identity))
	held := m.key(key, nowUS).holds(qo.Rules)
	d := m.decide(now, qo, op, qcost, debit)
	if len(qo.Rules) == 0 && m.usageDays(q.Identity) == 0 {
		undo() // a lease alone writes no state hash
	}
	if !d.Allowed {
		return d
	}
	n := len(qo.Rules)
	counts := make([]int, len(qs.Rules)-n)
	for k, r := range qs.Rules[n:] {
		name := LeaseKey(q.Identity, r.Name)
		z := m.set(name, nowMS)
		if z != nil {
			counts[k] = len(z.leases)
		}
		if counts[k] >= int(r.Concurrency) { // full, expired leases too: swept, then the leases in flight counted
			if z = m.sweep(name, nowMS); z != nil {
				counts[k] = z.inFlight(nowMS)
			} else {
				counts[k] = 0
			}
		}
		if counts[k] >= int(r.Concurrency) {
			// The wait: until enough leases expire for one to be free (the Concurrency-th
			// latest: the earliest in flight, but for more than Concurrency in flight, a
			// plan having lowered it since).
			exps := slices.Sorted(maps.Values(z.leases))
			first, last := exps[len(exps)-int(r.Concurrency)], exps[len(exps)-1]
			undo()
			if m.usageDays(q.Identity) > 0 {
				k := m.keys[key]
				if k == nil {
					k = &modelKey{}
					m.keys[key] = k
				}
				m.countUsage(q.Identity, k, nowUS, 0, ModelUsage{Limited: 1})
			}
			if held { // kept as a denial keeps it (see decide), for the figures of the admission
				m.keys[key].extend(m.admittedAt - 1)
			}
			return newDecision(qs, false, n+k, 0, first-nowMS, last-nowMS, nowUS, n+k, 0)
		}
		if left := int64(r.Concurrency) - int64(counts[k]) - 1; d.Rule == "" || left < d.Remaining || left == d.Remaining && !isLease(qs.Rules, d.Rule) {
			d.Rule, d.Limit, d.Remaining = r.Name, int64(r.Concurrency), left
		}
	}
	if m.sets == nil {
		m.sets = map[string]*modelSet{}
	}
	m.nonces++
	nonce := "n" + strconv.Itoa(m.nonces)
	if q.RequestID != "" { // the Limiter's member: ranked among equal scores, and found again, as in Redis
		nonce = requestNonce(q.Identity, q.RequestID)
	}
	for _, r := range qs.Rules[n:] {
		name := LeaseKey(q.Identity, r.Name)
		z := m.sets[name]
		if z == nil {
			z = &modelSet{leases: map[string]int64{}}
			m.sets[name] = z
		}
		exp := nowMS + ttlOf(q).Milliseconds()
		z.leases[nonce] = max(z.leases[nonce], exp) // ZADD GT: a member acquired again keeps its later expiry
		z.expires = max(z.expires, setExpiry(exp))
	}
	if m.leaseIDs == nil {
		m.leaseIDs = map[string]modelLeaseID{}
	}
	id := "l" + strconv.Itoa(m.nonces)
	var prints []string
	for _, r := range q.Rules {
		prints = append(prints, rulePrint(r))
	}
	m.leaseIDs[q.Identity+"\x00"+id] = modelLeaseID{prints: prints, nonce: nonce}
	d.Lease, d.Expires = id, time.UnixMilli(nowMS+ttlOf(q).Milliseconds())
	return d
}

// release does q, an OpRelease, at now: its error wraps ErrConflict for an id the
// model did not make for q's identity and a rule of q.
func (m *Model) release(now time.Time, q bucketgate.Request) (bucketgate.Decision, error) {
	l, ok := m.leaseIDs[q.Identity+"\x00"+q.ID]
	if !ok || !sharesRule(l.prints, q.Rules) {
		return bucketgate.Decision{}, fmt.Errorf("%w: lease %q: not an id this limiter made for the identity and any rule of the request", bucketgate.ErrConflict, quotedID(q.ID))
	}
	nowUS := timeToMicros(now)
	nowMS := floorDiv(nowUS, 1000)
	d := bucketgate.Decision{Allowed: true, Reason: bucketgate.ReasonOK, At: microsToTime(nowUS)}
	for _, r := range byKind(q.Rules) {
		if !r.IsConcurrency() {
			continue
		}
		name := LeaseKey(q.Identity, r.Name)
		if z := m.sweep(name, nowMS); z != nil {
			if exp, held := z.leases[l.nonce]; held { // the set stays, with its mark
				d.Released = d.Released || exp > nowMS // an expired lease the sweep left goes, released by time
				delete(z.leases, l.nonce)
			}
		}
	}
	return d, nil
}

// snapshot returns a function that puts the model's keys names back as they are now.
func (m *Model) snapshot(names ...string) func() {
	saved := make(map[string]*modelKey, len(names))
	for _, name := range names {
		if k := m.keys[name]; k != nil {
			saved[name] = &modelKey{buckets: maps.Clone(k.buckets), quotas: maps.Clone(k.quotas), usage: maps.Clone(k.usage), expires: k.expires}
		}
	}
	return func() {
		for _, name := range names {
			if k, ok := saved[name]; ok {
				m.keys[name] = k
			} else {
				delete(m.keys, name)
			}
		}
	}
}

// Leases returns the expiries (Unix ms) of the leases in identity's set of concurrency
// rule rule at now, expired ones not swept yet included, in increasing order, and the
// set's expiry (its mark's score); nil and 0 when there is no set.
func (m *Model) Leases(identity, rule string, now time.Time) ([]int64, int64) {
	z := m.set(LeaseKey(identity, rule), now.UnixMilli())
	if z == nil {
		return nil, 0
	}
	return slices.Sorted(maps.Values(z.leases)), z.expires
}
