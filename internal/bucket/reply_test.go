package bucket

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/redis/rueidis"
	"github.com/redis/rueidis/mock"

	"github.com/bucketgate/bucketgate/internal/lua"
)

var twoRules = Request{Identity: "id", Cost: 1, Rules: []Rule{
	{Name: "burst", Capacity: 10, RefillPerSecond: 1},
	{Name: "daily", Capacity: 1000, RefillPerSecond: 1000.0 / 86400},
}}

const nowUS = 1_795_000_000_000_000

func TestDecodeReply(t *testing.T) {
	tests := []struct {
		name string
		vals [lua.ReplyLen]int64
		want Decision
		err  string
	}{
		{"allowed", [lua.ReplyLen]int64{1, 1, 9, 0, 1000, nowUS, 0},
			Decision{Allowed: true, Reason: ReasonOK, Rule: "burst", Limit: 10, Remaining: 9, ResetAfter: time.Second, At: time.UnixMicro(nowUS)}, ""},
		{"allowed, the second rule then short", [lua.ReplyLen]int64{1, 1, 0, 86, 86_400_000, nowUS, 2},
			Decision{Allowed: true, Reason: ReasonOK, Rule: "burst", Limit: 10, ResetAfter: 86400 * time.Second, At: time.UnixMicro(nowUS), wait: 86 * time.Millisecond, waitRule: "daily", waitLimit: 1000}, ""},
		{"limited by the second rule", [lua.ReplyLen]int64{0, 2, 0, 86400, 86_400_000, nowUS, 2},
			Decision{Reason: ReasonLimited, Rule: "daily", Limit: 1000, RetryAfter: 86400 * time.Millisecond, ResetAfter: 86400 * time.Second, At: time.UnixMicro(nowUS)}, ""},
		{"allowed out of range", [lua.ReplyLen]int64{2, 1, 0, 0, 0, nowUS, 0}, Decision{}, "allowed is 2"},
		{"binding zero", [lua.ReplyLen]int64{1, 0, 0, 0, 0, nowUS, 0}, Decision{}, "binding rule 0"},
		{"binding past the rules", [lua.ReplyLen]int64{1, 3, 0, 0, 0, nowUS, 0}, Decision{}, "binding rule 3"},
		{"negative remaining", [lua.ReplyLen]int64{1, 1, -1, 0, 0, nowUS, 0}, Decision{}, "remaining -1"},
		{"negative wait", [lua.ReplyLen]int64{1, 1, 0, -5, 0, nowUS, 1}, Decision{}, "wait -5 ms with allowed 1"},
		{"denied without a wait", [lua.ReplyLen]int64{0, 1, 0, 0, 0, nowUS, 0}, Decision{}, "wait 0 ms with allowed 0"},
		{"wait without its rule", [lua.ReplyLen]int64{1, 1, 0, 5, 0, nowUS, 0}, Decision{}, "wait rule 0 with wait 5 ms"},
		{"wait rule without a wait", [lua.ReplyLen]int64{1, 1, 0, 0, 0, nowUS, 1}, Decision{}, "wait rule 1 with wait 0 ms"},
		{"wait rule past the rules", [lua.ReplyLen]int64{1, 1, 0, 5, 0, nowUS, 3}, Decision{}, "wait rule 3"},
		{"denial waiting for another rule", [lua.ReplyLen]int64{0, 1, 0, 5, 0, nowUS, 2}, Decision{}, "wait rule 2 with wait 5 ms, binding rule 1"},
		{"endless reset", [lua.ReplyLen]int64{1, 1, 0, 0, 1 << 60, nowUS, 0}, Decision{}, "reset after"},
		{"no server time", [lua.ReplyLen]int64{1, 1, 0, 0, 0, 0, 0}, Decision{}, "server time 0"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := decodeReply(tt.vals, twoRules)
			if tt.err != "" {
				if !errors.Is(err, ErrBadReply) || !contains(err, tt.err) {
					t.Fatalf("err = %v, want ErrBadReply mentioning %q", err, tt.err)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Fatalf("got %+v, %v\nwant %+v", got, err, tt.want)
			}
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
		{"seven integers", ints(lua.ReplyLen), ""},
		{"too short", ints(lua.ReplyLen - 1), "6 elements, want 7"},
		{"too long", ints(lua.ReplyLen + 1), "8 elements, want 7"},
		{"a string", wrongType, "element 3 is not an integer"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := replyInts(tt.reply)
			if (tt.err == "") != (err == nil) || tt.err != "" && (!errors.Is(err, ErrBadReply) || !contains(err, tt.err)) {
				t.Fatalf("err = %v, want %q", err, tt.err)
			}
		})
	}
}

// FuzzDecodeReply: any seven integers decode to a consistent Decision or ErrBadReply,
// never a panic.
func FuzzDecodeReply(f *testing.F) {
	f.Add(int64(1), int64(1), int64(9), int64(0), int64(1000), int64(nowUS), int64(0), uint8(2))
	f.Add(int64(1), int64(1), int64(0), int64(86), int64(1000), int64(nowUS), int64(2), uint8(2))
	f.Add(int64(0), int64(2), int64(0), int64(86400), int64(86_400_000), int64(nowUS), int64(2), uint8(2))
	f.Add(int64(-1), int64(9), int64(-5), int64(-1), int64(-1), int64(-1), int64(-1), uint8(0))
	f.Fuzz(func(t *testing.T, allowed, binding, remaining, wait, reset, now, waitRule int64, nRules uint8) {
		q := twoRules
		q.Rules = q.Rules[:int(nRules)%(len(q.Rules)+1)]
		vals := [lua.ReplyLen]int64{allowed, binding, remaining, wait, reset, now, waitRule}
		d, err := decodeReply(vals, q)
		if err != nil {
			if !errors.Is(err, ErrBadReply) {
				t.Fatalf("error does not wrap ErrBadReply: %v", err)
			}
			return
		}
		if d.Allowed != (d.RetryAfter == 0) || d.Remaining < 0 || d.Rule == "" || d.At.IsZero() ||
			(d.wait == 0) != (d.waitRule == "") || !d.Allowed && d.waitRule != "" {
			t.Fatalf("inconsistent decision %+v from %v", d, vals)
		}
	})
}

// FuzzReplyInts: replies of any shape built from the fuzz input are either exactly
// lua.ReplyLen integers or ErrBadReply.
func FuzzReplyInts(f *testing.F) {
	f.Add([]byte{0, 0, 0, 0, 0, 0}, int64(7))
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
		vals, err := replyInts(reply)
		if err != nil {
			if !errors.Is(err, ErrBadReply) {
				t.Fatalf("error does not wrap ErrBadReply: %v", err)
			}
			return
		}
		for i, k := range kinds {
			if k%5 != 0 || vals[i] != v {
				t.Fatalf("accepted %v as %v", kinds, vals)
			}
		}
	})
}
