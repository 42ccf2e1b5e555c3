package guard_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/bucketgate/bucketgate"
	"github.com/bucketgate/bucketgate/internal/guard"
)

// stubEngine answers every request at once with an admission: Redis stubbed out, so
// that the benchmarks measure the guard's own cost.
type stubEngine struct{}

var stubDecision = bucketgate.Decision{Allowed: true, Reason: bucketgate.ReasonOK, Rule: "burst", Limit: 10, Remaining: 9,
	ResetAfter: 100 * time.Millisecond, At: epoch}

func (stubEngine) Decide(_ context.Context, q bucketgate.Request) (bucketgate.Decision, error) {
	if err := q.Validate(); err != nil {
		return bucketgate.Decision{}, err
	}
	return stubDecision, nil
}

func (stubEngine) Usage(context.Context, string, time.Time, time.Time) ([]bucketgate.DayUsage, error) {
	return nil, nil
}

func (stubEngine) Time(context.Context, string) (time.Time, error) { return epoch, nil }

func (stubEngine) Signed(context.Context, string, string, bool) error { return nil }

func (stubEngine) DecideBatch(_ context.Context, qs []bucketgate.Request) ([]bucketgate.Decision, []error) {
	ds, errs := make([]bucketgate.Decision, len(qs)), make([]error, len(qs))
	for i, q := range qs {
		if errs[i] = q.Validate(); errs[i] == nil {
			ds[i] = stubDecision
		}
	}
	return ds, errs
}

// BenchmarkGuard measures one decision and a batch of 100 through a Guard with the
// production options (deadline, margin, circuit breaker, deny cache) over a stub engine.
func BenchmarkGuard(b *testing.B) {
	g := guard.New(stubEngine{}, guard.Options{Timeout: time.Second, Margin: guard.DefaultMargin,
		FailuresToOpen: guard.DefaultFailuresToOpen, DenyCacheSize: 1000})
	rules := []bucketgate.Rule{{Name: "burst", Capacity: 10, RefillPerSecond: 1}}
	ctx := context.Background()
	b.Run("one", func(b *testing.B) {
		q := bucketgate.Request{Identity: "tenant:one", Rules: rules, Cost: 1}
		b.ReportAllocs()
		for b.Loop() {
			if _, err := g.Decide(ctx, q); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("batch-100", func(b *testing.B) {
		qs := make([]bucketgate.Request, 100)
		for i := range qs {
			qs[i] = bucketgate.Request{Identity: fmt.Sprintf("tenant:%d", i), Rules: rules, Cost: 1}
		}
		b.ReportAllocs()
		for b.Loop() {
			if _, err := g.DecideBatch(ctx, qs); err != nil {
				b.Fatal(err)
			}
		}
	})
}
