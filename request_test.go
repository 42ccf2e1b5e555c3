package bucketgate_test

import (
	"errors"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/bucketgate/bucketgate"
)

func TestRequestValidate(t *testing.T) {
	ok := bucketgate.Rule{Name: "burst", Capacity: 10, RefillPerSecond: 1}
	monthly := bucketgate.Rule{Name: "monthly", Limit: 100, Period: bucketgate.PeriodMonth}
	streams := bucketgate.Rule{Name: "streams", Concurrency: 4}
	withRule := func(r bucketgate.Rule) bucketgate.Request {
		return bucketgate.Request{Identity: "id", Rules: []bucketgate.Rule{r}, Cost: 1}
	}
	tests := []struct {
		name string
		q    bucketgate.Request
		want string // substring of the error; "" for valid
	}{
		{"valid", withRule(ok), ""},
		{"valid peek", bucketgate.Request{Identity: "id", Rules: []bucketgate.Rule{ok}}, ""},
		{"valid daily quota", withRule(bucketgate.Rule{Name: "daily", Capacity: 1000, RefillPerSecond: 1000.0 / 86400}), ""},
		{"empty identity", bucketgate.Request{Rules: []bucketgate.Rule{ok}, Cost: 1}, "identity is empty"},
		{"long identity", bucketgate.Request{Identity: strings.Repeat("x", bucketgate.MaxIdentity+1), Rules: []bucketgate.Rule{ok}}, "identity is 1025 bytes"},
		{"no rules", bucketgate.Request{Identity: "id", Cost: 1}, "no rules"},
		{"too many rules", bucketgate.Request{Identity: "id", Rules: make([]bucketgate.Rule, bucketgate.MaxRules+1)}, "9 rules"},
		{"negative cost", bucketgate.Request{Identity: "id", Rules: []bucketgate.Rule{ok}, Cost: -1}, "cost -1"},
		{"cost above capacity", bucketgate.Request{Identity: "id", Rules: []bucketgate.Rule{ok}, Cost: 11}, "cost 11 exceeds capacity 10 of rule burst"},
		{"duplicate rule", bucketgate.Request{Identity: "id", Rules: []bucketgate.Rule{ok, ok}}, "rule burst appears twice"},
		{"empty name", withRule(bucketgate.Rule{Capacity: 1, RefillPerSecond: 1}), `name ""`},
		{"name with colon", withRule(bucketgate.Rule{Name: "a:b", Capacity: 1, RefillPerSecond: 1}), `name "a:b"`},
		{"zero capacity", withRule(bucketgate.Rule{Name: "r", RefillPerSecond: 1}), "rules[0]: invalid: rule r: capacity 0"},
		{"huge capacity", withRule(bucketgate.Rule{Name: "r", Capacity: bucketgate.MaxCapacity + 1, RefillPerSecond: 1e9}), "capacity 1000000001"},
		{"zero rate", withRule(bucketgate.Rule{Name: "r", Capacity: 1}), "refillPerSecond 0"},
		{"NaN rate", withRule(bucketgate.Rule{Name: "r", Capacity: 1, RefillPerSecond: math.NaN()}), "refillPerSecond NaN: want a number above 0"},
		{"infinite rate", withRule(bucketgate.Rule{Name: "r", Capacity: 1, RefillPerSecond: math.Inf(1)}), "refillPerSecond +Inf"},
		{"fills too slowly", withRule(bucketgate.Rule{Name: "r", Capacity: 1000, RefillPerSecond: 1e-6}), "fills capacity 1000 in 277777h46m40s: want at most 8784h0m0s"},
		{"fills beyond any duration", withRule(bucketgate.Rule{Name: "r", Capacity: 1000, RefillPerSecond: 1e-300}), "refillPerSecond 1e-300 fills capacity 1000 in 1e+303s: want at most 8784h0m0s"},
		{"refills too fast", withRule(bucketgate.Rule{Name: "r", Capacity: 10, RefillPerSecond: 1e19}), "refillPerSecond 1e+19: want a number above 0 and at most 1e+09"},
		{"valid fastest refill", withRule(bucketgate.Rule{Name: "r", Capacity: bucketgate.MaxCapacity, RefillPerSecond: bucketgate.MaxRefillPerSecond}), ""},
		{"valid shadow rule", withRule(bucketgate.Rule{Name: "r", Capacity: 10, RefillPerSecond: 1, Shadow: true}), ""},
		{"valid refund", bucketgate.Request{Identity: "id", Rules: []bucketgate.Rule{ok}, Cost: 10, Op: bucketgate.OpRefund}, ""},
		{"valid reset", bucketgate.Request{Identity: "id", Rules: []bucketgate.Rule{ok}, Op: bucketgate.OpReset}, ""},
		{"refund of nothing", bucketgate.Request{Identity: "id", Rules: []bucketgate.Rule{ok}, Op: bucketgate.OpRefund}, "refund of 0 tokens"},
		{"refund above capacity", bucketgate.Request{Identity: "id", Rules: []bucketgate.Rule{ok}, Cost: 11, Op: bucketgate.OpRefund}, "refund 11 exceeds capacity 10 of rule burst"},
		{"reset with a cost", bucketgate.Request{Identity: "id", Rules: []bucketgate.Rule{ok}, Cost: 1, Op: bucketgate.OpReset}, "reset with cost 1"},
		{"valid key's own rule", withRule(bucketgate.Rule{Name: bucketgate.KeyRuleName(bucketgate.KeyDigest("k"), strings.Repeat("r", bucketgate.MaxRuleName)), Capacity: 1, RefillPerSecond: 1}), ""},
		{"key's own rule of a bad name", withRule(bucketgate.Rule{Name: bucketgate.KeyRuleName(bucketgate.KeyDigest("k"), "a:b"), Capacity: 1, RefillPerSecond: 1}), `name "a:b"`},
		{"key's own rule of no name", withRule(bucketgate.Rule{Name: bucketgate.KeyRuleName(bucketgate.KeyDigest("k"), ""), Capacity: 1, RefillPerSecond: 1}), `name ""`},
		{"key's own rule of a bad digest", withRule(bucketgate.Rule{Name: bucketgate.KeyRuleName("not-a-digest", "burst"), Capacity: 1, RefillPerSecond: 1}), `name "not-a-digest/burst"`},
		{"key's own rule twice", bucketgate.Request{Identity: "id", Rules: []bucketgate.Rule{
			{Name: bucketgate.KeyRuleName(bucketgate.KeyDigest("k"), "burst"), Capacity: 1, RefillPerSecond: 1},
			{Name: bucketgate.KeyRuleName(bucketgate.KeyDigest("k"), "burst"), Capacity: 1, RefillPerSecond: 1}}}, "appears twice"},
		{"key's own rule beside the account's of its name", bucketgate.Request{Identity: "id", Rules: []bucketgate.Rule{
			ok, {Name: bucketgate.KeyRuleName(bucketgate.KeyDigest("k"), "burst"), Capacity: 1, RefillPerSecond: 1}}}, ""},
		{"unknown operation", bucketgate.Request{Identity: "id", Rules: []bucketgate.Rule{ok}, Op: bucketgate.OpRelease + 1}, "operation Op(8)"},
		{"usage is no request", bucketgate.Request{Identity: "id", Rules: []bucketgate.Rule{ok}, Op: bucketgate.OpUsage}, "operation usage reads a report"},
		{"valid monthly quota", withRule(monthly), ""},
		{"valid anchored quota", withRule(bucketgate.Rule{Name: "m", Limit: 1, Period: bucketgate.PeriodMonth, Anchor: 28}), ""},
		{"valid daily and weekly quotas", bucketgate.Request{Identity: "id", Cost: 1, Rules: []bucketgate.Rule{
			{Name: "d", Limit: 5, Period: bucketgate.PeriodDay}, {Name: "w", Limit: 5, Period: bucketgate.PeriodWeek}, ok}}, ""},
		{"quota of limit 0", withRule(bucketgate.Rule{Name: "m", Period: bucketgate.PeriodMonth}), "rule m: limit 0: want 1 to 1000000000"},
		{"quota of a huge limit", withRule(bucketgate.Rule{Name: "m", Limit: bucketgate.MaxCapacity + 1, Period: bucketgate.PeriodDay}), "limit 1000000001"},
		{"quota of an unknown period", withRule(bucketgate.Rule{Name: "m", Limit: 5, Period: bucketgate.PeriodMonth + 1}), "rule m: period Period(4): want day, week or month"},
		{"anchor 29", withRule(bucketgate.Rule{Name: "m", Limit: 5, Period: bucketgate.PeriodMonth, Anchor: 29}), "rule m: anchor 29: want a day of the month from 1 to 28"},
		{"anchor of a weekly quota", withRule(bucketgate.Rule{Name: "w", Limit: 5, Period: bucketgate.PeriodWeek, Anchor: 3}), "rule w: anchor 3 with period week: only a monthly quota has an anchor"},
		{"quota with a capacity", withRule(bucketgate.Rule{Name: "m", Limit: 5, Period: bucketgate.PeriodDay, Capacity: 5}), "rule m: a quota (period day) has a limit, not a capacity or a refillPerSecond"},
		{"bucket with a limit", withRule(bucketgate.Rule{Name: "b", Capacity: 5, RefillPerSecond: 1, Limit: 5}), "rule b: a limit or an anchor without a period"},
		{"cost above a limit", bucketgate.Request{Identity: "id", Rules: []bucketgate.Rule{monthly}, Cost: 101}, "cost 101 exceeds limit 100 of rule monthly"},
		{"refund above a limit", bucketgate.Request{Identity: "id", Rules: []bucketgate.Rule{monthly}, Cost: 101, Op: bucketgate.OpRefund}, "refund 101 exceeds limit 100 of rule monthly"},
		{"a quota and a bucket of one name", bucketgate.Request{Identity: "id", Rules: []bucketgate.Rule{ok, {Name: "burst", Limit: 5, Period: bucketgate.PeriodDay}}}, "rule burst appears twice"},
		{"valid reserve", bucketgate.Request{Identity: "id", Rules: []bucketgate.Rule{ok, monthly}, Cost: 10, Op: bucketgate.OpReserve, TTL: bucketgate.MaxTTL, RequestID: "req-1"}, ""},
		{"reserve of nothing", bucketgate.Request{Identity: "id", Rules: []bucketgate.Rule{ok}, Op: bucketgate.OpReserve}, "reserve of 0 tokens"},
		{"reserve above capacity", bucketgate.Request{Identity: "id", Rules: []bucketgate.Rule{ok}, Cost: 11, Op: bucketgate.OpReserve}, "reserve of 11 tokens exceeds capacity 10 of rule burst"},
		{"ttl above the most", bucketgate.Request{Identity: "id", Rules: []bucketgate.Rule{ok}, Cost: 1, Op: bucketgate.OpReserve, TTL: bucketgate.MaxTTL + time.Millisecond}, "ttl 1h0m0.001s: want whole milliseconds from 1ms to 1h0m0s"},
		{"negative ttl", bucketgate.Request{Identity: "id", Rules: []bucketgate.Rule{ok}, Cost: 1, Op: bucketgate.OpReserve, TTL: -time.Millisecond}, "ttl -1ms"},
		{"ttl of a fraction of a millisecond", bucketgate.Request{Identity: "id", Rules: []bucketgate.Rule{ok}, Cost: 1, Op: bucketgate.OpReserve, TTL: 1500 * time.Microsecond}, "ttl 1.5ms"},
		{"ttl with a refund", bucketgate.Request{Identity: "id", Rules: []bucketgate.Rule{ok}, Cost: 1, Op: bucketgate.OpRefund, TTL: time.Second}, "ttl with a refund"},
		{"ttl with a check", bucketgate.Request{Identity: "id", Rules: []bucketgate.Rule{ok}, Cost: 1, TTL: time.Second}, "ttl with a check"},
		{"requestId too long", bucketgate.Request{Identity: "id", Rules: []bucketgate.Rule{ok}, Cost: 1, RequestID: strings.Repeat("é", 65)}, "requestId of 130 bytes: want 1 to 128"},
		{"requestId not UTF-8", bucketgate.Request{Identity: "id", Rules: []bucketgate.Rule{ok}, Cost: 1, RequestID: "a\xffb"}, "requestId is not UTF-8"},
		{"requestId with a peek", bucketgate.Request{Identity: "id", Rules: []bucketgate.Rule{ok}, RequestID: "r"}, "requestId with a peek"},
		{"requestId with a reset", bucketgate.Request{Identity: "id", Rules: []bucketgate.Rule{ok}, Op: bucketgate.OpReset, RequestID: "r"}, "requestId with a reset"},
		{"valid settle above the capacity", bucketgate.Request{Identity: "id", Rules: []bucketgate.Rule{ok}, Cost: 1000, Op: bucketgate.OpSettle, ID: "r1.x"}, ""},
		{"settle of an absurd cost", bucketgate.Request{Identity: "id", Rules: []bucketgate.Rule{ok}, Cost: bucketgate.MaxSettle + 1, Op: bucketgate.OpSettle, ID: "r1.x"}, "settle at cost 1000000001: want the actual cost, 0 to 1000000000"},
		{"settle without an id", bucketgate.Request{Identity: "id", Rules: []bucketgate.Rule{ok}, Cost: 1, Op: bucketgate.OpSettle}, "settle without the id of its reservation"},
		{"cancel with a cost", bucketgate.Request{Identity: "id", Rules: []bucketgate.Rule{ok}, Cost: 1, Op: bucketgate.OpCancel, ID: "r1.x"}, "cancel with cost 1"},
		{"an id with a check", bucketgate.Request{Identity: "id", Rules: []bucketgate.Rule{ok}, Cost: 1, ID: "r1.x"}, "an id with a check"},
		{"an id too long", bucketgate.Request{Identity: "id", Rules: []bucketgate.Rule{ok}, Op: bucketgate.OpCancel, ID: strings.Repeat("x", bucketgate.MaxID+1)}, "id of 513 bytes"},
		{"valid acquire", bucketgate.Request{Identity: "id", Rules: []bucketgate.Rule{ok, streams}, Cost: 10, TTL: bucketgate.MaxTTL, RequestID: "r"}, ""},
		{"valid acquire of a concurrency rule alone", bucketgate.Request{Identity: "id", Rules: []bucketgate.Rule{streams}, Cost: 1}, ""},
		{"valid reserve that acquires", bucketgate.Request{Identity: "id", Rules: []bucketgate.Rule{streams, ok}, Cost: 10, Op: bucketgate.OpReserve}, ""},
		{"valid release", bucketgate.Request{Identity: "id", Rules: []bucketgate.Rule{ok, streams}, Op: bucketgate.OpRelease, ID: "r2.x"}, ""},
		{"negative concurrency", withRule(bucketgate.Rule{Name: "c", Concurrency: -1}), "rule c: concurrency -1: want 1 to 10000"},
		{"concurrency above the most", withRule(bucketgate.Rule{Name: "c", Concurrency: bucketgate.MaxConcurrency + 1}), "rule c: concurrency 10001: want 1 to 10000"},
		{"concurrency with a capacity", withRule(bucketgate.Rule{Name: "c", Concurrency: 2, Capacity: 5, RefillPerSecond: 1}), "rule c: a concurrency rule has no capacity"},
		{"concurrency with a period", withRule(bucketgate.Rule{Name: "c", Concurrency: 2, Limit: 5, Period: bucketgate.PeriodDay}), "rule c: a concurrency rule has no capacity"},
		{"shadow concurrency", withRule(bucketgate.Rule{Name: "c", Concurrency: 2, Shadow: true}), "rule c: a concurrency rule cannot be shadow"},
		{"a concurrency rule and a bucket of one name", bucketgate.Request{Identity: "id", Rules: []bucketgate.Rule{ok, {Name: "burst", Concurrency: 2}}}, "rule burst appears twice"},
		{"ttl with a peek of a concurrency rule", bucketgate.Request{Identity: "id", Rules: []bucketgate.Rule{streams}, TTL: time.Second}, "ttl with a peek"},
		{"release without its lease", bucketgate.Request{Identity: "id", Rules: []bucketgate.Rule{streams}, Op: bucketgate.OpRelease}, "release without the id of its lease"},
		{"release with a cost", bucketgate.Request{Identity: "id", Rules: []bucketgate.Rule{streams}, Op: bucketgate.OpRelease, Cost: 1, ID: "r2.x"}, "release with cost 1"},
		{"release of no concurrency rule", bucketgate.Request{Identity: "id", Rules: []bucketgate.Rule{ok}, Op: bucketgate.OpRelease, ID: "r2.x"}, "release without a concurrency rule"},
		{"reserve of a concurrency rule alone", bucketgate.Request{Identity: "id", Rules: []bucketgate.Rule{streams}, Op: bucketgate.OpReserve, Cost: 1}, "reserve with concurrency rules alone: it needs a bucket or a quota"},
		{"refund of a concurrency rule alone", bucketgate.Request{Identity: "id", Rules: []bucketgate.Rule{streams}, Op: bucketgate.OpRefund, Cost: 1}, "refund with concurrency rules alone"},
		{"claims on a check", bucketgate.Request{Identity: "id", Rules: []bucketgate.Rule{ok}, Cost: 1, Claims: "c"}, "claims with a check"},
		{"claims too long", bucketgate.Request{Identity: "id", Rules: []bucketgate.Rule{ok}, Op: bucketgate.OpReserve, Cost: 1, Claims: strings.Repeat("c", bucketgate.MaxClaims+1)}, "claims of 257 bytes"},
		{"claims on an acquire", bucketgate.Request{Identity: "id", Rules: []bucketgate.Rule{ok, streams}, Cost: 1, Claims: "c"}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.q.Validate()
			switch {
			case tt.want == "" && err != nil:
				t.Fatalf("Validate() = %v, want nil", err)
			case tt.want == "":
			case err == nil || !errors.Is(err, bucketgate.ErrInvalid) || !strings.Contains(err.Error(), tt.want):
				t.Fatalf("Validate() = %v, want ErrInvalid mentioning %q", err, tt.want)
			}
		})
	}
}
