package bucket

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/redis/rueidis"

	"github.com/bucketgate/bucketgate"
	"github.com/bucketgate/bucketgate/internal/lua"
	"github.com/bucketgate/bucketgate/internal/wallclock"
)

// ExpiryMargin is added to the moment every bucket of a key is full again before the
// key expires, so that expiry is never visible to a decision. The script holds it.
const ExpiryMargin = lua.ExpiryMarginMillis * time.Millisecond

// rediser is the part of a rueidis client that a Limiter uses, declared here as small as
// it is: every rueidis.Client is one.
type rediser interface {
	B() rueidis.Builder
	Do(ctx context.Context, cmd rueidis.Completed) rueidis.RedisResult
	DoMulti(ctx context.Context, multi ...rueidis.Completed) []rueidis.RedisResult
	Mode() rueidis.ClientMode
}

// Limiter decides requests with one atomic script call each. It is safe for concurrent
// use; make one per process and share it.
type Limiter struct {
	client      rediser                                       // set by New
	connect     func(context.Context) (rueidis.Client, error) // set by NewLazy
	usageDays   int                                           // set by Usage; 0 counts none
	noAddresses bool                                          // set by UsageOfAddresses
	idempotency time.Duration                                 // set by Idempotency
	secrets     secrets                                       // set by Secret, or read from Redis (secretOf)
	now         func() time.Time                              // the clock of reading the secret again and of IdleCheck; wallclock.Now: a frozen Lambda's monotonic clock would keep a secret Redis lost signing past SecretRecheck
	lastCall    atomic.Int64                                  // when the last call on an identity's keys started: Unix ns of now
	checkUntil  atomic.Int64                                  // until when such calls check their connections first (IdleCheck): Unix ns
}

// Option is a setting of a Limiter.
type Option func(*Limiter)

// MaxUsageDays is the most UTC days of usage a Limiter keeps (see Usage).
const MaxUsageDays = lua.MaxUsageDays

// Usage makes a Limiter count every check that takes tokens in its identity's usage of
// the UTC day (of Redis's clock), in the same script call: requests allowed and the
// cost they took, or requests limited. The usage of a day is kept for days days, that
// day included (1 to MaxUsageDays); 0 counts none. It panics on another number: the
// settings that give it are checked first.
func Usage(days int) Option {
	if days < 0 || days > MaxUsageDays {
		panic(fmt.Sprintf("bucket: usage kept %d days: want 0 to %d", days, MaxUsageDays))
	}
	return func(l *Limiter) { l.usageDays = days }
}

// UsageOfAddresses makes a Limiter with Usage count the usage of source addresses
// (identities starting with bucketgate.IPPrefix) too, when on, as it does unless this
// option says otherwise; off counts none for them, so that the key of an address lives
// only as long as its buckets and quotas need, not the days usage is kept: traffic from
// many addresses (a scan, rotating proxies) then holds no memory for days.
func UsageOfAddresses(on bool) Option {
	return func(l *Limiter) { l.noAddresses = !on }
}

// usageDaysOf returns the days of identity's usage kept when days are kept of every
// identity's, and addresses says whether source addresses count: days, or 0 for an
// address when they do not.
func usageDaysOf(days int, addresses bool, identity string) int {
	if !addresses && strings.HasPrefix(identity, bucketgate.IPPrefix) {
		return 0
	}
	return days
}

// usageDaysFor returns the days of identity's usage l keeps; 0 when it counts none.
func (l *Limiter) usageDaysFor(identity string) int {
	return usageDaysOf(l.usageDays, !l.noAddresses, identity)
}

// New returns a Limiter that keeps its buckets in the Redis (or Valkey) behind client,
// a connected client. It should be made with DisableCache: ElastiCache does not support
// tracking.
func New(client rediser, opts ...Option) *Limiter {
	l := &Limiter{client: client, idempotency: DefaultIdempotency, now: wallclock.Now}
	for _, o := range opts {
		o(l)
	}
	l.lastCall.Store(l.now().UnixNano())
	return l
}

// NewLazy returns a Limiter that asks connect for the client of each call, so that it
// can be made before Redis is reachable: connect's error is the call's error.
// (*redisconn.Conn).Client, which connects on first use, is such a function.
func NewLazy(connect func(context.Context) (rueidis.Client, error), opts ...Option) *Limiter {
	l := &Limiter{connect: connect, idempotency: DefaultIdempotency, now: wallclock.Now}
	for _, o := range opts {
		o(l)
	}
	l.lastCall.Store(l.now().UnixNano())
	return l
}

