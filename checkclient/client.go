// Package checkclient calls bucketgate's check function from Go through the AWS SDK's
// Lambda Invoke: typed requests and responses (package checkapi), one invocation per
// Check, CheckBatch, Refund, Reset, Reserve, Settle, Cancel, Release or Usage (and
// SettleRequest, SettleReservation, CancelRequest, CancelReservation, ReleaseRequest and
// ReleaseLease for the authorizer's reservations and leases), and the function's errors
// as typed Go errors. A reply it cannot read as a decision is an error, never a denial.
//
//	cfg, err := config.LoadDefaultConfig(ctx)
//	...
//	checks := checkclient.New(lambda.NewFromConfig(cfg), "bucketgate-check")
//	res, err := checks.Check(ctx, checkapi.Request{Key: "tenant-42", Plan: "pro"})
//	if err == nil && !res.Allowed {
//		// wait res.RetryAfter()
//	}
//
// A Key rests in Redis and the registry as given: to limit the clients of an API by
// their API keys, pass each key's digest, never the key:
//
//	res, err := checks.Check(ctx, checkapi.Request{Key: bucketgate.KeyDigest(apiKey), Plan: "pro"})
package checkclient

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/lambda"
	"github.com/aws/aws-sdk-go-v2/service/lambda/types"

	"github.com/bucketgate/bucketgate"
	"github.com/bucketgate/bucketgate/checkapi"
	"github.com/bucketgate/bucketgate/ratelimitheaders"
)

// Invoker invokes a Lambda function; *lambda.Client is one.
type Invoker interface {
	// Invoke invokes the function that in names, as (*lambda.Client).Invoke does.
	Invoke(ctx context.Context, in *lambda.InvokeInput, optFns ...func(*lambda.Options)) (*lambda.InvokeOutput, error)
}

// Client invokes one check function. It is safe for concurrent use if its Invoker is
// (*lambda.Client is). Make one with New: the zero Client has no Invoker, and its calls
// are errors that say so.
type Client struct {
	invoker  Invoker
	function string
	noIDs    bool // set by WithoutRequestIDs
	retries  int  // WithFunctionRetries; DefaultFunctionRetries
}

// Option is a setting of a Client.
type Option func(*Client)

// DefaultFunctionRetries is how many times, by default, a Client sends a request again
// after the function failed in a way that another run may not (see WithFunctionRetries).
const DefaultFunctionRetries = 2

// WithFunctionRetries makes a Client send a request that is safe to send again (one
// with a requestId, a peek, a reset, a settle, a cancel, a release, a usage report) up
// to n more times after the function failed in a way that another run may not: a
// *FunctionError of a timeout (Sandbox.Timedout), the runtime out of memory or failing
// for a reason Lambda does not know (Runtime.OutOfMemory, Runtime.Unknown), or a usage
// report Redis did not answer in time (checkapi.ErrorTypeUnavailable); once at most
// after a crash or an init failure (Runtime.ExitError, which Lambda reports for both,
// and Runtime.InitError), which a bad configuration repeats, a cold start each time;
// never after any other, which
// would come again: an *InvalidRequestError, a ConflictError, a usage report of what
// Redis holds that is not usage (checkapi.NotUsage) or of a function whose
// configuration does not load (checkapi.NoConfiguration), an answer that is not a
// decision, one too large for Lambda (Function.ResponseSizeTooLarge), a panic. It waits about 100 ms before the first retry, twice as long before
// each next (5 s at most), and not past ctx's deadline. n = 0 sends once; the default is
// DefaultFunctionRetries. The Lambda client's own retries (of the service's failures)
// are apart from these.
func WithFunctionRetries(n int) Option {
	return func(c *Client) { c.retries = max(n, 0) }
}

// WithoutRequestIDs makes a Client send no requestId of its own: for a check function
// older than 0.3.0, which refuses the field. A request that takes or gives back tokens
// is then sent again only when the function did not run (see Check).
func WithoutRequestIDs() Option { return func(c *Client) { c.noIDs = true } }

