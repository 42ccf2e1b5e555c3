// Package telemetry writes bucketgate's CloudWatch metrics in Embedded Metric Format:
// JSON lines on stdout that Lambda's log pipeline turns into metrics, with no API call in
// the request path. Every metric carries the Stack dimension, so that two stacks in one
// account and Region never share one. Dimensions stay low-cardinality: never an identity.
package telemetry

import (
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/bucketgate/bucketgate"
	"github.com/bucketgate/bucketgate/internal/guard"
	"github.com/bucketgate/bucketgate/internal/jsonout"
)

// Metric names, and the dimensions they carry.
const (
	MetricDecisions     = "Decisions"     // count, by Outcome
	MetricFailClosed    = "FailClosed"    // count, by Reason: decisions denied (unavailable)
	MetricFailOpen      = "FailOpen"      // count, by Reason: decisions allowed unlimited (degraded)
	MetricRedisLatency  = "RedisLatency"  // milliseconds, by Outcome
	MetricDenyCacheHits = "DenyCacheHits" // count, by Outcome; written only when not zero
	MetricShadowLimited = "ShadowLimited" // count, by Rule: allowed requests a shadow rule would have denied
	// MetricRedisEvictionPolicy counts, by Policy, the Redis nodes found at connection
	// time with an eviction policy other than noeviction: under memory pressure they
	// evict buckets, which come back full.
	MetricRedisEvictionPolicy = "RedisEvictionPolicy"
	DimPolicy                 = "Policy"
	DimOutcome                = "Outcome"
	DimReason                 = "Reason"
	DimFunction               = "Function"
	DimRule                   = "Rule"
	DimStack                  = "Stack" // on every metric, beside the others
)

// Outcome values of the Outcome dimension.
const (
	OutcomeAllowed     = "allowed"
	OutcomeLimited     = "limited"
	OutcomeUnavailable = "unavailable"
	OutcomeDegraded    = "degraded"
)

// OutcomeOf returns the Outcome dimension value of a decision's reason.
func OutcomeOf(r bucketgate.Reason) string {
	switch r {
	case bucketgate.ReasonOK:
		return OutcomeAllowed
	case bucketgate.ReasonDegraded:
		return OutcomeDegraded
	case bucketgate.ReasonUnavailable:
		return OutcomeUnavailable
	}
	return OutcomeLimited
}

// Invocation gathers the metrics of one function invocation. The zero Invocation is
// empty and ready to use; it is not safe for concurrent use.
type Invocation struct {
	groups  []*group      // one per (outcome, failure), in order of appearance
	lookups []lookupCount // one per registry lookup result, in order of appearance
	// invalid counts registry items read that could not be used, configInvalid
	// configuration documents read that do not load (int32: the Invocation of every
	// decision stays in its allocation size class).
	invalid, configInvalid int32
	// counts are the counts by one dimension value, in order of appearance:
	// ShadowLimited by rule, EventsFailed by reason (one slice, for the size class).
	counts []namedCount
}

// namedCount is n of metric by the dimension dim with one value, such as ShadowLimited
// by Rule trial.
type namedCount struct {
	metric, dim, value string
	n                  int
}

// addCount adds n to the count of metric by dim's value.
func (inv *Invocation) addCount(metric, dim, value string, n int) {
	for i := range inv.counts {
		if c := &inv.counts[i]; c.metric == metric && c.dim == dim && c.value == value {
			c.n += n
			return
		}
	}
	inv.counts = append(inv.counts, namedCount{metric: metric, dim: dim, value: value, n: n})
}

type group struct {
	outcome       string
	failure       guard.Failure
	decisions     int
	denyCacheHits int
	latencyMS     []float64
}

// Observe adds one decision's Result.
func (inv *Invocation) Observe(r guard.Result) {
	g := inv.group(OutcomeOf(r.Reason), r.Failure)
	g.decisions++
	if r.CacheHit {
		g.denyCacheHits++
	}
	if r.Latency > 0 {
		g.latencyMS = append(g.latencyMS, latencyMillis(r.Latency))
	}
}

// ObserveShadowLimited counts one allowed request that the shadow rule called rule would
// have denied.
func (inv *Invocation) ObserveShadowLimited(rule string) {
	inv.addCount(MetricShadowLimited, DimRule, rule, 1)
}