// IdleCheck is how long a Limiter may go without a call on an identity's keys, by the
// wall clock, before the calls of the next IdleCheck check the connections they are
// about to use: a read of each identity's state hash (EXISTS, never sent again) goes
// first, and when it fails on a dead connection, rueidis drops that connection and the
// call's own commands go on a new one. A running process's rueidis client pings every
// connection idle for a second (its TCP keep-alive period) and replaces a dead one; a
// process Lambda froze between invocations did not, and a connection Redis closed
// meanwhile (a failover, maintenance, an idle timeout) would otherwise fail the first
// call on it after the thaw (EOF, Redis having run nothing). The check has half the
// time left to the call's deadline: a connection the network dropped silently answers
// nothing, and is given up and dropped then, leaving the call the other half on a new
// one. With a standalone server, a write that never changes a key goes with the reads,
// and when the server refuses it (READONLY: a primary a failover demoted), the
// connection is made again (see readOnly) before the call, which may only read. Each
// checked call costs a round trip more; for IdleCheck after a thaw, since each call
// checks only its own nodes' connections and rueidis pings the others within that time.
const IdleCheck = time.Second

// halfLeft returns ctx ending halfway to its deadline, for a round trip the call can do
// without (a connection's check, a read of the secrets again): a Redis that answers
// nothing leaves the call the other half. Without a deadline, it is ctx.
func halfLeft(ctx context.Context) (context.Context, context.CancelFunc) {
	if deadline, ok := ctx.Deadline(); ok {
		return context.WithDeadline(ctx, deadline.Add(-time.Until(deadline)/2))
	}
	return ctx, func() {}
}

// redis returns the client of one call on the keys of the identities of qs, checking
// the connections to them first within IdleCheck after IdleCheck without such a call
// (see IdleCheck). A call on no identity's keys (Time of "") is neither checked nor
// counted.
func (l *Limiter) redis(ctx context.Context, qs ...bucketgate.Request) (rediser, error) {
	c := l.client
	if c == nil {
		cl, err := l.connect(ctx)
		if err != nil {
			return nil, err
		}
		c = cl
	}
	if len(qs) == 0 {
		return c, nil
	}
	now := l.now().UnixNano()
	if now-l.lastCall.Swap(now) >= int64(IdleCheck) {
		l.checkUntil.Store(now + int64(IdleCheck))
	}
	if now >= l.checkUntil.Load() {
		return c, nil
	}
	cmds := make(rueidis.Commands, 0, len(qs)+1)
	key := "" // the key of the last identity checked
	for _, q := range qs {
		if q.Identity != "" && len(q.Identity) <= bucketgate.MaxIdentity {
			key = Key(q.Identity)
			// Arbitrary, so not read-only: rueidis would send a read-only command again
			// and again while Redis is down, until ctx ended.
			cmds = append(cmds, c.B().Arbitrary("EXISTS").Keys(key).Build())
		}
	}
	if key != "" && c.Mode() == rueidis.ClientModeStandalone {
		// A write that never changes the key (no expiry is sooner than 1 ms after
		// 1970: GT sets none), refused with READONLY by a primary a failover demoted
		// (see readOnly), where a call that only reads (a usage report, its clock, a peek)
		// would be answered by the replica it is, behind the new primary by its
		// replication lag, or for as long as it is cut off from it.
		cmds = append(cmds, c.B().Arbitrary("PEXPIREAT").Keys(key).Args("1", "GT").Build())
	}
	// The check has half the time left: a connection that answers nothing (dropped
	// silently by the network) is given up then, and dropped, leaving the call the
	// other half on a new one.
	check, cancel := halfLeft(ctx)
	defer cancel()
	// Whatever the other answers: a dead connection failed and was dropped, and a
	// Redis that is down or slow fails the call's own commands as it would have.
	if slices.ContainsFunc(c.DoMulti(check, cmds...), readOnly) {
		reconnect(check, c)
	}
	return c, nil
}

// Decide decides q against Redis. Its error wraps ErrInvalid for a request that can
// never be decided (nothing is written), ErrBadState when the identity's stored state is
// not the script's (nothing is written), ErrBadReply for an answer of the wrong shape,
// or whatever rueidis returned (ctx's deadline, a connection error, a Redis error). On
// any error the Decision is the zero Decision: what to do is the caller's policy.
func (l *Limiter) Decide(ctx context.Context, q bucketgate.Request) (bucketgate.Decision, error) {
	if err := q.Validate(); err != nil {
		return bucketgate.Decision{}, err
	}
	c, err := l.redis(ctx, q)
	if err != nil {
		return bucketgate.Decision{}, fmt.Errorf("bucket script: %w", err)
	}
	lo, ok := layOut(q)
	if !ok {
		return l.decideLeases(ctx, c, q)
	}
	h, secret, err := l.hold(ctx, c, q)
	if err != nil {
		return bucketgate.Decision{}, err
	}
	var call scriptArgs
	keys, args := scriptCall(lo.q, lo.m, l.usageDaysFor(q.Identity), h, &call)
	return answer(eval(ctx, c, keys, args), q, lo, h, secret)
}

