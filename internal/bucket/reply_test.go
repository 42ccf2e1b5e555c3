package bucket

import (
	"errors"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/redis/rueidis"
	"github.com/redis/rueidis/mock"

	"github.com/bucketgate/bucketgate"
	"github.com/bucketgate/bucketgate/internal/lua"
)

var twoRules = bucketgate.Request{Identity: "id", Cost: 1, Rules: []bucketgate.Rule{
	{Name: "burst", Capacity: 10, RefillPerSecond: 1},
	{Name: "daily", Capacity: 1000, RefillPerSecond: 1000.0 / 86400},
}}

const nowUS = 1_795_000_000_000_000

func TestDecodeReply(t *testing.T) {
	tests := []struct {
		name string
		vals replyVals
		want bucketgate.Decision
		err  string
	}{
		{"allowed", reply(1, 1, 9, 0, 1000, nowUS, 0),
			bucketgate.Decision{Allowed: true, Reason: bucketgate.ReasonOK, Rule: "burst", Limit: 10, Remaining: 9, ResetAfter: time.Second, At: time.UnixMicro(nowUS)}, ""},
		{"allowed, the second rule then short", reply(1, 1, 0, 86, 86_400_000, nowUS, 2),
			bucketgate.Decision{Allowed: true, Reason: bucketgate.ReasonOK, Rule: "burst", Limit: 10, ResetAfter: 86400 * time.Second, At: time.UnixMicro(nowUS), Shortfall: bucketgate.Shortfall{Wait: 86 * time.Millisecond, Rule: "daily", Limit: 1000}}, ""},
		{"limited by the second rule", reply(0, 2, 0, 86400, 86_400_000, nowUS, 2),
			bucketgate.Decision{Reason: bucketgate.ReasonLimited, Rule: "daily", Limit: 1000, RetryAfter: 86400 * time.Millisecond, ResetAfter: 86400 * time.Second, At: time.UnixMicro(nowUS)}, ""},
		{"flags below zero", replyVals{-1, 0, 0, nowUS}, bucketgate.Decision{}, "flags -1"},
		{"binding zero", reply(1, 0, 0, 0, 0, nowUS, 0), bucketgate.Decision{}, "binding rule 0"},
		{"binding past the rules", reply(1, 3, 0, 0, 0, nowUS, 0), bucketgate.Decision{}, "binding rule 3"},
		{"negative wait", reply(1, 1, 0, -5, 0, nowUS, 1), bucketgate.Decision{}, "wait -5 ms with allowed 1"},
		{"denied without a wait", reply(0, 1, 0, 0, 0, nowUS, 0), bucketgate.Decision{}, "wait 0 ms with allowed 0"},
		{"wait without its rule", reply(1, 1, 0, 5, 0, nowUS, 0), bucketgate.Decision{}, "wait rule 0 with wait 5 ms"},
		{"wait rule without a wait", reply(1, 1, 0, 0, 0, nowUS, 1), bucketgate.Decision{}, "wait rule 1 with wait 0 ms"},
		{"wait rule past the rules", reply(1, 1, 0, 5, 0, nowUS, 3), bucketgate.Decision{}, "wait rule 3"},
		{"denial waiting for another rule", reply(0, 1, 0, 5, 0, nowUS, 2), bucketgate.Decision{}, "wait rule 2 with wait 5 ms, binding rule 1"},
		{"endless reset", reply(1, 1, 0, 0, 1<<60, nowUS, 0), bucketgate.Decision{}, "reset after"},
		{"no server time", reply(1, 1, 0, 0, 0, 0, 0), bucketgate.Decision{}, "server time 0"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			checkDecode(t, twoRules, tt.vals, tt.want, tt.err)
		})
	}
}

// reply packs the figures of a script reply as bucket.lua does, in the order of its
// header: allowed, binding rule, remaining, wait, reset after, now, wait rule and, when
// given, the shadow denials.
func reply(allowed, binding, remaining, wait, reset, now, waitRule int64, denials ...int64) replyVals {
	var d int64
	for _, v := range denials {
		d |= v
	}
	flags := allowed<<lua.FlagsAllowedShift | binding<<lua.FlagsBindingShift | waitRule<<lua.FlagsWaitRuleShift |
		d<<lua.FlagsDenialsShift | remaining<<lua.FlagsRemainingShift
	var vals replyVals
	vals[lua.ReplyFlags], vals[lua.ReplyWait], vals[lua.ReplyReset], vals[lua.ReplyNow] = flags, wait, reset, now
	return vals
}

