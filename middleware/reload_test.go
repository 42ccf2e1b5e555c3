package middleware_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/bucketgate/bucketgate"
	"github.com/bucketgate/bucketgate/internal/registry"
	"github.com/bucketgate/bucketgate/internal/testkit/dynalite"
	"github.com/bucketgate/bucketgate/internal/testkit/redistest"
	"github.com/bucketgate/bucketgate/middleware"
)

// A Limiter reads its configuration from a registry table in dynalite, read again at
// every request (REGISTRY_CACHE_MS 0), on a real redis-server. The next handler of a
// request to a route that held a lease when it was decided gets, from its Release after
// a reload took from the route the concurrency rule it held by, the conflict the check
// function answers a release by the id alone: an error wrapping bucketgate.ErrConflict
// that says what became of it. A release refused so is not tried again as the handler
// returns: one refusal is logged, not two. Its Settle or Cancel after a reload took a
// quota from the route settles with the rules the route still has: none refused.
func TestHeldAcrossAReload(t *testing.T) {
	const table = "bucketgate-keys"
	client := dynalite.Table(t, table)
	version := int64(0)
	put := func(doc string) {
		version++
		item := registry.StoredConfig{ID: registry.ConfigID, Document: doc, Version: version}.Item()
		if _, err := client.PutItem(t.Context(), &dynamodb.PutItemInput{TableName: aws.String(table), Item: item}); err != nil {
			t.Fatal(err)
		}
	}
	const plan = "defaultPlan: free\nplans: {free: [{name: burst, capacity: 100, refill: 1, per: minute}]}\n"
	const streams = "defaultPlan: free\nplans: {free: [{name: burst, capacity: 100, refill: 1, per: minute}, {name: streams, concurrency: 2}]}\n"
	srv := redistest.Start(t)
	for _, tc := range []struct {
		name, before, after string
		call                func(*middleware.Limiter, context.Context, *http.Request) (bucketgate.Decision, error)
		refused             int // the conflicts logged: 1, or 0 for a call that goes through
	}{
		{"release without the route's concurrency rule",
			plan + "routes: [{path: /x, rules: [{name: streams, concurrency: 2}]}]", plan + "routes: [{path: /x}]",
			(*middleware.Limiter).Release, 1},
		{"release without the plan's concurrency rule",
			streams + "routes: [{path: /x}]", plan + "routes: [{path: /x}]",
			(*middleware.Limiter).Release, 1},
		{"settle without the route's quota",
			plan + "routes: [{path: /x, reserve: 10, rules: [{name: daily, limit: 1000, period: day}]}]", plan + "routes: [{path: /x, reserve: 10}]",
			func(l *middleware.Limiter, ctx context.Context, r *http.Request) (bucketgate.Decision, error) {
				return l.Settle(ctx, r, 3)
			}, 0},
		{"cancel without the route's quota",
			plan + "routes: [{path: /x, reserve: 10, rules: [{name: daily, limit: 1000, period: day}]}]", plan + "routes: [{path: /x, reserve: 10}]",
			(*middleware.Limiter).Cancel, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			put(tc.before)
			vars := map[string]string{"REDIS_ADDR": srv.Addr, "REDIS_TIMEOUT_MS": "2000", "REGISTRY_TABLE": table, "REGISTRY_CACHE_MS": "0"}
			var logs strings.Builder
			l, err := middleware.New(middleware.Options{Getenv: env(vars), Metrics: io.Discard, LogOutput: &logs})
			if err != nil {
				t.Fatal(err)
			}
			defer l.Close()
			var got error
			backend := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				put(tc.after)
				_, got = tc.call(l, r.Context(), r)
			})
			w := httptest.NewRecorder()
			l.Handler(backend).ServeHTTP(w, httptest.NewRequest("GET", "/x", nil))
			if w.Code != http.StatusOK {
				t.Fatalf("GET /x: %d %s, want 200", w.Code, w.Body)
			}
			if errors.Is(got, bucketgate.ErrConflict) != (tc.refused == 1) || tc.refused == 0 && got != nil {
				t.Errorf("after the reload: %v, want a conflict %v", got, tc.refused == 1)
			}
			if n := strings.Count(logs.String(), `"msg":"settle refused"`); n != tc.refused {
				t.Errorf("%d settles refused in the log, want %d: the Limiter tries no release again that cannot be\n%s", n, tc.refused, &logs)
			}
		})
	}
}
