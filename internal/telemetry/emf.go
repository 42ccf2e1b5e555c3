// Package telemetry writes bucketgate's CloudWatch metrics in Embedded Metric Format:
// JSON lines on stdout that Lambda's log pipeline turns into metrics, with no API call in
// the request path. Dimensions stay low-cardinality: never an identity.
package telemetry

import (
	"encoding/json"
	"fmt"
	"io"
	"time"

	"github.com/bucketgate/bucketgate/internal/bucket"
	"github.com/bucketgate/bucketgate/internal/guard"
)

// Metric names, and the dimensions they carry.
const (
	MetricDecisions     = "Decisions"     // count, by Outcome
	MetricFailClosed    = "FailClosed"    // count, by Reason
	MetricRedisLatency  = "RedisLatency"  // milliseconds, by Outcome
	MetricDenyCacheHits = "DenyCacheHits" // count, by Outcome
	MetricShadowLimited = "ShadowLimited" // count, by Rule: allowed requests a shadow rule would have denied
	DimOutcome          = "Outcome"
	DimReason           = "Reason"
	DimFunction         = "Function"
	DimRule             = "Rule"
)

// Outcome values of the Outcome dimension.
const (
	OutcomeAllowed     = "allowed"
	OutcomeLimited     = "limited"
	OutcomeUnavailable = "unavailable"
	OutcomeDegraded    = "degraded"
)

// OutcomeOf returns the Outcome dimension value of a decision's reason.
func OutcomeOf(r bucket.Reason) string {
	switch r {
	case bucket.ReasonOK:
		return OutcomeAllowed
	case bucket.ReasonDegraded:
		return OutcomeDegraded
	case bucket.ReasonUnavailable:
		return OutcomeUnavailable
	}
	return OutcomeLimited
}

// Invocation gathers the metrics of one function invocation. The zero Invocation is
// empty and ready to use; it is not safe for concurrent use.
type Invocation struct {
	groups  []*group      // one per (outcome, failure), in order of appearance
	lookups []lookupCount // one per registry lookup result, in order of appearance
	invalid int           // registry items read that could not be used
	shadow  []shadowCount // one per shadow rule that would have denied, in order of appearance
}

// shadowCount is how many allowed requests a shadow rule would have denied.
type shadowCount struct {
	rule string
	n    int
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
		g.latencyMS = append(g.latencyMS, durationToMillis(r.Latency))
	}
}

// ObserveShadowLimited counts one allowed request that the shadow rule called rule would
// have denied.
func (inv *Invocation) ObserveShadowLimited(rule string) {
	for i := range inv.shadow {
		if inv.shadow[i].rule == rule {
			inv.shadow[i].n++
			return
		}
	}
	inv.shadow = append(inv.shadow, shadowCount{rule: rule, n: 1})
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

// Emitter writes Invocations as EMF lines to w. It is safe for concurrent use only if w is.
type Emitter struct {
	w         io.Writer
	namespace string
	function  string
}

// NewEmitter returns an Emitter writing to w (os.Stdout in Lambda) under namespace, with
// function as the Function dimension.
func NewEmitter(w io.Writer, namespace, function string) *Emitter {
	return &Emitter{w: w, namespace: namespace, function: function}
}

// Emit writes inv as EMF at time at: one line per distinct outcome and failure reason
// (one line for a single decision), carrying the registry's metrics too (more lines only
// when there are more distinct lookup results than decision lines), and one line per
// shadow rule that would have denied. An empty Invocation writes nothing.
func (e *Emitter) Emit(at time.Time, inv *Invocation) error {
	docs := make([]map[string]any, len(inv.groups))
	for i, g := range inv.groups {
		docs[i] = e.document(at, g)
	}
	for _, doc := range e.withRegistry(at, inv, docs) {
		if err := e.write(doc); err != nil {
			return err
		}
	}
	for _, c := range inv.shadow {
		if err := e.write(e.shadowDocument(at, c)); err != nil {
			return err
		}
	}
	return nil
}

// write writes doc as one EMF line.
func (e *Emitter) write(doc map[string]any) error {
	line, err := json.Marshal(doc)
	if err != nil {
		return fmt.Errorf("telemetry: encode EMF: %w", err)
	}
	if _, err := e.w.Write(append(line, '\n')); err != nil {
		return fmt.Errorf("telemetry: write EMF: %w", err)
	}
	return nil
}

// shadowDocument is the EMF document of one shadow rule's would-be denials.
func (e *Emitter) shadowDocument(at time.Time, c shadowCount) map[string]any {
	return map[string]any{
		DimFunction:         e.function,
		DimRule:             c.rule,
		MetricShadowLimited: c.n,
		"_aws": map[string]any{"Timestamp": at.UnixMilli(), "CloudWatchMetrics": []emfDirective{{
			Namespace:  e.namespace,
			Dimensions: [][]string{{DimRule}, {DimFunction, DimRule}},
			Metrics:    []emfMetric{{MetricShadowLimited, "Count"}},
		}}},
	}
}

type emfMetric struct {
	Name string `json:"Name"`
	Unit string `json:"Unit"`
}

type emfDirective struct {
	Namespace  string      `json:"Namespace"`
	Dimensions [][]string  `json:"Dimensions"`
	Metrics    []emfMetric `json:"Metrics"`
}

func (e *Emitter) document(at time.Time, g *group) map[string]any {
	directives := []emfDirective{{
		Namespace:  e.namespace,
		Dimensions: [][]string{{DimOutcome}, {DimFunction, DimOutcome}},
		Metrics:    []emfMetric{{MetricDecisions, "Count"}, {MetricDenyCacheHits, "Count"}},
	}}
	doc := map[string]any{
		DimFunction:         e.function,
		DimOutcome:          g.outcome,
		MetricDecisions:     g.decisions,
		MetricDenyCacheHits: g.denyCacheHits,
	}
	if len(g.latencyMS) > 0 {
		directives[0].Metrics = append(directives[0].Metrics, emfMetric{MetricRedisLatency, "Milliseconds"})
		doc[MetricRedisLatency] = g.latencyMS
	}
	if g.failure != guard.FailureNone && g.outcome == OutcomeUnavailable {
		directives = append(directives, emfDirective{
			Namespace:  e.namespace,
			Dimensions: [][]string{{DimReason}, {DimFunction, DimReason}},
			Metrics:    []emfMetric{{MetricFailClosed, "Count"}},
		})
		doc[DimReason] = string(g.failure)
		doc[MetricFailClosed] = g.decisions
	}
	doc["_aws"] = map[string]any{"Timestamp": at.UnixMilli(), "CloudWatchMetrics": directives}
	return doc
}
