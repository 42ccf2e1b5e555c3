package check

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/lambda"

	"github.com/bucketgate/bucketgate/checkapi"
	"github.com/bucketgate/bucketgate/internal/bucket"
	"github.com/bucketgate/bucketgate/internal/guard"
	"github.com/bucketgate/bucketgate/internal/registry"
	"github.com/bucketgate/bucketgate/internal/telemetry"
	"github.com/bucketgate/bucketgate/internal/testkit/redistest"
	"github.com/bucketgate/bucketgate/internal/testkit/registrytest"
)

// TestBatchWithinTheInvocationDeadline: the deadline of a batch is the invocation's (the
// Lambda context's), less the margin, even when the guard's own timeout is far away. On
// a paused real server the handler returns with every check answered in order by the
// failure policy, as a timeout; with less than the margin left it asks Redis nothing.
func TestBatchWithinTheInvocationDeadline(t *testing.T) {
	const (
		checks = 5
		// farTimeout is the guard's own deadline: out of reach, so that only the
		// invocation's deadline can end a decision.
		farTimeout = time.Hour
		// returnWithin bounds how long after the invocation's deadline the handler may
		// take on a loaded machine: it catches waiting for Redis, not slowness.
		returnWithin = 10 * time.Second
	)
	tests := []struct {
		name     string
		failOpen bool
		paused   bool
		left     time.Duration // time to the invocation's deadline
		want     func(i int) checkapi.Response
		wantErr  string // in every decision's log line
	}{
		{
			name: "fail closed: server paused", paused: true, left: 500 * time.Millisecond,
			want: func(i int) checkapi.Response {
				return checkapi.Response{Reason: checkapi.ReasonUnavailable, Limit: int64(10 + i), RetryAfterMS: 1000, Rule: fmt.Sprintf("r%d", i)}
			},
			wantErr: context.DeadlineExceeded.Error(),
		},
		{
			name: "fail open: server paused", failOpen: true, paused: true, left: 500 * time.Millisecond,
			want: func(i int) checkapi.Response {
				return checkapi.Response{Allowed: true, Reason: checkapi.ReasonDegraded, Limit: int64(10 + i), Rule: fmt.Sprintf("r%d", i)}
			},
			wantErr: context.DeadlineExceeded.Error(),
		},
		{
			name: "fail closed: less than the margin left", left: guard.DefaultMargin / 2,
			want: func(i int) checkapi.Response {
				return checkapi.Response{Reason: checkapi.ReasonUnavailable, Limit: int64(10 + i), RetryAfterMS: 1000, Rule: fmt.Sprintf("r%d", i)}
			},
			wantErr: "left before the invocation's deadline",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			srv := redistest.Start(t)
			client := redistest.Client(t, srv.Addr)
			f := newFixture(t, client, nil, guard.Options{Timeout: farTimeout, Margin: guard.DefaultMargin, FailOpen: tc.failOpen})
			f.invokeOK(t, []byte(`{"key":"warm","rules":[`+slowRule+`]}`)) // connected, script loaded
			items := make([]string, checks)
			for i := range items { // each check on its own tenant and rule: answers tell which check they answer
				items[i] = fmt.Sprintf(`{"key":"tenant-%d","rules":[{"name":"r%d","capacity":%d,"refillPerSecond":0.001}]}`, i, i, 10+i)
			}
			payload := []byte(`{"checks":[` + strings.Join(items, ",") + `]}`)
			if tc.paused {
				pause(t, srv)
			}
			f.logs.Reset()

			deadline := time.Now().Add(tc.left)
			ctx, cancel := context.WithDeadline(context.Background(), deadline)
			defer cancel()
			type answer struct {
				out []byte
				err error
			}
			done := make(chan answer, 1)
			go func() {
				out, err := lambda.NewHandler(f.h).Invoke(ctx, payload)
				done <- answer{out, err}
			}()
			var a answer
			select {
			case a = <-done:
			case <-time.After(time.Until(deadline) + returnWithin):
				t.Fatalf("the handler had not returned %v after the invocation's deadline: it waits for Redis", returnWithin)
			}
			if a.err != nil {
				t.Fatalf("invoke: %v", a.err)
			}
			var got checkapi.BatchResult
			if err := json.Unmarshal(a.out, &got); err != nil || len(got.Results) != checks {
				t.Fatalf("%s (%v): want %d results", a.out, err, checks)
			}
			for i, r := range got.Results {
				if want := tc.want(i); !reflect.DeepEqual(r, want) {
					t.Fatalf("results[%d] = %+v, want %+v", i, r, want)
				}
			}

			var decisions int
			sc := bufio.NewScanner(bytes.NewReader(f.logs.Bytes()))
			for sc.Scan() {
				var line map[string]any
				if err := json.Unmarshal(sc.Bytes(), &line); err != nil {
					t.Fatalf("log line %s: %v", sc.Bytes(), err)
				}
				if line["msg"] != telemetry.MsgDecision {
					continue
				}
				decisions++
				if e, _ := line[telemetry.AttrError].(string); line[telemetry.AttrFailure] != string(guard.FailureTimeout) || !strings.Contains(e, tc.wantErr) {
					t.Fatalf("decision log %s: want failure %s, error containing %q", sc.Bytes(), guard.FailureTimeout, tc.wantErr)
				}
			}
			if decisions != checks {
				t.Fatalf("%d decision log lines for %d checks:\n%s", decisions, checks, f.logs)
			}
			if !tc.paused { // Redis was not asked: nothing written
				for i := range checks {
					key := bucket.Key(identityPrefix + fmt.Sprintf("tenant-%d", i))
					if n, err := client.Do(context.Background(), client.B().Exists().Key(key).Build()).AsInt64(); err != nil || n != 0 {
						t.Fatalf("EXISTS %s = %d, %v: a check within the margin was sent to Redis", key, n, err)
					}
				}
			}
		})
	}
}