// crossed returns vals with the flag that crossings follow.
func crossed(vals replyVals) replyVals {
	vals[lua.ReplyFlags] |= 1 << lua.FlagsCrossedShift
	return vals
}

// checkDecode decodes vals for q and compares the outcome with want or the error err.
func checkDecode(t *testing.T, q bucketgate.Request, vals replyVals, want bucketgate.Decision, err string) {
	t.Helper()
	got, gotErr := decodeReply(vals, nil, q)
	if err != "" {
		if !errors.Is(gotErr, ErrBadReply) || !contains(gotErr, err) {
			t.Fatalf("err = %v, want ErrBadReply mentioning %q", gotErr, err)
		}
		return
	}
	if gotErr != nil || !reflect.DeepEqual(got, want) {
		t.Fatalf("got %+v, %v\nwant %+v", got, gotErr, want)
	}
}

// TestDecodeReplyOperations holds refunds, resets and shadow rules to what the script
// can answer for them.
func TestDecodeReplyOperations(t *testing.T) {
	shadowDaily := twoRules
	shadowDaily.Rules = []bucketgate.Rule{twoRules.Rules[0], twoRules.Rules[1]}
	shadowDaily.Rules[1].Shadow = true
	allShadow := shadowDaily
	allShadow.Rules = []bucketgate.Rule{shadowDaily.Rules[1]}
	refund, reset := twoRules, twoRules
	refund.Op, reset.Op, reset.Cost = bucketgate.OpRefund, bucketgate.OpReset, 0
	at := time.UnixMicro(nowUS)
	tests := []struct {
		name string
		q    bucketgate.Request
		vals replyVals
		want bucketgate.Decision
		err  string
	}{
		{"shadow denial", shadowDaily, reply(1, 1, 9, 0, 1000, nowUS, 0, 2),
			bucketgate.Decision{Allowed: true, Reason: bucketgate.ReasonOK, Rule: "burst", Limit: 10, Remaining: 9, ResetAfter: time.Second, At: at, ShadowLimited: 2}, ""},
		{"only shadow rules", allShadow, reply(1, 0, 0, 0, 0, nowUS, 0, 1),
			bucketgate.Decision{Allowed: true, Reason: bucketgate.ReasonOK, At: at, ShadowLimited: 1}, ""},
		{"refund", refund, reply(1, 1, 10, 0, 0, nowUS, 0),
			bucketgate.Decision{Allowed: true, Reason: bucketgate.ReasonOK, Rule: "burst", Limit: 10, Remaining: 10, At: at}, ""},
		{"reset", reset, reply(1, 1, 10, 0, 0, nowUS, 0),
			bucketgate.Decision{Allowed: true, Reason: bucketgate.ReasonOK, Rule: "burst", Limit: 10, Remaining: 10, At: at}, ""},
		{"binding a shadow rule", shadowDaily, reply(1, 2, 9, 0, 1000, nowUS, 0, 0), bucketgate.Decision{}, "binding rule 2"},
		{"no binding rule with an enforced one", shadowDaily, reply(1, 0, 0, 0, 0, nowUS, 0, 0), bucketgate.Decision{}, "binding rule 0"},
		{"remaining above the binding capacity", twoRules, reply(1, 1, 11, 0, 0, nowUS, 0), bucketgate.Decision{}, "remaining 11"},
		{"remaining without a binding rule", allShadow, reply(1, 0, 3, 0, 0, nowUS, 0, 0), bucketgate.Decision{}, "remaining 3"},
		{"waiting for a shadow rule", shadowDaily, reply(1, 1, 0, 5, 1000, nowUS, 2, 0), bucketgate.Decision{}, "wait rule 2"},
		{"an enforced rule as a shadow denial", shadowDaily, reply(1, 1, 9, 0, 1000, nowUS, 0, 1), bucketgate.Decision{}, "shadow denials 1"},
		{"a shadow denial of a denied check", shadowDaily, reply(0, 1, 0, 5, 1000, nowUS, 1, 2), bucketgate.Decision{}, "shadow denials 10"},
		{"a shadow denial of a refund", func() bucketgate.Request { q := shadowDaily; q.Op = bucketgate.OpRefund; return q }(), reply(1, 1, 9, 0, 1000, nowUS, 0, 2), bucketgate.Decision{}, "shadow denials 10"},
		{"a denied refund", refund, reply(0, 1, 0, 5, 1000, nowUS, 1), bucketgate.Decision{}, "allowed is 0 for a refund"},
		{"a refund with a wait", refund, reply(1, 1, 0, 5, 1000, nowUS, 1), bucketgate.Decision{}, "wait 5 ms with allowed 1 for a refund"},
		{"a reset not full", reset, reply(1, 1, 5, 0, 5000, nowUS, 0), bucketgate.Decision{}, "reset after 5000 ms"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			checkDecode(t, tt.q, tt.vals, tt.want, tt.err)
		})
	}
}