// DecideBatch decides every request of qs in one round trip: their script calls are
// pipelined (sent in one write, answered in order), and decisions[i] and errs[i] answer
// qs[i] as Decide would. Each request is atomic, the batch is not: a later request sees
// what an earlier one wrote. The calls of an identity with more than one request in
// the batch go together inside MULTI ... EXEC, so that a node that lost the script
// (after a restart or a failover) refuses all of them or none even while another
// client loads it, and they are sent again together, in order: a later request of an
// identity never runs before an earlier one. An invalid request is not sent. When ctx
// ends before the answers arrive, every request still waiting for its answer gets
// ctx's error: it may or may not have been decided by Redis, and it is never sent
// again. An acquire, a release, a refund, a settle and a cancel with a concurrency rule
// are one script call each, pipelined as the others are; a peek or a reset with a
// concurrency rule, which need more, is decided on its own, as Decide decides it,
// after the requests before it and before those after it: a round trip more each.
func (l *Limiter) DecideBatch(ctx context.Context, qs []bucketgate.Request) (decisions []bucketgate.Decision, errs []error) {
	decisions, errs = make([]bucketgate.Decision, len(qs)), make([]error, len(qs))
	c, err := l.redis(ctx, qs...)
	p := pipeline{hs: make([]hold, len(qs)), secrets: make([][]byte, len(qs))}
	for i, q := range qs {
		if errs[i] = q.Validate(); errs[i] != nil {
			continue
		}
		if err != nil {
			errs[i] = fmt.Errorf("bucket script: %w", err)
			continue
		}
		lo, ok := layOut(q)
		if !ok {
			l.send(ctx, c, qs, &p, decisions, errs) // the requests before it first: it sees what they wrote
			decisions[i], errs[i] = l.decideLeases(ctx, c, q)
			continue
		}
		if p.hs[i], p.secrets[i], errs[i] = l.hold(ctx, c, q); errs[i] != nil {
			continue
		}
		p.sent = append(p.sent, i)
		p.calls = append(p.calls, lo)
	}
	l.send(ctx, c, qs, &p, decisions, errs)
	return decisions, errs
}

// pipeline is the script calls of a batch waiting to be sent together.
type pipeline struct {
	sent    []int     // the index in the batch of each call
	calls   []laidOut // the script call of each call
	hs      []hold    // the hold of each request of the batch
	secrets [][]byte  // the secret of each request of the batch
	// multiErr is Redis's refusal of a transaction's MULTI (an ACL without it), once
	// met: the calls of one identity then go one by one, as Redis ran them (see alone).
	multiErr error
}

// send sends p's calls, requests of qs, in one round trip, and empties it: decisions[i]
// and errs[i] answer qs[i].
func (l *Limiter) send(ctx context.Context, c rediser, qs []bucketgate.Request, p *pipeline, decisions []bucketgate.Decision, errs []error) {
	if len(p.sent) == 0 {
		return
	}
	results := make([]rueidis.RedisResult, len(p.sent))
	all := make([]int, len(p.sent))
	for j := range all {
		all[j] = j
	}
	l.round(ctx, c, qs, p, all, evalsha, results)
	// Redis without the script ran none of the calls it refused with NOSCRIPT: send
	// those again, loading the script (see load). Nor any it refused with READONLY or
	// TRYAGAIN: send those again as eval does; nor those redirected that rueidis did
	// not follow (see redirected), sent again as TRYAGAIN's, to the slot's owner then.
	l.load(ctx, c, qs, p, results)
	if slices.ContainsFunc(results, readOnly) {
		reconnect(ctx, c)
		l.resend(ctx, c, qs, p, results, readOnly, evalsha)
		l.load(ctx, c, qs, p, results)
	}
	moving := func(r rueidis.RedisResult) bool { return tryAgain(r) || redirected(r) }
	for n := 0; n < maxTryAgains && slices.ContainsFunc(results, moving) && wait(ctx, TryAgainWait); n++ {
		l.resend(ctx, c, qs, p, results, moving, evalsha)
		l.load(ctx, c, qs, p, results)
	}
	for j, r := range results {
		i := p.sent[j]
		decisions[i], errs[i] = answer(r, qs[i], p.calls[j], p.hs[i], p.secrets[i])
	}
	p.sent, p.calls = p.sent[:0], p.calls[:0]
}

// resend sends again, in one round trip, the calls of p whose results are refused
// (Redis ran none of them), each as call makes it, and puts their answers in results.
func (l *Limiter) resend(ctx context.Context, c rediser, qs []bucketgate.Request, p *pipeline, results []rueidis.RedisResult,
	refused func(rueidis.RedisResult) bool, call func(c rediser, keys, args []string) rueidis.Completed) {
	var again []int // the index in results of each call sent again
	for j, r := range results {
		if refused(r) {
			again = append(again, j)
		}
	}
	if len(again) > 0 {
		l.round(ctx, c, qs, p, again, call, results)
	}
}

