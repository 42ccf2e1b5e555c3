package checkclient_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"net/http"
	"strings"

	"github.com/aws/aws-lambda-go/events"
	awslambda "github.com/aws/aws-lambda-go/lambda"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/lambda"

	"github.com/bucketgate/bucketgate/checkapi"
	"github.com/bucketgate/bucketgate/checkclient"
	"github.com/bucketgate/bucketgate/ratelimitheaders"
)

// A service asks the check function whether tenant-42 may make one call on the pro
// plan, and backs off when it may not.
func Example() {
	ctx := context.Background()
	cfg, err := config.LoadDefaultConfig(ctx)
	if err != nil {
		log.Fatal(err)
	}
	checks := checkclient.New(lambda.NewFromConfig(cfg), "bucketgate-check")

	res, err := checks.Check(ctx, checkapi.Request{Key: "tenant-42", Plan: "pro"})
	var invalid *checkclient.InvalidRequestError
	switch {
	case errors.As(err, &invalid):
		log.Fatalf("fix the request: %s", invalid.Message)
	case err != nil:
		log.Fatal(err) // the invocation failed; the limiter did not decide
	case !res.Allowed:
		fmt.Printf("%s: retry in %v\n", res.Reason, res.RetryAfter())
	}
}

// A service whose work failed after its check gives the token back.
func ExampleClient_Refund() {
	ctx := context.Background()
	cfg, err := config.LoadDefaultConfig(ctx)
	if err != nil {
		log.Fatal(err)
	}
	checks := checkclient.New(lambda.NewFromConfig(cfg), "bucketgate-check")

	req := checkapi.Request{Key: "tenant-42", Plan: "pro", Cost: checkapi.Cost(5)}
	res, err := checks.Check(ctx, req)
	if err != nil || !res.Allowed {
		return
	}
	if err := doWork(ctx); err != nil {
		switch res, err := checks.Refund(ctx, req); {
		case err != nil:
			log.Print(err) // the tokens may stay spent
		case res.Reason != checkapi.ReasonOK: // Redis did not answer: maybe nothing given back
			log.Printf("refund %s: the tokens may stay spent", res.Reason)
		}
	}
}

// An operator lets an API key start afresh: its buckets of the pro plan, full again.
func ExampleClient_Reset() {
	ctx := context.Background()
	cfg, err := config.LoadDefaultConfig(ctx)
	if err != nil {
		log.Fatal(err)
	}
	checks := checkclient.New(lambda.NewFromConfig(cfg), "bucketgate-check")

	res, err := checks.Reset(ctx, checkapi.Request{Identity: "key:" + strings.Repeat("0f", 16), Plan: "pro"})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("%s: %d of %d left\n", res.Rule, res.Remaining, res.Limit)
}

// An LLM backend reserves the most tokens a completion may use, and settles what it
// used once the model has answered: the difference goes back to the key's buckets.
func ExampleClient_Settle() {
	ctx := context.Background()
	cfg, err := config.LoadDefaultConfig(ctx)
	if err != nil {
		log.Fatal(err)
	}
	checks := checkclient.New(lambda.NewFromConfig(cfg), "bucketgate-check")

	req := checkapi.Request{Key: "tenant-42", Plan: "pro"}
	maxTokens := int64(4000)
	res, err := checks.Reserve(ctx, checkapi.Request{Key: req.Key, Plan: req.Plan, Cost: &maxTokens})
	if err != nil || res.Reservation == "" {
		return // limited (res.RetryAfter()), degraded (nothing reserved), or no decision
	}
	used := complete(ctx, maxTokens) // the tokens the model really used
	switch res, err := checks.Settle(ctx, req, res.Reservation, used); {
	case err != nil:
		log.Print(err) // unsettled, the reservation stays charged at maxTokens
	case res.Reason != checkapi.ReasonOK: // Redis did not answer: maybe unsettled
		log.Printf("settle %s: send it again, or the reservation stays charged at maxTokens", res.Reason)
	}
}

// An LLM backend behind the authorizer: its route reserves the most tokens a completion
// may use (routes: [{method: POST, path: /v1/chat, reserve: 4096}], max_tokens), the
// authorizer's reservation reaches it in the X-RateLimit-Reservation header, and once
// the model has answered it settles the tokens used, with that alone.
func ExampleClient_SettleRequest() {
	ctx := context.Background()
	cfg, err := config.LoadDefaultConfig(ctx)
	if err != nil {
		log.Fatal(err)
	}
	checks := checkclient.New(lambda.NewFromConfig(cfg), "bucketgate-check")

	http.HandleFunc("POST /v1/chat", func(w http.ResponseWriter, r *http.Request) {
		used := complete(r.Context(), 4096)                    // the route's reserve, its max_tokens
		res, err := checks.SettleRequest(r.Context(), r, used) // checks: a checkclient.Client
		switch {
		case errors.Is(err, ratelimitheaders.ErrNoReservation): // nothing reserved, nothing to settle
		case err != nil:
			log.Print(err) // unsettled, the reservation stays charged at 4096
		case res.Reason != checkapi.ReasonOK: // Redis did not answer: maybe unsettled
			log.Printf("settle %s: send it again, or the reservation stays charged at 4096", res.Reason)
		}
		fmt.Fprintf(w, `{"usage":{"total_tokens":%d}}`, used)
	})
}

