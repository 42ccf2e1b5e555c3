package check

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/aws/aws-lambda-go/lambda"
	"github.com/aws/aws-lambda-go/lambda/messages"
	"github.com/aws/aws-sdk-go-v2/service/lambda/types"

	"github.com/bucketgate/bucketgate/checkapi"
	"github.com/bucketgate/bucketgate/checkclient"
	"github.com/bucketgate/bucketgate/internal/guard"
	"github.com/bucketgate/bucketgate/internal/testkit/lambdatest"
)

// clientFunction is the name clientOfHandler serves this handler as.
const clientFunction = "bucketgate-check"

// clientOfHandler returns a checkclient of this handler on a miniredis of its own,
// through the real AWS SDK and a loopback Lambda Invoke API (srv), and the miniredis.
func clientOfHandler(t *testing.T) (mr *miniredis.Miniredis, srv *lambdatest.Server, checks *checkclient.Client) {
	t.Helper()
	mr, client := startMiniredis(t)
	f := newFixture(t, client, nil, guard.Options{})
	srv = lambdatest.Start(t, map[string]lambda.Handler{clientFunction: lambda.NewHandler(f.h)})
	return mr, srv, checkclient.New(srv.Client(), clientFunction)
}

// TestClientEndToEnd runs checkclient, through the real AWS SDK and the Lambda Invoke
// API, against this handler on miniredis.
func TestClientEndToEnd(t *testing.T) {
	mr, srv, checks := clientOfHandler(t)
	ctx := context.Background()

	res, err := checks.Check(ctx, checkapi.Request{Key: "tenant-42", Plan: "pro"})
	if err != nil {
		t.Fatal(err)
	}
	want := checkapi.Response{Allowed: true, Reason: checkapi.ReasonOK, Limit: 100, Remaining: 99, ResetAfterMS: 20, Rule: "burst", Plan: "pro"}
	if !reflect.DeepEqual(res, want) {
		t.Fatalf("Check = %+v, want %+v", res, want)
	}

	peek, err := checks.Check(ctx, checkapi.Request{Key: "tenant-42", Plan: "pro", Cost: new(int64(0))})
	if err != nil || peek.Remaining != 99 || !peek.Allowed {
		t.Fatalf("peek = %+v, %v: want allowed with 99 remaining", peek, err)
	}

	rules := []checkapi.Rule{{Name: "burst", Capacity: 2, RefillPerSecond: 1}}
	results, err := checks.CheckBatch(ctx, []checkapi.Request{
		{Key: "user-1", Rules: rules, Cost: new(int64(2))},
		{Key: "user-1", Rules: rules},
		{Key: "user-2", Rules: rules},
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(results) != 3 || !results[0].Allowed || results[1].Allowed || results[1].RetryAfterMS != 1000 || !results[2].Allowed || results[2].Plan != "" {
		t.Fatalf("CheckBatch = %+v: want allowed, limited for 1 s (user-1 spent both tokens), allowed", results)
	}
	if got := srv.Invocations(clientFunction); got != 3 {
		t.Fatalf("%d invocations for 2 checks and a batch, want 3", got)
	}

	keysBefore := mr.Keys()
	_, err = checks.CheckBatch(ctx, []checkapi.Request{{Key: "user-3", Rules: rules}, {Key: "user-3", Rules: rules, Cost: new(int64(3))}})
	var invalid *checkclient.InvalidRequestError
	if !errors.As(err, &invalid) || !strings.HasPrefix(invalid.Message, "checks[1].cost: 3 exceeds capacity 2") || invalid.Function != clientFunction {
		t.Fatalf("invalid batch: error %v (%T), want an *InvalidRequestError naming checks[1].cost", err, err)
	}
	if keys := mr.Keys(); len(keys) != len(keysBefore) {
		t.Fatalf("an invalid batch wrote: keys %v became %v", keysBefore, keys)
	}

	_, err = checkclient.New(srv.Client(), "no-such-function").Check(ctx, checkapi.Request{Key: "a"})
	var notFound *types.ResourceNotFoundException
	if !errors.As(err, &notFound) {
		t.Fatalf("unknown function: error %v (%T), want the SDK's *types.ResourceNotFoundException", err, err)
	}
}

// TestSettleWithTheRequestThatReserved: the request a Reserve (or an acquiring Check)
// was sent with, its cost, ttlMs and requestId included, settles, cancels or releases
// what it holds as it is, through checkclient and this handler: a settle, a cancel and
// a release take the key and rules from it, and none of what only a reserve or an
// acquire has (which the function refuses on them).
func TestSettleWithTheRequestThatReserved(t *testing.T) {
	_, _, checks := clientOfHandler(t)
	ctx := context.Background()
	rules := []checkapi.Rule{{Name: "tokens", Capacity: 100000, RefillPerSecond: 1}, {Name: "streams", Concurrency: 5}}
	reserve := checkapi.Request{Key: "llm-app", Rules: rules, Cost: new(int64(4000)), TTLMS: 60000, RequestID: "chat-7"}
	acquire := checkapi.Request{Key: "llm-app", Rules: rules, TTLMS: 60000, RequestID: "stream-7"}
	for _, tc := range []struct {
		name string
		hold checkapi.Request                                                              // what holds
		end  func(req checkapi.Request, held checkapi.Response) (checkapi.Response, error) // ends it with req, the holding request
		ok   func(checkapi.Response) bool
	}{
		{"settle", reserve, func(req checkapi.Request, held checkapi.Response) (checkapi.Response, error) {
			return checks.Settle(ctx, req, held.Reservation, 1250)
		}, func(r checkapi.Response) bool { return r.Settled == 1250 }},
		{"settle with the reserve's op", withOp(reserve, checkapi.OpReserve), func(req checkapi.Request, held checkapi.Response) (checkapi.Response, error) {
			return checks.Settle(ctx, req, held.Reservation, 1250)
		}, func(r checkapi.Response) bool { return r.Settled == 1250 }},
		{"cancel", reserve, func(req checkapi.Request, held checkapi.Response) (checkapi.Response, error) {
			return checks.Cancel(ctx, req, held.Reservation)
		}, func(r checkapi.Response) bool { return r.Reason == checkapi.ReasonOK && !r.Replayed }},
		{"release of a reserve's lease", reserve, func(req checkapi.Request, held checkapi.Response) (checkapi.Response, error) {
			return checks.Release(ctx, req, held.Lease)
		}, func(r checkapi.Response) bool { return r.Released != nil && *r.Released }},
		{"release of a reserve's lease, with its op", withOp(reserve, checkapi.OpReserve), func(req checkapi.Request, held checkapi.Response) (checkapi.Response, error) {
			return checks.Release(ctx, req, held.Lease)
		}, func(r checkapi.Response) bool { return r.Released != nil && *r.Released }},
		{"release of an acquire's lease", acquire, func(req checkapi.Request, held checkapi.Response) (checkapi.Response, error) {
			return checks.Release(ctx, req, held.Lease)
		}, func(r checkapi.Response) bool { return r.Released != nil && *r.Released }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.hold.RequestID += "/" + tc.name // a new request each time
			var held checkapi.Response
			var err error
			if tc.hold.Op == checkapi.OpReserve || tc.hold.Cost != nil {
				held, err = checks.Reserve(ctx, tc.hold)
			} else {
				held, err = checks.Check(ctx, tc.hold)
			}
			if err != nil || held.Lease == "" {
				t.Fatalf("hold = %+v, %v", held, err)
			}
			if res, err := tc.end(tc.hold, held); err != nil || !tc.ok(res) {
				t.Fatalf("= %+v, %v", res, err)
			}
		})
	}
}

// withOp returns req with op.
func withOp(req checkapi.Request, op checkapi.Op) checkapi.Request {
	req.Op = op
	return req
}

// timedOutOnce is this handler as a function whose first run decides and then times
// out (Sandbox.Timedout, its answer lost), as a Lambda function that ran past its
// timeout after Redis answered; later runs answer.
type timedOutOnce struct {
	h    lambda.Handler
	runs int
}

func (f *timedOutOnce) Invoke(ctx context.Context, payload []byte) ([]byte, error) {
	f.runs++
	out, err := f.h.Invoke(ctx, payload)
	if f.runs == 1 {
		return nil, messages.InvokeResponse_Error{Type: "Sandbox.Timedout", Message: "Task timed out after 3.00 seconds"}
	}
	return out, err
}

// A call that takes or gives back tokens, whose first run decided and then timed out,
// is sent again by checkclient with its requestId and answered with the first decision
// (Replayed): the tokens are taken (or given back) once, and what the first run made (a
// reservation, a lease) is what the answer carries, so that it can be settled or
// released.
func TestClientRetryAfterATimeoutThatDecided(t *testing.T) {
	ctx := context.Background()
	rules := []checkapi.Rule{{Name: "burst", Capacity: 10, RefillPerSecond: 0.001}, {Name: "streams", Concurrency: 2}}
	buckets := []checkapi.Rule{rules[0]}
	for _, tc := range []struct {
		name string
		call func(*checkclient.Client) (checkapi.Response, error)
		left int64 // tokens left after the call
	}{
		{"check", func(c *checkclient.Client) (checkapi.Response, error) {
			return c.Check(ctx, checkapi.Request{Key: "k", Rules: buckets, Cost: new(int64(3))})
		}, 7},
		{"reserve", func(c *checkclient.Client) (checkapi.Response, error) {
			return c.Reserve(ctx, checkapi.Request{Key: "k", Rules: buckets, Cost: new(int64(4))})
		}, 6},
		{"acquire", func(c *checkclient.Client) (checkapi.Response, error) {
			return c.Check(ctx, checkapi.Request{Key: "k", Rules: rules})
		}, 9},
		{"batch", func(c *checkclient.Client) (checkapi.Response, error) {
			res, err := c.CheckBatch(ctx, []checkapi.Request{{Key: "k", Rules: buckets, Cost: new(int64(2))}, {Key: "k", Rules: buckets, Cost: new(int64(5))}})
			if err != nil {
				return checkapi.Response{}, err
			}
			return res[1], nil
		}, 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			mr, client := startMiniredis(t)
			mr.SetTime(time.Now()) // the acquire's replayed lease holds by the client's clock too
			f := &timedOutOnce{h: lambda.NewHandler(newFixture(t, client, nil, guard.Options{}).h)}
			srv := lambdatest.Start(t, map[string]lambda.Handler{clientFunction: f})
			checks := checkclient.New(srv.Client(), clientFunction)
			res, err := tc.call(checks)
			if err != nil || !res.Allowed || !res.Replayed || f.runs != 2 {
				t.Fatalf("%+v, %v after %d runs: want the first decision, replayed, after 2", res, err, f.runs)
			}
			if tc.name == "reserve" && res.Reservation == "" || tc.name == "acquire" && res.Lease == "" {
				t.Fatalf("%+v: want the first run's reservation or lease", res)
			}
			streams := int64(2) // leases left
			if tc.name == "acquire" {
				streams = 1
			}
			peek, err := checks.Check(ctx, checkapi.Request{Key: "k", Rules: rules, Cost: new(int64(0))})
			if err != nil || len(peek.Rules) != 2 || peek.Rules[0].Remaining != tc.left || peek.Rules[1].Remaining != streams {
				t.Fatalf("peek %+v, %v: want %d tokens and %d leases left, taken once (keys %v)", peek, err, tc.left, streams, mr.Keys())
			}
		})
	}
}

