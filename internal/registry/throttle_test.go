package registry_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/bucketgate/bucketgate/internal/registry"
	"github.com/bucketgate/bucketgate/internal/settings"
	"github.com/bucketgate/bucketgate/internal/telemetry"
	"github.com/bucketgate/bucketgate/internal/testkit/registrytest"
)

// throttled is DynamoDB as a table over its capacity answers: every GetItem refused
// with ProvisionedThroughputExceededException, which the AWS SDK retries. gets counts
// them.
func throttled(t *testing.T) (*dynamodb.Client, *atomic.Int64) {
	t.Helper()
	endpoint, gets := registrytest.FailingTable(t, registrytest.Throttled)
	client := dynamodb.New(dynamodb.Options{Region: "us-east-1", BaseEndpoint: aws.String(endpoint),
		Credentials: aws.AnonymousCredentials{}})
	return client, gets
}

// A throttled table fails a lookup at once, saying so: its read is retried at once
// (retry.DefaultMaxAttempts attempts), not after the SDK's backoff of up to 2 s, which
// waited out REGISTRY_TIMEOUT_MS on every lookup and left "context deadline exceeded"
// as the failure logged. A flood of lookups of new keys meanwhile (made-up keys) is
// retried within one retry quota: at most its tokens' worth of retries in all, not
// three reads a key.
func TestTableThrottled(t *testing.T) {
	client, gets := throttled(t)
	var logs bytes.Buffer
	table := registry.NewTable(client, "bucketgate-keys")
	c := registry.NewCache(table, registry.Options{TTL: ttl, Size: 1000,
		Timeout: settings.DefaultRegistryTimeout, Log: telemetry.NewLogger(&logs, slog.LevelDebug)})
	var throttle *types.ProvisionedThroughputExceededException
	e, err := c.Lookup(t.Context(), plans, digestID)
	if !errors.As(err, &throttle) || e.Result != registry.ResultError || gets.Load() != int64(retry.DefaultMaxAttempts) {
		t.Fatalf("lookup: %v (%s) after %d GetItems; want the throttle, an error, after %d", err, e.Result, gets.Load(), retry.DefaultMaxAttempts)
	}
	if line := logs.String(); !strings.Contains(line, registry.MsgReadFailed) || !strings.Contains(line, "ProvisionedThroughputExceeded") {
		t.Errorf("the registry's line does not name the throttle: %s", line)
	}

	// The flood's reads, all at once on a loaded machine, are given the longest
	// REGISTRY_TIMEOUT_MS: the test counts them, not their time. The table's retry quota
	// is the same.
	const keys = 200
	c = registry.NewCache(table, registry.Options{TTL: ttl, Size: 1000, Timeout: settings.MaxRegistryTimeout, Log: telemetry.NewLogger(io.Discard, slog.LevelDebug)})
	gets.Store(0)
	var wg sync.WaitGroup
	errs := make(chan error, keys)
	for i := range keys {
		wg.Go(func() {
			var throttle *types.ProvisionedThroughputExceededException // each its own: errors.As writes it
			if _, err := c.Lookup(context.Background(), plans, fmt.Sprintf("key:%032x", i)); !errors.As(err, &throttle) {
				errs <- err
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatalf("a lookup of the flood: %v, want the throttle", err)
	}
	quota := int64(retry.DefaultRetryRateTokens / retry.DefaultRetryCost)
	if got := gets.Load(); got > keys+quota {
		t.Errorf("%d lookups of new keys made %d GetItems: want at most one each and the quota's %d retries", keys, got, quota)
	}
}