func contains(err error, s string) bool { return strings.Contains(err.Error(), s) }

func TestReplyInts(t *testing.T) {
	ints := func(n int) []rueidis.RedisMessage {
		m := make([]rueidis.RedisMessage, n)
		for i := range m {
			m[i] = mock.RedisInt64(1)
		}
		return m
	}
	wrongType := ints(lua.ReplyLen)
	wrongType[3] = mock.RedisString("1.5")
	tests := []struct {
		name  string
		reply []rueidis.RedisMessage
		err   string
	}{
		{"four integers", ints(lua.ReplyLen), ""},
		{"too short", ints(lua.ReplyLen - 1), "3 elements, want 4"},
		{"too long", ints(lua.ReplyLen + 1), "5 elements, want 4"},
		{"a string", wrongType, "element 3 is not an integer"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, _, err := replyInts(tt.reply, twoRules)
			if (tt.err == "") != (err == nil) || tt.err != "" && (!errors.Is(err, ErrBadReply) || !contains(err, tt.err)) {
				t.Fatalf("err = %v, want %q", err, tt.err)
			}
		})
	}
}

// FuzzDecodeReply: any four integers, and a peek's two per rule, decode to a
// consistent Decision or ErrBadReply, never a panic.
func FuzzDecodeReply(f *testing.F) {
	seed := func(shape uint8, vals replyVals, rest ...int64) {
		rest = append(rest, 0, 0, 0, 0, 0)
		f.Add(vals[lua.ReplyFlags], vals[lua.ReplyWait], vals[lua.ReplyReset], vals[lua.ReplyNow], rest[0], rest[1], rest[2], rest[3], rest[4], shape)
	}
	seed(2, reply(1, 1, 9, 0, 1000, nowUS, 0))
	seed(2, reply(1, 1, 0, 86, 1000, nowUS, 2))
	seed(2, reply(0, 2, 0, 86400, 86_400_000, nowUS, 2))
	seed(2+3*4, reply(1, 1, 9, 0, 1000, nowUS, 0, 2))
	seed(1+3*8, reply(1, 0, 0, 0, 0, nowUS, 0, 1))
	seed(2+3*1, reply(1, 1, 10, 0, 0, nowUS, 0))
	seed(2+36, reply(0, 2, 0, 86400, 86_400_000, nowUS, 2))                                                   // a quota binds
	seed(2+72, reply(1, 1, 9, 0, 1000, nowUS, 0), 9, 1000, 1000, 0)                                           // a peek
	seed(2+36+72, reply(1, 1, 9, 0, 1000, nowUS, 0), 9, 1000, 995, 864000)                                    // a peek at a quota
	seed(2+36, crossed(reply(0, 2, 0, 86400, 86_400_000, nowUS, 2)), 0, 0, 1000, nowUS/1e6+86400, 2)          // a quota's first denial
	seed(2, crossed(reply(0, 1, 0, 500, 1000, nowUS, 1)), 0, 1000, 0, 0, 1)                                   // a bucket's
	seed(2+36, crossed(reply(1, 1, 9, 0, 1000, nowUS, 0)), 0, 0, 800, nowUS/1e6+86400, 1<<lua.Cross80Shift+2) // 80% of a quota
	seed(0, replyVals{-1, -1, -1, -1})
	f.Fuzz(func(t *testing.T, flags, wait, reset, now, left1, full1, left2, full2, crossings int64, shape uint8) {
		// shape picks the request: how many rules (0 to 2), its operation (check,
		// refund, reset), which rules are shadow (2 bits), whether the second rule is a
		// quota, and whether a check is a peek (its reply then has left and full for
		// each rule).
		q := twoRules
		q.Rules = slices.Clone(q.Rules[:int(shape)%3])
		q.Op = bucketgate.Op(shape / 3 % 3)
		if q.Op == bucketgate.OpReset {
			q.Cost = 0
		}
		for i := range q.Rules {
			q.Rules[i].Shadow = shape/9&(1<<i) != 0
		}
		if len(q.Rules) == 2 && shape/36%2 == 1 {
			q.Rules[1] = bucketgate.Rule{Name: "monthly", Limit: 1000, Period: bucketgate.PeriodMonth, Shadow: q.Rules[1].Shadow}
		}
		var rest []int64
		if q.Op == bucketgate.OpCheck && shape/72%2 == 1 {
			q.Cost, rest = 0, []int64{left1, full1, left2, full2}[:2*len(q.Rules)]
		}
		if flags>>lua.FlagsCrossedShift&1 == 1 && rest == nil { // crossings: their bits, then two per rule
			rest = []int64{crossings, left1, full1, left2, full2}[:1+2*len(q.Rules)]
		}
		vals := replyVals{flags, wait, reset, now}
		d, err := decodeReply(vals, rest, q)
		if err != nil {
			if !errors.Is(err, ErrBadReply) {
				t.Fatalf("error does not wrap ErrBadReply: %v", err)
			}
			return
		}
		binds := slices.ContainsFunc(q.Rules, func(r bucketgate.Rule) bool { return !r.Shadow })
		if d.Allowed != (d.RetryAfter == 0) || d.Remaining < 0 || (d.Rule != "") != binds || d.At.IsZero() ||
			(d.Shortfall.Wait == 0) != (d.Shortfall.Rule == "") || !d.Allowed && d.Shortfall.Rule != "" || q.Op != bucketgate.OpCheck && (!d.Allowed || d.Shortfall.Wait != 0) {
			t.Fatalf("inconsistent decision %+v from %v for %+v", d, vals, q)
		}
		for i, r := range q.Rules {
			if d.ShadowLimited.Has(i) && (!r.Shadow || !d.Allowed) || r.Name == d.Rule && r.Shadow {
				t.Fatalf("shadow rules %+v in decision %+v from %v", q.Rules, d, vals)
			}
		}
		for _, c := range d.Crossings {
			i := slices.IndexFunc(q.Rules, func(r bucketgate.Rule) bool { return r.Name == c.Rule })
			if i < 0 || q.Rules[i].Shadow || (c.Kind == bucketgate.CrossingLimited) == d.Allowed || c.Kind == bucketgate.CrossingThreshold && !q.Rules[i].IsQuota() ||
				c.Usage < 0 || c.Usage > maxStoredCount || !c.WindowEnd.After(c.WindowStart) {
				t.Fatalf("crossing %+v in decision %+v from %v %v for %+v", c, d, vals, rest, q)
			}
		}
		if d.Crossings != nil {
			return
		}
		if (rest != nil) != (d.Rules != nil) || len(d.Rules) != len(rest)/2 {
			t.Fatalf("rules %+v from %v for %+v", d.Rules, rest, q)
		}
		for i, st := range d.Rules {
			if st.Remaining < 0 || st.Remaining > q.Rules[i].Max() || st.ResetAfter < 0 || q.Rules[i].IsQuota() && st.ResetAfter == 0 {
				t.Fatalf("rule %d: %+v from %v for %+v", i, st, rest, q.Rules[i])
			}
		}
	})
}