// round sends the calls js of p (indexes in p's calls, in the batch's order) in one
// round trip, each as call makes it in the order sent, and puts their answers in
// results. The calls of an identity with more than one among them go together, in
// their order, inside MULTI ... EXEC (on the identity's slot: its node), where the
// script cache cannot change between them: Redis that lacks the script refuses every
// one of them with NOSCRIPT, having run none, even while another client loads it; or,
// once Redis refused MULTI (see pipeline's multiErr), one by one, as Redis ran them,
// so that rueidis follows a redirection of each (it follows none inside a transaction
// whose MULTI was refused). A call of an identity alone goes as it is.
func (l *Limiter) round(ctx context.Context, c rediser, qs []bucketgate.Request, p *pipeline, js []int,
	call func(c rediser, keys, args []string) rueidis.Completed, results []rueidis.RedisResult) {
	identity := func(j int) string { return qs[p.sent[j]].Identity }
	counts := make(map[string]int, len(js))
	for _, j := range js {
		counts[identity(j)]++
	}
	cmds := make(rueidis.Commands, 0, len(js)+2*(len(js)-len(counts)))
	at := make([]int, len(js))  // where each call of js lies in cmds
	var txs, ones []transaction // inside MULTI ... EXEC, or one by one (see multiErr; no MULTI at multi)
	var laid scriptArgs         // each call's, in turn: a command copies its arguments
	build := func(k int) {      // appends the call js[k]
		j := js[k]
		keys, args := scriptCall(p.calls[j].q, p.calls[j].m, l.usageDaysFor(identity(j)), p.hs[p.sent[j]], &laid)
		at[k] = len(cmds)
		cmds = append(cmds, call(c, keys, args))
	}
	for k, j := range js {
		id := identity(j)
		switch n := counts[id]; {
		case n == 1:
			build(k)
		case n > 1: // the first call of the identity: all of them, and none after
			tx := transaction{multi: len(cmds), calls: make([]int, 0, n)}
			if p.multiErr == nil {
				cmds = append(cmds, c.B().Multi().Build())
			}
			for k2 := k; len(tx.calls) < n; k2++ {
				if identity(js[k2]) == id {
					build(k2)
					tx.calls = append(tx.calls, js[k2])
				}
			}
			if p.multiErr == nil {
				cmds = append(cmds, c.B().Exec().Build())
				txs = append(txs, tx)
			} else {
				ones = append(ones, tx)
			}
			counts[id] = 0
		}
	}
	rs := doMulti(ctx, c, cmds, txs)
	for k, j := range js {
		results[j] = rs[at[k]]
	}
	for _, tx := range txs {
		if err := rs[tx.multi].Error(); err != nil && p.multiErr == nil {
			if _, ok := rueidis.IsRedisErr(err); ok {
				p.multiErr = err
			}
		}
		tx.unwrap(rs, results)
	}
	for _, tx := range ones {
		tx.alone(p.multiErr, results)
	}
}

// doMulti sends cmds, in which txs lie, in one round trip, and returns their answers in
// order. On a cluster, each transaction goes in a pipeline of its own (MULTI and EXEC
// on no slot, its calls on one), at the same time as the other commands: rueidis
// follows a redirection (MOVED, or ASK while the slot moves) of a call inside MULTI ...
// EXEC by sending the whole transaction to the node named only in such a pipeline; in
// a pipeline of several slots, it sends each call redirected on its own, outside the
// transaction, where one that needs a key not moved yet is refused (TRYAGAIN) and a
// later one of the identity runs before it.
func doMulti(ctx context.Context, c rediser, cmds rueidis.Commands, txs []transaction) []rueidis.RedisResult {
	if len(txs) == 0 || c.Mode() != rueidis.ClientModeCluster {
		return c.DoMulti(ctx, cmds...)
	}
	rs := make([]rueidis.RedisResult, len(cmds))
	var alone []int // the index in cmds of each command outside the transactions
	done := make(chan struct{}, len(txs))
	next := 0
	for _, tx := range txs {
		for ; next < tx.multi; next++ {
			alone = append(alone, next)
		}
		next = tx.multi + len(tx.calls) + 2
		go func(from, to int) {
			copy(rs[from:to], c.DoMulti(ctx, cmds[from:to]...))
			done <- struct{}{}
		}(tx.multi, next)
	}
	for ; next < len(cmds); next++ {
		alone = append(alone, next)
	}
	if len(alone) > 0 {
		others := make(rueidis.Commands, len(alone))
		for k, i := range alone {
			others[k] = cmds[i]
		}
		for k, r := range c.DoMulti(ctx, others...) {
			rs[alone[k]] = r
		}
	}
	for range txs {
		<-done
	}
	return rs
}

// transaction is where the calls of one identity lie in the commands of a round: MULTI
// at multi, then each call, then EXEC.
type transaction struct {
	multi int
	calls []int // the index in results of each call
}

