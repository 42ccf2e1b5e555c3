package bucket

import (
	"cmp"
	"fmt"
	"strconv"
	"time"

	"github.com/bucketgate/bucketgate"
)

// modelRecord is a hold's record in the model: the request's fingerprint, its first
// decision, an allowed reserve's expiry and estimate, a settle's first outcome, and
// when the record itself ends (Unix ms).
type modelRecord struct {
	print    string
	first    bucketgate.Decision
	expires  int64 // Unix ms; 0 but for an allowed reserve
	estimate int64
	settled  *bucketgate.Decision
	ends     int64
}

// Hold does q, a request with a hold (a reserve, a settle, a cancel, or one with a
// RequestID), at now exactly as the script would, remembering RequestIDs for
// idempotency. A reserve's Reservation is the model's own id, which a settle of the
// model takes. Its error wraps ErrConflict where the script refuses the request.
func (m *Model) Hold(now time.Time, q bucketgate.Request, idempotency time.Duration) (bucketgate.Decision, error) {
	if m.records == nil {
		m.records = map[string]*modelRecord{}
	}
	nowMS := now.UnixMilli()
	if q.Op == bucketgate.OpSettle || q.Op == bucketgate.OpCancel {
		rec := m.records[q.Identity+"\x00"+q.ID]
		if rec == nil || rec.ends <= nowMS || rec.expires == 0 || rec.print[:len(namesPrint(q.Rules))+2] != namesPrint(q.Rules)+":r" {
			return bucketgate.Decision{}, fmt.Errorf("%w: reservation unknown", bucketgate.ErrConflict)
		}
		if rec.settled != nil {
			d := *rec.settled
			d.Replayed = true
			return relimit(d, q), nil
		}
		if nowMS >= rec.expires {
			return bucketgate.Decision{}, fmt.Errorf("%w: reservation expired", bucketgate.ErrConflict)
		}
		var d bucketgate.Decision
		if q.Cost > rec.estimate {
			d = m.decide(now, q, bucketgate.OpCheck, q.Cost-rec.estimate, true)
		} else {
			d = m.decide(now, q, bucketgate.OpRefund, rec.estimate-q.Cost, false)
		}
		d.Settled = q.Cost
		rec.settled = &d
		return d, nil
	}
	ttl := time.Duration(0)
	if q.Op == bucketgate.OpReserve {
		ttl = cmp.Or(q.TTL, bucketgate.DefaultTTL)
	}
	print := requestPrint(q, ttl)
	name := ""
	if q.RequestID != "" {
		name = q.Identity + "\x00q:" + q.RequestID
		if rec := m.records[name]; rec != nil && rec.ends > nowMS {
			if rec.print != print {
				return bucketgate.Decision{}, fmt.Errorf("%w: requestId used first for another request", bucketgate.ErrConflict)
			}
			d := rec.first
			d.Replayed = true
			return relimit(d, q), nil
		}
	}
	op := q.Op
	if op == bucketgate.OpReserve {
		op = bucketgate.OpCheck
	}
	d := m.decide(now, q, op, q.Cost, false)
	rec := &modelRecord{print: print, estimate: q.Cost}
	if q.RequestID != "" {
		rec.ends = nowMS + idempotency.Milliseconds()
	}
	if q.Op == bucketgate.OpReserve && d.Allowed {
		rec.expires = nowMS + ttl.Milliseconds()
		rec.ends = nowMS + (ttl + idempotency).Milliseconds()
		if name == "" {
			m.nonces++
			name = q.Identity + "\x00n:" + strconv.Itoa(m.nonces)
		}
		d.Reservation = name[len(q.Identity)+1:]
		d.Expires = time.UnixMilli(rec.expires)
	}
	rec.first = d
	if name != "" {
		m.records[name] = rec
	}
	return d, nil
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
