package bucket_test

import (
	"context"
	"testing"
	"time"

	"github.com/bucketgate/bucketgate"
	"github.com/bucketgate/bucketgate/internal/bucket"
	"github.com/bucketgate/bucketgate/internal/testkit/redistest"
)

// With UsageOfAddresses(false), a source address's checks, allowed or limited, count no
// usage: its key holds its bucket alone and lives as long as the bucket needs (seconds
// here), not the 35 days usage is kept, and no archive is made; a tenant's usage is
// counted as before. The model agrees, decision by decision and expiry by expiry.
func TestUsageOfAddressesOff(t *testing.T) {
	srv := redistest.Start(t)
	c := redistest.Client(t, srv.Addr)
	tests := []struct {
		name      string
		addresses bool
		identity  string
		usage     bool // whether the identity's usage is counted
	}{
		{"an address, addresses off", false, "ip:203.0.113.7", false},
		{"a tenant, addresses off", false, "tenant:acme", true},
		{"an address, addresses on", true, "ip:203.0.113.8", true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			l := bucket.New(c, bucket.Usage(35), bucket.UsageOfAddresses(tc.addresses))
			model := bucket.NewModel()
			model.UsageDays, model.UsageOfAddresses = 35, tc.addresses
			q := bucketgate.Request{Identity: tc.identity, Rules: free, Cost: 4}
			for i, allowed := range []bool{true, true, false} { // 4, 8, then 12 of 10 tokens
				d := decide(t, l, q)
				if want := model.Decide(d.At, q); d.Allowed != allowed || d.Allowed != want.Allowed {
					t.Fatalf("check %d: allowed %v, model %v, want %v", i+1, d.Allowed, want.Allowed, allowed)
				}
				compareExpiry(t, c, model, tc.identity)
			}
			fields, err := c.Do(context.Background(), c.B().Hkeys().Key(bucket.Key(tc.identity)).Build()).AsStrSlice()
			if err != nil {
				t.Fatal(err)
			}
			life := mustInt(t, do(t, c, c.B().Pttl().Key(bucket.Key(tc.identity)).Build()))
			if counted := len(fields) > 2; counted != tc.usage || !tc.usage && life > (10*time.Second+bucket.ExpiryMargin).Milliseconds() {
				t.Errorf("state fields %v, living %d ms: usage counted %v, want %v", fields, life, counted, tc.usage)
			}
			now := time.Now().UTC()
			days, err := l.Usage(context.Background(), tc.identity, now.AddDate(0, 0, -1), now.AddDate(0, 0, 1))
			if err != nil {
				t.Fatal(err)
			}
			var checks int64
			for _, d := range days {
				checks += d.Allowed + d.Limited
			}
			if want := map[bool]int64{true: 3, false: 0}[tc.usage]; checks != want {
				t.Errorf("usage read %+v: %d checks, want %d", days, checks, want)
			}
		})
	}
}