// unwrap puts in results the answer of each call of tx, whose commands answered rs: the
// element of EXEC's answer, in order, of a call queued ("QUEUED"). When EXEC failed
// (EXECABORT: Redis refused a call before running any, TRYAGAIN while its slot moves;
// EXEC redirected, see redirected; or no answer), none of the calls queued ran, and
// each gets the refusal (TRYAGAIN or NOSCRIPT, or the redirection), sent again as such,
// or else the call's refusal (LOADING, NOPERM, OOM, ...: what a call alone would get,
// not EXECABORT), or else EXEC's error. A call not queued keeps its own answer: a refusal, or the
// answer of Redis that ran it outside a transaction (MULTI refused: see alone). A transaction
// redirected before EXEC (see doMulti) is answered by the node it was sent to again.
func (tx transaction) unwrap(rs, results []rueidis.RedisResult) {
	if err := rs[tx.multi].Error(); err != nil {
		tx.alone(err, results)
		return
	}
	exec := rs[tx.multi+len(tx.calls)+1]
	replies, err := exec.ToArray()
	switch {
	case err == nil && len(replies) != len(tx.calls):
		err = fmt.Errorf("%w: EXEC answered %d replies for %d script calls", ErrBadReply, len(replies), len(tx.calls))
		exec = rueidis.NewErrorResult(err)
	case execWithoutMulti(err):
		// Answered so, a transaction of calls queued had its EXEC redirected.
		exec = rueidis.NewErrorResult(fmt.Errorf("%w: %w", errRedirected, err))
	}
	refusal := exec
	aborted := err != nil && strings.HasPrefix(err.Error(), "EXECABORT") // because Redis refused a call
	for k := range tx.calls {
		r := rs[tx.multi+1+k]
		if noScript(r) || tryAgain(r) { // sent again
			refusal = r
			break
		}
		if _, ok := rueidis.IsRedisErr(r.Error()); ok && aborted { // the first refused: why
			refusal, aborted = r, false
		}
	}
	for k, j := range tx.calls {
		if status, serr := results[j].ToString(); serr != nil || status != "QUEUED" {
			continue
		}
		if err != nil {
			results[j] = refusal
		} else {
			results[j] = rueidis.NewResult(replies[k], nil)
		}
	}
}

// alone answers the calls of tx that Redis ran one by one, outside a transaction,
// because it refused MULTI with multiErr (an ACL without it): a call refused, which
// would be sent again (NOSCRIPT, TRYAGAIN, READONLY, or redirected: none ran), gets an
// error naming the refusal of MULTI instead when a later call of tx ran, so that it
// never runs after that one; the calls after the last that ran are sent again, in
// order, as usual.
func (tx transaction) alone(multiErr error, results []rueidis.RedisResult) {
	refused := func(r rueidis.RedisResult) bool { return noScript(r) || tryAgain(r) || readOnly(r) || redirected(r) }
	last := len(tx.calls) - 1 // the last call of tx that ran, or was refused for good
	for last >= 0 && refused(results[tx.calls[last]]) {
		last--
	}
	for _, j := range tx.calls[:max(last, 0)] {
		if r := results[j]; refused(r) {
			results[j] = rueidis.NewErrorResult(fmt.Errorf(
				"%w (a batch's requests of one identity need MULTI and EXEC): refused (%s) and not sent again, since a later request of its identity ran",
				multiErr, r.Error()))
		}
	}
}

// errRedirected is the error of a call of a batch's transaction (see round) whose EXEC
// a cluster redirected: the slot moved (MOVED, or ASK while it moves) between the
// calls' queuing and EXEC, so Redis discarded the transaction, none of its calls ran,
// and rueidis sent EXEC alone to the node named, which answered that no MULTI came
// first. Such calls are sent again together, as calls refused with TRYAGAIN are.
var errRedirected = errors.New("EXEC of a transaction redirected (its slot moved): none of its calls ran, safe to send again")

// execWithoutMulti reports an EXEC's error err that no MULTI came first: after a MULTI
// answered OK, on a cluster, a transaction whose EXEC was redirected (see errRedirected).
func execWithoutMulti(err error) bool {
	return err != nil && strings.Contains(err.Error(), "EXEC without MULTI")
}

// redirected reports a call that a cluster redirected and rueidis did not follow, so
// that nothing ran: a call of a transaction whose EXEC was redirected (see
// errRedirected), or one answered MOVED or ASK between a MULTI that Redis refused and
// its EXEC, which rueidis leaves so, taking it for a call of a transaction it sends
// again whole (see alone).
func redirected(r rueidis.RedisResult) bool {
	if errors.Is(r.Error(), errRedirected) {
		return true
	}
	err, ok := rueidis.IsRedisErr(r.Error())
	if !ok {
		return false
	}
	_, moved := err.IsMoved()
	_, ask := err.IsAsk()
	return moved || ask
}