// FuzzReplyInts: replies of any shape built from the fuzz input are either integers of
// a shape the script answers (lua.ReplyLen, or with the crossed flag the crossings' longer
// reply) returned in order, or ErrBadReply.
func FuzzReplyInts(f *testing.F) {
	f.Add([]byte{0, 0, 0, 0}, int64(7))
	f.Add([]byte{0, 1, 2, 3, 4}, int64(-1))
	f.Add([]byte{}, int64(0))
	f.Fuzz(func(t *testing.T, kinds []byte, v int64) {
		reply := make([]rueidis.RedisMessage, 0, len(kinds))
		for _, k := range kinds {
			switch k % 5 {
			case 0:
				reply = append(reply, mock.RedisInt64(v))
			case 1:
				reply = append(reply, mock.RedisString("7"))
			case 2:
				reply = append(reply, mock.RedisNil())
			case 3:
				reply = append(reply, mock.RedisFloat64(1.5))
			default:
				reply = append(reply, mock.RedisArray(mock.RedisInt64(v)))
			}
		}
		vals, rest, err := replyInts(reply, twoRules)
		if err != nil {
			if !errors.Is(err, ErrBadReply) {
				t.Fatalf("error does not wrap ErrBadReply: %v", err)
			}
			return
		}
		want := lua.ReplyLen
		if flag(v, lua.FlagsCrossedShift, 1) == 1 {
			want = lua.ReplyCrossingCount(len(twoRules.Rules))
		}
		if len(kinds) != want {
			t.Fatalf("accepted %d elements of %v, want %d", len(kinds), v, want)
		}
		got := append(vals[:], rest...)
		for i, k := range kinds {
			if k%5 != 0 || got[i] != v {
				t.Fatalf("accepted %v as %v", kinds, got)
			}
		}
	})
}