// New returns a Client that invokes function (a name, a name:alias, or an ARN)
// through invoker, synchronously, with opts; a nil Option is none. An empty function
// names none: every call of its Client is an error that says so, sending nothing.
func New(invoker Invoker, function string, opts ...Option) *Client {
	c := &Client{invoker: invoker, function: function, retries: DefaultFunctionRetries}
	for _, o := range opts {
		if o != nil {
			o(c)
		}
	}
	return c
}

// Check decides one request (a check, or the operation req.Op names; a usage report is
// Usage's, and refused here before it is sent). Its error is an
// *InvalidRequestError when the function refused req, or the client did before sending
// it (nothing was decided or written); a *FunctionError when the function failed
// otherwise, or answered something that is not a decision; and else the SDK's error for
// an invocation that did not happen (one of a refund may have happened: see Refund).
// A Redis outage is not an error: it is a Response with reason unavailable (or degraded
// when the function fails open). A replay of an admission (the RequestID was decided
// before, Response.Replayed) whose lease has expired by the local clock is an error
// wrapping ErrLeaseExpired, not the admission: that lease holds nothing (the local
// clock stands in for Redis's, which the answer does not carry: see ErrLeaseExpired);
// so is a replayed reserve whose reservation has expired, an error wrapping
// ErrReservationExpired: it can no longer be settled.
//
// A request that takes tokens (Cost nil or above 0), a reserve or a refund gets a
// requestId of its own (a random one, unless req.RequestID gives it), the same for
// every attempt, so that the function decides it once however often it is sent: it
// keeps every retry of the Lambda client (after a 5xx or a connection lost too) and the
// client's own after a function error another run may not meet (a timeout, a crash:
// WithFunctionRetries), and a retry answers the first decision. A settle and a cancel are idempotent by their
// reservation, a release by its lease, and a peek and a reset come out the same however
// often they run. With
// WithoutRequestIDs, a request that takes or gives back tokens without a RequestID is
// sent again only after a failure that shows the function did not run: Lambda refused
// it (a 4xx, such as 429 when the function is throttled) or no connection was made.
func (c *Client) Check(ctx context.Context, req checkapi.Request) (checkapi.Response, error) {
	if err := c.validateDecision("", req); err != nil {
		return checkapi.Response{}, err
	}
	req = c.identify(req)
	var res response
	if err := c.invoke(ctx, req, &res, writes(req)); err != nil {
		return checkapi.Response{}, err
	}
	if err := res.check(req); err != nil {
		return checkapi.Response{}, c.unreadable(err)
	}
	if err := c.expired(res.Response); err != nil {
		return checkapi.Response{}, err
	}
	return res.Response, nil
}

// expired returns an error wrapping ErrLeaseExpired, ErrReservationExpired or both when
// res replays an admission whose lease, reservation or both have expired by the local
// clock, else nil.
func (c *Client) expired(res checkapi.Response) error {
	if !res.Replayed || res.Lease == "" && res.Reservation == "" {
		return nil
	}
	at, err := time.Parse(time.RFC3339, res.ExpiresAt)
	if err != nil || at.After(time.Now()) {
		return nil
	}
	var gone error
	switch {
	case res.Lease == "":
		gone = ErrReservationExpired
	case res.Reservation == "":
		gone = ErrLeaseExpired
	default:
		gone = fmt.Errorf("%w; %w", ErrLeaseExpired, ErrReservationExpired)
	}
	return fmt.Errorf("checkclient: %s: %w (it expired at %s): send it again with a new RequestID", c.function, gone, res.ExpiresAt)
}

