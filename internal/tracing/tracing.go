// Package tracing puts each Redis decision in an AWS X-Ray subsegment when the
// invocation is traced, and stays silent when it is not: no subsegment, no SDK warning
// about a missing segment, no daemon traffic.
package tracing

import (
	"context"

	"github.com/aws/aws-xray-sdk-go/xray"

	"github.com/bucketgate/bucketgate/internal/bucket"
	"github.com/bucketgate/bucketgate/internal/guard"
)

// SubsegmentName names the subsegment around each Redis decision.
const SubsegmentName = "redis"

// subsegmentNamespace marks the subsegment as a call to a remote service.
const subsegmentNamespace = "remote"

// Annotation keys of the subsegment: indexed, low-cardinality, never an identity.
const (
	AnnotationAllowed = "allowed"
	AnnotationReason  = "reason"
	AnnotationRule    = "rule"
)

// Decider wraps a guard.Decider in an X-Ray subsegment per decision. It is safe for
// concurrent use if the wrapped Decider is.
type Decider struct {
	next guard.Decider
}

// Wrap returns next traced. Wrap the Redis-facing Decider (the *bucket.Limiter), inside
// the guard, so that the subsegment times the Redis call alone.
func Wrap(next guard.Decider) *Decider { return &Decider{next: next} }

// Decide decides q with the wrapped Decider, inside a subsegment when ctx is traced.
func (d *Decider) Decide(ctx context.Context, q bucket.Request) (bucket.Decision, error) {
	if !Traced(ctx) {
		return d.next.Decide(ctx, q)
	}
	ctx, seg := xray.BeginSubsegment(ctx, SubsegmentName)
	if seg == nil { // the SDK refused (its context-missing strategy already spoke)
		return d.next.Decide(ctx, q)
	}
	seg.Namespace = subsegmentNamespace
	dec, err := d.next.Decide(ctx, q)
	if err == nil {
		// Annotation errors only report a bad key type; these keys are constant strings.
		_ = seg.AddAnnotation(AnnotationAllowed, dec.Allowed)
		_ = seg.AddAnnotation(AnnotationReason, string(dec.Reason))
		_ = seg.AddAnnotation(AnnotationRule, dec.Rule)
	}
	seg.Close(err)
	return dec, err
}

// Traced reports whether ctx carries an X-Ray segment, or the trace header that the
// Lambda runtime puts in every invocation's context when the function is traced.
func Traced(ctx context.Context) bool {
	if xray.GetSegment(ctx) != nil {
		return true
	}
	h, _ := ctx.Value(xray.LambdaTraceHeaderKey).(string)
	return h != ""
}
