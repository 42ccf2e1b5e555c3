// Package awsretry holds the AWS SDK retryer of the calls the functions make within a
// deadline of their own (a registry read, a send of events): the SDK's default backoff
// waits up to 2 s before its first retry, which never fits in such a deadline, and a
// deadline that passes while it waits leaves only "context deadline exceeded" to count
// and log, not the error that lasted (a throttle, a 5xx).
package awsretry

import (
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
)

// AtOnce returns the AWS SDK's standard retryer, retry.DefaultMaxAttempts attempts in
// all and its retry quota, retrying a call that failed for a reason worth another try
// (a throttle, a 5xx, a connection reset) at once. The quota is the retryer's: shared by
// the calls given the same retryer, it caps their retries together (once it is spent,
// a failed call is not retried until successes refill it), so that a flood of failing
// calls, a throttled table's, is not tried three times each.
func AtOnce() aws.Retryer {
	return retry.NewStandard(func(so *retry.StandardOptions) {
		so.Backoff = retry.BackoffDelayerFunc(func(int, error) (time.Duration, error) { return 0, nil })
	})
}