// Refund gives req.Cost tokens (nil: checkapi.DefaultCost) back to every rule of req,
// never above its capacity, for a request whose work failed after its check, and
// answers the buckets after it. req.Op must be empty or checkapi.OpRefund, and
// req.RequestID, when given, the refund's own: the check's RequestID again names another
// request, a *FunctionError of type checkapi.ErrorTypeConflict. It keeps every retry
// with its requestId, as a check does (with WithoutRequestIDs, it is sent again only
// when the function did not run); after an error other than an *InvalidRequestError
// the refund may or may not have happened. Errors are as for Check. A Response of
// reason unavailable or degraded (Redis did not answer) may have given back nothing.
func (c *Client) Refund(ctx context.Context, req checkapi.Request) (checkapi.Response, error) {
	return c.operate(ctx, checkapi.OpRefund, req)
}

// Reserve takes req.Cost tokens (nil: checkapi.DefaultCost), the estimate of work whose
// cost is known only after it, from every rule when every rule has them, and then
// answers Response.Reservation, held for req.TTLMS (0: 5 minutes): settle it with
// Settle (or Cancel) once the actual cost is known; one not settled in time stays
// charged at its estimate. req.Op must be empty or checkapi.OpReserve. Errors are as for
// Check. A degraded Response (Redis did not answer: FAIL_MODE=open, or every rule is
// shadow) is allowed with no Reservation: there is nothing to settle.
func (c *Client) Reserve(ctx context.Context, req checkapi.Request) (checkapi.Response, error) {
	return c.operate(ctx, checkapi.OpReserve, req)
}

// Settle settles reservation, made by Reserve with the same Key (or Identity) and
// rules as req, at the actual cost: what the estimate took beyond it goes back to every
// rule, or the rest is taken, which never fails (a bucket may owe up to its capacity,
// and later requests wait until it has refilled). When req's rules changed since the
// reserve (a plan reloaded), only those the reserve took from are settled, by name and
// kind: a rule added since gets nothing. Settling again answers the first
// outcome (Response.Replayed), so that it keeps every retry. req.Op must be empty,
// checkapi.OpSettle or checkapi.OpReserve; req.Cost and req.Reservation are set from
// actual and reservation, and req.TTLMS and req.RequestID, a reserve's, are not sent (a
// settle has none), so that the request given to Reserve settles too. A reservation
// unknown to the function, expired, of another key, or sharing no rule with req (or
// req.Plan, removed by a configuration reload since) is a *FunctionError of type
// checkapi.ErrorTypeConflict;
// other errors are as for Check. A Response of reason
// unavailable or degraded (Redis did not answer) may have settled nothing: send it
// again. An empty reservation, all a degraded reserve holds, and an actual below 0 or
// above bucketgate.MaxSettle are an *InvalidRequestError, not sent.
func (c *Client) Settle(ctx context.Context, req checkapi.Request, reservation string, actual int64) (checkapi.Response, error) {
	if actual < 0 || actual > bucketgate.MaxSettle { // named as the caller passed it, not as the field sent
		return checkapi.Response{}, c.refuse(fmt.Sprintf("actual %d: want the tokens the work used, 0 to %d", actual, int64(bucketgate.MaxSettle)))
	}
	req = held(req)
	req.Reservation, req.Cost = reservation, checkapi.Cost(actual)
	return c.operate(ctx, checkapi.OpSettle, req)
}

// held returns req, the request that reserved or acquired what a settle, a cancel or a
// release ends, without what only a reserve or an acquire has: its cost, ttl and
// requestId, which the function refuses on them, and OpReserve.
func held(req checkapi.Request) checkapi.Request {
	req.Cost, req.TTLMS, req.RequestID = nil, 0, ""
	if req.Op == checkapi.OpReserve {
		req.Op = checkapi.OpCheck
	}
	return req
}

