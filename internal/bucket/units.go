package bucket

import (
	"time"
)

// millisToDuration converts whole milliseconds to a Duration.
func millisToDuration(ms int64) time.Duration { return time.Duration(ms) * time.Millisecond }

// microsToTime converts microseconds since the Unix epoch to a time.Time.
func microsToTime(us int64) time.Time { return time.UnixMicro(us) }

// timeToMicros converts a time.Time to microseconds since the Unix epoch.
func timeToMicros(t time.Time) int64 { return t.UnixMicro() }
