package bucket_test

import (
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/bucketgate/bucketgate/internal/bucket"
)

func TestRequestValidate(t *testing.T) {
	ok := bucket.Rule{Name: "burst", Capacity: 10, RefillPerSecond: 1}
	withRule := func(r bucket.Rule) bucket.Request {
		return bucket.Request{Identity: "id", Rules: []bucket.Rule{r}, Cost: 1}
	}
	tests := []struct {
		name string
		q    bucket.Request
		want string // substring of the error; "" for valid
	}{
		{"valid", withRule(ok), ""},
		{"valid peek", bucket.Request{Identity: "id", Rules: []bucket.Rule{ok}}, ""},
		{"valid daily quota", withRule(bucket.Rule{Name: "daily", Capacity: 1000, RefillPerSecond: 1000.0 / 86400}), ""},
		{"empty identity", bucket.Request{Rules: []bucket.Rule{ok}, Cost: 1}, "identity is empty"},
		{"long identity", bucket.Request{Identity: strings.Repeat("x", bucket.MaxIdentity+1), Rules: []bucket.Rule{ok}}, "identity is 1025 bytes"},
		{"no rules", bucket.Request{Identity: "id", Cost: 1}, "no rules"},
		{"too many rules", bucket.Request{Identity: "id", Rules: make([]bucket.Rule, bucket.MaxRules+1)}, "9 rules"},
		{"negative cost", bucket.Request{Identity: "id", Rules: []bucket.Rule{ok}, Cost: -1}, "cost -1"},
		{"cost above capacity", bucket.Request{Identity: "id", Rules: []bucket.Rule{ok}, Cost: 11}, "cost 11 exceeds capacity 10 of rule burst"},
		{"duplicate rule", bucket.Request{Identity: "id", Rules: []bucket.Rule{ok, ok}}, "rule burst appears twice"},
		{"empty name", withRule(bucket.Rule{Capacity: 1, RefillPerSecond: 1}), `name ""`},
		{"name with colon", withRule(bucket.Rule{Name: "a:b", Capacity: 1, RefillPerSecond: 1}), `name "a:b"`},
		{"zero capacity", withRule(bucket.Rule{Name: "r", RefillPerSecond: 1}), "rules[0]: invalid: rule r: capacity 0"},
		{"huge capacity", withRule(bucket.Rule{Name: "r", Capacity: bucket.MaxCapacity + 1, RefillPerSecond: 1e9}), "capacity 1000000001"},
		{"zero rate", withRule(bucket.Rule{Name: "r", Capacity: 1}), "refillPerSecond 0"},
		{"NaN rate", withRule(bucket.Rule{Name: "r", Capacity: 1, RefillPerSecond: math.NaN()}), "refillPerSecond NaN: want a number above 0"},
		{"infinite rate", withRule(bucket.Rule{Name: "r", Capacity: 1, RefillPerSecond: math.Inf(1)}), "refillPerSecond +Inf"},
		{"fills too slowly", withRule(bucket.Rule{Name: "r", Capacity: 1000, RefillPerSecond: 1e-6}), "fills capacity 1000 in 277777h46m40s: want at most 8784h0m0s"},
		{"fills beyond any duration", withRule(bucket.Rule{Name: "r", Capacity: 1000, RefillPerSecond: 1e-300}), "refillPerSecond 1e-300 fills capacity 1000 in 1e+303s: want at most 8784h0m0s"},
		{"refills too fast", withRule(bucket.Rule{Name: "r", Capacity: 10, RefillPerSecond: 1e19}), "refillPerSecond 1e+19: want a number above 0 and at most 1e+09"},
		{"valid fastest refill", withRule(bucket.Rule{Name: "r", Capacity: bucket.MaxCapacity, RefillPerSecond: bucket.MaxRefillPerSecond}), ""},
		{"valid shadow rule", withRule(bucket.Rule{Name: "r", Capacity: 10, RefillPerSecond: 1, Shadow: true}), ""},
		{"valid refund", bucket.Request{Identity: "id", Rules: []bucket.Rule{ok}, Cost: 10, Op: bucket.OpRefund}, ""},
		{"valid reset", bucket.Request{Identity: "id", Rules: []bucket.Rule{ok}, Op: bucket.OpReset}, ""},
		{"refund of nothing", bucket.Request{Identity: "id", Rules: []bucket.Rule{ok}, Op: bucket.OpRefund}, "refund of 0 tokens"},
		{"refund above capacity", bucket.Request{Identity: "id", Rules: []bucket.Rule{ok}, Cost: 11, Op: bucket.OpRefund}, "refund 11 exceeds capacity 10 of rule burst"},
		{"reset with a cost", bucket.Request{Identity: "id", Rules: []bucket.Rule{ok}, Cost: 1, Op: bucket.OpReset}, "reset with cost 1"},
		{"unknown operation", bucket.Request{Identity: "id", Rules: []bucket.Rule{ok}, Op: bucket.OpReset + 1}, "operation Op(3)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.q.Validate()
			switch {
			case tt.want == "" && err != nil:
				t.Fatalf("Validate() = %v, want nil", err)
			case tt.want == "":
			case err == nil || !errors.Is(err, bucket.ErrInvalid) || !strings.Contains(err.Error(), tt.want):
				t.Fatalf("Validate() = %v, want ErrInvalid mentioning %q", err, tt.want)
			}
		})
	}
}
