package bucket

import (
	"math"
	"strconv"
	"time"
)

// secondsToDuration converts seconds to a Duration, saturating instead of overflowing.
func secondsToDuration(s float64) time.Duration {
	if s >= float64(math.MaxInt64)/float64(time.Second) {
		return time.Duration(math.MaxInt64)
	}
	return time.Duration(s * float64(time.Second))
}

// formatSeconds writes s seconds as a Duration rounded to the second, or, beyond the
// longest Duration, in seconds with four significant digits.
func formatSeconds(s float64) string {
	if s >= float64(math.MaxInt64)/float64(time.Second) {
		return strconv.FormatFloat(s, 'g', 4, 64) + "s"
	}
	return secondsToDuration(s).Round(time.Second).String()
}

// millisToDuration converts whole milliseconds to a Duration.
func millisToDuration(ms int64) time.Duration { return time.Duration(ms) * time.Millisecond }

// microsToTime converts microseconds since the Unix epoch to a time.Time.
func microsToTime(us int64) time.Time { return time.UnixMicro(us) }

// timeToMicros converts a time.Time to microseconds since the Unix epoch.
func timeToMicros(t time.Time) int64 { return t.UnixMicro() }