func (inv *Invocation) group(outcome string, f guard.Failure) *group {
	for _, g := range inv.groups {
		if g.outcome == outcome && g.failure == f {
			return g
		}
	}
	g := &group{outcome: outcome, failure: f}
	inv.groups = append(inv.groups, g)
	return g
}

// durationToMillis converts a duration to fractional milliseconds.
func durationToMillis(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// latencyMillis is d as a RedisLatency value: milliseconds to the whole microsecond,
// which is finer than CloudWatch's percentiles and shortens the EMF line by a few bytes
// per value.
func latencyMillis(d time.Duration) float64 {
	return float64(d.Round(time.Microsecond)/time.Microsecond) / 1e3
}

// empty reports whether inv observed nothing.
func (inv *Invocation) empty() bool {
	return len(inv.groups) == 0 && len(inv.lookups) == 0 && inv.invalid == 0 && inv.configInvalid == 0 && len(inv.counts) == 0
}

// decided reports whether inv counts a decision of one of outcomes.
func (inv *Invocation) decided(outcomes []string) bool {
	return slices.ContainsFunc(inv.groups, func(g *group) bool { return slices.Contains(outcomes, g.outcome) })
}

// add adds everything o observed to inv.
func (inv *Invocation) add(o *Invocation) {
	for _, og := range o.groups {
		g := inv.group(og.outcome, og.failure)
		g.decisions += og.decisions
		g.denyCacheHits += og.denyCacheHits
		g.latencyMS = append(g.latencyMS, og.latencyMS...)
	}
	for _, l := range o.lookups {
		inv.countLookup(l.result, l.n)
	}
	inv.invalid += o.invalid
	inv.configInvalid += o.configInvalid
	for _, c := range o.counts {
		inv.addCount(c.metric, c.dim, c.value, c.n)
	}
}

// reset empties inv.
func (inv *Invocation) reset() { *inv = Invocation{} }

// DefaultFlushInterval is how often, at most, a Lambda function's Emitter writes the
// Invocations it has gathered while traffic flows (METRICS_FLUSH_MS unset).
const DefaultFlushInterval = time.Second

// MaxValues is the most values one EMF line may hold for a metric (the embedded metric
// format's limit): RedisLatency values beyond it go on lines of their own.
const MaxValues = 100

// Emitter writes Invocations as EMF lines to w, one line per Invocation or, with
// FlushEvery, their sum at most once per interval. It is safe for concurrent use.
type Emitter struct {
	w         io.Writer
	namespace string
	stack     string
	function  string
	interval  time.Duration // 0: every Invocation at once
	// atOnce: with interval, an Invocation that counts a decision of one of these
	// outcomes is written at once all the same (WriteAtOnce).
	atOnce []string

	mu      sync.Mutex
	pending Invocation // gathered and not yet written
	start   time.Time  // when pending's first Invocation was emitted
	flushed time.Time  // when the last interval began: pending was last written for it
	buf     []byte     // the line being built
}

// EmitterOption configures an Emitter.
type EmitterOption func(*Emitter)

// FlushEvery makes the Emitter add up the Invocations it is given and write their sum
// at most once per interval: an Invocation that comes interval or more after the last
// write is written at once, with what was gathered since; one that comes sooner waits
// for the next. A Lambda instance thus writes at most a line (per outcome) a second
// while traffic flows, and each Invocation of one that serves fewer than one request
// per interval at once, as without the option. The sum of one minute is never written
// with another's (CloudWatch files metrics by the minute): an Invocation of a later
// minute first writes what the earlier one gathered, under its own time. What waits is
// lost if the process ends before its next Invocation or Flush: at most interval's
// worth. A clock that goes back writes at once (and, with WriteAtOnce, an
// Invocation of its outcomes). interval <= 0 writes every Invocation at once. The
// interval is told by the wall clock: Go's monotonic clock may stand still while a
// Lambda instance is frozen, and would hold the first Invocation after a long freeze.
func FlushEvery(interval time.Duration) EmitterOption {
	return func(e *Emitter) { e.interval = max(interval, 0) }
}

// WriteAtOnce makes an Emitter with FlushEvery write an Invocation that counts a
// decision of one of outcomes at once, with what waits. A Lambda function answers some
// decisions with an error (the authorizer its refused and unavailable ones, the 401 and
// 503; the check function the operations it refuses): Lambda's Errors metric counts
// them at once, and the alarms on the functions' errors subtract those Decisions from
// Errors, which a count held by an instance frozen after it would leave in for as long
// as the instance stays idle. A process that is not frozen (the middleware's) has no
// need of it.
func WriteAtOnce(outcomes ...string) EmitterOption {
	return func(e *Emitter) { e.atOnce = outcomes }
}

// NewEmitter returns an Emitter writing to w (os.Stdout in Lambda) under namespace, with
// stack as the Stack dimension of every metric and function as the Function dimension.
// Each metric is written by its own dimension with Stack (Decisions by Stack and
// Outcome) and by it with Stack and Function (by Stack, Function and Outcome); a metric
// without a dimension of its own by Stack and Function. Without options it writes every
// Invocation at once.
func NewEmitter(w io.Writer, namespace, stack, function string, opts ...EmitterOption) *Emitter {
	e := &Emitter{w: w, namespace: namespace, stack: stack, function: function}
	for _, o := range opts {
		o(e)
	}
	return e
}

// Emit writes inv, emitted at time at, as EMF (or adds it to what waits, with
// FlushEvery): one line per distinct outcome and failure reason (one line for a single
// decision), carrying the registry's metrics too (more lines only when there are more
// distinct lookup results than decision lines), a line per MaxValues latencies beyond
// the first MaxValues of an outcome, one line per shadow rule that would have denied,
// and one per reason events were not sent. An empty Invocation writes nothing. Each line is a JSON object with its names
// in order, as encoding/json writes a map, and is written with one Write; its
// timestamp is the time of the first Invocation it holds.
func (e *Emitter) Emit(at time.Time, inv *Invocation) error {
	at = at.Round(0) // the wall clock (see FlushEvery)
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.interval == 0 {
		return e.write(at, inv)
	}
	var err error
	if !e.pending.empty() && at.Truncate(time.Minute) != e.start.Truncate(time.Minute) {
		err = e.flush() // another minute's
	}
	if e.pending.empty() {
		e.start = at
	}
	e.pending.add(inv)
	if since := at.Sub(e.flushed); since >= e.interval || since < 0 || inv.decided(e.atOnce) { // < 0: the clock went back

		e.flushed = at
		err = errors.Join(err, e.flush())
	}
	return err
}

// Flush writes what waits (with FlushEvery) under the time of its first Invocation, as
// Emit would; it writes nothing when nothing waits. A process calls it before it ends
// (on a timer, FlushDue).
func (e *Emitter) Flush() error {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.flush()
}

// FlushDue writes what waits (with FlushEvery) as Flush does when at is an interval or
// more after its first Invocation (or before it: a clock gone back), and counts that
// write as Emit counts its own: an Invocation less than interval after at waits. A
// process that is not frozen between requests (a server using the middleware) calls it
// on a timer, so that a quiet moment holds nothing back long while a busy one still
// writes at most once per interval.
func (e *Emitter) FlushDue(at time.Time) error {
	at = at.Round(0) // the wall clock (see FlushEvery)
	e.mu.Lock()
	defer e.mu.Unlock()
	if waited := at.Sub(e.start); e.pending.empty() || waited >= 0 && waited < e.interval {
		return nil
	}
	e.flushed = at
	return e.flush()
}

// flush writes and empties pending. e.mu is held.
func (e *Emitter) flush() error {
	if e.pending.empty() {
		return nil
	}
	err := e.write(e.start, &e.pending)
	e.pending.reset()
	return err
}

// write writes inv at time at. e.mu is held.
func (e *Emitter) write(at time.Time, inv *Invocation) error {
	ms := at.UnixMilli()
	n := len(inv.groups)
	if len(inv.lookups) > n {
		n = len(inv.lookups)
	}
	if n == 0 && inv.invalid+inv.configInvalid > 0 {
		n = 1
	}
	for i := range n {
		var d document
		if i < len(inv.groups) {
			d.decisions(e.namespace, inv.groups[i])
		}
		if i < len(inv.lookups) {
			l := inv.lookups[i]
			d.count(e.namespace, MetricRegistryLookups, l.n, DimResult, l.result)
		}
		if i == 0 {
			d.invalid(e.namespace, inv)
		}
		if err := e.writeLine(&d, ms); err != nil {
			return err
		}
	}
	for _, g := range inv.groups {
		for rest := g.latencyMS[min(len(g.latencyMS), MaxValues):]; len(rest) > 0; rest = rest[min(len(rest), MaxValues):] {
			var d document
			d.latencies(e.namespace, g.outcome, rest[:min(len(rest), MaxValues)])
			if err := e.writeLine(&d, ms); err != nil {
				return err
			}
		}
	}
	for _, c := range inv.counts {
		var d document
		d.count(e.namespace, c.metric, c.n, c.dim, c.value)
		if err := e.writeLine(&d, ms); err != nil {
			return err
		}
	}
	return nil
}

// evictionPolicies are the values of Redis's maxmemory_policy, the Policy dimension's
// values; any other is counted as otherPolicy, so that the dimension stays small.
var evictionPolicies = []string{"noeviction", "allkeys-lru", "allkeys-lfu", "allkeys-random",
	"volatile-lru", "volatile-lfu", "volatile-random", "volatile-ttl"}

// otherPolicy is the Policy dimension of an eviction policy Redis does not name.
const otherPolicy = "other"

// EmitEvictionPolicy writes one EMF line at time at counting one Redis node whose
// eviction policy is policy (MetricRedisEvictionPolicy, by Policy): the connection
// reports it once it has connected, outside any invocation.
func (e *Emitter) EmitEvictionPolicy(at time.Time, policy string) error {
	if !slices.Contains(evictionPolicies, policy) {
		policy = otherPolicy
	}
	var d document
	d.count(e.namespace, MetricRedisEvictionPolicy, 1, DimPolicy, policy)
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.writeLine(&d, at.UnixMilli())
}

// writeLine writes d as one EMF line at ms (Unix milliseconds). e.mu is held.
func (e *Emitter) writeLine(d *document, ms int64) error {
	d.add(field{name: DimFunction, str: e.function, isStr: true})
	d.add(field{name: DimStack, str: e.stack, isStr: true})
	e.buf = append(d.append(e.buf[:0], ms), '\n')
	if _, err := e.w.Write(e.buf); err != nil {
		return fmt.Errorf("telemetry: write EMF: %w", err)
	}
	return nil
}

// The most fields and directives one EMF document holds: the decision's (Decisions,
// DenyCacheHits, Outcome, RedisLatency, Reason, FailClosed or FailOpen), a registry lookup's
// (RegistryLookups, Result), the invalid items' and documents' (RegistryInvalidItems,
// ConfigInvalid: one directive), Function and Stack.
const (
	maxFields     = 12
	maxDirectives = 4
	maxMetrics    = 3
)

// document is one EMF line: its top-level fields, in any order until append sorts them,
// and its metric directives, in order.
type document struct {
	fields     [maxFields]field
	nfields    int
	directives [maxDirectives]directive
	ndirs      int
}

// field is one top-level member of an EMF document: a string (str), a count (n) or
// latencies (ms), by which is set.
type field struct {
	name  string
	str   string
	n     int
	ms    []float64
	isStr bool
}

// directive is one CloudWatchMetrics entry: its metrics, by Stack and the dimension dim
// (and by Stack, Function and dim), or by Stack and Function when dim is "".
type directive struct {
	namespace string
	dim       string
	metrics   [maxMetrics]emfMetric
	nmetrics  int
}

type emfMetric struct{ name, unit string }

func (d *document) add(f field) {
	d.fields[d.nfields] = f
	d.nfields++
}

func (d *document) directive(namespace, dim string, metrics ...emfMetric) *directive {
	dir := &d.directives[d.ndirs]
	d.ndirs++
	dir.namespace, dir.dim, dir.nmetrics = namespace, dim, copy(dir.metrics[:], metrics)
	return dir
}

// decisions adds g's metrics: Decisions by Outcome, DenyCacheHits when there were any
// (a sum that a zero would not change, left out to keep the line short: most lines are
// allowed decisions, which never come from the deny cache), RedisLatency when measured,
// and by Reason FailClosed when g failed closed, FailOpen when it failed open.
func (d *document) decisions(namespace string, g *group) {
	dir := d.directive(namespace, DimOutcome, emfMetric{MetricDecisions, "Count"})
	d.add(field{name: DimOutcome, str: g.outcome, isStr: true})
	d.add(field{name: MetricDecisions, n: g.decisions})
	if g.denyCacheHits > 0 {
		dir.metrics[dir.nmetrics] = emfMetric{MetricDenyCacheHits, "Count"}
		dir.nmetrics++
		d.add(field{name: MetricDenyCacheHits, n: g.denyCacheHits})
	}
	if len(g.latencyMS) > 0 {
		dir.metrics[dir.nmetrics] = emfMetric{MetricRedisLatency, "Milliseconds"}
		dir.nmetrics++
		d.add(field{name: MetricRedisLatency, ms: g.latencyMS[:min(len(g.latencyMS), MaxValues)]})
	}
	failed := "" // the metric of g's failure by Reason
	switch g.outcome {
	case OutcomeUnavailable:
		failed = MetricFailClosed
	case OutcomeDegraded:
		failed = MetricFailOpen
	}
	if failed != "" && g.failure != guard.FailureNone {
		d.directive(namespace, DimReason, emfMetric{failed, "Count"})
		d.add(field{name: DimReason, str: string(g.failure), isStr: true})
		d.add(field{name: failed, n: g.decisions})
	}
}

// latencies adds RedisLatency values ms of outcome, alone: the values of a line beyond
// MaxValues.
func (d *document) latencies(namespace, outcome string, ms []float64) {
	d.directive(namespace, DimOutcome, emfMetric{MetricRedisLatency, "Milliseconds"})
	d.add(field{name: DimOutcome, str: outcome, isStr: true})
	d.add(field{name: MetricRedisLatency, ms: ms})
}

// invalid adds the counts of inv's invalid registry items and configuration documents,
// by Stack and Function alone, in one directive; nothing when there are none.
func (d *document) invalid(namespace string, inv *Invocation) {
	if inv.invalid+inv.configInvalid == 0 {
		return
	}
	dir := d.directive(namespace, "")
	for _, m := range []struct {
		name string
		n    int32
	}{{MetricRegistryInvalid, inv.invalid}, {MetricConfigInvalid, inv.configInvalid}} {
		if m.n > 0 {
			dir.metrics[dir.nmetrics] = emfMetric{m.name, "Count"}
			dir.nmetrics++
			d.add(field{name: m.name, n: int(m.n)})
		}
	}
}

// count adds the count n of metric, by dim with value (by Stack and Function alone when
// dim is "").
func (d *document) count(namespace, metric string, n int, dim, value string) {
	d.directive(namespace, dim, emfMetric{metric, "Count"})
	if dim != "" {
		d.add(field{name: dim, str: value, isStr: true})
	}
	d.add(field{name: metric, n: n})
}

// append appends d as JSON to b, its fields sorted by name and "_aws" last, as
// encoding/json writes a map.
func (d *document) append(b []byte, ms int64) []byte {
	fields := d.fields[:d.nfields]
	slices.SortFunc(fields, func(x, y field) int { return strings.Compare(x.name, y.name) })
	b = append(b, '{')
	for _, f := range fields {
		b = append(jsonout.String(b, f.name), ':')
		switch {
		case f.isStr:
			b = jsonout.String(b, f.str)
		case f.ms != nil:
			b = append(b, '[')
			for i, v := range f.ms {
				if i > 0 {
					b = append(b, ',')
				}
				b = jsonout.Float(b, v)
			}
			b = append(b, ']')
		default:
			b = jsonout.Int(b, int64(f.n))
		}
		b = append(b, ',')
	}
	b = append(b, `"_aws":{"CloudWatchMetrics":[`...)
	for i, dir := range d.directives[:d.ndirs] {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"Namespace":`...)
		b = jsonout.String(b, dir.namespace)
		b = append(b, `,"Dimensions":[`...)
		b = append(jsonout.String(append(b, '['), DimStack), ',')
		if dir.dim == "" {
			b = append(jsonout.String(b, DimFunction), ']')
		} else {
			b = append(jsonout.String(b, dir.dim), "],["...)
			b = append(jsonout.String(append(jsonout.String(append(jsonout.String(b, DimStack), ','), DimFunction), ','), dir.dim), ']')
		}
		b = append(b, `],"Metrics":[`...)
		for j, m := range dir.metrics[:dir.nmetrics] {
			if j > 0 {
				b = append(b, ',')
			}
			b = append(jsonout.String(append(jsonout.String(append(b, `{"Name":`...), m.name), `,"Unit":`...), m.unit), '}')
		}
		b = append(b, "]}"...)
	}
	b = append(b, `],"Timestamp":`...)
	return append(jsonout.Int(b, ms), "}}"...)
}
