package main

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/bucketgate/bucketgate"
	"github.com/bucketgate/bucketgate/internal/registry"
)

// parseWhen reads each form of a time, and refuses a time from now that a Duration
// cannot hold rather than wrap it around to another time, and empty text, which it took
// for never (keys expire KEY "$WHEN" of an unset WHEN removed the key's expiry).
func TestParseWhen(t *testing.T) {
	now := time.Date(2026, 11, 22, 12, 0, 0, 500, time.UTC)
	tests := []struct {
		name, in string
		want     time.Time
		err      string
	}{
		{"empty (an unset variable), not never", "", time.Time{}, `"": want an RFC 3339 time`},
		{"RFC 3339", "2027-01-31T00:00:00Z", time.Date(2027, 1, 31, 0, 0, 0, 0, time.UTC), ""},
		{"date", "2027-01-31", time.Date(2027, 1, 31, 0, 0, 0, 0, time.UTC), ""},
		{"duration", "90m", now.Add(90 * time.Minute).Truncate(time.Second), ""},
		{"days", "30d", now.Add(30 * 24 * time.Hour).Truncate(time.Second), ""},
		{"the most days", "106751d", now.Add(106751 * 24 * time.Hour).Truncate(time.Second), ""},
		{"days past the longest duration", "106752d", time.Time{}, `"106752d": want at most 106751 days from now`},
		{"days that would wrap to minutes", "213504d", time.Time{}, `want at most 106751 days from now`},
		{"zero days", "0d", time.Time{}, "want an RFC 3339 time"},
		{"negative days", "-3d", time.Time{}, "want an RFC 3339 time"},
		{"words", "tomorrow", time.Time{}, "want an RFC 3339 time"},
		{"the first day of the calendar", "0001-01-01", time.Time{}, `"0001-01-01": want a time from 1970-01-01T00:00:01Z to 9999-12-31T23:59:59Z`},
		{"the Unix epoch", "1970-01-01T00:00:00Z", time.Time{}, "want a time from 1970-01-01T00:00:01Z"},
		{"before the Unix epoch", "1969-07-20", time.Time{}, "want a time from 1970-01-01T00:00:01Z"},
		{"the first second a table holds", "1970-01-01T00:00:01Z", time.Unix(1, 0).UTC(), ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := parseWhen(tc.in, now)
			switch {
			case tc.err == "" && err != nil:
				t.Fatalf("%q: %v", tc.in, err)
			case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
				t.Fatalf("%q: %v at %v, want an error mentioning %q", tc.in, got, err, tc.err)
			case !got.Equal(tc.want):
				t.Fatalf("%q: %v, want %v", tc.in, got, tc.want)
			}
		})
	}
}

// A --rule flag is checked as the configuration document checks its rules: a rate that is
// not 0 but rounds to 0 (1e-400) is refused as such, not read as a refill of 0 or a
// missing rate.
func TestRuleFlag(t *testing.T) {
	tests := []struct {
		name, in string
		want     bucketgate.Rule
		err      string
	}{
		{"tokens per second", "burst:10:0.5", bucketgate.Rule{Name: "burst", Capacity: 10, RefillPerSecond: 0.5}, ""},
		{"tokens per period", "hourly:50:50/hour", bucketgate.Rule{Name: "hourly", Capacity: 50, RefillPerSecond: 50.0 / 3600}, ""},
		{"a quota", "monthly:100:month@15", bucketgate.Rule{Name: "monthly", Limit: 100, Period: bucketgate.PeriodMonth, Anchor: 15}, ""},
		{"a concurrency rule", "streams:5:concurrent", bucketgate.Rule{Name: "streams", Concurrency: 5}, ""},
		{"a rate of 0", "burst:10:0", bucketgate.Rule{}, `rate "0": want tokens per second > 0`},
		{"a refill of 0", "burst:10:0/hour", bucketgate.Rule{}, "refill 0: want a number > 0 with per"},
		{"a rate that rounds to 0", "burst:10:1e-400", bucketgate.Rule{}, `"burst:10:1e-400": rate "1e-400": too close to 0, which it would round to`},
		{"a refill that rounds to 0", "burst:10:1e-400/hour", bucketgate.Rule{}, `"burst:10:1e-400/hour": refill "1e-400": too close to 0, which it would round to`},
		{"a negative refill that rounds to 0", "burst:10:-0.5e-330/hour", bucketgate.Rule{}, `refill "-0.5e-330": too close to 0`},
		{"a rate past a float", "burst:10:1e400", bucketgate.Rule{}, `rate "1e400": want tokens per second > 0`},
		// Numbers are read as the document reads them (config.ParseNumber, ParseCount).
		{"a rate with an exponent", "burst:10:1e3", bucketgate.Rule{Name: "burst", Capacity: 10, RefillPerSecond: 1000}, ""},
		{"a hex rate", "burst:10:0x1p4", bucketgate.Rule{}, `rate "0x1p4": want tokens per second > 0`},
		{"a hex refill", "hourly:50:0x1p4/hour", bucketgate.Rule{}, `refill "0x1p4": want a number of tokens`},
		{"a rate with underscores", "burst:10:1_000", bucketgate.Rule{}, `rate "1_000": want tokens per second > 0`},
		{"a rate without its leading digit", "burst:10:.5", bucketgate.Rule{}, `rate ".5": want tokens per second > 0`},
		{"a rate infinite", "burst:10:inf", bucketgate.Rule{}, `rate "inf": want tokens per second > 0`},
		{"a capacity with a leading zero", "burst:010:1", bucketgate.Rule{}, `capacity "010": want a whole decimal number such as 100`},
		{"a signed capacity", "burst:+5:1", bucketgate.Rule{}, `capacity "+5": want a whole decimal number`},
		{"a limit with an exponent", "daily:1e3:day", bucketgate.Rule{}, `limit "1e3": want a whole decimal number`},
		// A concurrency of 0 was read as a bucket with no rate: "refillPerSecond (or refill
		// with per) is required", which a concurrency rule has none of.
		{"a concurrency of 0", "streams:0:concurrent", bucketgate.Rule{}, `"streams:0:concurrent": concurrency 0: want 1 to 10000 requests in flight`},
		{"a concurrency past the most", "streams:10001:concurrent", bucketgate.Rule{}, `concurrency 10001: want 1 to 10000`},
		{"a limit of 0", "daily:0:day", bucketgate.Rule{}, `"daily:0:day": rule daily: limit 0: want 1 to 1000000000`},
		{"a concurrency with a leading zero", "streams:05:concurrent", bucketgate.Rule{}, `concurrency "05": want a whole decimal number`},
		{"an anchor with a leading zero", "monthly:100:month@015", bucketgate.Rule{}, `anchor "015": want a day of the month`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var l ruleList
			err := l.Set(tc.in)
			switch {
			case tc.err == "" && err != nil:
				t.Fatalf("%q: %v", tc.in, err)
			case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
				t.Fatalf("%q: %v, %v; want an error mentioning %q", tc.in, l, err, tc.err)
			case tc.err == "" && (len(l) != 1 || l[0] != tc.want):
				t.Fatalf("%q: %v, want [%v]", tc.in, l, tc.want)
			}
		})
	}
}

