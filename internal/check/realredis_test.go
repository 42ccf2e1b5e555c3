package check

import (
	"context"
	"encoding/json"
	"maps"
	"strings"
	"testing"
	"time"

	"github.com/bucketgate/bucketgate/checkapi"
	"github.com/bucketgate/bucketgate/internal/bucket"
	"github.com/bucketgate/bucketgate/internal/guard"
	"github.com/bucketgate/bucketgate/internal/telemetry"
	"github.com/bucketgate/bucketgate/internal/testkit/redistest"
	"github.com/bucketgate/bucketgate/internal/testkit/samples"
)

// slowRule refills so slowly (one token in 1000 s) that a test's own duration cannot
// change a floor of its tokens: decisions on a real server's clock stay exact.
const slowRule = `{"name":"slow","capacity":10,"refillPerSecond":0.001}`

func TestRealRedis(t *testing.T) {
	srv := redistest.Start(t)
	client := redistest.Client(t, srv.Addr)
	f := newFixture(t, client, nil, guard.Options{})
	ctx := context.Background()
	key := bucket.Key(identityPrefix + "tenant-42")
	hgetall := func() map[string]string {
		t.Helper()
		m, err := client.Do(ctx, client.B().Hgetall().Key(key).Build()).AsStrMap()
		if err != nil {
			t.Fatalf("HGETALL %s: %v", key, err)
		}
		return m
	}

	// The sample single check decides exactly on a new bucket, whatever the clock.
	assertJSONEqual(t, f.invokeOK(t, samples.Read(t, "check-single.json")),
		`{"allowed":true,"reason":"ok","limit":100,"remaining":99,"retryAfterMs":0,"resetAfterMs":20,"rule":"burst","plan":"pro"}`)

	single := decodeResponse(t, f.invokeOK(t, []byte(`{"key":"tenant-42","rules":[`+slowRule+`]}`)))
	if !single.Allowed || single.Remaining != 9 || single.Rule != "slow" || single.Limit != 10 || single.Plan != "" {
		t.Fatalf("single check: %+v", single)
	}
	state := hgetall()
	for _, field := range []string{"burst:tokens", "burst:ts", "slow:tokens", "slow:ts"} {
		if _, ok := state[field]; !ok {
			t.Fatalf("HGETALL %s = %v: no %s", key, state, field)
		}
	}

	peek := decodeResponse(t, f.invokeOK(t, []byte(`{"key":"tenant-42","rules":[`+slowRule+`],"cost":0}`)))
	if !peek.Allowed || peek.Remaining != 9 {
		t.Fatalf("peek: %+v, want allowed with 9 remaining", peek)
	}
	if after := hgetall(); !maps.Equal(state, after) {
		t.Fatalf("a peek changed %s: %v became %v", key, state, after)
	}

	var batch checkapi.BatchResult
	out := f.invokeOK(t, []byte(`{"checks":[
		{"key":"tenant-42","rules":[`+slowRule+`],"cost":5},
		{"key":"tenant-42","rules":[`+slowRule+`],"cost":5},
		{"key":"tenant-42","rules":[`+slowRule+`],"cost":4}]}`))
	if err := json.Unmarshal(out, &batch); err != nil {
		t.Fatal(err)
	}
	r := batch.Results
	switch {
	case len(r) != 3:
		t.Fatalf("%d results for 3 checks: %s", len(r), out)
	case !r[0].Allowed || r[0].Remaining != 4:
		t.Fatalf("results[0] %+v: want allowed, 4 left", r[0])
	case r[1].Allowed || r[1].Reason != checkapi.ReasonLimited || r[1].Remaining != 4 || r[1].RetryAfter() <= 990*time.Second || r[1].RetryAfter() > 1000*time.Second:
		t.Fatalf("results[1] %+v: want limited, 4 left, about 1000 s to wait for the fifth token", r[1])
	case !r[2].Allowed || r[2].Remaining != 0:
		t.Fatalf("results[2] %+v: want allowed (a denied check takes nothing), 0 left", r[2])
	}
}

