package bucket_test

import (
	"context"
	"testing"
	"time"

	"github.com/bucketgate/bucketgate/internal/bucket"
	"github.com/bucketgate/bucketgate/internal/redistest"
)

var free = []bucket.Rule{{Name: "burst", Capacity: 10, RefillPerSecond: 1}}

func TestScenarioRealRedis(t *testing.T) {
	srv := redistest.Start(t)
	c := redistest.Client(t, srv.Addr)
	l := bucket.New(c)
	ctx := context.Background()
	q := bucket.Request{Identity: "k", Rules: free, Cost: 1}
	for i := range 10 {
		d, err := l.Decide(ctx, q)
		if err != nil || !d.Allowed {
			t.Fatalf("request %d: %+v %v", i+1, d, err)
		}
	}
	d, err := l.Decide(ctx, q)
	if err != nil || d.Allowed {
		t.Fatalf("11th: %+v %v", d, err)
	}
	t.Logf("%+v", d)
	_ = time.Second
}