// The same LLM backend as a Lambda function behind a REST API's proxy integration: API
// Gateway maps no header into a proxy event, so an X-RateLimit-Reservation there is the
// client's own, if any; the authorizer's reservation is in the event's context. (An
// http.Handler served through an adapter reads it from the event's request context the
// adapter hands it.)
func ExampleClient_SettleReservation() {
	ctx := context.Background()
	cfg, err := config.LoadDefaultConfig(ctx)
	if err != nil {
		log.Fatal(err)
	}
	checks := checkclient.New(lambda.NewFromConfig(cfg), "bucketgate-check")

	awslambda.Start(func(ctx context.Context, req events.APIGatewayProxyRequest) (events.APIGatewayProxyResponse, error) {
		used := complete(ctx, 4096)
		if id := ratelimitheaders.ContextReservation(req.RequestContext.Authorizer); id != "" { // none: nothing reserved
			switch res, err := checks.SettleReservation(ctx, id, used); {
			case err != nil:
				log.Print(err) // unsettled, the reservation stays charged at 4096
			case res.Reason != checkapi.ReasonOK: // Redis did not answer: maybe unsettled
				log.Printf("settle %s: send it again, or the reservation stays charged at 4096", res.Reason)
			}
		}
		resp := events.APIGatewayProxyResponse{StatusCode: 200, Body: fmt.Sprintf(`{"usage":{"total_tokens":%d}}`, used)}
		ratelimitheaders.SetProxyResponse(&resp, &req)
		return resp, nil
	})
}

// An LLM backend whose client hung up before the model was called cancels the
// reservation, every token of its estimate back: with the request it serves, whose
// context is canceled then, which CancelRequest does not heed.
func ExampleClient_CancelRequest() {
	ctx := context.Background()
	cfg, err := config.LoadDefaultConfig(ctx)
	if err != nil {
		log.Fatal(err)
	}
	checks := checkclient.New(lambda.NewFromConfig(cfg), "bucketgate-check")

	http.HandleFunc("POST /v1/chat", func(w http.ResponseWriter, r *http.Request) {
		if r.Context().Err() != nil { // the client is gone: no completion to pay for
			_, err := checks.CancelRequest(r.Context(), r)
			if err != nil && !errors.Is(err, ratelimitheaders.ErrNoReservation) {
				log.Print(err) // uncancelled, the reservation stays charged at 4096
			}
			return
		}
		used := complete(r.Context(), 4096)
		if _, err := checks.SettleRequest(r.Context(), r, used); err != nil && !errors.Is(err, ratelimitheaders.ErrNoReservation) {
			log.Print(err)
		}
		fmt.Fprintf(w, `{"usage":{"total_tokens":%d}}`, used)
	})
}

// A streaming backend holds one of a key's five streams while it streams, and returns
// it when done (a lease not returned frees itself after TTLMS).
func ExampleClient_Release() {
	ctx := context.Background()
	cfg, err := config.LoadDefaultConfig(ctx)
	if err != nil {
		log.Fatal(err)
	}
	checks := checkclient.New(lambda.NewFromConfig(cfg), "bucketgate-check")

	req := checkapi.Request{Key: "tenant-42", Rules: []checkapi.Rule{{Name: "streams", Concurrency: 5}}}
	res, err := checks.Check(ctx, checkapi.Request{Key: req.Key, Rules: req.Rules, TTLMS: 600000})
	if err != nil || !res.Allowed {
		return // five streams in flight (res.RetryAfter()), or no decision
	}
	if res.Lease != "" { // none when Redis did not answer (degraded): nothing to return
		defer func() {
			switch res, err := checks.Release(ctx, req, res.Lease); { // idempotent: safe to retry
			case err != nil:
				log.Print(err) // the lease frees itself after TTLMS
			case res.Reason != checkapi.ReasonOK: // Redis did not answer: maybe not returned
				log.Printf("release %s: send it again, or the lease frees itself after TTLMS", res.Reason)
			}
		}()
	}
	_ = doWork(ctx) // the stream
}

// complete stands for an LLM call of at most maxTokens tokens; it returns those used.
func complete(_ context.Context, maxTokens int64) int64 { return maxTokens / 3 }

// doWork stands for the work a check guards.
func doWork(context.Context) error { return nil }