func decodeResponse(t *testing.T, out []byte) checkapi.Response {
	t.Helper()
	var r checkapi.Response
	if err := json.Unmarshal(out, &r); err != nil {
		t.Fatalf("%s: %v", out, err)
	}
	return r
}

func TestRedisFailures(t *testing.T) {
	tests := []struct {
		name        string
		opts        guard.Options
		fail        func(*testing.T, *redistest.Server)
		want        string
		wantFailure guard.Failure // the reason of FailClosed (failing closed) or FailOpen (failing open)
	}{
		{
			name:        "fail closed: server stopped",
			fail:        stop,
			want:        `{"allowed":false,"reason":"unavailable","limit":100,"remaining":0,"retryAfterMs":1000,"resetAfterMs":0,"rule":"burst","plan":"pro"}`,
			wantFailure: guard.FailureRedisError,
		},
		{
			name:        "fail open: server stopped",
			opts:        guard.Options{FailOpen: true},
			fail:        stop,
			want:        `{"allowed":true,"reason":"degraded","limit":100,"remaining":0,"retryAfterMs":0,"resetAfterMs":0,"rule":"burst","plan":"pro"}`,
			wantFailure: guard.FailureRedisError,
		},
		{
			name:        "fail closed: server paused past the deadline",
			opts:        guard.Options{Timeout: 100 * time.Millisecond},
			fail:        pause,
			want:        `{"allowed":false,"reason":"unavailable","limit":100,"remaining":0,"retryAfterMs":1000,"resetAfterMs":0,"rule":"burst","plan":"pro"}`,
			wantFailure: guard.FailureTimeout,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			srv := redistest.Start(t)
			client := redistest.Client(t, srv.Addr)
			f := newFixture(t, client, nil, tc.opts)
			f.invokeOK(t, samples.Read(t, "check-single.json")) // connected, script loaded
			tc.fail(t, srv)
			f.metrics.Reset()

			assertJSONEqual(t, f.invokeOK(t, samples.Read(t, "check-single.json")), tc.want)
			lines := emfLines(t, f.metrics)
			if len(lines) != 1 {
				t.Fatalf("metrics %v: want one line", lines)
			}
			failed := telemetry.MetricFailClosed
			if tc.opts.FailOpen {
				failed = telemetry.MetricFailOpen
			}
			if got := lines[0][telemetry.DimReason]; got != string(tc.wantFailure) || lines[0][failed] != 1.0 {
				t.Fatalf("metrics %v: want %s 1 with reason %q", lines[0], failed, tc.wantFailure)
			}
		})
	}
}

// pause pauses s until the test's cleanup, which resumes it first so that the client
// closes without waiting on the request in flight.
func pause(t *testing.T, s *redistest.Server) {
	s.Pause()
	t.Cleanup(s.Resume)
}

// stop stops s.
func stop(_ *testing.T, s *redistest.Server) { s.Stop() }

