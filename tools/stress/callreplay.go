package stress

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/bucketgate/bucketgate"
	"github.com/bucketgate/bucketgate/internal/bucket"
)

// replayOp is one call of the rule-change or the leases run that Redis decided (no
// replay, no refusal): the request as sent and what the replay compares of Redis's
// answer, not all of it (a run keeps some 400,000 of them).
type replayOp struct {
	q bucketgate.Request
	d replayAnswer
}

// replayAnswer is what the replay compares of a decision (see sameAnswer), and its ids.
type replayAnswer struct {
	at                 int64 // Unix microseconds of Redis time
	remaining, settled int64
	retry              time.Duration
	reservation, lease string
	allowed, released  bool
}

// answerOf is d as the replay compares it.
func answerOf(d bucketgate.Decision) replayAnswer {
	return replayAnswer{at: d.At.UnixMicro(), remaining: d.Remaining, settled: d.Settled, retry: d.RetryAfter,
		reservation: d.Reservation, lease: d.Lease, allowed: d.Allowed, released: d.Released}
}

// replayLog is a run's calls (the rule-change run's, the leases run's) by identity, and
// the identities a call of which failed otherwise than by a refusal (Redis may have
// decided it): not safe for concurrent use.
type replayLog struct {
	by      map[string][]replayOp
	tainted map[string]bool
}

// add records q's answer d, unless a replay (which changes nothing).
func (o *replayLog) add(q bucketgate.Request, d bucketgate.Decision) {
	if d.Replayed {
		return
	}
	if o.by == nil {
		o.by = map[string][]replayOp{}
	}
	o.by[q.Identity] = append(o.by[q.Identity], replayOp{q, answerOf(d)})
}

// record records the answers ds (those Redis decided: with a time) of calls of q, err
// their error: a call that failed otherwise than by a refusal leaves what Redis stores
// of q's identity unknown.
func (o *replayLog) record(q bucketgate.Request, err error, ds ...bucketgate.Decision) {
	if err != nil && !errors.Is(err, bucketgate.ErrConflict) {
		o.taint(q.Identity)
	}
	for _, d := range ds {
		if !d.At.IsZero() {
			o.add(q, d)
		}
	}
}

// taint marks id's state as unknown from now on: a call of it failed.
func (o *replayLog) taint(id string) {
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
func (o *replayLog) replay() Replay {
	var out Replay
	for id, ops := range o.by {
		if o.tainted[id] {
			out.Unverifiable += int64(len(ops))
			continue
		}
		out.add(replayOps(ops))
	}
	return out
}

// replayOps replays one identity's calls (see replayLog.replay).
func replayOps(ops []replayOp) Replay {
	slices.SortStableFunc(ops, func(x, y replayOp) int { return cmp.Compare(x.d.at, y.d.at) })
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
		if err == nil && sameAnswer(op.d, want) {
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

// sameAnswer reports whether the model's decision want is Redis's got, as far as the
// rule-change run compares them.
func sameAnswer(got replayAnswer, want bucketgate.Decision) bool {
	return got.allowed == want.Allowed && got.remaining == want.Remaining && got.retry == want.RetryAfter &&
		got.settled == want.Settled && got.released == want.Released && (got.lease == "") == (want.Lease == "")
}