// maxLoads is how many rounds load sends at most before it sends every call still
// refused with NOSCRIPT with the script's text: more than the masters of most clusters.
const maxLoads = 8

// load sends again the calls of p whose results are NOSCRIPT (Redis ran none of them),
// and puts their answers in results, so that the script's text (about 34 KB) goes once
// to each node that lacks it, not with each call (a batch of 100 would send 3.4 MB): in
// rounds of one round trip, the first call still refused with the text, which loads
// the script on its node ahead of that node's other calls, and the others as EVALSHA,
// which that node then runs and the others refuse again. Each round sends the calls in
// the batch's order, those of an identity together (see round), so that a later
// request of an identity still runs after an earlier one. Each round answers at least
// the call with the text and loads its node: a round more for each node without the
// script, up to maxLoads, after which every call still refused goes with the text.
func (l *Limiter) load(ctx context.Context, c rediser, qs []bucketgate.Request, p *pipeline, results []rueidis.RedisResult) {
	for n := 0; n < maxLoads && slices.ContainsFunc(results, noScript); n++ {
		text := true
		l.resend(ctx, c, qs, p, results, noScript, func(c rediser, keys, args []string) rueidis.Completed {
			if text {
				text = false
				return evalText(c, keys, args)
			}
			return evalsha(c, keys, args)
		})
	}
	l.resend(ctx, c, qs, p, results, noScript, evalText)
}

// decode reads the script's answer to q.
func decode(r rueidis.RedisResult, q bucketgate.Request) (bucketgate.Decision, error) {
	reply, err := r.ToArray()
	if err != nil {
		return bucketgate.Decision{}, scriptError(err)
	}
	vals, rest, err := replyInts(reply, q)
	if err != nil {
		return bucketgate.Decision{}, err
	}
	return decodeReply(vals, rest, q)
}

// ErrBadState is wrapped by every error about an identity's stored state that the
// script did not write: a field that is not a finite number, half a rule, a key of
// another type. It is that identity's failure, not Redis's: nothing was written, and
// every other identity is decided as usual. A reset (OpReset) removes the fields; a key
// of another type has to be deleted. So is the error about reservations' secrets that
// bucketgate did not write (SecretKey or SecretsKeptKey too short, or of another type),
// which fails every call that signs or verifies an id, and no other, until deleted.
var ErrBadState = errors.New("stored state is not bucketgate's")

// scriptError is the error of a script call that failed with err.
func scriptError(err error) error {
	if rerr, ok := rueidis.IsRedisErr(err); ok {
		msg := rerr.Error()
		switch {
		case strings.Contains(msg, lua.StateErrorPrefix), strings.Contains(msg, "WRONGTYPE"), // miniredis wraps WRONGTYPE
			slices.ContainsFunc(lua.ArithmeticErrors, func(text string) bool { return strings.Contains(msg, text) }):
			return fmt.Errorf("%w: %w", ErrBadState, err)
		case strings.Contains(msg, lua.HoldErrorPrefix):
			return fmt.Errorf("%w: %w", bucketgate.ErrConflict, err)
		case strings.Contains(msg, lua.ErrorPrefix):
			return fmt.Errorf("%w: redis refused the request: %w", bucketgate.ErrInvalid, err)
		}
	}
	return fmt.Errorf("bucket script: %w", err)
}

// eval runs bucket.lua on keys with args: EVALSHA, then EVAL when Redis does not know
// the script yet (NOSCRIPT: nothing ran); both again once on a new connection when the
// server refuses them with READONLY (see readOnly: nothing written), and after
// TryAgainWait while it refuses them with TRYAGAIN (nothing ran), until ctx ends or
// TryAgainFor has been waited. Never retried otherwise: a retried call could charge
// twice. DecideBatch pipelines the same steps, sending the script's text once a node
// (see load).
func eval(ctx context.Context, c rediser, keys, args []string) rueidis.RedisResult {
	reconnected := false
	for n := 0; ; n++ {
		r := c.Do(ctx, evalsha(c, keys, args))
		if noScript(r) {
			r = c.Do(ctx, evalText(c, keys, args))
		}
		switch {
		case readOnly(r) && !reconnected:
			reconnect(ctx, c)
			reconnected = true
		case !tryAgain(r) || n == maxTryAgains || !wait(ctx, TryAgainWait):
			return r
		}
	}
}

// readOnly reports a script call that the server refused with READONLY: it is a
// replica, so the script wrote nothing. A standalone primary demoted by a failover
// (ElastiCache with cluster mode disabled) stays up as a replica and keeps the
// connections made to it, while the address they were made to (the primary endpoint)
// names the new primary: only a new connection reaches it. A cluster's replica never
// answers so: it redirects every call the Limiter makes, all on keys, to its master
// (MOVED), so that reconnect, whose QUIT on no key would reach any node of a cluster,
// serves a standalone primary alone.
func readOnly(r rueidis.RedisResult) bool {
	err, ok := rueidis.IsRedisErr(r.Error())
	return ok && strings.HasPrefix(err.Error(), "READONLY")
}