// TestBadStateThroughTheHandler: one tenant's state written by someone else (NaN,
// garbage, a key of another type) fails that tenant's checks by the failure policy, as
// bad_response, for as long as it lasts, and never closes the limiter for the others
// (the circuit breaker is on, as in production); a reset in the payload repairs it.
func TestBadStateThroughTheHandler(t *testing.T) {
	srv := redistest.Start(t)
	client := redistest.Client(t, srv.Addr)
	f := newFixture(t, client, nil, guard.Options{FailuresToOpen: guard.DefaultFailuresToOpen})
	ctx := context.Background()
	victims := map[string][]string{
		"nan":     {"HSET", bucket.Key(identityPrefix + "nan"), "burst:tokens", "nan", "burst:ts", "1"},
		"garbage": {"HSET", bucket.Key(identityPrefix + "garbage"), "burst:tokens", "9", "burst:ts", "yesterday"},
		"type":    {"SET", bucket.Key(identityPrefix + "type"), "not a hash"},
	}
	for name, cmd := range victims {
		if err := client.Do(ctx, client.B().Arbitrary(cmd...).Build()).Error(); err != nil {
			t.Fatal(err)
		}
		for i := range 2 * guard.DefaultFailuresToOpen {
			f.metrics.Reset()
			assertJSONEqual(t, f.invokeOK(t, []byte(`{"key":"`+name+`","plan":"pro"}`)),
				`{"allowed":false,"reason":"unavailable","limit":100,"remaining":0,"retryAfterMs":1000,"resetAfterMs":0,"rule":"burst","plan":"pro"}`)
			if lines := emfLines(t, f.metrics); len(lines) != 1 || lines[0][telemetry.DimReason] != string(guard.FailureBadResponse) {
				t.Fatalf("%s, check %d: metrics %v, want FailClosed by bad_response", name, i+1, lines)
			}
			if r := decodeResponse(t, f.invokeOK(t, []byte(`{"key":"bystander","plan":"pro"}`))); r.Reason != checkapi.ReasonOK {
				t.Fatalf("%s, check %d: another tenant %+v, want ok", name, i+1, r)
			}
		}
		if !strings.Contains(f.logs.String(), bucket.ErrBadState.Error()) {
			t.Fatalf("the logs do not say why:\n%s", f.logs)
		}
	}
	for _, name := range []string{"nan", "garbage"} {
		f.invokeOK(t, []byte(`{"key":"`+name+`","plan":"pro","op":"reset"}`))
		if r := decodeResponse(t, f.invokeOK(t, []byte(`{"key":"`+name+`","plan":"pro"}`))); r.Reason != checkapi.ReasonOK || r.Remaining != 99 {
			t.Fatalf("%s after a reset: %+v", name, r)
		}
	}
}

