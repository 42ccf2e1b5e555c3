package stress

import (
	"cmp"
	"fmt"
	"slices"
	"time"

	"github.com/bucketgate/bucketgate"
	"github.com/bucketgate/bucketgate/internal/bucket"
)

// changeOp is one call of the rule-change run that Redis decided (no replay, no
// refusal): the request as sent and what the replay compares of Redis's answer, not all
// of it (a run keeps some 400,000 of them).
type changeOp struct {
	q bucketgate.Request
	d changeAnswer
}

// changeAnswer is what the replay compares of a decision (see sameChange), and its ids.
type changeAnswer struct {
	at                 int64 // Unix microseconds of Redis time
	remaining, settled int64
	retry              time.Duration
	reservation, lease string
	allowed, released  bool
}

// answerOf is d as the replay compares it.
func answerOf(d bucketgate.Decision) changeAnswer {
	return changeAnswer{at: d.At.UnixMicro(), remaining: d.Remaining, settled: d.Settled, retry: d.RetryAfter,
		reservation: d.Reservation, lease: d.Lease, allowed: d.Allowed, released: d.Released}
}

// changeOps is the rule-change run's calls by identity, and the identities a call of
// which failed otherwise than by a refusal (Redis may have decided it): not safe for
// concurrent use.
type changeOps struct {
	by      map[string][]changeOp
	tainted map[string]bool
}

// add records q's answer d, unless a replay (which changes nothing).
func (o *changeOps) add(q bucketgate.Request, d bucketgate.Decision) {
	if d.Replayed {
		return
	}
	if o.by == nil {
		o.by = map[string][]changeOp{}
	}
	o.by[q.Identity] = append(o.by[q.Identity], changeOp{q, answerOf(d)})
}

// taint marks id's state as unknown from now on: a call of it failed.
func (o *changeOps) taint(id string) {
	if o.tainted == nil {
		o.tainted = map[string]bool{}
	}
	o.tainted[id] = true
}

// replay replays each identity's calls, in Redis time order, through the reference
// model (bucket.Model, Hold with the Limiter's default idempotency), which must reach
// the same decision: allowed, remaining and retry-after of a reserve or a check,
// settled of a settle, released of a release. A settle above its estimate that took
// from a rule its reserve did not take from (too many denials later) shows there. An
// identity a call of which failed is unverifiable, and so is the rest of an identity's
// calls after a disagreement; a disagreement at a call of the same Redis microsecond as
// the one before or after it is none (the model replays them in an order Redis may not
// have taken), and leaves the rest unverifiable.
func (o *changeOps) replay() Replay {
	var out Replay
	for id, ops := range o.by {
		if o.tainted[id] {
			out.Unverifiable += int64(len(ops))
			continue
		}
		out.add(replayChanges(ops))
	}
	return out
}

// replayChanges replays one identity's calls (see changeOps.replay).
func replayChanges(ops []changeOp) Replay {
	slices.SortStableFunc(ops, func(x, y changeOp) int { return cmp.Compare(x.d.at, y.d.at) })
	var out Replay
	model, ids := bucket.NewModel(), map[string]string{} // Redis's reservation and lease ids, the model's
	var last int64
	for i, op := range ops {
		if i > 0 && op.d.at == last {
			out.Ties++
		}
		last = op.d.at
		q := op.q
		if q.ID != "" {
			q.ID = ids[q.ID]
		}
		want, err := model.Hold(time.UnixMicro(op.d.at), q, bucket.DefaultIdempotency)
		if err == nil && sameChange(op.d, want) {
			out.Verified++
			if op.d.reservation != "" {
				ids[op.d.reservation] = want.Reservation
			}
			if op.d.lease != "" {
				ids[op.d.lease] = want.Lease
			}
			continue
		}
		if i > 0 && ops[i-1].d.at == op.d.at || i+1 < len(ops) && ops[i+1].d.at == op.d.at {
			out.Unverifiable += int64(len(ops) - i) // Redis may have decided them in another order
			break
		}
		out.Disagreements++
		out.Unverifiable += int64(len(ops) - i - 1)
		out.Examples = append(out.Examples, fmt.Sprintf("%s %s of %d on %s at %d: Redis allowed=%v remaining=%d retry=%v settled=%d released=%v, model allowed=%v remaining=%d retry=%v settled=%d released=%v (%v)",
			op.q.Identity, op.q.Op, op.q.Cost, ruleNames(op.q.Rules), op.d.at, op.d.allowed, op.d.remaining, op.d.retry, op.d.settled, op.d.released,
			want.Allowed, want.Remaining, want.RetryAfter, want.Settled, want.Released, err))
		break
	}
	return out
}

// sameChange reports whether the model's decision want is Redis's got, as far as the
// rule-change run compares them.
func sameChange(got changeAnswer, want bucketgate.Decision) bool {
	return got.allowed == want.Allowed && got.remaining == want.Remaining && got.retry == want.RetryAfter &&
		got.settled == want.Settled && got.released == want.Released && (got.lease == "") == (want.Lease == "")
}