// reconnect makes c connect again: QUIT makes the server close the connection, and a
// command after it, never sent again, fails on the closed connection, which rueidis
// then drops; the next command dials the address again.
func reconnect(ctx context.Context, c rediser) {
	c.DoMulti(ctx, c.B().Quit().Build(), c.B().Arbitrary("PING").Build())
}

// TryAgainWait is how long a script call that Redis refused with TRYAGAIN waits before
// it is sent again, until its deadline. While a cluster reshards, the slot of an
// identity moves from one master to another a few keys at a time, and Redis runs no
// call on several keys of a moving slot unless the node it reaches holds all of them
// (an identity's usage archive before its first day ends, or an idempotent request's
// record, does not exist anywhere yet): it answers TRYAGAIN, having run nothing, until
// the slot has moved, a matter of milliseconds for a slot of a few thousand keys.
const TryAgainWait = 5 * time.Millisecond

// TryAgainFor is the most a script call waits in all for a moving slot (TryAgainWait
// at a time) when its deadline does not end it first: a slot left half moved (a
// resharding stopped midway) is TRYAGAIN, not a call that never returns.
const TryAgainFor = time.Second

// maxTryAgains is how many times a call refused with TRYAGAIN is sent again at most.
const maxTryAgains = int(TryAgainFor / TryAgainWait)

// tryAgain reports a script call that Redis refused with TRYAGAIN: nothing ran.
func tryAgain(r rueidis.RedisResult) bool {
	err, ok := rueidis.IsRedisErr(r.Error())
	return ok && err.IsTryAgain()
}

// wait waits for d, and reports whether ctx was still live then.
func wait(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return ctx.Err() == nil
	case <-ctx.Done():
		return false
	}
}

// evalsha is the script call (EVALSHA) on keys with args.
func evalsha(c rediser, keys, args []string) rueidis.Completed {
	return c.B().Evalsha().Sha1(lua.BucketSHA1).Numkeys(int64(len(keys))).Key(keys...).Arg(args...).Build()
}

// evalText is the script call with the script's text (EVAL) on keys with args, for a
// Redis that answered its EVALSHA with NOSCRIPT.
func evalText(c rediser, keys, args []string) rueidis.Completed {
	return c.B().Eval().Script(lua.BucketSource).Numkeys(int64(len(keys))).Key(keys...).Arg(args...).Build()
}

// noScript reports a script call that Redis refused with NOSCRIPT: it does not know
// the script yet, and nothing ran.
func noScript(r rueidis.RedisResult) bool {
	err, ok := rueidis.IsRedisErr(r.Error())
	return ok && err.IsNoScript()
}

// maxArgs is the longest ARGV of a valid request.
const maxArgs = lua.ArgsFixed + lua.ArgsPerRule*bucketgate.MaxRules

// scriptArgs holds the KEYS and ARGV of one script call.
type scriptArgs struct {
	keys [lua.KeysMax]string
	argv [maxArgs]string
}

