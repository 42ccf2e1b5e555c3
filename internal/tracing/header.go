package tracing

import (
	"context"
	"strings"

	"github.com/aws/aws-xray-sdk-go/header"
)

// LambdaHeaderKey is the context key under which aws-lambda-go puts each invocation's
// X-Ray trace header ("Root=1-…;Parent=…;Sampled=1"), traced or not. The runtime also
// sets _X_AMZN_TRACE_ID, but only when one invocation runs at a time and as a process
// global: the context is the per-invocation source.
const LambdaHeaderKey = "x-amzn-trace-id"

// Lengths of the trace header's parts, in hex digits.
const (
	traceTimeDigits   = 8  // the epoch seconds of a trace ID
	traceRandomDigits = 24 // the random part of a trace ID
	segmentIDDigits   = 16 // a segment or subsegment ID
)

// traceIDVersion starts every X-Ray trace ID.
const traceIDVersion = "1"

// trace is where a subsegment belongs: its trace and its parent, the Lambda function's
// segment.
type trace struct {
	id     string
	parent string
}

// Traced reports whether ctx carries a sampled, well-formed X-Ray trace header: the
// only case in which Decide sends a subsegment.
func Traced(ctx context.Context) bool {
	_, ok := traceOf(ctx)
	return ok
}

// traceOf reads the trace header of ctx. ok is false without a header, when it is not
// sampled, or when its Root or Parent is malformed.
func traceOf(ctx context.Context) (tr trace, ok bool) {
	h, _ := ctx.Value(LambdaHeaderKey).(string)
	return parseHeader(h)
}

// parseHeader is traceOf for the header h.
func parseHeader(h string) (tr trace, ok bool) {
	// Most invocations are not sampled: skip parsing (and its allocations) for them.
	if !strings.Contains(h, string(header.Sampled)) {
		return trace{}, false
	}
	p := header.FromString(h)
	if p.SamplingDecision != header.Sampled || !validTraceID(p.TraceID) || !isHex(p.ParentID, segmentIDDigits) {
		return trace{}, false
	}
	return trace{id: p.TraceID, parent: p.ParentID}, true
}

// validTraceID reports whether id is "1-" + 8 hex digits + "-" + 24 hex digits.
func validTraceID(id string) bool {
	version, rest, ok1 := strings.Cut(id, "-")
	epoch, random, ok2 := strings.Cut(rest, "-")
	return ok1 && ok2 && version == traceIDVersion && isHex(epoch, traceTimeDigits) && isHex(random, traceRandomDigits)
}

// isHex reports whether s is n lowercase hex digits.
func isHex(s string, n int) bool {
	if len(s) != n {
		return false
	}
	for i := range len(s) {
		if c := s[i]; (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}