// A release Redis did not answer says nothing of the lease: no "released" member, which
// would say the lease was already gone (false) or returned (true); its reason says to
// send it again.
func TestReleaseRedisDidNotAnswer(t *testing.T) {
	for _, tc := range []struct {
		name string
		opts guard.Options
		want string
	}{
		{"fail closed", guard.Options{}, `{"allowed":false,"reason":"unavailable","limit":1,"remaining":0,"retryAfterMs":1000,"resetAfterMs":0,"rule":"streams","plan":""}`},
		{"fail open", guard.Options{FailOpen: true}, `{"allowed":true,"reason":"degraded","limit":1,"remaining":0,"retryAfterMs":0,"resetAfterMs":0,"rule":"streams","plan":""}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := redistest.Start(t)
			f := newFixture(t, redistest.Client(t, srv.Addr), nil, tc.opts)
			rules := `{"key":"stream","rules":[{"name":"streams","concurrency":1},` + slowRule + `]`
			a := decodeResponse(t, f.invokeOK(t, []byte(rules+`}`)))
			srv.Stop()
			assertJSONEqual(t, f.invokeOK(t, []byte(rules+`,"op":"release","lease":"`+a.Lease+`"}`)), tc.want)
		})
	}
}

// TestRetryAfterTimeout: an idempotent request (a requestId) that Redis received but
// did not answer within the deadline (paused: the invocation's deadline ends the call,
// and rueidis drops its connection) is answered unavailable; once Redis resumes, it
// and the client's retry under the same requestId are one decision: the retry is
// allowed, and the tokens are taken once. (Which of the two Redis runs first, on two
// connections, is the kernel's: the retry is that decision, or its replay.) The calls
// Redis answers keep the fixture's patient deadline: the retry makes a connection
// again, which a loaded machine took more than the paused call's 100 ms to do.
func TestRetryAfterTimeout(t *testing.T) {
	rules := `"rules":[` + slowRule + `]`
	for _, tc := range []struct{ name, req string }{
		{"a check", rules + `,"cost":4`},
		{"a reserve", rules + `,"op":"reserve","cost":4`},
		{"a check that acquires a lease", `"cost":4,"rules":[` + slowRule + `,{"name":"streams","concurrency":2}]`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := redistest.Start(t)
			f := newFixture(t, redistest.Client(t, srv.Addr), nil, guard.Options{FailuresToOpen: guard.DefaultFailuresToOpen})
			req := []byte(`{"key":"retry","requestId":"job-1",` + tc.req + `}`)
			f.invokeOK(t, []byte(`{"key":"warm",`+rules+`,"op":"reserve"}`)) // connected, script loaded, the secrets read
			srv.Pause()
			out, err := f.invokeWithin(pausedWithin, req)
			if err != nil {
				srv.Resume()
				t.Fatalf("with Redis paused: %v, want an answer of reason unavailable", functionError(t, err))
			}
			if first := decodeResponse(t, out); first.Reason != checkapi.ReasonUnavailable {
				srv.Resume()
				t.Fatalf("with Redis paused: %+v, want unavailable", first)
			}
			srv.Resume()
			if again := decodeResponse(t, f.invokeOK(t, req)); !again.Allowed || again.Reason != checkapi.ReasonOK {
				t.Errorf("the retry: %+v, want allowed", again)
			}
			if p := decodeResponse(t, f.invokeOK(t, []byte(`{"key":"retry",`+rules+`,"cost":0}`))); p.Remaining != 6 {
				t.Errorf("after the retry: %d left, want 6 (4 taken once)", p.Remaining)
			}
		})
	}
}

// TestSettleOfANewSecretsIDWhileRedisFails: a function that has not read a secret
// another function wrote within the minute (bg:secret replaced, the ids signed under it
// refused under the secrets it holds) answers a settle of such an id while Redis does
// not answer its read of the secrets again as Redis's failure (unavailable: send it
// again), not as a ConflictError, which a client does not retry, leaving the
// reservation charged at its estimate; once Redis answers, the same settle is done.
// Only the settle sent while Redis is paused has a short (invocation) deadline: the
// one sent again makes a connection again, which a loaded machine took more than
// 100 ms to do.
func TestSettleOfANewSecretsIDWhileRedisFails(t *testing.T) {
	srv := redistest.Start(t)
	client := redistest.Client(t, srv.Addr)
	a, c := newFixture(t, client, nil, guard.Options{}), newFixture(t, client, nil, guard.Options{})
	reserve := []byte(`{"key":"k","rules":[` + slowRule + `],"op":"reserve","cost":4}`)
	decodeResponse(t, a.invokeOK(t, reserve)) // a reads Redis's secret
	if err := client.Do(context.Background(), client.B().Del().Key(bucket.SecretKey).Build()).Error(); err != nil {
		t.Fatal(err)
	}
	id := decodeResponse(t, c.invokeOK(t, reserve)).Reservation // c writes another one
	time.Sleep(bucket.RefusedRecheck)                           // a refused id makes a read the secrets again
	srv.Pause()
	settle := []byte(`{"key":"k","rules":[` + slowRule + `],"op":"settle","cost":1,"reservation":"` + id + `"}`)
	out, err := a.invokeWithin(pausedWithin, settle)
	srv.Resume()
	if err != nil {
		t.Fatalf("settle while Redis is paused: %v, want an answer of reason unavailable", functionError(t, err))
	}
	if r := decodeResponse(t, out); r.Reason != checkapi.ReasonUnavailable {
		t.Fatalf("settle while Redis is paused: %+v, want unavailable", r)
	}
	time.Sleep(bucket.RefusedRecheck) // past the failed read: the next refused id reads again
	if r := decodeResponse(t, a.invokeOK(t, settle)); !r.Allowed || r.Settled != 1 {
		t.Errorf("the settle sent again, Redis back: %+v, want settled at 1", r)
	}
}