// An acquire's requestId is remembered past its lease's ttlMs: sent again after the
// lease expired (a job redelivered with its id), it is a replay of the first admission
// while another request holds the only slot of concurrency 1. checkclient answers
// ErrLeaseExpired instead, so that two requests never run under one slot; a new
// requestId is denied while the other holds it.
func TestClientReplayedLeaseExpired(t *testing.T) {
	ctx := context.Background()
	mr, _, checks := clientOfHandler(t)
	now := time.Now()
	mr.SetTime(now.Add(-time.Minute)) // Redis's clock: the job's lease expires 50 s ago by now
	job := checkapi.Request{Key: "k", Rules: []checkapi.Rule{{Name: "streams", Concurrency: 1}}, TTLMS: 10000, RequestID: "job-7"}
	first, err := checks.Check(ctx, job)
	if err != nil || !first.Allowed || first.Lease == "" {
		t.Fatalf("first acquire: %+v, %v: want a lease", first, err)
	}
	mr.SetTime(now)
	other, err := checks.Check(ctx, checkapi.Request{Key: "k", Rules: job.Rules, TTLMS: 600000})
	if err != nil || !other.Allowed || other.Lease == "" {
		t.Fatalf("another acquire once the job's lease expired: %+v, %v: want its slot", other, err)
	}
	res, err := checks.Check(ctx, job)
	if !errors.Is(err, checkclient.ErrLeaseExpired) || res.Allowed {
		t.Fatalf("the job sent again: %+v, %v: want ErrLeaseExpired, not a second admission under concurrency 1", res, err)
	}
	again := job
	again.RequestID = "job-7-again"
	if res, err := checks.Check(ctx, again); err != nil || res.Allowed || res.Rule != "streams" {
		t.Fatalf("the job with a new requestId: %+v, %v: want denied by streams while the other holds it", res, err)
	}
}

