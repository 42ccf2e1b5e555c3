package bucket

import (
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/bucketgate/bucketgate"
)

// modelRecord is an idempotent request's record in the model: its fingerprint, its
// first decision, and when the record ends (Unix ms).
type modelRecord struct {
	print string
	first bucketgate.Decision
	ends  int64
}

// modelReservation is a reservation the model made: what its id carries (its rules'
// prints, the estimate, the expiry and the reserve's time in Unix ms) and, once
// settled, its first outcome.
type modelReservation struct {
	// prints is rulePrint of each rule of its reserve, charged of those it took from
	// (all but the shadow rules it was a shadow denial of).
	prints, charged            []string
	estimate, expiry, reserved int64 // reserved: Unix ms
	settled                    *bucketgate.Decision
	// binding is rulePrint of the binding rule of its first settle (settled), empty for
	// none: a settle answered again names it among its own rules, or none.
	binding string
}

// Hold does q, a reserve, a settle, a cancel, a release or a request with a RequestID, at now
// exactly as the script and the Limiter would, remembering RequestIDs for idempotency
// (a reserve's or an acquire's its ttl more) and settled reservations idempotency past
// their expiry. A reserve's Reservation is
// the model's own id, which a settle of the model takes. Its error wraps ErrConflict
// where the Limiter or the script refuses the request.
func (m *Model) Hold(now time.Time, q bucketgate.Request, idempotency time.Duration) (bucketgate.Decision, error) {
	if m.records == nil {
		m.records, m.reservations = map[string]*modelRecord{}, map[string]*modelReservation{}
	}
	nowMS := now.UnixMilli()
	if q.Op == bucketgate.OpRelease {
		return m.release(now, q)
	}
	if settles(q) {
		r := m.reservations[q.Identity+"\x00"+q.ID]
		if r == nil || !sharesRule(r.prints, q.Rules) {
			return bucketgate.Decision{}, fmt.Errorf("%w: not an id this limiter made for the identity and any rule of the request", bucketgate.ErrConflict)
		}
		if r.settled != nil && nowMS < r.expiry+idempotency.Milliseconds() {
			// Past the expiry too: a retry of a settle made before it.
			d := *r.settled
			d.Replayed, d.Crossings = true, nil // a replay crosses nothing
			d.Rule, d.Limit, d.Remaining = "", 0, 0
			for _, rule := range q.Rules {
				if r.binding != "" && rulePrint(rule) == r.binding {
					d.Rule, d.Limit, d.Remaining = rule.Name, rule.Max(), min(r.settled.Remaining, rule.Max())
				}
			}
			return d, nil
		}
		if nowMS >= r.expiry {
			return bucketgate.Decision{}, fmt.Errorf("%w: reservation expired", bucketgate.ErrConflict)
		}
		var d bucketgate.Decision
		for _, rule := range q.Rules { // those added since, and those its reserve took nothing from
			if !slices.Contains(r.charged, rulePrint(rule)) {
				m.skipped = append(m.skipped, rule.Name)
			}
		}
		if q.Cost > r.estimate {
			d = m.decide(now, q, bucketgate.OpCheck, q.Cost-r.estimate, true)
		} else {
			m.reservedAt = time.UnixMilli(r.reserved)
			d = m.decide(now, q, bucketgate.OpRefund, r.estimate-q.Cost, false)
			m.reservedAt = time.Time{}
		}
		m.skipped = nil
		d.Settled = q.Cost
		r.settled = &d
		for _, rule := range q.Rules {
			if rule.Name == d.Rule {
				r.binding = rulePrint(rule)
			}
		}
		if delta := q.Cost - r.estimate; m.usageDays(q.Identity) > 0 && delta != 0 {
			m.correctUsage(q.Identity, timeToMicros(now), delta) // the day's cost, no check more
		}
		return d, nil
	}
	print, name := requestPrint(q), q.Identity+"\x00q:"+q.RequestID
	if q.RequestID != "" {
		if rec := m.records[name]; rec != nil && rec.ends > nowMS {
			if rec.print != print {
				return bucketgate.Decision{}, fmt.Errorf("%w: requestId used first for another request", bucketgate.ErrConflict)
			}
			d := rec.first
			d.Replayed, d.Crossings = true, nil // a replay crosses nothing
			return relimit(d, q), nil
		}
	}
	op := q.Op
	if op == bucketgate.OpReserve {
		op = bucketgate.OpCheck
	}
	d := m.decide(now, q, op, q.Cost, false)
	if q.Op == bucketgate.OpReserve && d.Allowed {
		m.nonces++
		id := "m" + strconv.Itoa(m.nonces)
		expiry := nowMS + ttlOf(q).Milliseconds()
		var prints, charged []string
		for i, r := range q.Rules {
			prints = append(prints, rulePrint(r))
			if !d.ShadowLimited.Has(i) {
				charged = append(charged, rulePrint(r))
			}
		}
		m.reservations[q.Identity+"\x00"+id] = &modelReservation{prints: prints, charged: charged, estimate: q.Cost, expiry: expiry, reserved: nowMS}
		d.Reservation, d.Expires = id, time.UnixMilli(expiry)
	}
	if q.RequestID != "" {
		m.records[name] = &modelRecord{print: print, first: d, ends: nowMS + recordLife(q, idempotency).Milliseconds()}
	}
	return d, nil
}

// sharesRule reports whether one of rules has one of prints (rulePrint): a settle or a
// release of an id is refused unless it shares a rule with its reserve or acquire.
func sharesRule(prints []string, rules []bucketgate.Rule) bool {
	return slices.ContainsFunc(rules, func(r bucketgate.Rule) bool { return slices.Contains(prints, rulePrint(r)) })
}

// relimit gives d, a decision replayed for q, the limits of q's rules: the script's
// reply names its rules by index, and the request it answers gives their figures.
func relimit(d bucketgate.Decision, q bucketgate.Request) bucketgate.Decision {
	for _, r := range q.Rules {
		if r.Name == d.Rule {
			d.Limit, d.Remaining = r.Max(), min(d.Remaining, r.Max())
		}
		if r.Name == d.Shortfall.Rule {
			d.Shortfall.Limit = r.Max()
		}
	}
	return d
}
