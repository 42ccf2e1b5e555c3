package bucket

import (
	"context"
	"fmt"
	"slices"

	"github.com/redis/rueidis"

	"github.com/bucketgate/bucketgate"
	"github.com/bucketgate/bucketgate/internal/lua"
)

// leases is how many of rules are concurrency rules.
func leases(rules []bucketgate.Rule) int {
	var m int
	for _, r := range rules {
		if r.IsConcurrency() {
			m++
		}
	}
	return m
}

// isLease reports whether the rule of rules called name is a concurrency rule.
func isLease(rules []bucketgate.Rule, name string) bool {
	return slices.ContainsFunc(rules, func(r bucketgate.Rule) bool { return r.Name == name && r.IsConcurrency() })
}

// withoutLeases is q with its rules before its first concurrency rule: q itself for a
// request laid out by byKind.
func withoutLeases(q bucketgate.Request) bucketgate.Request {
	for i, r := range q.Rules {
		if r.IsConcurrency() {
			q.Rules = q.Rules[:i]
			break
		}
	}
	return q
}

// byKind returns rules with its buckets and quotas first and its concurrency rules
// last, each in rules' order: the order of the script's rules, which numbers a
// concurrency rule after every other.
func byKind(rules []bucketgate.Rule) []bucketgate.Rule {
	out := make([]bucketgate.Rule, 0, len(rules))
	for _, r := range rules {
		if !r.IsConcurrency() {
			out = append(out, r)
		}
	}
	for _, r := range rules {
		if r.IsConcurrency() {
			out = append(out, r)
		}
	}
	return out
}

// LeaseKey returns the Redis key of identity's leases of its concurrency rule rule: a
// sorted set of a member per lease, scored by its expiry (Unix ms of Redis's clock), in
// the identity's cluster slot.
func LeaseKey(identity, rule string) string { return Key(identity) + lua.LeaseInfix + rule }

// laidOut is a request as its one script call lays it out: q with its rules in the
// script's order (byKind), without its concurrency rules when the call leaves their
// leases as they are, and m, how many of them are concurrency rules.
type laidOut struct {
	q bucketgate.Request
	m int
}

// layOut returns q, a valid request, as its one script call lays it out: an acquire (a
// check of a cost, or a reserve) and a release with its concurrency rules, a refund, a
// settle and a cancel without them, which leave their leases as they are; false for a
// peek and a reset with concurrency rules, which take more (see decideLeases).
func layOut(q bucketgate.Request) (laidOut, bool) {
	m := leases(q.Rules)
	if m == 0 {
		return laidOut{q: q}, true
	}
	qs := q
	qs.Rules = byKind(q.Rules)
	switch {
	case q.Op == bucketgate.OpRelease || q.Acquires():
		return laidOut{q: qs, m: m}, true
	case peek(q) || q.Op == bucketgate.OpReset:
		return laidOut{}, false
	}
	return laidOut{q: withoutLeases(qs)}, true
}

// answer reads r, the answer of the script call lo of q with hold h: the decision on q,
// with its ids signed by secret (see held) and its ShadowLimited in the order of q's
// rules.
func answer(r rueidis.RedisResult, q bucketgate.Request, lo laidOut, h hold, secret []byte) (bucketgate.Decision, error) {
	if q.Op == bucketgate.OpRelease {
		return decodeRelease(r)
	}
	d, err := decode(r, lo.q)
	d = held(d, q, h, secret)
	if len(lo.q.Rules) == len(q.Rules) && lo.m == 0 { // no concurrency rule: q's own order
		return d, err
	}
	return inOrder(d, q), err
}

// decideLeases decides q, a valid peek or reset with concurrency rules (see layOut), on
// c: a peek reads the leases in flight after the script's peek of the other rules, and a
// reset removes them in the round trip of the script's reset.
func (l *Limiter) decideLeases(ctx context.Context, c rediser, q bucketgate.Request) (bucketgate.Decision, error) {
	qo := q
	qo.Rules = byKind(q.Rules)
	qo = withoutLeases(qo)
	if peek(q) {
		return l.peekLeases(ctx, c, q, qo)
	}
	return l.resetLeases(ctx, c, q, qo)
}

// inOrder is d, decided on q's rules in byKind's order, with its ShadowLimited in the
// order of q's rules.
func inOrder(d bucketgate.Decision, q bucketgate.Request) bucketgate.Decision {
	if d.ShadowLimited == 0 {
		return d
	}
	var set bucketgate.RuleSet
	for j, r := range byKind(q.Rules) {
		if d.ShadowLimited.Has(j) {
			set |= 1 << slices.IndexFunc(q.Rules, func(x bucketgate.Rule) bool { return x.Name == r.Name })
		}
	}
	d.ShadowLimited = set
	return d
}

// decodeRelease reads the script's answer to a release.
func decodeRelease(r rueidis.RedisResult) (bucketgate.Decision, error) {
	reply, err := r.ToArray()
	if err != nil {
		return bucketgate.Decision{}, scriptError(err)
	}
	if len(reply) != lua.ReplyReleaseLen {
		return bucketgate.Decision{}, fmt.Errorf("%w: %d elements, want %d", ErrBadReply, len(reply), lua.ReplyReleaseLen)
	}
	released, err1 := reply[lua.ReplyReleased].ToInt64()
	now, err2 := reply[lua.ReplyReleaseNow].ToInt64()
	if err1 != nil || err2 != nil || released < 0 || released > lua.MaxLeaseRules || now <= 0 {
		return bucketgate.Decision{}, fmt.Errorf("%w: release answered %v", ErrBadReply, reply)
	}
	return bucketgate.Decision{Allowed: true, Reason: bucketgate.ReasonOK, At: microsToTime(now), Released: released > 0}, nil
}