// A reserve's requestId is remembered past its reservation's ttlMs: sent again after
// the reservation expired (a job redelivered with its id), it replays the first
// admission, whose reservation no settle can end any more (a conflict: it stays charged
// at its estimate). checkclient answers ErrReservationExpired instead of an admission
// whose work could never be settled; a new requestId reserves again.
func TestClientReplayedReservationExpired(t *testing.T) {
	ctx := context.Background()
	mr, _, checks := clientOfHandler(t)
	now := time.Now()
	mr.SetTime(now.Add(-time.Minute)) // Redis's clock: the job's reservation expires 50 s ago by now
	rules := []checkapi.Rule{{Name: "tokens", Capacity: 100, RefillPerSecond: 0.001}}
	job := checkapi.Request{Key: "k", Rules: rules, Cost: new(int64(10)), TTLMS: 10000, RequestID: "job-7"}
	first, err := checks.Reserve(ctx, job)
	if err != nil || !first.Allowed || first.Reservation == "" {
		t.Fatalf("first reserve: %+v, %v: want a reservation", first, err)
	}
	mr.SetTime(now)
	var conflict *checkclient.FunctionError
	if _, err := checks.Settle(ctx, job, first.Reservation, 4); !errors.As(err, &conflict) || conflict.Type != checkapi.ErrorTypeConflict {
		t.Fatalf("settle of the expired reservation: %v: want a ConflictError", err)
	}
	res, err := checks.Reserve(ctx, job)
	if !errors.Is(err, checkclient.ErrReservationExpired) || errors.Is(err, checkclient.ErrLeaseExpired) || res.Allowed {
		t.Fatalf("the job sent again: %+v, %v: want ErrReservationExpired alone, not an admission it cannot settle", res, err)
	}
	again := job
	again.RequestID = "job-7-again"
	if res, err := checks.Reserve(ctx, again); err != nil || !res.Allowed || res.Replayed || res.Reservation == "" {
		t.Fatalf("the job with a new requestId: %+v, %v: want a new reservation", res, err)
	}
}

