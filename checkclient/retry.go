package checkclient

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	mrand "math/rand/v2"
	"net"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/lambda"

	"github.com/bucketgate/bucketgate/checkapi"
)

// writes reports whether req changes its buckets each time the function runs it: a
// check that takes tokens, a reserve or a refund without a requestId. Running one twice
// takes or gives back its tokens twice; a peek, a reset, a settle, a cancel and a
// request with a requestId come out the same however often they run.
func writes(req checkapi.Request) bool {
	switch {
	case req.RequestID != "":
		return false
	case req.Op == checkapi.OpRefund:
		return true
	case req.Op == checkapi.OpReset, req.Op == checkapi.OpSettle, req.Op == checkapi.OpCancel, req.Op == checkapi.OpRelease:
		return false
	}
	return req.Cost == nil || *req.Cost != 0
}

// identify gives req, when it writes (see writes), a random requestId of its own,
// unless c sends none (WithoutRequestIDs).
func (c *Client) identify(req checkapi.Request) checkapi.Request {
	if !c.noIDs && writes(req) {
		var b [16]byte
		rand.Read(b[:]) // never fails (crypto/rand)
		req.RequestID = base64.RawURLEncoding.EncodeToString(b[:])
	}
	return req
}

// retryUnlessRan narrows the SDK's retries of one invocation that writes: it is sent
// again only after a failure that shows the function did not run (see notRun), and
// then as the client's retryer decides (attempts, backoff, retry quota).
func retryUnlessRan(o *lambda.Options) { o.Retryer = unlessRan{o.Retryer} }

// unlessRan is the client's retryer with IsErrorRetryable narrowed to notRun.
type unlessRan struct{ aws.Retryer }

// IsErrorRetryable reports whether err is retryable to the client's retryer and shows
// the function did not run.
func (r unlessRan) IsErrorRetryable(err error) bool {
	return notRun(err) && r.Retryer.IsErrorRetryable(err)
}

// GetAttemptToken is the client's retryer's, so that a retryer that paces attempts (the
// SDK's adaptive mode) still does.
func (r unlessRan) GetAttemptToken(ctx context.Context) (func(error) error, error) {
	if v2, ok := r.Retryer.(aws.RetryerV2); ok {
		return v2.GetAttemptToken(ctx)
	}
	return r.Retryer.GetInitialToken(), nil
}

// notRun reports whether err shows that Lambda did not run the function: the service
// refused the invocation with a 4xx status (429 TooManyRequestsException, a throttle,
// among them; a function's own failure is a 200 with X-Amz-Function-Error), or no
// connection was made (a DNS or dial error). Any other failure, a 5xx or a connection
// lost after the request went out, may have come after the function ran.
func notRun(err error) bool {
	var status interface{ HTTPStatusCode() int }
	if errors.As(err, &status) && status.HTTPStatusCode() != 0 { // 0: no response
		code := status.HTTPStatusCode()
		return code >= 400 && code < 500
	}
	var dns *net.DNSError
	var op *net.OpError
	return errors.As(err, &dns) || errors.As(err, &op) && op.Op == "dial"
}

// passing reports whether err is a function error that another run of the function may
// not meet: one of a transient type. Any other would come again: an
// InvalidRequestError, a ConflictError, an answer that is not a decision, an answer too
// large for Lambda (Function.ResponseSizeTooLarge), a runtime that cannot start, a
// panic of the function's code on this payload, a usage report of what Redis holds that
// is not usage (checkapi.NotUsage) or of a function whose configuration does not load
// (checkapi.NoConfiguration).
func passing(err error) bool {
	var fe *FunctionError
	return errors.As(err, &fe) && transient[fe.Type] &&
		!(fe.Type == checkapi.ErrorTypeUnavailable && (strings.Contains(fe.Message, checkapi.NotUsage) || strings.Contains(fe.Message, checkapi.NoConfiguration)))
}

// transient are the errorTypes of function errors that another run may not meet: a
// timeout (of the invocation or of its init), a crash or an init failure (see
// failedStart), the runtime out of memory or failing for a reason Lambda does not know,
// Redis not answering a usage report in time.
var transient = map[string]bool{
	"Sandbox.Timedout":            true,
	"Runtime.ExitError":           true,
	"Runtime.InitError":           true,
	"Runtime.OutOfMemory":         true,
	"Runtime.Unknown":             true,
	checkapi.ErrorTypeUnavailable: true,
}

// failedStart reports whether err is a function error of a process that exited
// (Runtime.ExitError: a crash, or an init that failed, as the check function's does on a
// bad configuration, which aws-lambda-go does not report otherwise) or of an init its
// runtime reported failed (Runtime.InitError). Another run may start well (a secret's
// read throttled, a network fault), but a bad configuration fails each cold start the
// same way, so such an error is sent again once at most.
func failedStart(err error) bool {
	var fe *FunctionError
	return errors.As(err, &fe) && (fe.Type == "Runtime.ExitError" || fe.Type == "Runtime.InitError")
}

// firstPause is the wait before a Client's first retry after a function error, doubled
// before each next up to maxPause, less up to half of it at random.
const (
	firstPause = 100 * time.Millisecond
	maxPause   = 5 * time.Second
)

// pauseLength is the wait before retry number retry + 1 after a function error.
func pauseLength(retry int) time.Duration {
	d := maxPause
	if retry < 6 { // 100 ms << 6 is past maxPause; a larger shift would overflow
		d = min(firstPause<<retry, maxPause)
	}
	return d - mrand.N(d/2)
}

// pause waits before retry number retry + 1 after a function error, and reports whether
// ctx lets it be sent: false when ctx is done first, or when its deadline comes before
// the wait ends.
func pause(ctx context.Context, retry int) bool {
	d := pauseLength(retry)
	if deadline, ok := ctx.Deadline(); ok && time.Until(deadline) <= d {
		return false
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}