// SettleReservation settles reservation, an id the authorizer issued (on a route that
// reserves), at the actual cost, with the id alone: the id carries whose buckets and
// which rules, signed, so that a backend needs nothing else its request does not carry
// (the stack's service-facing check function takes it). It is Settle with no Key, plan
// or rules, and keeps every retry as Settle does. An id the limiter did not make (or
// whose key was revoked since, or whose route is gone or has none of its rules left) is
// a *FunctionError of type checkapi.ErrorTypeConflict: the reservation stays charged at
// its estimate. The reservation of a key of an account revoked or moved since is settled
// all the same, under that account's plan, while it is active.
func (c *Client) SettleReservation(ctx context.Context, reservation string, actual int64) (checkapi.Response, error) {
	return c.Settle(ctx, checkapi.Request{}, reservation, actual)
}

// CancelReservation settles reservation, an id the authorizer issued, at 0, with the id
// alone, as SettleReservation does, bounded by ctx as it is: for work that did not
// happen because its client hung up (r.Context() canceled), CancelRequest cancels all
// the same.
func (c *Client) CancelReservation(ctx context.Context, reservation string) (checkapi.Response, error) {
	return c.Cancel(ctx, checkapi.Request{}, reservation)
}

// SettleRequest settles the reservation that r, a request the authorizer let through
// on a route that reserves, carries (ratelimitheaders.Reservation) at the actual cost,
// with SettleReservation: the one call a backend makes once it knows what the work
// cost. Its error is ratelimitheaders.ErrNoReservation when r carries none; else as
// SettleReservation's. ctx's values reach the call, its cancellation and deadline do
// not: the work is done, and a request whose client hung up (r.Context() canceled,
// mid-stream, or at API Gateway's integration timeout) or whose deadline passed (an
// http.TimeoutHandler's, a framework's timeout) is settled all the same, within
// RequestCallTimeout of its own, not left charged at its estimate. To bound it by ctx,
// call SettleReservation(ctx, ratelimitheaders.Reservation(r), actual). r's header is
// the limiter's where an HTTP integration sets it (the templates' with HttpBackendUrl
// or an http_proxy, make run, package middleware); behind a Lambda proxy integration,
// into whose event API Gateway maps no header, an http.Handler served through an
// adapter (aws-lambda-go-api-proxy, the Lambda Web Adapter) finds in r the client's own
// header alone, or none: every request would answer ErrNoReservation (each reservation
// left charged at its estimate) or settle an id of the client's choosing. There read the
// id from the event's authorizer context, ratelimitheaders.ContextReservation, and call
// SettleReservation (CancelReservation, ReleaseLease with ContextLease) with it.
func (c *Client) SettleRequest(ctx context.Context, r *http.Request, actual int64) (checkapi.Response, error) {
	return detached(ctx, ratelimitheaders.Reservation(r), ratelimitheaders.ErrNoReservation, func(ctx context.Context, id string) (checkapi.Response, error) {
		return c.SettleReservation(ctx, id, actual)
	})
}

// CancelRequest cancels the reservation that r carries (ratelimitheaders.Reservation),
// every token of its estimate back, with CancelReservation: the one call a backend makes
// when the work it reserved for will not happen (its client hung up, or it failed before
// it began). Its error is ratelimitheaders.ErrNoReservation when r carries none; else as
// CancelReservation's. Its client hanging up or its deadline passing does not stop it:
// it has RequestCallTimeout of its own, as SettleRequest says; behind a Lambda proxy
// integration, read the id from the event's context instead, as SettleRequest says.
func (c *Client) CancelRequest(ctx context.Context, r *http.Request) (checkapi.Response, error) {
	return detached(ctx, ratelimitheaders.Reservation(r), ratelimitheaders.ErrNoReservation, c.CancelReservation)
}

// RequestCallTimeout bounds SettleRequest, CancelRequest and ReleaseRequest, which
// take their context's values but neither its cancellation nor its deadline: twice the
// template's 5 s function timeout, room for a cold start and a retry after a timed-out
// attempt.
const RequestCallTimeout = 10 * time.Second