// checkclient judges a replayed lease's expiresAt, which is Redis's, by the client's
// own clock: the answer carries no time of Redis's (a replay's figures are the first
// decision's). So a clock apart from Redis's moves the line by as much, both ways, as
// docs/check.md and ErrLeaseExpired say: behind, a lease Redis has expired passes as
// held; ahead, one Redis holds is refused.
func TestClientJudgesReplayedLeasesByItsOwnClock(t *testing.T) {
	ctx := context.Background()
	streams := []checkapi.Rule{{Name: "streams", Concurrency: 1}}
	for _, tc := range []struct {
		name         string
		redis        time.Duration // Redis's clock, from the client's, at the acquire
		later        time.Duration // and at the replay
		expired      bool          // by Redis's clock, at the replay
		errLeaseGone bool          // what checkclient answers
	}{
		{"in step, held", 0, 0, false, false},
		{"in step, expired", -time.Minute, -time.Minute + 20*time.Second, true, true},
		{"client behind Redis, expired by Redis", time.Minute, time.Minute + 20*time.Second, true, false},
		{"client ahead of Redis, held by Redis", -time.Minute, -time.Minute, false, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			mr, _, checks := clientOfHandler(t)
			now := time.Now()
			mr.SetTime(now.Add(tc.redis))
			job := checkapi.Request{Key: "k", Rules: streams, TTLMS: 10000, RequestID: "job-7"}
			if first, err := checks.Check(ctx, job); err != nil || first.Lease == "" {
				t.Fatalf("first acquire: %+v, %v: want a lease", first, err)
			}
			mr.SetTime(now.Add(tc.later))
			peek, err := checks.Check(ctx, checkapi.Request{Key: "k", Rules: streams, Cost: new(int64(0))})
			if err != nil || len(peek.Rules) != 1 || (peek.Rules[0].Remaining == 1) != tc.expired {
				t.Fatalf("peek %+v, %v: want the lease expired by Redis %v", peek, err, tc.expired)
			}
			res, err := checks.Check(ctx, job)
			switch {
			case tc.errLeaseGone && !errors.Is(err, checkclient.ErrLeaseExpired):
				t.Fatalf("replay: %+v, %v: want ErrLeaseExpired", res, err)
			case !tc.errLeaseGone && (err != nil || !res.Replayed || res.Lease == ""):
				t.Fatalf("replay: %+v, %v: want the first admission, replayed", res, err)
			}
		})
	}
}

