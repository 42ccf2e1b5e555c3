package bucket

import (
	"errors"
	"strconv"
	"strings"
	"testing"

	"github.com/redis/rueidis/mock"
)

// FuzzUsageCounts: a day's stored usage is input to Usage. Whatever a field holds,
// storedCount and archivedDay return counts or an error wrapping ErrBadState, never a
// panic; what they accept is written as the script writes it (decimal, no padding),
// every count of checks from 0, a cost (signed, since a settle corrects it) above -2^53,
// and all of them below 2^53.
func FuzzUsageCounts(f *testing.F) {
	for _, s := range []string{"0", "7", "-3650", "-0", "05", "1.5", "x", "9007199254740992", "-9007199254740992", "-9007199254740991",
		"1 4 0", "0 -3650 0", "1 -05 0", "-1 4 0", "1 4 -1", "1 2", "1  2 3", "1 -9007199254740991 0", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		const bound = 1 << 53
		for _, signed := range []bool{false, true} {
			n, err := storedCount(mock.RedisString(s), "u:1:x", signed)
			if err != nil {
				if !errors.Is(err, ErrBadState) {
					t.Fatalf("storedCount(%q): %v does not wrap ErrBadState", s, err)
				}
			} else if n >= bound || n <= -bound || n < 0 && !signed {
				t.Fatalf("storedCount(%q, signed %v) = %d: out of bounds", s, signed, n)
			}
		}
		a, c, l, err := archivedDay(mock.RedisString(s), "id", "1")
		if err != nil {
			if !errors.Is(err, ErrBadState) {
				t.Fatalf("archivedDay(%q): %v does not wrap ErrBadState", s, err)
			}
			return
		}
		if a < 0 || l < 0 || a >= bound || l >= bound || c >= bound || c <= -bound {
			t.Fatalf("archivedDay(%q) = %d %d %d: out of bounds", s, a, c, l)
		}
		if back := strings.Join([]string{strconv.FormatInt(a, 10), strconv.FormatInt(c, 10), strconv.FormatInt(l, 10)}, " "); back != s {
			t.Fatalf("archivedDay(%q) = %q: not as the script writes it", s, back)
		}
	})
}