// parseOverlap reads a duration or whole days from 0 to 30 days, and refuses a number of
// days that a Duration cannot hold rather than wrap it around to another overlap.
func TestParseOverlap(t *testing.T) {
	tests := []struct {
		name, in string
		want     time.Duration
		err      string
	}{
		{"duration", "90m", 90 * time.Minute, ""},
		{"zero", "0", 0, ""},
		{"days", "7d", 7 * 24 * time.Hour, ""},
		{"30 days", "30d", maxOverlap, ""},
		{"31 days", "31d", 0, `--overlap "31d": want a duration from 0 to 720h0m0s`},
		{"days that wrap to 1 day", "281474976710657d", 0, `--overlap "281474976710657d"`},
		{"days that wrap to 0", "281474976710656d", 0, `--overlap "281474976710656d"`},
		{"signed days", "+7d", 0, `--overlap "+7d"`},
		{"negative", "-1h", 0, `--overlap "-1h"`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := parseOverlap(tc.in)
			switch {
			case tc.err == "" && err != nil:
				t.Fatalf("%q: %v", tc.in, err)
			case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
				t.Fatalf("%q: %v, %v; want an error mentioning %q", tc.in, got, err, tc.err)
			case got != tc.want:
				t.Fatalf("%q: %v, want %v", tc.in, got, tc.want)
			}
		})
	}
}

// FuzzParseTimes: parseWhen returns the zero Time (never) for "" alone, and otherwise a
// time a registry item holds, or an error; parseOverlap an overlap from 0 to 30 days, N
// days for "Nd", or an error.
func FuzzParseTimes(f *testing.F) {
	for _, s := range []string{"", "90m", "30d", "106752d", "0001-01-01", "1970-01-01T00:00:00Z", "2027-01-31", "281474976710657d", "-0d", "1e3d"} {
		f.Add(s)
	}
	now := time.Date(2026, 11, 22, 12, 0, 0, 500, time.UTC)
	f.Fuzz(func(t *testing.T, v string) {
		when, err := parseWhen(v, now)
		switch {
		case err != nil:
		case when.IsZero() != (v == ""):
			t.Fatalf("parseWhen(%q) = %v: the zero Time (never) is for \"\" alone", v, when)
		case v != "" && (when.Unix() < 1 || when.Unix() > registry.MaxExpiresAt):
			t.Fatalf("parseWhen(%q) = %v: outside what a registry item holds", v, when)
		}
		d, err := parseOverlap(v)
		if err != nil {
			return
		}
		if d < 0 || d > maxOverlap {
			t.Fatalf("parseOverlap(%q) = %v: want 0 to %v", v, d, maxOverlap)
		}
		if days, ok := strings.CutSuffix(v, "d"); ok {
			if n, err := strconv.Atoi(days); err != nil || time.Duration(n)*24*time.Hour != d {
				t.Fatalf("parseOverlap(%q) = %v: want %s days", v, d, days)
			}
		}
	})
}