// A batch of which one settle conflicts is that conflict's error, with no answers:
// the reserve decided beside it stands, charged, and its reservation is read by
// sending it again with its requestId, which answers it replayed, charged once.
func TestClientBatchConflictLeavesTheOthersToReplay(t *testing.T) {
	ctx := context.Background()
	mr, _, checks := clientOfHandler(t)
	mr.SetTime(time.Now()) // Redis's clock, as checkclient judges a replayed reservation by its own
	rules := []checkapi.Rule{{Name: "tokens", Capacity: 10, RefillPerSecond: 0.001}}
	reserve := checkapi.Request{Key: "k", Rules: rules, Op: checkapi.OpReserve, Cost: new(int64(4)), RequestID: "job-1"}
	settle := checkapi.Request{Key: "k", Rules: rules, Op: checkapi.OpSettle, Cost: new(int64(1)), Reservation: "r2.AAAA.AAAAAAAAAAAAAAAAAAAAAA"}
	res, err := checks.CheckBatch(ctx, []checkapi.Request{reserve, settle})
	var fe *checkclient.FunctionError
	if !errors.As(err, &fe) || fe.Type != checkapi.ErrorTypeConflict || !strings.Contains(fe.Message, "checks[0] was decided all the same") || res != nil {
		t.Fatalf("%+v, %v: want a ConflictError naming checks[0] as decided, and no answers", res, err)
	}
	again, err := checks.Reserve(ctx, reserve)
	if err != nil || !again.Replayed || again.Reservation == "" {
		t.Fatalf("the reserve sent again: %+v, %v: want its first decision, replayed, with its reservation", again, err)
	}
	peek, err := checks.Check(ctx, checkapi.Request{Key: "k", Rules: rules, Cost: new(int64(0))})
	if err != nil || peek.Remaining != 6 {
		t.Fatalf("peek %+v, %v: want 6 tokens left, the estimate taken once", peek, err)
	}
}

