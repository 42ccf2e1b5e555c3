package checkclient_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/aws-sdk-go-v2/credentials"
	awslambda "github.com/aws/aws-sdk-go-v2/service/lambda"

	"github.com/bucketgate/bucketgate/checkapi"
	"github.com/bucketgate/bucketgate/checkclient"
	"github.com/bucketgate/bucketgate/internal/testkit/lambdatest"
)

// failure is how the first attempt of an invocation fails in TestRetries.
type failure int

const (
	// throttled: Lambda refuses the invocation with 429, before the function runs.
	throttled failure = iota
	// failedAfterRun: the function ran, and the service failed after it with a 500.
	failedAfterRun
	// refused: the connection is refused, so nothing reaches Lambda.
	refused
)

// flaky serves the Invoke API, failing the first invocation as first says and answering
// every later one with a decision (one per check of a batch). Its client retries up to
// three times without waiting.
func flaky(t *testing.T, first failure, opts ...checkclient.Option) (*checkclient.Client, *atomic.Int32, *[]string) {
	t.Helper()
	var invocations atomic.Int32
	var ids []string // the requestIds of every invocation, in order (a batch's, joined)
	ok := checkapi.Response{Allowed: true, Reason: checkapi.ReasonOK}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var batch struct {
			checkapi.Batch
			checkapi.Request
		}
		if err := json.NewDecoder(r.Body).Decode(&batch); err != nil {
			t.Errorf("request body: %v", err)
		}
		id := batch.RequestID
		for _, c := range batch.Checks {
			id += "," + c.RequestID
		}
		ids = append(ids, id)
		n := invocations.Add(1)
		switch {
		case n == 1 && first == throttled:
			lambdatest.ServiceError(w, http.StatusTooManyRequests, "TooManyRequestsException", "Rate exceeded")
		case n == 1 && first == failedAfterRun:
			lambdatest.ServiceError(w, http.StatusInternalServerError, "ServiceException", "internal failure")
		case batch.Checks != nil:
			results := make([]checkapi.Response, len(batch.Checks))
			for i := range results {
				results[i] = ok
			}
			_ = json.NewEncoder(w).Encode(map[string][]checkapi.Response{"results": results})
		default:
			_ = json.NewEncoder(w).Encode(ok)
		}
	}))
	t.Cleanup(srv.Close)

	transport := srv.Client().Transport.(*http.Transport).Clone()
	if first == refused {
		closed, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		closedAddr := closed.Addr().String()
		_ = closed.Close()
		var dials atomic.Int32
		var d net.Dialer
		transport.DialContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
			if dials.Add(1) == 1 {
				addr = closedAddr
			}
			return d.DialContext(ctx, network, addr)
		}
	}
	noWait := retry.BackoffDelayerFunc(func(int, error) (time.Duration, error) { return 0, nil })
	client := awslambda.New(awslambda.Options{
		BaseEndpoint: aws.String(srv.URL),
		Region:       lambdatest.Region,
		Credentials:  credentials.NewStaticCredentialsProvider("AKIDTEST", "secret", ""),
		HTTPClient:   &http.Client{Transport: transport},
		Retryer:      retry.NewStandard(func(o *retry.StandardOptions) { o.MaxAttempts, o.Backoff = 3, noWait }),
	})
	return checkclient.New(client, "fn", opts...), &invocations, &ids
}