// deadlines is a stalled registry table: every read waits until its context ends, and
// the deadline of each is kept.
type deadlines struct {
	*registrytest.Source

	mu  sync.Mutex
	got []time.Time
}

func (d *deadlines) Get(ctx context.Context, id string) (registry.Record, bool, error) {
	at, ok := ctx.Deadline()
	if !ok {
		at = time.Time{}
	}
	d.mu.Lock()
	d.got = append(d.got, at)
	d.mu.Unlock()
	return d.Source.Get(ctx, id)
}

// TestTenantLookupsWithinTheInvocationDeadline: with the table stalled, a batch of
// MaxBatch tenants (read maxLookups at a time) is answered by the failure policy, every
// registry read having ended the guard's margin before the invocation's deadline,
// however long REGISTRY_TIMEOUT_MS is: the function answers, instead of "Task timed
// out".
func TestTenantLookupsWithinTheInvocationDeadline(t *testing.T) {
	const returnWithin = 10 * time.Second // a loaded machine's slack: catches waiting, not slowness
	_, client := startMiniredis(t)
	f := newFixture(t, client, nil, guard.Options{Margin: guard.DefaultMargin})
	src := &deadlines{Source: registrytest.New()}
	src.Gate = make(chan struct{}) // never opens: the table stalls
	f.h.Config = registry.NewStatic(f.cfg, registry.NewCache(src, registry.Options{TTL: time.Minute, Size: 1000, Timeout: time.Hour, Margin: guard.DefaultMargin}))
	items := make([]string, checkapi.MaxBatch)
	for i := range items {
		items[i] = fmt.Sprintf(`{"key":"tenant-%d"}`, i)
	}
	deadline := time.Now().Add(300 * time.Millisecond)
	ctx, cancel := context.WithDeadline(context.Background(), deadline)
	defer cancel()
	done := make(chan []byte, 1)
	go func() {
		out, err := lambda.NewHandler(f.h).Invoke(ctx, []byte(`{"checks":[`+strings.Join(items, ",")+`]}`))
		if err != nil {
			t.Error(err)
		}
		done <- out
	}()
	var out []byte
	select {
	case out = <-done:
	case <-time.After(time.Until(deadline) + returnWithin):
		t.Fatalf("no answer %v after the invocation's deadline", returnWithin)
	}
	var got checkapi.BatchResult
	if err := json.Unmarshal(out, &got); err != nil || len(got.Results) != len(items) {
		t.Fatalf("%s (%v): want %d results", out, err, len(items))
	}
	for i, r := range got.Results {
		if r.Reason != checkapi.ReasonUnavailable || r.Plan != "" {
			t.Fatalf("results[%d] = %+v, want unavailable", i, r)
		}
	}
	src.mu.Lock()
	defer src.mu.Unlock()
	if len(src.got) == 0 {
		t.Fatal("no read")
	}
	for _, at := range src.got {
		if at.IsZero() || at.After(deadline.Add(-guard.DefaultMargin)) {
			t.Fatalf("a read's deadline %v: want no later than %v, the margin before the invocation's", at, deadline.Add(-guard.DefaultMargin))
		}
	}
}