// scriptCall lays q out as bucket.lua's KEYS and ARGV, in call, and returns them: the
// state hash, and with usage (usageDays above 0, for a check that takes tokens, a
// reserve, or a settle or cancel, which corrects the day's cost) its archive and the
// days usage is kept; for a reset, or a settle that gives back with its reserve's time
// (h.resets), the identity's resets (lua.ResetSuffix). The keys, every field name and
// every number are cut from one string, so that a decision allocates once for its arguments however
// many rules it has. A check of cost 1 without usage leaves the operation out, as the
// script allows. q must be valid (at most MaxRules rules); its last m rules are
// concurrency rules (an acquire or a release: see lua.LeaseMark), the others buckets
// and quotas.
func scriptCall(q bucketgate.Request, m, usageDays int, h hold, call *scriptArgs) (keys, args []string) {
	usage := usageDays > 0 && (q.Op == bucketgate.OpCheck && q.Cost > 0 || q.Op == bucketgate.OpReserve || settles(q))
	n := len(q.Rules) - m
	layout := lua.Args{Rules: n, Op: usage || !checks(q) || q.Cost != 1 || h.arg != "" || m > 0, Usage: usage, Hold: h.arg != "" || m > 0}
	var buf [512]byte
	var cuts [maxArgs]cut // where each ARGV value lies in b, by its index in ARGV
	b := appendKey(buf[:0], q.Identity)
	keyEnd := len(b)
	archive, record := usage || h.record != "", h.record != "" // a lease alone needs neither
	if archive {
		b = append(b, UsageSuffix...) // the archive's key: the state's, and the suffix
	}
	recordEnd := len(b)
	if record {
		b = append(append(b, b[:keyEnd]...), h.record...)
		recordEnd = len(b)
	}
	resets := q.Op == bucketgate.OpReset || h.resets // a reset's, or a settle's that gives back
	if resets {
		b = append(append(b, b[:keyEnd]...), lua.ResetSuffix...)
	}
	resetsEnd := len(b)
	var leaseCuts [lua.MaxLeaseRules]cut // where each set's key lies in b
	for k, r := range q.Rules[n:] {
		from := len(b)
		b = append(append(append(b, b[:keyEnd]...), lua.LeaseInfix...), r.Name...)
		leaseCuts[k] = cut{from, len(b)}
	}
	at := len(b)
	if layout.Op {
		switch q.Op {
		case bucketgate.OpCheck, bucketgate.OpReserve: // a reserve is a check of its estimate
			b = strconv.AppendInt(b, q.Cost, 10)
		case bucketgate.OpRefund:
			b = strconv.AppendInt(b, -q.Cost, 10)
		case bucketgate.OpReset:
			b = append(b, lua.OpReset...)
		case bucketgate.OpSettle, bucketgate.OpCancel:
			b = strconv.AppendInt(append(b, lua.SettlePrefix...), q.Cost, 10)
		case bucketgate.OpRelease:
			b = append(b, lua.OpRelease...)
		}
		cuts[lua.ArgOp], at = cut{at, len(b)}, len(b)
	}
	if usage {
		b = strconv.AppendInt(b, int64(usageDays), 10)
		cuts[lua.ArgUsageDays], at = cut{at, len(b)}, len(b)
	} else if layout.Hold {
		b = append(b, '0')
		cuts[lua.ArgUsageDays], at = cut{at, len(b)}, len(b)
	}
	if layout.Hold {
		b = append(b, h.arg...)
		if m > 0 { // any other hold, then "@<ttl>/<N1>/.../<Nm> <nonce>"
			if h.arg != "" {
				b = append(b, ' ')
			}
			b = append(b, lua.LeaseMark...)
			if q.Op != bucketgate.OpRelease {
				b = strconv.AppendInt(b, ttlOf(q).Milliseconds(), 10)
			} else {
				b = append(b, '0')
			}
			for _, r := range q.Rules[n:] {
				b = strconv.AppendInt(append(b, '/'), int64(r.Concurrency), 10)
			}
			b = append(append(append(b, ' '), h.nonce...), h.lease...)
		}
		cuts[lua.ArgHold], at = cut{at, len(b)}, len(b)
	}
	for i, r := range q.Rules[:n] {
		first, second := lua.TokensSuffix, lua.StampSuffix
		if r.IsQuota() {
			first, second = lua.UsedSuffix, lua.EndSuffix
		}
		b = append(append(b, r.Name...), first...)
		cuts[layout.TokensField(i)], at = cut{at, len(b)}, len(b)
		b = append(append(b, r.Name...), second...)
		cuts[layout.StampField(i)], at = cut{at, len(b)}, len(b)
		if r.Shadow {
			b = append(b, '-')
		}
		b = strconv.AppendInt(b, r.Max(), 10)
		cuts[layout.Capacity(i)], at = cut{at, len(b)}, len(b)
		if r.IsQuota() {
			b = strconv.AppendInt(b, periodCode(r), 10)
		} else {
			b = strconv.AppendFloat(b, r.RefillPerSecond, 'f', -1, 64) // plain decimal: miniredis's Lua reads no exponent
		}
		cuts[layout.Rate(i)], at = cut{at, len(b)}, len(b)
	}
	s := string(b)
	args = call.argv[:layout.Len()]
	for i := range args {
		args[i] = s[cuts[i].from:cuts[i].to]
	}
	call.keys[lua.KeyState] = s[:keyEnd]
	n = 1
	if archive {
		call.keys[lua.KeyUsage], n = s[:keyEnd+len(UsageSuffix)], 2
	}
	if record {
		call.keys[lua.KeyRecord], n = s[keyEnd+len(UsageSuffix):recordEnd], 3
	}
	if resets {
		i := lua.KeyResetsOfReset
		if record {
			i = lua.KeyResetsOfSettle
		}
		call.keys[i], n = s[recordEnd:resetsEnd], i+1
	}
	for k := range m {
		call.keys[n+k] = s[leaseCuts[k].from:leaseCuts[k].to]
	}
	return call.keys[:n+m], args
}

// periodCode is quota r's period as the script reads it (lua.PeriodDay, ...).
func periodCode(r bucketgate.Rule) int64 {
	switch r.Period {
	case bucketgate.PeriodDay:
		return lua.PeriodDay
	case bucketgate.PeriodWeek:
		return lua.PeriodWeek
	}
	return lua.PeriodMonth - int64(max(r.Anchor, 1))
}

// cut is where one value lies in scriptCall's string.
type cut struct{ from, to int }