// TestFlagsHoldEveryRule: the packed reply has room for every rule of a request, and
// for the largest remaining below 2^53 (exact in Lua's doubles).
func TestFlagsHoldEveryRule(t *testing.T) {
	if bucketgate.MaxRules >= 1<<lua.FlagsBindingBits || bucketgate.MaxRules >= 1<<lua.FlagsWaitRuleBits || bucketgate.MaxRules > lua.FlagsDenialsBits {
		t.Errorf("bucketgate.MaxRules %d does not fit the reply's flags", bucketgate.MaxRules)
	}
	if lua.FlagsDenialsShift+lua.FlagsDenialsBits != lua.FlagsRemainingShift || lua.FlagsBindingShift+lua.FlagsBindingBits != lua.FlagsWaitRuleShift {
		t.Error("the flags' fields overlap or leave gaps")
	}
	if bucketgate.MaxCapacity >= 1<<lua.FlagsRemainingBits || lua.FlagsRemainingShift+lua.FlagsRemainingBits != lua.FlagsCrossedShift ||
		lua.FlagsCrossedShift+1 != lua.FlagsReservedShift {
		t.Errorf("remaining %d does not fit its %d bits, or they overlap the crossed flag and the reserved bits", bucketgate.MaxCapacity, lua.FlagsRemainingBits)
	}
	if lua.FlagsReservedShift+5 > 53 {
		t.Errorf("the reserved bits from %d reach past 2^53, the exact integers of a double", lua.FlagsReservedShift)
	}
	if bucketgate.MaxRules > lua.Cross80Shift-lua.CrossLimitedShift || bucketgate.MaxRules > lua.Cross100Shift-lua.Cross80Shift || lua.Cross100Shift+bucketgate.MaxRules > 53 {
		t.Errorf("bucketgate.MaxRules %d does not fit the crossings' bits", bucketgate.MaxRules)
	}
}

