package tracing

import (
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/bucketgate/bucketgate"
)

// SubsegmentName names the subsegment around each Redis decision.
const SubsegmentName = "redis"

// subsegmentType marks a document as a subsegment sent on its own, apart from its
// parent segment.
const subsegmentType = "subsegment"

// subsegmentNamespace marks the subsegment as a call to a remote service (not an AWS
// SDK call).
const subsegmentNamespace = "remote"

// Annotation keys of the subsegment: indexed, low-cardinality, never an identity.
const (
	AnnotationAllowed = "allowed"
	AnnotationReason  = "reason"
	AnnotationRule    = "rule"
	AnnotationBatch   = "batch" // the number of requests of a batch's round trip
)

// subsegment is an independent X-Ray subsegment document: see "AWS X-Ray segment
// documents" (Subsegments) and "Sending trace data to AWS X-Ray" in the X-Ray
// developer guide. It never holds the identity or an error message.
type subsegment struct {
	Type      string `json:"type"`
	Name      string `json:"name"`
	Namespace string `json:"namespace"`
	ID        string `json:"id"`
	TraceID   string `json:"trace_id"`
	ParentID  string `json:"parent_id"`
	// StartTime and EndTime are epoch seconds with a fraction.
	StartTime float64 `json:"start_time"`
	EndTime   float64 `json:"end_time"`
	// Error marks a request that can never be decided (the caller's fault, like a 4xx);
	// Fault marks a failed Redis call (like a 5xx).
	Error       bool           `json:"error,omitempty"`
	Fault       bool           `json:"fault,omitempty"`
	Annotations map[string]any `json:"annotations,omitempty"`
}

// newSubsegment returns the subsegment of a decision that ran from start to end in trace
// tr and returned dec and err: annotated with the decision when there is one, flagged
// error or fault when there is not.
func newSubsegment(tr trace, start, end time.Time, dec bucketgate.Decision, err error) subsegment {
	s := newRedisSubsegment(tr, start, end)
	switch {
	case errors.Is(err, bucketgate.ErrInvalid):
		s.Error = true
	case err != nil:
		s.Fault = true
	default:
		s.Annotations = map[string]any{
			AnnotationAllowed: dec.Allowed,
			AnnotationReason:  string(dec.Reason),
			AnnotationRule:    dec.Rule,
		}
	}
	return s
}

// newBatchSubsegment returns the subsegment of a batch of n requests that ran from start
// to end in trace tr and ended with errs: annotated with n, flagged error or fault as
// newSubsegment flags the first error that is not nil.
func newBatchSubsegment(tr trace, start, end time.Time, n int, errs []error) subsegment {
	s := newRedisSubsegment(tr, start, end)
	s.Annotations = map[string]any{AnnotationBatch: n}
	for _, err := range errs {
		if err != nil {
			s.Error, s.Fault = errors.Is(err, bucketgate.ErrInvalid), !errors.Is(err, bucketgate.ErrInvalid)
			break
		}
	}
	return s
}

// newRedisSubsegment returns a subsegment around a call to Redis from start to end in
// trace tr.
func newRedisSubsegment(tr trace, start, end time.Time) subsegment {
	return subsegment{
		Type:      subsegmentType,
		Name:      SubsegmentName,
		Namespace: subsegmentNamespace,
		ID:        newSegmentID(),
		TraceID:   tr.id,
		ParentID:  tr.parent,
		StartTime: epochSeconds(start),
		EndTime:   epochSeconds(end),
	}
}

// daemonHeader precedes every document sent to the X-Ray daemon.
const daemonHeader = `{"format": "json", "version": 1}` + "\n"

// encode returns s as one datagram for the daemon: the header line, then the document.
func (s subsegment) encode() ([]byte, error) {
	doc, err := json.Marshal(s)
	if err != nil {
		return nil, fmt.Errorf("encode subsegment: %w", err)
	}
	return append([]byte(daemonHeader), doc...), nil
}

// newSegmentID returns a random 64-bit segment ID as 16 hex digits. It only needs to be
// unique within the trace, not secret.
func newSegmentID() string { return fmt.Sprintf("%0*x", segmentIDDigits, rand.Uint64()) }

// epochSeconds is t in seconds since the Unix epoch, with a fraction.
func epochSeconds(t time.Time) float64 {
	return float64(t.Unix()) + float64(t.Nanosecond())/float64(time.Second)
}