// A release whose first run returned the lease and then timed out (its answer lost) is
// sent again by checkclient, and that run finds the lease released: its answer says
// released false, though this very call returned the lease, as Release's doc and
// docs/check.md say. The slot is free either way.
func TestClientReleaseRetriedAfterATimeout(t *testing.T) {
	ctx := context.Background()
	_, client := startMiniredis(t)
	f := &timedOutOnce{h: lambda.NewHandler(newFixture(t, client, nil, guard.Options{}).h), runs: 1} // the acquire answers
	srv := lambdatest.Start(t, map[string]lambda.Handler{clientFunction: f})
	checks := checkclient.New(srv.Client(), clientFunction)
	acquire := checkapi.Request{Key: "k", Rules: []checkapi.Rule{{Name: "streams", Concurrency: 1}}}
	held, err := checks.Check(ctx, acquire)
	if err != nil || held.Lease == "" {
		t.Fatalf("acquire: %+v, %v: want a lease", held, err)
	}
	f.runs = 0 // the release's first run times out
	res, err := checks.Release(ctx, acquire, held.Lease)
	if err != nil || res.Released == nil || *res.Released || f.runs != 2 {
		t.Fatalf("release: %+v, %v after %d runs: want released false, the second run's answer, after 2", res, err, f.runs)
	}
	if next, err := checks.Check(ctx, acquire); err != nil || !next.Allowed {
		t.Fatalf("acquire after the release: %+v, %v: want the slot free", next, err)
	}
}

// A denial is a first decision too: sent again with its requestId after its
// retryAfterMs, when the tokens are there, it is the denial again, replayed, its wait
// the first one's, for as long as the requestId is remembered; a new requestId is
// decided. (A job queue that redelivers a limited job under its id must give the retry
// a new one, as checkapi.Request.RequestID and docs/check.md say.)
func TestClientDenialReplayedPastItsWait(t *testing.T) {
	ctx := context.Background()
	mr, _, checks := clientOfHandler(t)
	now := time.Now()
	mr.SetTime(now)
	rules := []checkapi.Rule{{Name: "burst", Capacity: 1, RefillPerSecond: 1}}
	if res, err := checks.Check(ctx, checkapi.Request{Key: "k", Rules: rules}); err != nil || !res.Allowed {
		t.Fatalf("first: %+v, %v: want allowed", res, err)
	}
	job := checkapi.Request{Key: "k", Rules: rules, RequestID: "job-7"}
	denied, err := checks.Check(ctx, job)
	if err != nil || denied.Allowed || denied.RetryAfterMS < 1 {
		t.Fatalf("the job: %+v, %v: want limited", denied, err)
	}
	mr.SetTime(now.Add(time.Duration(denied.RetryAfterMS)*time.Millisecond + time.Second)) // the tokens are there
	again, err := checks.Check(ctx, job)
	if err != nil || again.Allowed || !again.Replayed || again.RetryAfterMS != denied.RetryAfterMS {
		t.Fatalf("the job again past its wait: %+v, %v: want its denial replayed, its wait the first one's", again, err)
	}
	job.RequestID = "job-7-retry"
	if res, err := checks.Check(ctx, job); err != nil || !res.Allowed || res.Replayed {
		t.Fatalf("the job with a new requestId: %+v, %v: want allowed", res, err)
	}
}