// A peek's reply carries every rule's state, each held to what the script can answer.
func TestDecodePeek(t *testing.T) {
	q := bucketgate.Request{Identity: "id", Rules: []bucketgate.Rule{
		{Name: "burst", Capacity: 10, RefillPerSecond: 1},
		{Name: "monthly", Limit: 1000, Period: bucketgate.PeriodMonth, Shadow: true},
	}}
	vals := reply(1, 1, 7, 0, 3000, nowUS, 0)
	d, err := decodeReply(vals, []int64{7, 3000, 990, 86_400_000}, q)
	if err != nil {
		t.Fatal(err)
	}
	want := []bucketgate.RuleState{{Remaining: 7, ResetAfter: 3 * time.Second}, {Remaining: 990, ResetAfter: 24 * time.Hour}}
	if !reflect.DeepEqual(d.Rules, want) {
		t.Fatalf("rules %+v, want %+v", d.Rules, want)
	}
	for _, tc := range []struct {
		name string
		rest []int64
	}{
		{"tokens above capacity", []int64{11, 0, 990, 1}},
		{"a full bucket not full", []int64{10, 5, 990, 1}},
		{"a bucket full in no time, short", []int64{9, 0, 990, 1}},
		{"a quota's window that has ended", []int64{7, 3000, 990, 0}},
		{"room above the limit", []int64{7, 3000, 1001, 1}},
		{"negative room", []int64{7, 3000, -1, 1}},
	} {
		if _, err := decodeReply(vals, tc.rest, q); !errors.Is(err, ErrBadReply) {
			t.Errorf("%s: %v, want ErrBadReply", tc.name, err)
		}
	}
	four := []rueidis.RedisMessage{mock.RedisInt64(1), mock.RedisInt64(0), mock.RedisInt64(0), mock.RedisInt64(nowUS)}
	if _, _, err := replyInts(four, q); !errors.Is(err, ErrBadReply) || !contains(err, "4 elements, want 8") {
		t.Errorf("a peek's reply of four: %v, want ErrBadReply", err)
	}
}

func TestDecodeCrossings(t *testing.T) {
	q := bucketgate.Request{Identity: "id", Cost: 1, Rules: []bucketgate.Rule{
		{Name: "burst", Capacity: 10, RefillPerSecond: 1},
		{Name: "monthly", Limit: 1000, Period: bucketgate.PeriodMonth},
	}}
	at := time.UnixMicro(nowUS).UTC()
	end := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	month := bucketgate.Crossing{Rule: "monthly", Quota: true, Limit: 1000, WindowStart: end.AddDate(0, -1, 0), WindowEnd: end}
	denied, allowed := crossed(reply(0, 1, 0, 500, 1000, nowUS, 1)), crossed(reply(1, 1, 9, 0, 1000, nowUS, 0))
	tests := []struct {
		name string
		vals replyVals
		rest []int64
		want []bucketgate.Crossing
		err  string
	}{
		{"both rules' first denial", denied, []int64{3, 9, 1000, 1000, end.Unix()}, []bucketgate.Crossing{
			{Kind: bucketgate.CrossingLimited, Rule: "burst", Limit: 10, Usage: 1, WindowStart: at, WindowEnd: at.Add(time.Second)},
			withKind(month, bucketgate.CrossingLimited, 0, 1000)}, ""},
		{"80% and 100%", allowed, []int64{2<<lua.Cross80Shift | 2<<lua.Cross100Shift, 0, 0, 1000, end.Unix()}, []bucketgate.Crossing{
			withKind(month, bucketgate.CrossingThreshold, 80, 1000), withKind(month, bucketgate.CrossingThreshold, 100, 1000)}, ""},
		{"the first denial of a bucket in debt", denied, []int64{1, -10, 20000, 0, 0}, []bucketgate.Crossing{
			{Kind: bucketgate.CrossingLimited, Rule: "burst", Limit: 10, Usage: 20, WindowStart: at, WindowEnd: at.Add(20 * time.Second)}}, ""},
		{"a debt deeper than any capacity", denied, []int64{1, -bucketgate.MaxCapacity - 1, 1000, 0, 0}, nil, "rule 1 (burst)"},
		{"no bits", allowed, []int64{0, 0, 0, 0, 0}, nil, "crossings 0"},
		{"a threshold of a denial", denied, []int64{2 << lua.Cross80Shift, 0, 0, 900, end.Unix()}, nil, "crossings"},
		{"a denial of an admission", allowed, []int64{1, 9, 1000, 0, 0}, nil, "crossings 1"},
		{"a bucket's threshold", allowed, []int64{1 << lua.Cross80Shift, 9, 1000, 0, 0}, nil, "rule 1 (burst)"},
		{"a bit past the rules", allowed, []int64{4 << lua.Cross80Shift, 0, 0, 0, 0}, nil, "crossings"},
		{"figures of a rule that crossed nothing", denied, []int64{1, 9, 1000, 5, 0}, nil, "rule 2 (monthly)"},
		{"80% short of it", allowed, []int64{2 << lua.Cross80Shift, 0, 0, 799, end.Unix()}, nil, "rule 2 (monthly)"},
		{"a window that has ended", allowed, []int64{2 << lua.Cross80Shift, 0, 0, 800, nowUS / 1e6}, nil, "rule 2 (monthly)"},
		{"a full bucket denied", denied, []int64{1, 10, 0, 0, 0}, nil, "rule 1 (burst)"},
		{"too short", denied, []int64{1, 9, 1000}, nil, "3 more elements"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d, err := decodeReply(tt.vals, tt.rest, q)
			if tt.err != "" {
				if !errors.Is(err, ErrBadReply) || !contains(err, tt.err) {
					t.Fatalf("err = %v, want %q", err, tt.err)
				}
				return
			}
			if err != nil || !reflect.DeepEqual(d.Crossings, tt.want) {
				t.Fatalf("crossings %+v (%v), want %+v", d.Crossings, err, tt.want)
			}
		})
	}
	peek := q
	peek.Cost = 0
	if _, err := decodeReply(allowed, []int64{2 << lua.Cross80Shift, 0, 0, 800, end.Unix()}, peek); !errors.Is(err, ErrBadReply) {
		t.Errorf("a peek's crossings: %v, want ErrBadReply", err)
	}
	five := []rueidis.RedisMessage{mock.RedisInt64(allowed[0]), mock.RedisInt64(0), mock.RedisInt64(0), mock.RedisInt64(nowUS), mock.RedisInt64(1)}
	if _, _, err := replyInts(five, q); !errors.Is(err, ErrBadReply) || !contains(err, "5 elements, want 9") {
		t.Errorf("crossings without their figures: %v, want ErrBadReply", err)
	}
}

