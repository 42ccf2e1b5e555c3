package registry_test

import (
	"context"
	"errors"
	"strconv"
	"testing"
	"time"

	"github.com/bucketgate/bucketgate/internal/registry"
	"github.com/bucketgate/bucketgate/internal/testkit/registrytest"
)

// TestCacheHoldsEndWithTheOutage: the holds a flood of made-up keys left while the
// table failed (up to the cache's size: 160 MB of API keys at REGISTRY_CACHE_SIZE's
// most) are let go of by the first lookup once the last of them has ended, not kept
// until other holds take their places; while one is still to end, they stay.
func TestCacheHoldsEndWithTheOutage(t *testing.T) {
	const size = 100
	tests := []struct {
		name      string
		after     time.Duration // from the flood to the lookup
		lateHold  bool          // a made-up key failed half a hold after the flood
		wantHolds int
	}{
		{"a hold after the outage: all ended", registry.RetryAfterFailure, false, 0},
		{"long after the outage: all ended", time.Hour, false, 0},
		{"the clock went back: all ended", -time.Hour, false, 0},
		{"within the holds: kept", registry.RetryAfterFailure / 2, false, size},
		{"one hold still to end: all kept", registry.RetryAfterFailure, true, size},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			src := registrytest.New(registry.Record{ID: digestID, Plan: "pro"})
			c, clk := newCache(t, src, registry.Options{Size: size})
			src.Fail(errors.New("throttled"))
			for i := range size {
				if _, err := c.Lookup(context.Background(), plans, "key:flood-"+strconv.Itoa(i)); err == nil {
					t.Fatalf("lookup %d of a made-up key with the table down: no error", i)
				}
			}
			after := tc.after
			if tc.lateHold {
				clk.advance(registry.RetryAfterFailure / 2)
				after -= registry.RetryAfterFailure / 2
				c.Lookup(context.Background(), plans, "key:late") // takes a flood key's place: the size stays
			}
			src.Fail(nil)
			clk.advance(after)
			lookup(t, c, digestID)
			if holds := registry.HoldsOf(c); holds != tc.wantHolds {
				t.Fatalf("%d holds after the lookup, want %d", holds, tc.wantHolds)
			}
		})
	}
}
