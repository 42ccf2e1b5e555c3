package bucket

import (
	"slices"
	"strings"
	"testing"

	"github.com/bucketgate/bucketgate"
)

func TestScriptCall(t *testing.T) {
	long := strings.Repeat("{x}%", bucketgate.MaxIdentity/4)
	tests := []struct {
		name     string
		q        bucketgate.Request
		usage    int
		wantKey  string
		wantArgs []string
	}{
		{
			name:     "one rule, cost 1: the operation left out",
			q:        bucketgate.Request{Identity: "tenant-42", Rules: []bucketgate.Rule{{Name: "burst", Capacity: 10, RefillPerSecond: 1}}, Cost: 1},
			wantKey:  "bg:{tenant-42}",
			wantArgs: []string{"burst:tokens", "burst:ts", "10", "1"},
		},
		{
			name:     "cost 2",
			q:        bucketgate.Request{Identity: "tenant-42", Rules: []bucketgate.Rule{{Name: "burst", Capacity: 10, RefillPerSecond: 1}}, Cost: 2},
			wantKey:  "bg:{tenant-42}",
			wantArgs: []string{"2", "burst:tokens", "burst:ts", "10", "1"},
		},
		{
			name: "chained rules, fractional rates, peek",
			q: bucketgate.Request{Identity: "a{b}c%d", Cost: 0, Rules: []bucketgate.Rule{
				{Name: "burst", Capacity: 100, RefillPerSecond: 0.5},
				{Name: "daily", Capacity: 1000, RefillPerSecond: 1000.0 / 86400},
			}},
			wantKey:  "bg:{a%7Bb%7Dc%25d}",
			wantArgs: []string{"0", "burst:tokens", "burst:ts", "daily:tokens", "daily:ts", "100", "0.5", "1000", "0.011574074074074073"},
		},
		{
			name:     "refund of 1, shadow rule",
			q:        bucketgate.Request{Identity: "t", Op: bucketgate.OpRefund, Cost: 1, Rules: []bucketgate.Rule{{Name: "burst", Capacity: 10, RefillPerSecond: 1}, {Name: "new", Capacity: 5, RefillPerSecond: 2, Shadow: true}}},
			wantKey:  "bg:{t}",
			wantArgs: []string{"-1", "burst:tokens", "burst:ts", "new:tokens", "new:ts", "10", "1", "-5", "2"},
		},
		{
			name:     "reset",
			q:        bucketgate.Request{Identity: "t", Op: bucketgate.OpReset, Rules: []bucketgate.Rule{{Name: "burst", Capacity: 10, RefillPerSecond: 1}}},
			wantKey:  "bg:{t} bg:{t}:reset",
			wantArgs: []string{"reset", "burst:tokens", "burst:ts", "10", "1"},
		},
		{
			name: "quotas of every period, shadow",
			q: bucketgate.Request{Identity: "t", Cost: 1, Rules: []bucketgate.Rule{
				{Name: "daily", Limit: 100, Period: bucketgate.PeriodDay},
				{Name: "weekly", Limit: 500, Period: bucketgate.PeriodWeek, Shadow: true},
				{Name: "monthly", Limit: 1000, Period: bucketgate.PeriodMonth},
				{Name: "billing", Limit: 1000, Period: bucketgate.PeriodMonth, Anchor: 28},
			}},
			wantKey: "bg:{t}",
			wantArgs: []string{"daily:used", "daily:end", "weekly:used", "weekly:end", "monthly:used", "monthly:end", "billing:used", "billing:end",
				"100", "-1", "-500", "-7", "1000", "-101", "1000", "-128"},
		},
		{
			name:     "usage: the operation, even of cost 1, then the days kept; the archive's key",
			q:        bucketgate.Request{Identity: "tenant-42", Rules: []bucketgate.Rule{{Name: "burst", Capacity: 10, RefillPerSecond: 1}}, Cost: 1},
			usage:    35,
			wantKey:  "bg:{tenant-42} bg:{tenant-42}:usage",
			wantArgs: []string{"1", "35", "burst:tokens", "burst:ts", "10", "1"},
		},
		{
			name:     "usage: a peek counts none",
			q:        bucketgate.Request{Identity: "tenant-42", Rules: []bucketgate.Rule{{Name: "burst", Capacity: 10, RefillPerSecond: 1}}},
			usage:    35,
			wantKey:  "bg:{tenant-42}",
			wantArgs: []string{"0", "burst:tokens", "burst:ts", "10", "1"},
		},
		{
			name:     "usage: a refund counts none",
			q:        bucketgate.Request{Identity: "t", Op: bucketgate.OpRefund, Cost: 2, Rules: []bucketgate.Rule{{Name: "q", Limit: 10, Period: bucketgate.PeriodWeek}}},
			usage:    400,
			wantKey:  "bg:{t}",
			wantArgs: []string{"-2", "q:used", "q:end", "10", "-7"},
		},
		{
			name:     "identity longer than the stack buffer",
			q:        bucketgate.Request{Identity: long, Rules: []bucketgate.Rule{{Name: "r", Capacity: bucketgate.MaxCapacity, RefillPerSecond: 1e9}}, Cost: bucketgate.MaxCapacity},
			wantKey:  Key(long),
			wantArgs: []string{"1000000000", "r:tokens", "r:ts", "1000000000", "1000000000"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			keys, args := scriptCall(tt.q, 0, tt.usage, hold{}, new(scriptArgs))
			if got := strings.Join(keys, " "); got != tt.wantKey {
				t.Errorf("keys = %q, want %q", got, tt.wantKey)
			}
			if !slices.Equal(args, tt.wantArgs) {
				t.Errorf("args = %q, want %q", args, tt.wantArgs)
			}
		})
	}
}

func TestKeyEscapes(t *testing.T) {
	tests := []struct{ identity, want string }{
		{"plain", "bg:{plain}"},
		{"{}", "bg:{%7B%7D}"},
		{"%7B", "bg:{%257B}"},
		{"a:b", "bg:{a:b}"},
	}
	for _, tt := range tests {
		if got := Key(tt.identity); got != tt.want {
			t.Errorf("Key(%q) = %q, want %q", tt.identity, got, tt.want)
		}
	}
}