// detached makes call with id, the reservation or lease a request carries, under ctx's
// values without its cancellation and deadline, ending after RequestCallTimeout: for
// the settle, cancel or release of work already done. It returns none when id is "",
// the request carrying none.
func detached(ctx context.Context, id string, none error, call func(context.Context, string) (checkapi.Response, error)) (checkapi.Response, error) {
	if id == "" {
		return checkapi.Response{}, none
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), RequestCallTimeout)
	defer cancel()
	return call(ctx, id)
}

// ReleaseLease returns lease, an id the authorizer issued (on a request with a
// concurrency rule), with the id alone, as SettleReservation settles: Release with no
// Key, plan or rules. An id the limiter did not make (or whose key was revoked since, or
// whose route is gone or has no concurrency rule left) is a *FunctionError of type
// checkapi.ErrorTypeConflict: the lease then frees itself at its TTL. The lease of a key
// of an account revoked or moved since is released all the same while that account is
// active.
func (c *Client) ReleaseLease(ctx context.Context, lease string) (checkapi.Response, error) {
	return c.Release(ctx, checkapi.Request{}, lease)
}

// ReleaseRequest returns the lease that r, a request the authorizer let through with a
// concurrency rule, carries (ratelimitheaders.Lease), with ReleaseLease: the one call a
// backend makes when its work is done. Its error is ratelimitheaders.ErrNoLease when r
// carries none; else as ReleaseLease's. Its client hanging up or its deadline passing
// does not stop it: it has RequestCallTimeout of its own, as SettleRequest says. Behind a
// Lambda proxy integration, which maps no header, r carries the client's header, not
// the limiter's: read the lease from the event's context (ratelimitheaders.ContextLease)
// and call ReleaseLease, as SettleRequest says; else every lease holds until its ttl.
func (c *Client) ReleaseRequest(ctx context.Context, r *http.Request) (checkapi.Response, error) {
	return detached(ctx, ratelimitheaders.Lease(r), ratelimitheaders.ErrNoLease, c.ReleaseLease)
}

// Cancel settles reservation at 0, every token of its estimate back, as Settle does;
// req.Cost, the estimate, is not sent.
func (c *Client) Cancel(ctx context.Context, req checkapi.Request, reservation string) (checkapi.Response, error) {
	req = held(req)
	req.Reservation = reservation
	return c.operate(ctx, checkapi.OpCancel, req)
}

// Release returns lease, which a check (or a reserve) with the same Key (or Identity)
// and rules as req answered (Response.Lease), to its concurrency rules:
// Response.Released reports whether it was still held; releasing again (or after its
// TTLMS) answers Released false and changes nothing, so that it keeps every retry. So
// Released false after the client's own retry (a timeout or a crash after the first
// run may have released it: WithFunctionRetries) does not say the lease expired: it
// may be this call's release, whose answer was lost. Either way the lease holds nothing.
// req.Op must be empty, checkapi.OpRelease or checkapi.OpReserve; req.Lease is set
// from lease, and req.Cost, req.TTLMS and req.RequestID, the acquire's, are not sent (a
// release has none), so that the request given to Check (or Reserve) releases too. A lease
// unknown to the function, of another key, or sharing no rule with req (or req.Plan,
// removed by a configuration reload since), is a *FunctionError of type
// checkapi.ErrorTypeConflict;
// other errors are as for Check. A Response of reason unavailable or degraded (Redis
// did not answer) may have released nothing: send it again.
// An empty lease, all a degraded check holds, is an *InvalidRequestError, not sent.
func (c *Client) Release(ctx context.Context, req checkapi.Request, lease string) (checkapi.Response, error) {
	req = held(req)
	req.Lease = lease
	return c.operate(ctx, checkapi.OpRelease, req)
}

