// Package authorizer is bucketgate's API Gateway Lambda REQUEST authorizer handler: one
// handler for REST APIs (a policy; 429 through the ACCESS_DENIED gateway response) and
// HTTP APIs (payload 1.0 or 2.0). Package app builds it; command functions/authorizer
// serves it in Lambda and cmd/bucketgate-local runs it in-process behind a local gateway.
package authorizer

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/bucketgate/bucketgate"
	"github.com/bucketgate/bucketgate/internal/eventbus"
	"github.com/bucketgate/bucketgate/internal/guard"
	"github.com/bucketgate/bucketgate/internal/identity"
	"github.com/bucketgate/bucketgate/internal/registry"
	"github.com/bucketgate/bucketgate/internal/telemetry"
)

// ErrUnauthorized is returned for a refused identity (an unknown API key or a request
// without one, when the configuration refuses them). API Gateway answers 401 to exactly
// this message.
var ErrUnauthorized = errors.New("Unauthorized")

// ErrUnavailable is wrapped by the error returned when Redis (or the key registry) could
// not decide and the limiter fails closed. API Gateway answers it with the AUTHORIZER_FAILURE gateway
// response, which the template sets to 503 with Retry-After: 1.
var ErrUnavailable = errors.New("rate limiter unavailable")

// UnavailableError is Invoke's error when the limiter fails closed; Err wraps
// ErrUnavailable and says what failed. Lambda reports it with the errorType
// "UnavailableError" (its Go type's name, as for BadEventError), as the check
// function's is.
type UnavailableError struct {
	// Err wraps ErrUnavailable.
	Err error
}

// Error returns Err's text.
func (e *UnavailableError) Error() string { return e.Err.Error() }

// Unwrap returns Err.
func (e *UnavailableError) Unwrap() error { return e.Err }

// UnauthorizedError is Invoke's error for a refused identity: its message is exactly
// ErrUnauthorized's, "Unauthorized", which API Gateway answers with 401, and Lambda
// reports it with the errorType "UnauthorizedError" (its Go type's name), where
// ErrUnauthorized itself would be errors' "errorString".
type UnauthorizedError struct{}

// Error returns ErrUnauthorized's text.
func (*UnauthorizedError) Error() string { return ErrUnauthorized.Error() }

// Unwrap returns ErrUnauthorized.
func (*UnauthorizedError) Unwrap() error { return ErrUnauthorized }

// UndecidableError is Invoke's error for a request the engine refused as invalid
// (Err wraps bucketgate.ErrInvalid): the engine and the configuration disagree, which
// no configuration that loads should cause. Lambda reports it with the errorType
// "UndecidableError", where it would be fmt's "wrapError".
type UndecidableError struct {
	// Err says what the engine refused.
	Err error
}

// Error returns Err's text.
func (e *UndecidableError) Error() string { return e.Err.Error() }

// Unwrap returns Err.
func (e *UndecidableError) Unwrap() error { return e.Err }

// Guard decides one request under the failure policy; *guard.Guard is one.
type Guard interface {
	Decide(ctx context.Context, q bucketgate.Request) (guard.Result, error)
	// Fallback answers by the failure policy when the registry failed, or Redis did
	// not give the secrets that verify an id.
	Fallback(q bucketgate.Request, f guard.Failure, err error) guard.Result
	// FailOpen reports whether requests Redis (or the registry) cannot decide are
	// allowed, degraded.
	FailOpen() bool
	// Signed reports whether id is a reservation's (or, lease true, a lease's) id the
	// limiter signed for identity: nil, an error wrapping bucketgate.ErrConflict, or
	// Redis's failure to give the secret.
	Signed(ctx context.Context, identity, id string, lease bool) error
}

// Configuration gives each invocation what it is decided by: the configuration
// document (the default plan, the policies, the route limits) and the registry that
// says who an API key is, its plan resolved with that document; *registry.Live is one.
// The Refresh says what getting it read, for the metrics.
type Configuration interface {
	Current(ctx context.Context) (registry.View, registry.Refresh)
}

// Metrics writes one invocation's metrics; *telemetry.Emitter is one.
type Metrics interface {
	Emit(at time.Time, inv *telemetry.Invocation) error
}

// Events sends the events of an invocation, within its own deadline, counting what it
// could not send in the invocation; *eventbus.Sender is one.
type Events interface {
	Send(ctx context.Context, inv *telemetry.Invocation, events []eventbus.Event)
}

// Handler is the authorizer: it decodes an API Gateway REQUEST authorizer event, finds
// the caller's identity and limits, asks the Guard, writes one EMF line and one log
// line, and answers in the event's own response format. Every field is required. It is
// safe for concurrent use when its dependencies are.
type Handler struct {
	// Guard decides requests (Redis behind the failure policy).
	Guard Guard
	// Config gives the default plan, the policies for unknown keys and anonymous
	// callers, and route limits (the rate-limit configuration), and the registry that
	// says which plan an API key is on (its "key:<digest>" identity).
	Config Configuration
	// Identities reads the caller's API key header and source IP.
	Identities identity.Resolver
	// Metrics receives one Invocation per decided event.
	Metrics Metrics
	// Log receives the decision line (debug) and every failure (warn, error).
	Log *slog.Logger
	// Now reads the clock for metric timestamps, and for the reset time when Redis did
	// not decide.
	Now func() time.Time
	// Events, optional, sends the events of a decision that crossed a threshold
	// (EVENT_BUS_NAME); nil sends none.
	Events Events
}

// Invoke answers any supported authorizer event, told apart by its shape: REST (payload
// 1.0 with methodArn), HTTP API payload 1.0 (version "1.0") and HTTP API payload 2.0
// (version "2.0", routeArn, simple response). It is the Lambda entry point
// (lambda.Handler): it reads the payload itself, in one pass, so that an empty or
// malformed one is refused with the authorizer's own error (a *BadEventError wrapping
// ErrBadEvent; a request it cannot decide, failing closed, gets a *UnavailableError, a
// refused identity an *UnauthorizedError, a request the engine refuses an
// *UndecidableError),
// and writes the answer as JSON in the event's own format: for REST and payload 1.0 an Allow or Deny
// IAM policy for the method ARN (cut to API Gateway's 512 characters with a wildcard
// when longer: policyResource) with the identity as principal id, for payload 2.0 a
// simple response (isAuthorized; API Gateway turns false into 403, whatever the context
// says); both with the authorizer context.
func (h *Handler) Invoke(ctx context.Context, payload []byte) ([]byte, error) {
	ev, err := decodeEvent(payload, h.Identities)
	if err != nil {
		h.Log.ErrorContext(ctx, "authorizer event rejected", slog.String(telemetry.AttrError, err.Error()))
		return nil, &BadEventError{Err: err}
	}
	o, err := h.Authorize(ctx, ev.call)
	switch {
	case errors.Is(err, ErrUnavailable):
		return nil, &UnavailableError{Err: err}
	case errors.Is(err, ErrUnauthorized):
		return nil, &UnauthorizedError{}
	case err != nil:
		return nil, &UndecidableError{Err: err}
	}
	return h.appendAnswer(make([]byte, 0, answerSize), ev, o), nil
}
