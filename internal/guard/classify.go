package guard

import (
	"context"
	"errors"
	"net"

	"github.com/bucketgate/bucketgate/internal/bucket"
)

// Failure is why Redis did not decide, as the Reason dimension of the FailClosed and
// FailOpen metrics spells it. The zero Failure means Redis decided.
type Failure string

// The failures of a Result.
const (
	FailureNone        Failure = ""
	FailureTimeout     Failure = "timeout"      // the deadline passed first, or the caller stopped waiting (its context canceled)
	FailureRedisError  Failure = "redis_error"  // connection refused, reset, or an error reply
	FailureBadResponse Failure = "bad_response" // an answer of the wrong shape, or about stored state that is not bucketgate's
	// FailureRegistryError: the key registry could not say who the identity is (its
	// table failed and nothing usable was cached), so Redis was not asked.
	FailureRegistryError Failure = "registry_error"
)

// Classify names the failure behind a Decide error that is not bucketgate.ErrInvalid.
func Classify(err error) Failure {
	var netErr net.Error
	switch {
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, context.Canceled), errors.As(err, &netErr) && netErr.Timeout():
		return FailureTimeout
	case errors.Is(err, bucket.ErrBadReply), errors.Is(err, bucket.ErrBadState):
		return FailureBadResponse
	}
	return FailureRedisError
}