// Reset makes every rule of req full again (its state removed) and answers the buckets
// after it. req.Op must be empty or checkapi.OpReset, and req.Cost nil. Errors are as
// for Check. It is an operator's operation: a stack's check function, which serves
// services alone, refuses it with an *InvalidRequestError naming the stack's operator
// function; a Client of that function (its output OperatorFunctionName) resets.
func (c *Client) Reset(ctx context.Context, req checkapi.Request) (checkapi.Response, error) {
	return c.operate(ctx, checkapi.OpReset, req)
}

// operate sends req as op.
func (c *Client) operate(ctx context.Context, op checkapi.Op, req checkapi.Request) (checkapi.Response, error) {
	if req.Op != checkapi.OpCheck && req.Op != op {
		return checkapi.Response{}, c.refuse(fmt.Sprintf("op: %q, sent with %s: want empty or %q", req.Op, op, op))
	}
	req.Op = op
	return c.Check(ctx, req)
}

// Usage reports the usage of req.Key (or, on the operator's path, req.Identity) per UTC
// day from req.From to req.To (YYYY-MM-DD; To defaults to today, by Redis's clock, and
// From to To), within the days the function keeps: the checks allowed and
// the cost they took, and the checks limited, a day of no checks as zeros, with their
// total. req.Op must be empty or checkapi.OpUsage, and req has no plan, rules or cost. A
// read changes nothing, so it keeps every retry of the Lambda client. Errors are as for
// Check; Redis's failure is a *FunctionError of type checkapi.ErrorTypeUnavailable, and
// an answer that is not such a report one of type ErrorTypeUnreadable.
func (c *Client) Usage(ctx context.Context, req checkapi.Request) (checkapi.Usage, error) {
	if req.Op != checkapi.OpCheck && req.Op != checkapi.OpUsage {
		return checkapi.Usage{}, c.refuse(fmt.Sprintf("op: %q, sent with %s: want empty or %q", req.Op, checkapi.OpUsage, checkapi.OpUsage))
	}
	req.Op = checkapi.OpUsage
	if err := c.validate("", req); err != nil {
		return checkapi.Usage{}, err
	}
	var u usageAnswer
	if err := c.invoke(ctx, req, &u, false); err != nil {
		return checkapi.Usage{}, err
	}
	if err := checkUsage(u.Usage); err != nil {
		return checkapi.Usage{}, c.unreadable(err)
	}
	return u.Usage, nil
}

// CheckBatch decides 1 to checkapi.MaxBatch requests in one invocation, in one round
// trip to Redis (see checkapi.Batch), in order: results[i] answers reqs[i]. Each request is atomic, the
// batch is not. Errors are as for Check; an invalid request anywhere refuses the whole
// batch before anything is decided, and the error names the index ("checks[3].cost:
// ..."); a batch of the wrong size is refused before it is sent. A ConflictError of one
// request (see Settle) is the batch's error too, but the other requests may have been
// decided, and stand: its message names them. Their answers are not in it (the
// function sends none with an error): what they took stays taken, and a reservation or
// a lease they made is charged or held until its TTLMS. Sending them again with the
// requestIds this call made is the only way to their answers, replayed, ids and all;
// those ids are the client's own unless each request gives its RequestID, so give
// them where a conflict can come (a settle, a RequestID of yours), and send only
// those named again. A result that replays an admission
// whose lease or reservation has expired is answered as it is (see Check): read its
// ExpiresAt before the work. A batch that holds a request that takes
// or gives back tokens is sent again only when the function did not run, as that
// request alone would be, unless each such request has its requestId (see Check).
func (c *Client) CheckBatch(ctx context.Context, reqs []checkapi.Request) ([]checkapi.Response, error) {
	if len(reqs) == 0 || len(reqs) > checkapi.MaxBatch {
		return nil, c.refuse(fmt.Sprintf("checks: %d checks: want 1 to %d per call", len(reqs), checkapi.MaxBatch))
	}
	reqs = slices.Clone(reqs)
	for i, req := range reqs {
		if err := c.validateDecision(fmt.Sprintf("checks[%d].", i), req); err != nil {
			return nil, err
		}
		reqs[i] = c.identify(req)
	}
	var res batchAnswer
	if err := c.invoke(ctx, checkapi.Batch{Checks: reqs}, &res, slices.ContainsFunc(reqs, writes)); err != nil {
		return nil, err
	}
	if len(res.Results) != len(reqs) {
		return nil, c.unreadable(fmt.Errorf("%d results for %d checks", len(res.Results), len(reqs)))
	}
	out := make([]checkapi.Response, len(res.Results))
	for i, r := range res.Results {
		if err := r.check(reqs[i]); err != nil {
			return nil, c.unreadable(fmt.Errorf("results[%d]: %w", i, err))
		}
		out[i] = r.Response
	}
	return out, nil
}