// Every invocation keeps the client's retries, one that takes or gives back tokens with
// the same requestId on every attempt, so that the function decides it once. Without
// requestIds (WithoutRequestIDs), one that takes or gives back tokens is sent again only
// when the function did not run (a throttle, a refused connection): after a failure
// that may have come after it ran, a second run would take or give back the tokens
// twice; a peek and a reset keep the client's retries.
func TestRetries(t *testing.T) {
	ctx := context.Background()
	peek := checkapi.Request{Key: "k", Cost: checkapi.Cost(0)}
	refund := checkapi.Request{Key: "k", Plan: "free", Op: checkapi.OpRefund}
	calls := map[string]func(c *checkclient.Client) error{
		"check": func(c *checkclient.Client) error { _, err := c.Check(ctx, checkapi.Request{Key: "k"}); return err },
		"check of cost 5": func(c *checkclient.Client) error {
			_, err := c.Check(ctx, checkapi.Request{Key: "k", Cost: checkapi.Cost(5)})
			return err
		},
		"peek": func(c *checkclient.Client) error { _, err := c.Check(ctx, peek); return err },
		"refund": func(c *checkclient.Client) error {
			_, err := c.Refund(ctx, checkapi.Request{Key: "k", Plan: "free"})
			return err
		},
		"refund through Check": func(c *checkclient.Client) error { _, err := c.Check(ctx, refund); return err },
		"reset": func(c *checkclient.Client) error {
			_, err := c.Reset(ctx, checkapi.Request{Key: "k", Plan: "free"})
			return err
		},
		"batch of peeks": func(c *checkclient.Client) error {
			_, err := c.CheckBatch(ctx, []checkapi.Request{peek, peek})
			return err
		},
		"batch with a check": func(c *checkclient.Client) error {
			_, err := c.CheckBatch(ctx, []checkapi.Request{peek, {Key: "k"}})
			return err
		},
		"batch with a refund": func(c *checkclient.Client) error {
			_, err := c.CheckBatch(ctx, []checkapi.Request{peek, refund})
			return err
		},
		"reserve": func(c *checkclient.Client) error {
			_, err := c.Reserve(ctx, checkapi.Request{Key: "k", Cost: checkapi.Cost(100)})
			return err
		},
		"settle": func(c *checkclient.Client) error {
			_, err := c.Settle(ctx, checkapi.Request{Key: "k"}, "r1.n.m", 80)
			return err
		},
		"cancel": func(c *checkclient.Client) error {
			_, err := c.Cancel(ctx, checkapi.Request{Key: "k"}, "r1.n.m")
			return err
		},
		"settle by the reservation alone": func(c *checkclient.Client) error {
			_, err := c.SettleReservation(ctx, "r2.n.m", 80)
			return err
		},
		"release": func(c *checkclient.Client) error {
			_, err := c.Release(ctx, checkapi.Request{Key: "k"}, "r2.n.m")
			return err
		},
	}
	// sentAgain lists the calls a failure that may have come after the function ran
	// sends again.
	// without requestIds (with them, every call is).
	sentAgain := map[string]bool{"peek": true, "reset": true, "batch of peeks": true, "settle": true, "cancel": true, "release": true, "settle by the reservation alone": true}
	for _, ids := range []bool{true, false} {
		for name, call := range calls {
			for _, f := range []struct {
				name  string
				first failure
			}{{"throttled", throttled}, {"refused", refused}, {"failed after it ran", failedAfterRun}} {
				t.Run(fmt.Sprintf("requestIds %v/%s/%s", ids, name, f.name), func(t *testing.T) {
					var opts []checkclient.Option
					if !ids {
						opts = append(opts, checkclient.WithoutRequestIDs())
					}
					c, invocations, seen := flaky(t, f.first, opts...)
					err := call(c)
					again := ids || f.first != failedAfterRun || sentAgain[name]
					want := int32(1)
					if f.first != refused && again {
						want = 2 // a refused connection never reaches the server
					}
					if again != (err == nil) || invocations.Load() != want {
						t.Fatalf("error %v after %d invocations, want sent again %v (%d invocations)", err, invocations.Load(), again, want)
					}
					if len(*seen) == 2 && (*seen)[0] != (*seen)[1] {
						t.Fatalf("requestIds %q: want the same on every attempt", *seen)
					}
					if withID := strings.Trim(strings.Join(*seen, ""), ",") != ""; withID != (ids && !sentAgain[name]) {
						t.Fatalf("requestIds %q with requestIds %v", *seen, ids)
					}
				})
			}
		}
	}
}