// peekLeases is the peek q: the script's peek of qo, its buckets and quotas (Redis's
// time alone when it has none), then every concurrency rule's leases in flight at that
// time. A concurrency rule's RuleState is the leases it may still give and the time
// until its last lease expires; it binds as peekBinding says.
func (l *Limiter) peekLeases(ctx context.Context, c rediser, q, qo bucketgate.Request) (bucketgate.Decision, error) {
	d := bucketgate.Decision{Allowed: true, Reason: bucketgate.ReasonOK}
	var err error
	if len(qo.Rules) > 0 {
		keys, args := scriptCall(qo, 0, l.usageDaysFor(qo.Identity), hold{}, new(scriptArgs))
		if d, err = decode(eval(ctx, c, keys, args), qo); err != nil {
			return bucketgate.Decision{}, err
		}
	} else if d.At, err = l.Time(ctx, q.Identity); err != nil {
		return bucketgate.Decision{}, err
	}
	var cmds rueidis.Commands
	for _, r := range q.Rules {
		if r.IsConcurrency() {
			cmds = append(cmds, c.B().Zrange().Key(LeaseKey(q.Identity, r.Name)).Min("0").Max("-1").Withscores().Build())
		}
	}
	results := c.DoMulti(ctx, cmds...)
	nowMS := d.At.UnixMilli()
	states := make([]bucketgate.RuleState, 0, len(q.Rules))
	var k, o int // the next concurrency rule's result, the next other rule's state
	for _, r := range q.Rules {
		if !r.IsConcurrency() {
			states = append(states, d.Rules[o])
			o++
			continue
		}
		leases, err := results[k].AsZScores()
		k++
		if err != nil {
			return bucketgate.Decision{}, fmt.Errorf("bucket leases of %s: %w", r.Name, err)
		}
		var held, last int64
		for _, z := range leases {
			if exp := int64(z.Score); exp > nowMS && z.Member != lua.LeaseSetMark {
				held, last = held+1, max(last, exp-nowMS)
			}
		}
		states = append(states, bucketgate.RuleState{Remaining: max(0, int64(r.Concurrency)-held), ResetAfter: millisToDuration(last)})
	}
	return peekBinding(d, q, states), nil
}

// peekBinding completes d, the peek q of its buckets and quotas, with states, every
// rule's in q's order: the binding rule becomes a concurrency rule that has no more
// leases left than d's rule has whole tokens (or the first, when d has none), as a
// check's does: on a tie with a bucket or a quota the slot binds, which frees at its
// lease's expiry at the latest; on a tie of two concurrency rules, the first.
func peekBinding(d bucketgate.Decision, q bucketgate.Request, states []bucketgate.RuleState) bucketgate.Decision {
	for i, r := range q.Rules {
		if left := states[i].Remaining; r.IsConcurrency() && (d.Rule == "" || left < d.Remaining || left == d.Remaining && !isLease(q.Rules, d.Rule)) {
			d.Rule, d.Limit, d.Remaining = r.Name, int64(r.Concurrency), left
		}
	}
	d.Rules = states
	return d
}

// resetLeases is the reset q: the script's reset of qo, its buckets and quotas (by its
// hash, then its text when Redis answers NOSCRIPT, as eval does), and every concurrency
// rule's leases removed, in one round trip (then Redis's time, when q has no other
// rule); in two more when the server refuses them with READONLY (see readOnly: nothing
// written), after making the connection again, as eval does; the script's reset again,
// as eval sends it, while Redis refuses it with TRYAGAIN (its slot moving).
func (l *Limiter) resetLeases(ctx context.Context, c rediser, q, qo bucketgate.Request) (bucketgate.Decision, error) {
	script := len(qo.Rules) > 0
	var keys, args []string
	if script {
		keys, args = scriptCall(qo, 0, l.usageDaysFor(qo.Identity), hold{}, new(scriptArgs))
	}
	reset := func() []rueidis.RedisResult {
		var cmds rueidis.Commands
		if script {
			cmds = append(cmds, evalsha(c, keys, args))
		}
		for _, r := range q.Rules {
			if r.IsConcurrency() {
				cmds = append(cmds, c.B().Del().Key(LeaseKey(q.Identity, r.Name)).Build())
			}
		}
		results := c.DoMulti(ctx, cmds...)
		if script && noScript(results[0]) {
			results[0] = c.Do(ctx, evalText(c, keys, args))
		}
		return results
	}
	results := reset()
	if slices.ContainsFunc(results, readOnly) {
		reconnect(ctx, c)
		results = reset()
	}
	if script && tryAgain(results[0]) {
		results[0] = eval(ctx, c, keys, args)
	}
	for _, r := range results[len(results)-leases(q.Rules):] {
		if err := r.Error(); err != nil {
			return bucketgate.Decision{}, fmt.Errorf("bucket reset of leases: %w", err)
		}
	}
	if script {
		return decode(results[0], qo)
	}
	at, err := l.Time(ctx, q.Identity)
	if err != nil {
		return bucketgate.Decision{}, err
	}
	return bucketgate.Decision{Allowed: true, Reason: bucketgate.ReasonOK, At: at}, nil
}
