// Package wallclock tells ages and waits by the wall clock, as a Lambda environment
// needs: Go's monotonic clock may stand still while the environment is frozen between
// invocations, and would keep a copy (a cached entry, a secret, a token) or a wait past
// its time after a freeze that outlasted it. Times compared here keep no monotonic
// reading (Round(0)). A clock that went back (NTP) makes an earlier time after now:
// nothing is young then, and no wait is pending, rather than keeping for as long as the
// step what the duration would have ended.
package wallclock

import "time"

// Now is time.Now without its monotonic reading: the wall clock.
func Now() time.Time { return time.Now().Round(0) }

// Young reports whether since is less than d before now and not after it.
func Young(now, since time.Time, d time.Duration) bool {
	age := now.Sub(since)
	return age >= 0 && age < d
}

// Pending reports whether until, set d after its moment, is still to come at now: after
// now, by at most d (more is a clock that went back since).
func Pending(now, until time.Time, d time.Duration) bool {
	left := until.Sub(now)
	return left > 0 && left <= d
}