// errNoInvoker is the error of a call of a Client without an Invoker.
var errNoInvoker = errors.New("checkclient: the Client has no Invoker: make it with New(lambda.NewFromConfig(cfg), function)")

// errNoFunction is the error of a call of a Client made with an empty function name,
// which Lambda would refuse only once asked.
var errNoFunction = errors.New(`checkclient: the Client has no function name: make it with New(invoker, "bucketgate-check"), the check function's name, name:alias or ARN`)

// invoke sends in and decodes the answer into out; write narrows the SDK's retries to
// failures where the function did not run (retryUnlessRan), for a payload that must not
// run twice. A payload that may run twice is sent again after a function error another
// run may not meet, up to c.retries times (WithFunctionRetries), after a crash or a
// failed init once at most (failedStart). A ctx that ends during the wait before a retry
// ends the call with an error wrapping both the function's and ctx's.
func (c *Client) invoke(ctx context.Context, in, out any, write bool) error {
	if c.invoker == nil {
		return errNoInvoker
	}
	if c.function == "" {
		return errNoFunction
	}
	payload, err := json.Marshal(in)
	if err != nil {
		return fmt.Errorf("checkclient: encode request: %w", err)
	}
	for retry, failedStarts := 0, 0; ; retry++ {
		err := c.invokeOnce(ctx, payload, out, write)
		if failedStart(err) {
			failedStarts++
		}
		if write || retry == c.retries || !passing(err) || failedStarts > 1 {
			return err
		}
		if !pause(ctx, retry) {
			if ctx.Err() != nil { // the caller gave up during the wait: its error, as mid-attempt
				return fmt.Errorf("%w; not sent again: %w", err, ctx.Err())
			}
			return err
		}
	}
}

// invokeOnce sends payload once (with the SDK's retries: see invoke) and decodes the
// answer into out. An answer with an errorType or an errorMessage is a function error,
// with the X-Amz-Function-Error header or without.
func (c *Client) invokeOnce(ctx context.Context, payload []byte, out any, write bool) error {
	var opts []func(*lambda.Options)
	if write {
		opts = append(opts, retryUnlessRan)
	}
	o, err := c.invoker.Invoke(ctx, &lambda.InvokeInput{
		FunctionName:   aws.String(c.function),
		InvocationType: types.InvocationTypeRequestResponse,
		Payload:        payload,
	}, opts...)
	if err != nil {
		return fmt.Errorf("checkclient: invoke %s: %w", c.function, err)
	}
	if o == nil { // an Invoker other than *lambda.Client may answer neither
		return fmt.Errorf("checkclient: invoke %s: the Invoker answered no output and no error", c.function)
	}
	if o.FunctionError != nil {
		return functionError(c.function, *o.FunctionError, o.Payload)
	}
	if errorPayload(o.Payload) {
		return functionError(c.function, "", o.Payload)
	}
	if err := json.Unmarshal(o.Payload, out); err != nil {
		return c.unreadable(fmt.Errorf("%s: %w", excerpt(o.Payload), err))
	}
	return nil
}
