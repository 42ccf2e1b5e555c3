package stress

import (
	"cmp"
	"fmt"
	"slices"
	"time"

	"github.com/bucketgate/bucketgate"
	"github.com/bucketgate/bucketgate/internal/bucket"
)

// maxSamples bounds how many examples of a problem a summary quotes.
const maxSamples = 3

// Replay is how a run's decisions compare with the reference model (bucket.Model):
// each identity's Redis decisions, in Redis time order, replayed through the model,
// which must reach the same decision (allowed, remaining, retry-after).
type Replay struct {
	// Verified counts decisions the model reached too; Disagreements those it did not,
	// with the first few in Examples.
	Verified, Disagreements int64
	Examples                []string
	// Unverifiable counts decisions after a failed request of the same identity that
	// may still have reached Redis (a timeout, a broken connection), after a failover,
	// or after a disagreement: Redis may hold state the model does not know, until a
	// restart empties it.
	Unverifiable int64
	// Ties counts decisions with the same Redis microsecond as the identity's previous
	// decision: their order, and so their replay, is ambiguous; a disagreement at a
	// tie (with the decision before or after) counts as unverifiable, not as one.
	Ties int64
}

// event is one step of an identity's history: a record (rec >= 0) or a reset.
type event struct {
	t     int64
	rec   int
	reset *reset
}

// replay replays recs (one run's records) through the reference model per identity.
func replay(phase string, scenarios []Scenario, recs []Record, resets []reset) Replay {
	byID := map[idKey][]event{}
	for i, r := range recs {
		switch {
		case r.Decided():
			byID[idKey{r.Scenario, r.Identity}] = append(byID[idKey{r.Scenario, r.Identity}], event{t: r.At, rec: i})
		case r.Sent():
			byID[idKey{r.Scenario, r.Identity}] = append(byID[idKey{r.Scenario, r.Identity}], event{t: r.Start, rec: i})
		}
	}
	var out Replay
	for id, events := range byID {
		for i := range resets {
			if resets[i].hits(id) {
				events = append(events, event{t: resets[i].at, rec: -1, reset: &resets[i]})
			}
		}
		slices.SortStableFunc(events, func(a, b event) int { return cmp.Compare(a.t, b.t) })
		out.add(replayIdentity(phase, scenarios, id, events, recs))
	}
	return out
}

// add adds o's counts to r, keeping the first few examples.
func (r *Replay) add(o Replay) {
	r.Verified += o.Verified
	r.Disagreements += o.Disagreements
	r.Unverifiable += o.Unverifiable
	r.Ties += o.Ties
	for _, e := range o.Examples {
		if len(r.Examples) < maxSamples {
			r.Examples = append(r.Examples, e)
		}
	}
}

// replayIdentity replays one identity's events, in time order. A disagreement at a
// decision of the same Redis microsecond as the one before or after it is none (the
// model replays them in an order Redis may not have taken): it and the rest are
// unverifiable.
func replayIdentity(phase string, scenarios []Scenario, id idKey, events []event, recs []Record) Replay {
	var out Replay
	s := scenarios[id.scenario]
	model, tainted := bucket.NewModel(), false
	var last int64
	for j, ev := range events {
		if ev.reset != nil {
			if ev.reset.emptied {
				model, tainted = bucket.NewModel(), false
			} else {
				tainted = true
			}
			continue
		}
		r := recs[ev.rec]
		if r.Sent() {
			tainted = true
			continue
		}
		tie := r.At == last
		if tie {
			out.Ties++
		}
		last = r.At
		if tainted {
			out.Unverifiable++
			continue
		}
		q := bucketgate.Request{Identity: IdentityName(phase, s.Name, id.identity), Rules: s.Shapes[r.Shape], Cost: int64(r.Cost)}
		want := model.Decide(time.UnixMicro(r.At), q)
		if want.Allowed == r.Allowed() && want.Remaining == int64(r.Remaining) && want.RetryAfter.Milliseconds() == r.RetryAfter {
			out.Verified++
			continue
		}
		tainted = true // the model no longer knows Redis's state; one disagreement, not a cascade
		if next := j + 1; tie || next < len(events) && events[next].reset == nil && recs[events[next].rec].Decided() && recs[events[next].rec].At == r.At {
			out.Unverifiable++ // Redis may have decided the two of one microsecond in another order
			continue
		}
		out.Disagreements++
		if len(out.Examples) < maxSamples {
			out.Examples = append(out.Examples, fmt.Sprintf("%s cost %d at %d: Redis allowed=%v remaining=%d retry=%dms, model allowed=%v remaining=%d retry=%dms",
				q.Identity, q.Cost, r.At, r.Allowed(), r.Remaining, r.RetryAfter, want.Allowed, want.Remaining, want.RetryAfter.Milliseconds()))
		}
	}
	return out
}