// TestClientRefusesAMadeKey: an API key bucketgate made, given as a tenant's key or in
// an identity, or as a plan, a rule's name, a day, a reservation or a lease, is refused by checkclient before it is sent (the key would leave the
// process in the payload, and may reach Lambda's logs), with the message the function
// gives it.
func TestClientRefusesAMadeKey(t *testing.T) {
	_, srv, checks := clientOfHandler(t)
	ctx := context.Background()
	tests := []struct {
		name    string
		call    func() error
		payload string // the request the function would get
	}{
		{"a check's key", func() error { _, err := checks.Check(ctx, checkapi.Request{Key: madeKey, Plan: "pro"}); return err }, `{"key":"` + madeKey + `","plan":"pro"}`},
		{"a reserve's key", func() error { _, err := checks.Reserve(ctx, checkapi.Request{Key: madeKey, Plan: "pro"}); return err }, `{"key":"` + madeKey + `","plan":"pro","op":"reserve"}`},
		{"a tenant's identity", func() error {
			_, err := checks.Reset(ctx, checkapi.Request{Identity: "tenant:" + madeKey, Plan: "pro"})
			return err
		}, `{"identity":"tenant:` + madeKey + `","plan":"pro","op":"reset"}`},
		{"a key's identity", func() error { _, err := checks.Usage(ctx, checkapi.Request{Identity: "key:" + madeKey}); return err }, `{"identity":"key:` + madeKey + `","op":"usage"}`},
		{"a key holding one", func() error {
			_, err := checks.Check(ctx, checkapi.Request{Key: "Bearer " + madeKey, Plan: "pro"})
			return err
		}, `{"key":"Bearer ` + madeKey + `","plan":"pro"}`},
		{"an identity without a kind", func() error {
			_, err := checks.Reset(ctx, checkapi.Request{Identity: madeKey, Plan: "pro"})
			return err
		}, `{"identity":"` + madeKey + `","plan":"pro","op":"reset"}`},
		{"an identity holding one", func() error {
			_, err := checks.Reset(ctx, checkapi.Request{Identity: "tenant:acme/" + madeKey, Plan: "pro"})
			return err
		}, `{"identity":"tenant:acme/` + madeKey + `","plan":"pro","op":"reset"}`},
		{"a plan", func() error {
			_, err := checks.Check(ctx, checkapi.Request{Key: "tenant-1", Plan: madeKey})
			return err
		}, `{"key":"tenant-1","plan":"` + madeKey + `"}`},
		{"a reservation", func() error { _, err := checks.SettleReservation(ctx, madeKey, 1); return err }, `{"op":"settle","cost":1,"reservation":"` + madeKey + `"}`},
		{"a reservation holding one", func() error {
			_, err := checks.Cancel(ctx, checkapi.Request{Key: "tenant-1", Plan: "pro"}, "Bearer "+madeKey)
			return err
		}, `{"key":"tenant-1","plan":"pro","op":"cancel","reservation":"Bearer ` + madeKey + `"}`},
		{"a lease", func() error { _, err := checks.ReleaseLease(ctx, madeKey); return err }, `{"op":"release","lease":"` + madeKey + `"}`},
		{"a rule's name", func() error {
			_, err := checks.Check(ctx, checkapi.Request{Key: "tenant-1", Rules: []checkapi.Rule{{Name: madeKey, Capacity: 10, RefillPerSecond: 1}}})
			return err
		}, `{"key":"tenant-1","rules":[{"name":"` + madeKey + `","capacity":10,"refillPerSecond":1}]}`},
		{"a usage's day", func() error {
			_, err := checks.Usage(ctx, checkapi.Request{Key: "tenant-1", From: madeKey})
			return err
		}, `{"key":"tenant-1","op":"usage","from":"` + madeKey + `"}`},
		{"a batch's key", func() error {
			_, err := checks.CheckBatch(ctx, []checkapi.Request{{Key: "tenant-1", Plan: "pro"}, {Key: madeKey, Plan: "pro"}})
			return err
		}, `{"checks":[` + validCheck + `,{"key":"` + madeKey + `","plan":"pro"}]}`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			before := srv.Invocations(clientFunction)
			err := tc.call()
			var invalid *checkclient.InvalidRequestError
			if !errors.As(err, &invalid) || !invalid.Local || srv.Invocations(clientFunction) != before {
				t.Fatalf("error %v, %d invocations: want an *InvalidRequestError of the client's, nothing sent", err, srv.Invocations(clientFunction)-before)
			}
			if want := refused(t, tc.payload); invalid.Message != want {
				t.Errorf("the client's message %q\nwant the function's %q", invalid.Message, want)
			}
			if strings.Contains(err.Error(), madeKey[3:]) {
				t.Errorf("error %v quotes the key", err)
			}
		})
	}
}