// withKind returns c as a crossing of kind at percent with usage.
func withKind(c bucketgate.Crossing, kind bucketgate.CrossingKind, percent, usage int64) bucketgate.Crossing {
	c.Kind, c.Percent, c.Usage = kind, percent, usage
	return c
}

// FuzzDecodeRelease holds decodeRelease to the release's reply: exactly two integers,
// the sets that held the lease (0 to lua.MaxLeaseRules) and a positive Redis time, else
// an error wrapping ErrBadReply; never a panic.
func FuzzDecodeRelease(f *testing.F) {
	f.Add([]byte{0, 0}, int64(1), int64(1764131234567000))
	f.Add([]byte{0, 0}, int64(9), int64(1))
	f.Add([]byte{0, 1}, int64(0), int64(0))
	f.Add([]byte{0, 0, 0}, int64(1), int64(1))
	f.Fuzz(func(t *testing.T, kinds []byte, released, now int64) {
		reply := make([]rueidis.RedisMessage, 0, len(kinds))
		for i, k := range kinds {
			v := released
			if i == lua.ReplyReleaseNow {
				v = now
			}
			switch k % 3 {
			case 0:
				reply = append(reply, mock.RedisInt64(v))
			case 1:
				reply = append(reply, mock.RedisString("1"))
			default:
				reply = append(reply, mock.RedisNil())
			}
		}
		d, err := decodeRelease(mock.Result(mock.RedisArray(reply...)))
		ok := len(kinds) == lua.ReplyReleaseLen && kinds[0]%3 == 0 && kinds[1]%3 == 0 && released >= 0 && released <= lua.MaxLeaseRules && now > 0
		switch {
		case err != nil && !errors.Is(err, ErrBadReply):
			t.Fatalf("error does not wrap ErrBadReply: %v", err)
		case (err == nil) != ok:
			t.Fatalf("%v of %d, %d: decision %+v, error %v", kinds, released, now, d, err)
		case ok && (d.Released != (released > 0) || !d.Allowed || d.At.UnixMicro() != now):
			t.Fatalf("%v of %d, %d: decision %+v", kinds, released, now, d)
		}
	})
}
