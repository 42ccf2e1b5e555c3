package main

import (
	"strings"
	"testing"
	"time"
)

// parseWhen reads each form of a time, and refuses a time from now that a Duration
// cannot hold rather than wrap it around to another time.
func TestParseWhen(t *testing.T) {
	now := time.Date(2026, 11, 22, 12, 0, 0, 500, time.UTC)
	tests := []struct {
		name, in string
		want     time.Time
		err      string
	}{
		{"never", "", time.Time{}, ""},
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
